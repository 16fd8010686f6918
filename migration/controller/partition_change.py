"""One partition's change, built as Kafka's KRaft controller builds it: the ISR and the
replicas asked for, a reassignment completed where the result allows, a leader elected
where needed, and the leader epoch bumped by Kafka's rules. AlterPartition and
partition reassignment (:mod:`.reassignment`) build their records here.

- A reassignment in flight (``adding`` or ``removing`` not empty) completes in whichever
  change leaves the ISR, without ``removing``, holding every target replica (``replicas``
  without ``removing``): ``replicas`` = the target, the ISR without ``removing``,
  ``adding`` and ``removing`` emptied.
- The leader stays while it is in the ISR and usable (:func:`usable`); else the first
  replica in the ISR that is usable, else none (-1).
- The leader epoch is bumped when the leader changes, when a replica is removed, and
  when the ISR shrinks where :func:`bump_on_isr_shrink` says so.
"""

from __future__ import annotations

from migration.controller.context import WriteContext
from migration.image.delta import changed_partition
from migration.image.model import MetadataImage, PartitionImage
from migration.proto import metadata_pb2 as mpb
from migration.records import versions

NO_LEADER = -1

Ids = tuple[int, ...]


def usable(image: MetadataImage, broker_id: int) -> bool:
    """Whether ``broker_id`` may lead or join an ISR: registered, unfenced, not in a
    controlled shutdown."""
    reg = image.brokers.get(broker_id)
    return reg is not None and not reg.fenced and not reg.in_controlled_shutdown


def bump_on_isr_shrink(ctx: WriteContext, image: MetadataImage) -> bool:
    """Kafka's rule: an ISR shrink bumps the leader epoch below metadata version
    3.6-IV0, and always while the controller runs a ZooKeeper migration."""
    level = image.features.get(versions.METADATA_VERSION)
    return bool(ctx.settings.zk_migration_enabled) or (
        level is not None and level < versions.IBP_3_6_IV0
    )


def partition_change(
    ctx: WriteContext,
    topic_id: bytes,
    index: int,
    p: PartitionImage,
    *,
    isr: Ids | None = None,
    moving: tuple[Ids, Ids, Ids] | None = None,
) -> mpb.PartitionChangeRecord | None:
    """The record that moves ``p`` (in ``ctx.image``) to the ISR ``isr`` and to the
    replicas, adding and removing replicas ``moving`` (each unchanged when None), by the
    module's rules; None when nothing would change."""
    image = ctx.image
    replicas, adding, removing = moving or (p.replicas, p.adding_replicas, p.removing_replicas)
    new_isr = p.isr if isr is None else isr
    if adding or removing:
        target = tuple(r for r in replicas if r not in removing)
        kept = tuple(r for r in new_isr if r not in removing)
        if target and set(target) <= set(kept):
            replicas, new_isr, adding, removing = target, kept, (), ()
    leader = p.leader
    if not (leader in new_isr and usable(image, leader)):
        leader = next((r for r in replicas if r in new_isr and usable(image, r)), NO_LEADER)
    change = mpb.PartitionChangeRecord(partition_id=index, topic_id=topic_id)
    changed = False
    for field, old, new in (
        ("isr", p.isr, new_isr),
        ("replicas", p.replicas, replicas),
        ("adding_replicas", p.adding_replicas, adding),
        ("removing_replicas", p.removing_replicas, removing),
    ):
        if tuple(new) != old:
            getattr(change, field).ids.extend(new)
            changed = True
    shrunk = not set(p.isr) <= set(new_isr)
    if (
        leader != p.leader
        or not set(p.replicas) <= set(replicas)
        or (shrunk and bump_on_isr_shrink(ctx, image))
    ):
        change.leader = leader
        changed = True
    return change if changed else None


def after(p: PartitionImage, change: mpb.PartitionChangeRecord | None) -> PartitionImage:
    """``p`` once ``change`` (None: nothing) is applied."""
    return p if change is None else changed_partition(p, change)
