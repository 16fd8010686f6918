"""The migration driver's ladder: the rung of each phase (:data:`RUNGS`), each a step of
:class:`Rungs`, which :class:`~.driver.MigrationDriver` mixes in, and the claim on
ZooKeeper the rungs take, keep and lose.

Contract: a rung runs on the driver's poll thread, on one immutable snapshot of its
inputs (:class:`~.controller_port.Inputs`), and returns the outcome sentence ``migration
status`` shows; it moves ``_phase`` forward (or back, to claim or sync again) itself. The
poll thread owns every field a rung reads or sets (see the driver's module doc).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import assert_never

from kazoo.exceptions import NoNodeError

from migration.bridge.plan import EVERYTHING, Scope
from migration.bridge.sync import MigrationStateMismatchError, full_sync
from migration.bridge.writer import SyncNeededError, ZkUnavailableError, ZkWriter
from migration.common.gc_pause import release_gradually
from migration.controller.config import ControllerConfig
from migration.driver import readiness
from migration.driver.broker_rpcs import BrokerRpcWorker, ZkBrokerRpcs
from migration.driver.controller_port import ControllerPort, Inputs, LeadershipLostError
from migration.driver.live_copy import OpenCopy, start_copy
from migration.driver.peers import migration_checks, voter_answers
from migration.driver.states import Phase
from migration.driver.stats import DriverStats
from migration.driver.status import DriverView
from migration.driver.write_behind import WriteBehind
from migration.image.model import ZK_MIGRATION_PRE
from migration.image.publishing import ImageChange
from migration.records import versions
from migration.zk import paths
from migration.zk.changes import targets_of
from migration.zk.client import CONNECTION_ERRORS, ZkClient, ZkConnectError
from migration.zk.fence import FencedError, ZkFence, claim, read_migration, recover
from migration.zk.model.cluster import parse_cluster_id
from migration.zk.reader import read_snapshot, read_targets
from migration.zk.tree_read import ZkSnapshot
from migration.zk.tree_watch import TreeWatch, WatchLostError
from migration.zkcontroller.channel import ControllerChannel

log = logging.getLogger(__name__)

CHANGES_PER_WRITE = 256  # committed changes merged into one fenced write
PRE_CLAIM_ROUNDS = 5  # catch-up rounds before the claim, at most
SETTLED_PATHS = 1_000  # a round that finds fewer changes is the last before the claim
UNREACHABLE_ERRORS: tuple[type[Exception], ...] = (ZkConnectError, *CONNECTION_ERRORS)
"""What says ZooKeeper is out of reach, rather than something wrong with it or here."""


class Rungs:
    """The steps of the ladder, one a phase, and the claim they hold on ZooKeeper. A
    mixin: :class:`~.driver.MigrationDriver` sets these fields and runs the steps on its
    poll thread; ``_check_lag`` is its own (the write-behind bound, also checked from
    the publisher's thread)."""

    config: ControllerConfig
    cluster_id: str
    port: ControllerPort
    stats: DriverStats
    _behind: WriteBehind
    _view: DriverView
    _phase: Phase
    _fence: ZkFence | None
    _zk: ZkClient | None
    _writer: ZkWriter | None
    _rpcs: BrokerRpcWorker | None
    _copied: tuple[ZkSnapshot, Scope, int] | None  # the copy: its ZooKeeper, scope, end offset
    _copy: OpenCopy | None  # the migration's transaction, open from the pre-copy to commit
    _watch: TreeWatch | None  # the tree's watch, from the pre-copy's read to the commit

    def _check_lag(self) -> None:
        """Refuse or accept admin writes by the write-behind lag: the driver's."""
        raise NotImplementedError

    def _wait_for_controller_quorum(self, i: Inputs) -> str:
        pre = i.image.zk_migration_state == ZK_MIGRATION_PRE
        problem = readiness.metadata_version_problem(i.image)
        if problem:
            return problem
        note = ""
        if pre:  # a migration already started goes on whatever the voters say
            answers = voter_answers(
                self.port.controller.settings.voters,
                self.config.node_id,
                self.config.zk_migration_enabled,
            )
            problem = readiness.quorum_problem(answers)
            if problem:
                return problem
            note = readiness.quorum_note(answers)
        zk = self._client()
        try:
            raw, _ = zk.get(paths.CLUSTER_ID)
            zk_id: str | None = parse_cluster_id(paths.CLUSTER_ID, raw).id
        except NoNodeError:
            zk_id = None
        problem = readiness.cluster_id_problem(self.cluster_id, zk_id)
        if problem:
            return problem
        found = read_migration(zk)
        migration = found[0] if found else None
        self._view = replace(self._view, migration_znode=migration)
        if pre:
            problem = readiness.stale_migration_problem(migration)
            if problem:
                return problem
            self._phase = Phase.WAIT_FOR_BROKERS
            return "the controller quorum is ready for the migration" + note
        self._phase = Phase.BECOME_CONTROLLER
        return "the metadata was migrated already (MIGRATION): taking over ZooKeeper"

    def _wait_for_brokers(self, i: Inputs) -> str:
        try:
            snap = read_snapshot(self._watched())
        except WatchLostError as exc:
            self._drop_copy()
            return f"the watch of ZooKeeper's tree was lost ({exc}); setting it again"
        self._view = replace(self._view, zk_broker_ids=tuple(sorted(snap.brokers)))
        problem = readiness.preflight_problem(snap)
        if problem:
            return problem
        checks = migration_checks(
            i.image,
            readiness.expected_brokers(snap),
            self.config.inter_broker_listener,
            self.config.node_id,
        )
        problem = readiness.broker_problem(snap, i.image, checks, self.cluster_id)
        if problem:
            return problem
        ready = f"every broker is ready: {sorted(readiness.expected_brokers(snap))}"
        self._view = replace(self._view, outcome=f"{ready}; copying before the claim")
        self._copy = start_copy(
            snap,
            self.port,
            i.epoch,
            secret=self.secret,
            batch_bytes=self.config.migration_batch_bytes,
            min_batch_size=self.config.migration_min_batch_size,
            metadata_version=i.image.features.get(versions.METADATA_VERSION),
        )
        rounds = self._catch_up_before_claim(self._copy)
        self._phase = Phase.BECOME_CONTROLLER
        return (
            f"{ready}; {sum(self._copy.records.values())} records streamed into the "
            "migration's open transaction before the claim, the tree watched since its read"
            f" ({rounds})"
        )

    def _catch_up_before_claim(self, copy: OpenCopy) -> str:
        """Catch the open copy up with what changed while it was read and appended, a
        round at a time while ZooKeeper's controller still serves, until a round finds
        fewer than ``SETTLED_PATHS`` changes (at most ``PRE_CLAIM_ROUNDS``): the catch-up
        inside the pause is then one short round's. Says what the rounds did."""
        assert self._watch is not None
        done: list[int] = []
        try:
            for _ in range(PRE_CLAIM_ROUNDS):
                changed, _events = self._watch.take()
                if not changed:
                    break
                targets = targets_of(changed)
                reread = read_targets(self._watch.client, targets)
                done.append(len(copy.catch_up(targets, reread, self.secret)))
                if len(changed) < SETTLED_PATHS:
                    break
        except BaseException as exc:
            copy.abandon(f"the migration copy failed half-way: {exc}")
            self._drop_copy()
            raise
        return f"{len(done)} catch-up rounds before the claim appended {sum(done)} records"

    def _become_controller(self, i: Inputs) -> str:
        if i.image.zk_migration_state == ZK_MIGRATION_PRE and self._copy is None:
            self._phase = Phase.WAIT_FOR_BROKERS
            return "no copy is open: reading ZooKeeper again before the claim"
        zk = self._client()
        try:
            fence = claim(zk, i.node_id, i.epoch)
        except FencedError as exc:
            return f"claiming ZooKeeper failed, retrying: {exc}"
        self._fence = fence
        self._behind.zk_offset = fence.offset
        self._writer = ZkWriter(zk, secret=self.config.password_encoder_secret)
        claimed = (
            f"claimed ZooKeeper: /controller names KRaft controller {i.node_id} (epoch "
            f"{i.epoch}), /controller_epoch is {fence.zk_controller_epoch}"
        )
        if i.image.zk_migration_state == ZK_MIGRATION_PRE:
            self._phase = Phase.ZK_MIGRATION
            return claimed
        self._phase = Phase.SYNC_KRAFT_TO_ZK
        if not fence.migration.copy_done:
            return claimed + (
                f"; {paths.MIGRATION} was never written after the copy committed: the sync "
                "writes it from the log"
            )
        return claimed

    def _zk_migration(self, i: Inputs) -> str:
        assert self._fence is not None and self._writer is not None
        if i.image.zk_migration_state != ZK_MIGRATION_PRE:  # committed; /migration failed
            self._phase = Phase.SYNC_KRAFT_TO_ZK
            return "the copy is committed; the sync writes /migration from the log"
        copy, watch = self._copy, self._watch
        if copy is None or watch is None:
            self._phase = Phase.WAIT_FOR_BROKERS
            return "no copy is open: reading ZooKeeper again"
        self._view = replace(self._view, outcome="catching up with changes since the pre-copy")
        try:
            changed, events = watch.take()
            targets = targets_of(changed)
            caught = copy.catch_up(targets, read_targets(watch.client, targets), self.secret)
            result = copy.commit()
        except LeadershipLostError as exc:
            self._drop_copy()
            return f"the copy was abandoned (leadership lost: {exc}); the next leader copies again"
        except WatchLostError as exc:
            copy.abandon(f"the watch of ZooKeeper's tree was lost during the copy: {exc}")
            self._drop_copy()
            return f"the copy was abandoned (the watch of ZooKeeper's tree was lost: {exc})"
        except BaseException as exc:
            copy.abandon(f"the migration copy failed half-way: {exc}")
            self._drop_copy()
            raise
        self._drop_copy()
        fence = self._writer.apply(self._fence, [], result.end_offset, i.epoch)
        self._set_fence(fence)
        log.info("%s", result.summary(i.epoch, sorted(copy.snapshot.brokers)))
        log.info(
            "the copy's catch-up after the claim: %d paths changed since the pre-copy's "
            "read (%d watch events), %d entities read again, %d records appended",
            len(changed),
            events,
            targets.count(),
            len(caught),
        )
        # ZooKeeper as of the claim: the sync plans from it
        self._copied = (copy.snapshot, copy.scope, result.end_offset)
        self._phase = Phase.SYNC_KRAFT_TO_ZK
        return (
            f"copied {result.total_records} records in {result.batches} batches in one "
            f"transaction (offsets up to {result.end_offset}); {paths.MIGRATION} written; "
            f"{len(caught)} of the records caught up after the claim"
        )

    def _sync_kraft_to_zk(self, i: Inputs) -> str:
        assert self._fence is not None and self._writer is not None
        image = self._behind.take_latest()
        if image is None or image.offset < i.image.offset:
            return "waiting for the committed image to be published"
        copied, self._copied = self._copied, None
        snapshot, scope = None, EVERYTHING
        if copied is not None:
            snapshot, scope = copied[0], _after_copy(copied[1], copied[2], self._behind.backlog)
        try:
            with self.stats.snapshot_ms.time():
                result = full_sync(self._writer, self._fence, image, snapshot=snapshot, scope=scope)
        except MigrationStateMismatchError as exc:
            return f"refusing to sync: {exc}"
        except FencedError as exc:
            self.stats.write_failed("fenced")
            self._lose_claim()
            return f"fenced: {exc}; claiming ZooKeeper again"
        assert result.fence is not None
        if snapshot is not None:  # the copy's read of ZooKeeper: freed off the pause
            release_gradually(snapshot.topics, "copied-snapshot")
        self._set_fence(result.fence)
        behind = self._behind
        behind.backlog = [c for c in behind.backlog if c.manifest.last_offset > image.offset]
        self._phase = Phase.KRAFT_CONTROLLER_TO_BROKER_COMM
        return (
            f"ZooKeeper synced with the log at offset {image.offset}: "
            f"{len(result.plan.ops)} operations"
        )

    def _kraft_controller_to_broker_comm(self, i: Inputs) -> str:
        assert self._fence is not None
        image = self._behind.latest or i.image
        if self._rpcs is None:
            self._rpcs = BrokerRpcWorker(
                ZkBrokerRpcs(
                    i.node_id,
                    self._fence.zk_controller_epoch,
                    self.config.inter_broker_listener,
                    ControllerChannel(),
                )
            )
        told = self._rpcs.full(image)
        self._phase = Phase.DUAL_WRITE
        return (
            f"UpdateMetadata and LeaderAndIsr (FULL) on their way to {told} ZooKeeper brokers "
            "(built and sent on their own thread; each change after them follows them)"
        )

    def _dual_write(self, i: Inputs) -> str:
        assert self._writer is not None and self._rpcs is not None
        if self._fence is None:
            return self._recover_fence()
        behind = self._behind
        behind.pull()
        behind.backlog = [c for c in behind.backlog if c.manifest.last_offset > self._fence.offset]
        if any(c.delta is None for c in behind.backlog):
            self._phase = Phase.SYNC_KRAFT_TO_ZK
            return "a snapshot was loaded: running the full sync"
        written = 0
        while behind.backlog:
            chunk = behind.backlog[:CHANGES_PER_WRITE]
            self._view = replace(
                self._view,
                outcome=f"writing {len(chunk)} committed changes to ZooKeeper "
                f"(up to offset {chunk[-1].manifest.last_offset})",
            )
            try:
                with self.stats.delta_ms.time():
                    fence = self._writer.write_changes(self._fence, chunk)
            except SyncNeededError as exc:
                self.stats.write_failed("drift")
                self._fence = exc.fence or self._fence
                self._phase = Phase.SYNC_KRAFT_TO_ZK
                return f"ZooKeeper drifted ({exc}): running the full sync"
            except FencedError as exc:
                self.stats.write_failed("fenced")
                self._lose_claim()
                return f"fenced: {exc}; claiming ZooKeeper again"
            except ZkUnavailableError as exc:
                self.stats.write_failed("unavailable")
                self._fence = None  # learn what landed once it is back
                log.warning("migration driver: %s", exc)  # names the address: the log only
                return (
                    "ZooKeeper unreachable past the reconnect timeout; "
                    f"{len(behind.backlog)} changes kept"
                )
            self._set_fence(fence)
            for change in chunk:
                self._rpcs.publish(change)
            del behind.backlog[: len(chunk)]
            written += len(chunk)
        self._check_lag()
        return f"dual-writing: ZooKeeper holds the log up to offset {behind.zk_offset}" + (
            f" ({written} changes written now)" if written else ""
        )

    # --- the claim and the session -------------------------------------------------------

    def _recover_fence(self) -> str:
        assert self._writer is not None
        last = self._view.fence
        if last is None:
            self._lose_claim()
            return "no claim held: claiming ZooKeeper again"
        try:
            fence = recover(self._client(), last)
        except FencedError as exc:
            self._lose_claim()
            return f"fenced: {exc}; claiming ZooKeeper again"
        except UNREACHABLE_ERRORS as exc:
            # only these mean out of reach; anything else (a malformed /migration, a bug)
            # fails the poll: _run logs it with its traceback and shows it as the outcome
            return f"ZooKeeper still unreachable ({type(exc).__name__}); changes kept"
        self._set_fence(fence)
        return f"ZooKeeper is back: it holds the log up to offset {fence.offset}"

    def _lose_claim(self) -> None:
        self._fence = None
        if self._rpcs is not None:
            self._rpcs.close()
            self._rpcs = None
        self._phase = Phase.BECOME_CONTROLLER

    def _set_fence(self, fence: ZkFence) -> None:
        self._fence = fence
        self._behind.zk_offset = fence.offset
        self._view = replace(self._view, fence=fence, migration_znode=fence.migration)

    def _client(self) -> ZkClient:
        if self._zk is None:
            self._zk = self._connect_zk()
        return self._zk

    def _connect_zk(self) -> ZkClient:
        return ZkClient(
            self.config.zk_connect,
            timeout_s=self.config.zk_connection_timeout_ms / 1000,
            session_timeout_s=self.config.zk_session_timeout_ms / 1000,
            security=self.config.zk_security,
        )

    @property
    def secret(self) -> str | None:
        return self.config.password_encoder_secret

    def _watched(self) -> ZkClient:
        """The session to read the tree through for a copy: its own, under a persistent
        recursive watch whose record of changes starts now (set on first use, lost
        with its connection: then WatchLostError, and the next call sets it again)."""
        if self._watch is None:
            self._watch = TreeWatch(self._connect_zk())
        try:
            self._watch.restart()
        except WatchLostError:
            self._drop_copy()
            raise
        return self._watch.client

    def _drop_copy(self) -> None:
        """Forget the open copy (its owner abandoned or committed it) and its watch."""
        self._copy = None
        if self._watch is not None:
            self._watch.close()
            self._watch = None


def _after_copy(scope: Scope, end: int, backlog: list[ImageChange]) -> Scope:
    """What the sync right after this leader's copy compares: what the copy itself can
    leave different (``scope``: :attr:`~.live_copy.OpenCopy.scope`, reckoned before the
    claim) and whatever the changes committed after the copy's end touched
    (everything, after a snapshot)."""
    for change in backlog:
        if change.manifest.last_offset <= end:
            continue
        if change.delta is None:
            return EVERYTHING
        scope = scope.union(Scope.of_change(change.previous, change.delta))
    return scope


Rung = Callable[[Rungs, Inputs], str]
"""One rung of the ladder: the step of one phase, returning the poll's outcome."""


def _rung(phase: Phase) -> Rung | None:
    """The rung of ``phase``; None for INACTIVE, which has none. Exhaustive: mypy
    refuses a Phase added without a case here."""
    match phase:
        case Phase.INACTIVE:
            return None
        case Phase.WAIT_FOR_CONTROLLER_QUORUM:
            return Rungs._wait_for_controller_quorum
        case Phase.WAIT_FOR_BROKERS:
            return Rungs._wait_for_brokers
        case Phase.BECOME_CONTROLLER:
            return Rungs._become_controller
        case Phase.ZK_MIGRATION:
            return Rungs._zk_migration
        case Phase.SYNC_KRAFT_TO_ZK:
            return Rungs._sync_kraft_to_zk
        case Phase.KRAFT_CONTROLLER_TO_BROKER_COMM:
            return Rungs._kraft_controller_to_broker_comm
        case Phase.DUAL_WRITE:
            return Rungs._dual_write
        case _:
            assert_never(phase)


RUNGS: Mapping[Phase, Rung | None] = MappingProxyType({phase: _rung(phase) for phase in Phase})
"""Every phase's rung, built once (None: the phase has none)."""
