"""The ZooKeeper writer: committed metadata written behind KRaft, in Kafka's formats,
in batched multis fenced on ``/controller_epoch`` and ``/migration``.

Contract:

- Every multi is ``check(/controller_epoch @ v)`` + operations + ``set_data(/migration
  @ w)``, at most ``max_multi_bytes`` encoded (well under ``jute.maxbuffer``). ZooKeeper
  applies it whole or not at all.
- A change notification (``config_change_``, ``acl_changes_``) is never the first
  operation of a multi: it lands with the change it announces.
- A change's operations may take several multis. The intermediate ones advance
  ``/migration``'s version but keep the previous offset; only the last one records the
  change's last offset. So ``/migration``'s offset always means "everything up to here
  is in ZooKeeper", whatever fails in between.
- Up to ``depth`` multis are in flight at once. That is safe because each expects the
  ``/migration`` version the one before it leaves: when one is refused, every later one
  is refused too, and nothing after a gap can land.
- Outcomes: the change is written (a new :class:`ZkFence` is returned); or
  :class:`FencedError` (another controller claimed ZooKeeper: stop); or
  :class:`SyncNeededError` (ZooKeeper does not hold what the previous image says, or
  the change came from a snapshot: run the full sync, from the fence the error
  carries); or :class:`ZkUnavailableError`
  (ZooKeeper unreachable past the reconnect timeout: retry later or run the full sync).
  A change is never dropped silently.
- A lost connection or an expired session is not an error: the writer waits for kazoo
  to reconnect, reads ``/migration``'s version to learn how many of its multis landed,
  and sends the rest. A multi kazoo still holds when the writer gives up (ZooKeeper
  unreachable past ``reconnect_timeout_s``) may land later: being fenced on the
  version it expects, it lands only before anything else is written, and a write
  planned on the older version then fails with FencedError (the caller claims again
  and runs the full sync), never with a wrong tree.

Threading: one thread uses a writer (the ZooKeeper publisher's); the fence it returns
is the only state carried from one call to the next.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence

from migration.bridge.mirror import ImageView
from migration.bridge.plan import Plan, Scope, is_notification, plan
from migration.common.gc_pause import gc_paused
from migration.image.model import MetadataImage
from migration.image.publishing import ImageChange
from migration.zk import paths
from migration.zk.client import CONNECTION_ERRORS, Pending, ZkClient, ZkWriteError
from migration.zk.fence import FencedError, ZkFence, recover
from migration.zk.jute import ERR_BAD_VERSION, ERR_NO_NODE
from migration.zk.multiwrite import (
    DEFAULT_MULTI_BYTES,
    ERR_ROLLED_BACK,
    Op,
    WriteError,
    WriteResult,
    batches,
)

DEFAULT_DEPTH = 8
DEFAULT_RECONNECT_TIMEOUT_S = 30.0


class SyncNeededError(RuntimeError):
    """ZooKeeper cannot be brought up to date by this change alone: run the full sync,
    with ``fence`` -- the fence after the multis that did land before the refused one
    (they moved ``/migration``'s version)."""

    def __init__(self, message: str, fence: ZkFence | None = None) -> None:
        super().__init__(message)
        self.fence = fence


class ZkUnavailableError(RuntimeError):
    """ZooKeeper stayed unreachable past the reconnect timeout; nothing past
    ``/migration``'s offset is known to have landed."""


class _InterruptedError(Exception):
    """Multi ``index`` met a lost connection or session: its outcome is unknown."""

    def __init__(self, index: int) -> None:
        self.index = index


class _RefusedError(Exception):
    """Multi ``index`` was refused for a reason other than the fence."""

    def __init__(self, index: int, message: str) -> None:
        self.index = index
        self.message = message


ProgressFn = Callable[[int], None]


class ZkWriter:
    """Writes plans through ``client``. ``secret`` (the brokers' password.encoder.secret)
    encrypts broker password configs; ``progress`` hears how many operations each
    landed multi carried."""

    def __init__(
        self,
        client: ZkClient,
        *,
        secret: str | None = None,
        max_multi_bytes: int = DEFAULT_MULTI_BYTES,
        depth: int = DEFAULT_DEPTH,
        reconnect_timeout_s: float = DEFAULT_RECONNECT_TIMEOUT_S,
        progress: ProgressFn | None = None,
    ) -> None:
        self.client = client
        self.secret = secret
        self.max_multi_bytes = max_multi_bytes
        self.depth = depth
        self.reconnect_timeout_s = reconnect_timeout_s
        self.progress = progress
        self.resumes = 0
        """How many times a write resumed after a lost connection or session (a metric)."""

    # --- changes ---------------------------------------------------------------------

    def write_changes(self, fence: ZkFence, changes: Sequence[ImageChange]) -> ZkFence:
        """Write consecutive committed changes (one, or several a lagging writer merges)
        and record the last one's offset in ``/migration``."""
        if not changes:
            return fence
        scope: Scope | None = None
        for change in changes:
            if change.delta is None:
                raise SyncNeededError(
                    f"offsets {change.manifest.first_offset}..{change.manifest.last_offset} "
                    "were loaded from a snapshot (no delta): run the full sync"
                )
            step = Scope.of_change(change.previous, change.delta)
            scope = step if scope is None else scope.union(step)
        assert scope is not None
        first, last = changes[0], changes[-1]
        with gc_paused():  # 100,000s of operations over an image of millions of objects
            planned = self.plan(fence, first.previous, last.image, scope)
            multis, fences = self.multis(
                fence, planned.ops, last.manifest.last_offset, last.manifest.epoch
            )
        return self._send(multis, fences)

    def write_change(self, fence: ZkFence, change: ImageChange) -> ZkFence:
        return self.write_changes(fence, [change])

    def plan(
        self, fence: ZkFence, previous: MetadataImage, image: MetadataImage, scope: Scope
    ) -> Plan:
        """What ZooKeeper needs to go from ``previous`` to ``image`` within ``scope``."""
        epoch = fence.zk_controller_epoch
        return plan(
            ImageView(previous, epoch, self.secret),
            ImageView(image, epoch, self.secret),
            scope,
            self.secret,
        )

    # --- fenced, batched, pipelined multis --------------------------------------------

    def apply(self, fence: ZkFence, ops: Sequence[Op], offset: int, epoch: int) -> ZkFence:
        """Write ``ops`` in order, in as few fenced multis as the byte budget allows; the
        last one records ``offset``/``epoch`` in ``/migration``. Returns the fence after
        the last multi."""
        return self._send(*self.multis(fence, ops, offset, epoch))

    def _send(self, multis: list[list[Op]], fences: list[ZkFence]) -> ZkFence:
        start = 0
        while True:
            try:
                self._pipeline(multis, start)
                return fences[-1]
            except _InterruptedError as cut:
                start = self._landed(fences, cut.index)
            except _RefusedError as refused:
                raise SyncNeededError(refused.message, fences[refused.index]) from None

    def multis(
        self, fence: ZkFence, ops: Sequence[Op], offset: int, epoch: int
    ) -> tuple[list[list[Op]], list[ZkFence]]:
        """The fenced multis :meth:`apply` sends for ``ops`` (at least one), and the fence
        before each of them and after the last."""
        chroot = self.client.chroot
        closing, _ = fence.advance(offset, epoch)
        budget = self.max_multi_bytes - fence.guard().size(chroot) - closing.size(chroot) - 32
        multis: list[list[Op]] = []
        fences = [fence]
        chunks = list(batches(ops, budget, chroot, is_notification, self.client.acl)) or [[]]
        for i, chunk in enumerate(chunks):
            current = fences[-1]
            close, after = (
                current.advance(offset, epoch)
                if i == len(chunks) - 1
                else current.advance(current.offset, current.migration.kraft_metadata_epoch)
            )
            multis.append([current.guard(), *chunk, close])
            fences.append(after)
        return multis, fences

    def _pipeline(self, multis: list[list[Op]], start: int) -> None:
        inflight: deque[tuple[int, Pending[list[WriteResult]]]] = deque()
        for index in range(start, len(multis)):
            inflight.append((index, self.client.multi_write_async(multis[index])))
            if len(inflight) >= self.depth:
                self._confirm(multis, *inflight.popleft())
        while inflight:
            self._confirm(multis, *inflight.popleft())

    def _confirm(
        self, multis: list[list[Op]], index: int, pending: Pending[list[WriteResult]]
    ) -> None:
        try:
            # kazoo keeps a request queued while it reconnects: bounded, or a writer
            # would wait forever for a ZooKeeper that is gone.
            results = pending.get(timeout=self.reconnect_timeout_s)
        except CONNECTION_ERRORS:
            raise _InterruptedError(index) from None
        ops = multis[index]
        for position, (op, result) in enumerate(zip(ops, results, strict=True)):
            if isinstance(result, WriteError) and result.code not in ERR_ROLLED_BACK:
                fence_op = position in (0, len(ops) - 1)
                if fence_op and result.code in (ERR_BAD_VERSION, ERR_NO_NODE):
                    raise FencedError(
                        f"{op.path} is not at version {op.version} any more: another "
                        "controller has claimed ZooKeeper or written to it; this writer "
                        "stops"
                    )
                raise _RefusedError(
                    index,
                    f"{ZkWriteError(op, result.code)}: ZooKeeper does not hold what the "
                    "previous image says; run the full sync",
                )
        if self.progress is not None:
            self.progress(len(ops) - 2)

    def _landed(self, fences: list[ZkFence], index: int) -> int:
        """After a connection loss at multi ``index``: how many multis landed, learned
        from ``/migration``'s version once the client is connected again."""
        self.resumes += 1
        deadline = time.monotonic() + self.reconnect_timeout_s
        while True:
            if self.client.kazoo.connected:
                try:
                    now = recover(self.client, fences[0])
                    break
                except CONNECTION_ERRORS:
                    pass
            if time.monotonic() > deadline:
                raise ZkUnavailableError(
                    f"ZooKeeper at {self.client.connect_string} unreachable for "
                    f"{self.reconnect_timeout_s:g}s; /migration records what landed "
                    "(migration.zk.fence.recover reads it)"
                )
            time.sleep(0.05)
        landed = now.migration_version - fences[0].migration_version
        if not index <= landed < len(fences):
            raise FencedError(
                f"after reconnecting, {paths.MIGRATION} is at version {now.migration_version}; "
                f"this writer's multis leave {fences[index].migration_version}.."
                f"{fences[-1].migration_version}: another writer wrote meanwhile"
            )
        return landed
