"""Fencing ZooKeeper for a KRaft controller: the claim on ``/controller`` and
``/controller_epoch``, and the ``/migration`` znode whose version orders the writes.

Contract:

- :func:`claim` takes ZooKeeper away from whoever controls it (a ZooKeeper-mode
  controller broker, or an older KRaft controller) in ONE multi: ``/controller_epoch``
  is incremented with a check on the version read, the old ``/controller`` is deleted
  (checked on its version) and a persistent ``/controller`` naming the KRaft controller
  and its epoch is created. A ``/controller`` that already names a KRaft epoch at or
  above ours refuses the claim (:class:`FencedError`): a newer KRaft leader owns it.
- Right after the claim, ``/migration`` is written once, unconditionally but inside the
  new ``/controller_epoch`` fence, which tells the claimant the znode's current version
  (docs/field-bugs.md#fb-16: in Kafka, a stale version read before a deposed leader's
  late write made the new leader fail forever).
- The result is a :class:`ZkFence`, an immutable value passed to every write and
  returned, advanced, by it. Every later multi carries ``check(/controller_epoch @
  v)`` and ``set_data(/migration @ v')``: after another controller claims, all of them
  fail whole.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.model import cluster
from migration.zk.model.cluster import EMPTY_MIGRATION, ControllerZnode, MigrationZnode
from migration.zk.multiread import NodeData, ReadOp, TreeReader
from migration.zk.multiwrite import CreateMode, Op, WriteError, check, create, delete, set_data


class FencedError(RuntimeError):
    """Another controller owns ZooKeeper (a newer claim on ``/controller_epoch``, or a
    ``/migration`` version this writer did not leave). Stop writing; never retry
    blindly: a controller that is still the KRaft leader claims again and runs the full
    sync."""


@dataclass(frozen=True, slots=True)
class ZkFence:
    """What a KRaft controller holds after a claim, and after each of its writes.

    ``zk_controller_epoch`` is the value it set in ``/controller_epoch`` (written into
    every partition state, so a ZooKeeper controller after a rollback accepts them);
    ``controller_epoch_version`` that znode's version after the claim;
    ``migration_version`` the version ``/migration`` has after this writer's last
    landed multi, and ``migration`` the content it wrote there.
    """

    controller_id: int
    kraft_epoch: int
    zk_controller_epoch: int
    controller_epoch_version: int
    migration_version: int
    migration: MigrationZnode

    @property
    def offset(self) -> int:
        """The last log offset ZooKeeper is known to hold (-1: nothing copied yet)."""
        return self.migration.kraft_metadata_offset

    def lag(self, committed_offset: int) -> int:
        """How many committed offsets ZooKeeper has not caught up with yet."""
        return max(0, committed_offset - self.offset)

    def guard(self) -> Op:
        """The check that opens every multi of this controller."""
        return check(paths.CONTROLLER_EPOCH, self.controller_epoch_version)

    def advance(self, offset: int, epoch: int) -> tuple[Op, ZkFence]:
        """The ``/migration`` write that closes a multi, and the fence after it lands:
        the content names ``offset``/``epoch`` as written (pass the current ones for a
        multi that ends nothing)."""
        content = replace(
            self.migration,
            kraft_controller_id=self.controller_id,
            kraft_controller_epoch=self.kraft_epoch,
            kraft_metadata_offset=offset,
            kraft_metadata_epoch=epoch,
        )
        op = set_data(paths.MIGRATION, cluster.render_migration(content), self.migration_version)
        return op, replace(self, migration_version=self.migration_version + 1, migration=content)


def claim(client: ZkClient, controller_id: int, kraft_epoch: int) -> ZkFence:
    """Claim ZooKeeper for KRaft controller ``controller_id`` in ``kraft_epoch``.

    Raises :class:`FencedError` when ``/controller`` names a KRaft epoch >= ours, or when
    another claim raced ours (its multi changed ``/controller_epoch`` or ``/controller``
    first). Creates ``/controller_epoch`` (Kafka's first epoch, 1) and ``/migration``
    (all -1) if they are missing.
    """
    epoch_read, controller_read = client.multi_read(
        [(ReadOp.GET_DATA, paths.CONTROLLER_EPOCH), (ReadOp.GET_DATA, paths.CONTROLLER)]
    )
    ops: list[Op] = []
    if isinstance(controller_read, NodeData):
        owner = cluster.parse_controller(paths.CONTROLLER, controller_read.data)
        if owner.kraft_controller_epoch is not None and owner.kraft_controller_epoch >= kraft_epoch:
            raise FencedError(
                f"{paths.CONTROLLER} names KRaft controller {owner.broker_id} in epoch "
                f"{owner.kraft_controller_epoch}, not older than this controller's epoch "
                f"{kraft_epoch}: a newer leader owns ZooKeeper"
            )
        ops.append(delete(paths.CONTROLLER, controller_read.version))
    if isinstance(epoch_read, NodeData):
        zk_epoch = cluster.parse_controller_epoch(paths.CONTROLLER_EPOCH, epoch_read.data) + 1
        epoch_version = epoch_read.version + 1
        ops.insert(
            0,
            set_data(
                paths.CONTROLLER_EPOCH,
                cluster.render_controller_epoch(zk_epoch),
                epoch_read.version,
            ),
        )
    else:
        zk_epoch, epoch_version = 1, 0
        ops.insert(0, create(paths.CONTROLLER_EPOCH, cluster.render_controller_epoch(zk_epoch)))
    me = ControllerZnode(controller_id, int(time.time() * 1000), kraft_controller_epoch=kraft_epoch)
    ops.append(create(paths.CONTROLLER, cluster.render_controller(me), CreateMode.PERSISTENT))
    _claim_multi(client, ops, "claim /controller")
    return _learn_migration_version(client, controller_id, kraft_epoch, zk_epoch, epoch_version)


def _learn_migration_version(
    client: ZkClient, controller_id: int, kraft_epoch: int, zk_epoch: int, epoch_version: int
) -> ZkFence:
    """Write ``/migration`` once inside the new fence, keeping its offsets, to learn the
    version every later write must expect."""
    (found,) = client.multi_read([(ReadOp.GET_DATA, paths.MIGRATION)])
    current = (
        cluster.parse_migration(paths.MIGRATION, found.data)
        if isinstance(found, NodeData)
        else EMPTY_MIGRATION
    )
    content = replace(
        current, kraft_controller_id=controller_id, kraft_controller_epoch=kraft_epoch
    )
    raw = cluster.render_migration(content)
    write = (
        set_data(paths.MIGRATION, raw, -1)
        if isinstance(found, NodeData)
        else create(paths.MIGRATION, raw)
    )
    results = _claim_multi(
        client, [check(paths.CONTROLLER_EPOCH, epoch_version), write], "record /migration"
    )
    version = results[1] if type(results[1]) is int else 0  # a create leaves version 0
    return ZkFence(controller_id, kraft_epoch, zk_epoch, epoch_version, version, content)


def _claim_multi(client: ZkClient, ops: list[Op], what: str) -> list[object]:
    results = client.multi_write_async(ops).get()
    failed = [r for r in results if isinstance(r, WriteError) and r.code not in (0, -2)]
    if failed:
        raise FencedError(
            f"{what}: another controller changed {paths.CONTROLLER_EPOCH} or "
            f"{paths.CONTROLLER} meanwhile (ZooKeeper error {failed[0].code})"
        )
    return list(results)


def read_migration(client: TreeReader) -> tuple[MigrationZnode, int] | None:
    """``/migration``'s content and version, or None when it does not exist."""
    (found,) = client.multi_read([(ReadOp.GET_DATA, paths.MIGRATION)])
    if not isinstance(found, NodeData):
        return None
    return cluster.parse_migration(paths.MIGRATION, found.data), found.version


def recover(client: ZkClient, fence: ZkFence) -> ZkFence:
    """``fence`` as ZooKeeper has it now, after a write that may or may not have landed
    (ZooKeeper was unreachable): ``/migration``'s version and content say what landed.
    FencedError when another controller claimed or wrote meanwhile; the sync's timeout
    (a session timeout: an ensemble that answers pings but commits nothing would hold
    it for ever) when ZooKeeper is not back yet."""
    client.kazoo.sync_async(paths.MIGRATION).get(timeout=client.session_timeout_s)
    epoch_read, migration_read = client.multi_read(
        [(ReadOp.GET_DATA, paths.CONTROLLER_EPOCH), (ReadOp.GET_DATA, paths.MIGRATION)]
    )
    if not isinstance(epoch_read, NodeData) or not isinstance(migration_read, NodeData):
        raise FencedError(f"{paths.CONTROLLER_EPOCH} or {paths.MIGRATION} is gone")
    content = cluster.parse_migration(paths.MIGRATION, migration_read.data)
    ours = (content.kraft_controller_id, content.kraft_controller_epoch) == (
        fence.controller_id,
        fence.kraft_epoch,
    )
    if epoch_read.version != fence.controller_epoch_version or not ours:
        raise FencedError(
            f"{paths.CONTROLLER_EPOCH} is at version {epoch_read.version} (this controller "
            f"claimed {fence.controller_epoch_version}) and {paths.MIGRATION} names "
            f"controller {content.kraft_controller_id} in epoch "
            f"{content.kraft_controller_epoch}: another controller owns ZooKeeper"
        )
    return replace(fence, migration_version=migration_read.version, migration=content)
