"""The full sync: make ZooKeeper equal a :class:`MetadataImage`, whatever it holds now.

What a new KRaft leader runs after claiming ZooKeeper (writes queued by a deposed
leader never landed: docs/field-bugs.md#fb-01), and what the writer falls back to when ZooKeeper
drifted from the image. :func:`diff` is the same comparison without writing.

- ZooKeeper is read with the project's reader, compared entity by entity with the
  image's canonical tree (:mod:`migration.bridge.mirror`), every kind, both directions, by
  content; the operations come from the same planner the delta writer uses.
- Topics whose tree may not be canonical (a state znode missing, a topic to delete) are
  listed znode by znode first, so deletes name exactly what exists.
- Kafka's persistent parents (:func:`migration.zk.tree.persistent_parents`) are
  created when missing.
- Refused when ``/migration`` claims more than the image holds (an offset past the
  image's, or the same offset in another epoch): a leftover from an abandoned
  migration must not wipe ZooKeeper (docs/field-bugs.md#fb-23).
- Znodes it rewrites get the ACL ``zookeeper.set.acl`` asks for (created ones carry it
  already): a cluster secured after the fact is repaired as it is synced.
- Written through the writer's fenced batching; ``/migration`` then records the image's
  offset and epoch. If ZooKeeper changes between the read and the write (a multi finds
  a znode it did not expect), the sync reads and plans again, a few times.
"""

from __future__ import annotations

from dataclasses import dataclass

from migration.bridge.mirror import ImageView, SnapshotView
from migration.bridge.plan import EVERYTHING, Plan, Scope, plan
from migration.bridge.writer import SyncNeededError, ZkWriter
from migration.common.gc_pause import gc_paused
from migration.image.model import MetadataImage
from migration.observability.progress import NullProgress, Progress
from migration.zk import paths
from migration.zk.changes import Targets
from migration.zk.fence import ZkFence
from migration.zk.multiread import TreeReader
from migration.zk.multiwrite import WriteOp
from migration.zk.reader import read_snapshot
from migration.zk.tree import list_trees, missing_parents
from migration.zk.tree_read import ZkSnapshot

SYNC_ATTEMPTS = 3


class MigrationStateMismatchError(RuntimeError):
    """``/migration`` and the image disagree: syncing would lose what ZooKeeper holds."""


@dataclass
class SyncResult:
    plan: Plan
    snapshot: ZkSnapshot
    fence: ZkFence | None = None  # after the write (None for a diff)


def check_migration_state(snap: ZkSnapshot, image: MetadataImage) -> None:
    """Refuse a sync whose image is behind what ``/migration`` says ZooKeeper holds."""
    if snap.migration is None:
        return
    m = snap.migration.value
    same_offset = m.kraft_metadata_offset == image.offset >= 0
    if m.kraft_metadata_offset > image.offset or (
        same_offset and m.kraft_metadata_epoch != image.epoch
    ):
        raise MigrationStateMismatchError(
            f"{paths.MIGRATION} says ZooKeeper holds the log up to offset "
            f"{m.kraft_metadata_offset} (epoch {m.kraft_metadata_epoch}), but the image "
            f"ends at offset {image.offset} (epoch {image.epoch}): this is not the log "
            "ZooKeeper was migrated into (a leftover /migration from an earlier attempt?); "
            "nothing was written"
        )


def copied_scope(snap: ZkSnapshot) -> Scope:
    """What ZooKeeper holding ``snap`` and an image made by copying ``snap`` into an
    image without topics (a quorum in PRE_MIGRATION) can disagree on: every entity but
    the topics the copy carries over as they stand -- a topic the translation keeps with
    its id, its partitions and each partition's state is what the image's mirror of it
    renders (the same leader, ISR, epochs and recovery state; the controller epoch ours
    is above). Left in: topics pending deletion (the copy leaves them out, the sync
    deletes them) and topics with a partition lacking its state znode or its listing (the
    copy takes Kafka's defaults, the sync writes them). Configs: a copied topic's is
    carried over key for key, so only the odd topics', the orphans' (no copied topic),
    the missing ones (a copied topic without its znode: Kafka's ``{}``) and every other
    entity's (few: brokers, users, clients, IPs). Each is one read of the snapshot,
    no comparison per partition: the sync after the copy is as long as what differs.
    Computed before the claim (the pre-copy's read), then widened by what each
    catch-up read again (:func:`reread_scope`)."""
    odd = {
        name
        for name, topic in snap.topics.items()
        if name in snap.pending_deletions
        or topic.partitions.keys() != topic.assignment.partitions.keys()
        or any(p.state is None for p in topic.partitions.values())
    }
    with_config = snap.topic_config_names
    copied = snap.topics.keys() - snap.pending_deletions
    topics = odd | (with_config - copied) | (copied - with_config)
    configs = {paths.TOPIC_CONFIGS + name for name in topics}
    configs.update(SnapshotView(snap, None).entity_config_paths())
    return Scope(topics=frozenset(odd), configs=frozenset(configs))


def reread_scope(old: ZkSnapshot, new: ZkSnapshot, targets: Targets) -> Scope:
    """What a catch-up that read ``targets`` again (ZooKeeper went from ``old`` to
    ``new`` there) adds to the sync's scope: each entity read again, whole (a topic
    with its config, a partition alone, a config entity with its clients' znodes); ACLs,
    tokens and the producer-id block are always compared (:func:`copied_scope`)."""
    partitions: dict[str, set[int]] = {}
    for name, pid in targets.partitions:
        partitions.setdefault(name, set()).add(pid)
    configs = {paths.TOPIC_CONFIGS + name for name in targets.topics}
    for kind, name in targets.configs:
        base = paths.config_entity(kind, name)
        configs.update((base, base + "/clients"))
        below = base + "/"
        configs.update(p for s in (old, new) for p in s.entity_config_znodes if p.startswith(below))
    return Scope(
        topics=targets.topics | partitions.keys(),
        partitions={name: frozenset(pids) for name, pids in partitions.items()},
        configs=frozenset(configs),
        acls=None,
        tokens=None,
    )


def compare(
    client: TreeReader,
    image: MetadataImage,
    zk_controller_epoch: int | None,
    secret: str | None,
    progress: Progress | None = None,
    *,
    snapshot: ZkSnapshot | None = None,
    scope: Scope = EVERYTHING,
) -> SyncResult:
    """Read ZooKeeper (or take ``snapshot``, read by the caller since it last changed
    anything) and plan what makes it equal ``image`` (partition states naming
    ``zk_controller_epoch``; None: the current ``/controller_epoch``), within ``scope``
    (the entities that can differ). Writes nothing. Malformed znodes raise the first
    one's ZnodeFormatError."""
    snap = snapshot if snapshot is not None else read_snapshot(client, progress)
    if snap.malformed:
        first = snap.malformed[0]
        raise type(first)(
            first.path, f"{first.problem} ({len(snap.malformed)} malformed znode(s) in all)"
        )
    if zk_controller_epoch is None:
        zk_controller_epoch = snap.controller_epoch.value if snap.controller_epoch else 0
    desired = ImageView(image, zk_controller_epoch, secret)
    partial = SnapshotView(snap, secret)
    names = snap.topics if scope.topics is None else scope.topics & snap.topics.keys()
    suspects = [n for n in names if partial.needs_listing(n, desired.assignment(n))]
    listed = list_trees(client, [paths.topic(n) for n in suspects])
    current = SnapshotView(snap, secret, {n: listed[paths.topic(n)] for n in suspects})
    with gc_paused():  # a comparison per partition over two large trees
        planned = plan(current, desired, scope, secret)
    parents = missing_parents(client)
    planned.ops[:0] = parents
    for op in parents:
        planned.note("parents", "create", op.path)
    return SyncResult(planned, snap)


def full_sync(
    writer: ZkWriter,
    fence: ZkFence,
    image: MetadataImage,
    progress: Progress | None = None,
    *,
    snapshot: ZkSnapshot | None = None,
    scope: Scope = EVERYTHING,
) -> SyncResult:
    """Make ZooKeeper equal ``image`` and record its offset in ``/migration``. Raises
    FencedError (stop), MigrationStateMismatchError (nothing written), or
    SyncNeededError when ZooKeeper kept changing under the sync. ``snapshot``: what the
    caller read of ZooKeeper under this fence (the copy's read), planned from at first,
    within ``scope`` (what can differ between it and ``image``: :func:`copied_scope` and
    the changes committed since), instead of reading again; a retry reads and compares
    everything."""
    progress = progress or NullProgress()
    for attempt in range(1, SYNC_ATTEMPTS + 1):
        result = compare(
            writer.client,
            image,
            fence.zk_controller_epoch,
            writer.secret,
            progress,
            snapshot=snapshot if attempt == 1 else None,
            scope=scope if attempt == 1 and snapshot is not None else EVERYTHING,
        )
        check_migration_state(result.snapshot, image)
        try:
            result.fence = writer.apply(fence, result.plan.ops, image.offset, image.epoch)
            writer.client.repair_acls(
                op.path for op in result.plan.ops if op.kind == WriteOp.SET_DATA
            )
            return result
        except SyncNeededError as refused:
            if attempt == SYNC_ATTEMPTS:
                raise
            fence = refused.fence or fence  # the multis before the refused one landed
    raise AssertionError("unreachable")
