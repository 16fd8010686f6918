"""The migration driver: on every controller, one thread that polls; on the active one it
walks Kafka's phases, from waiting for the quorum and the brokers to dual-writing.

Contract:

- **One decision ladder per poll**, on an immutable snapshot of its inputs
  (:class:`~.controller_port.Inputs`: activity, leader epoch, committed image); each
  rung (one a phase: :mod:`.rungs`) returns the outcome sentence ``migration status``
  shows. The poll never dies: an
  exception becomes the outcome and the poll runs again after a backoff (100 ms
  doubling to 2 s, reset whenever the phase moves).
- **An outcome never names ZooKeeper's address**: it is served to anyone who reaches
  DescribeMigration or the migration page. ZooKeeper out of reach is said in neutral
  words, and ``zookeeper.connect`` (whole, normalized or one ``host:port`` of it) is
  replaced by ``<zookeeper.connect>`` in every other sentence; the controller's log keeps
  each error whole.
- **Leader epochs.** Losing leadership, or a new epoch, drops everything the driver
  held (the claim, the broker channel, queued changes) and starts again from
  WAIT_FOR_CONTROLLER_QUORUM; the copy's appends carry their epoch and do nothing
  under another one; ZooKeeper writes are fenced by the claim.
- **Refusals instead of damage**: PRE_MIGRATION with a ``/migration`` that says a copy
  finished (left from an earlier attempt) is refused; MIGRATION with a ``/migration``
  never written (a crash between the copy's commit and it) is recovered by the full
  sync, which writes it from the log.
- **Dual-write**: committed changes arrive from the image publisher (its own thread);
  the driver writes them to ZooKeeper in order (:class:`~migration.bridge.writer.ZkWriter`),
  then tells the ZooKeeper brokers (:class:`~.broker_rpcs.BrokerRpcWorker`). A change is
  dropped only once written. FencedError: claim again; SyncNeededError: full sync;
  ZooKeeper unreachable: keep the changes, recover the fence when it returns.
- **Finalization** (Kafka's way: controllers restarted with
  ``zookeeper.metadata.migration.enable=false``): the first active controller without
  the flag, in MIGRATION, commits ZkMigrationStateRecord(POST_MIGRATION); from then on
  no controller writes ZooKeeper again. Refused while any ZooKeeper-mode broker is still
  registered (Kafka finalizes anyway: docs/field-bugs.md#fb-25): the outcome names them, and the
  controller keeps dual-writing if it can reach ZooKeeper (``zookeeper.connect`` and
  ``inter.broker.listener.name`` still set), else renounces leadership to one that can.
- **Bounded write-behind**: past the bound, admin writes are refused until ZooKeeper
  catches up (:mod:`.write_behind` keeps the changes and the lag).

Threading: the poll thread owns every field but ``_behind`` (fed by the publisher
thread, see :class:`~.write_behind.WriteBehind`) and ``_view`` (replaced whole; read by
the status RPC from any thread).
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import replace

from migration.controller.config import ControllerConfig
from migration.driver import finalization
from migration.driver.controller_port import ControllerPort, Inputs
from migration.driver.rungs import RUNGS, Rungs
from migration.driver.states import ZK_MIGRATION_STATE_NAMES, Phase
from migration.driver.stats import DriverStats
from migration.driver.status import DriverView, describe
from migration.driver.write_behind import WriteBehind, refusal
from migration.image.model import (
    ZK_MIGRATION_MIGRATION,
    ZK_MIGRATION_NONE,
    ZK_MIGRATION_POST,
)
from migration.image.publishing import ImageChange
from migration.proto import controller_pb2 as cpb
from migration.zk.client import ConnectString, ZkConnectError

log = logging.getLogger(__name__)

POLL_MIN_S = 0.1
POLL_MAX_S = 2.0
_WRITING = frozenset(
    {Phase.SYNC_KRAFT_TO_ZK, Phase.KRAFT_CONTROLLER_TO_BROKER_COMM, Phase.DUAL_WRITE}
)
CONNECT_SHOWN = "<zookeeper.connect>"
UNREACHABLE = (
    "ZooKeeper could not be reached (the controller's log names the address and why); retrying"
)


def connect_forms(connect: str) -> tuple[str, ...]:
    """The ways ``connect`` (``zookeeper.connect``) may appear in a message: as given,
    normalized (ports added) and each ``host:port`` of it; longest first."""
    forms = {connect.strip()}
    forms.update(e.strip() for e in connect.partition("/")[0].split(",") if ":" in e)
    try:
        parsed = ConnectString.parse(connect)
    except ValueError:
        parsed = None
    if parsed is not None:
        forms.update((str(parsed), parsed.hosts, *parsed.hosts.split(",")))
    return tuple(sorted((f for f in forms if f), key=len, reverse=True))


def failure_outcome(exc: Exception) -> str:
    """The outcome of a poll that raised ``exc``: ZooKeeper out of reach in neutral words
    (its error names the connect string and the TLS or SASL failure)."""
    if isinstance(exc, ZkConnectError):
        return UNREACHABLE
    return f"the poll failed ({type(exc).__name__}: {exc}); retrying"


class MigrationDriver(Rungs):
    name = "zk-migration-driver"

    def __init__(self, config: ControllerConfig, cluster_id: str, port: ControllerPort) -> None:
        self.config = config
        self.cluster_id = cluster_id
        self.port = port
        self._behind = WriteBehind()
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._view = DriverView()
        forms = connect_forms(config.zk_connect) if config.zk_connect else ()
        self._connect = (  # a form, not inside a longer name or port
            re.compile(r"(?<![\w.-])(?:" + "|".join(map(re.escape, forms)) + r")(?!\w)")
            if forms
            else None
        )
        self.stats = DriverStats()
        # owned by the poll thread
        self._phase = Phase.INACTIVE
        self._epoch = -1
        self._fence = None  # the fields the rungs share are declared by Rungs
        self._zk = None
        self._writer = None
        self._rpcs = None
        self._copied = None
        self._copy = None
        self._watch = None
        self._thread = threading.Thread(target=self._run, name="migration-driver", daemon=True)

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self._reset()
        if self._zk is not None:
            self._zk.close()

    # --- the publisher (its own thread) --------------------------------------------------

    def publish(self, change: ImageChange) -> None:
        self._behind.publish(change)
        self._check_lag()
        self._wake.set()

    def _lag(self) -> int:
        """The write-behind lag against the committed image, not only what reached the
        driver: a write is acknowledged once committed, before its change is published
        here, and a lag of 0 must mean ZooKeeper holds every acknowledged write."""
        writing = self._phase in _WRITING
        if not writing or self._behind.zk_offset < 0:
            return 0
        return self._behind.lag(writing, self.port.committed_offset())

    def _check_lag(self) -> None:
        """Refuse or accept admin writes by the write-behind lag (publisher and poll
        threads)."""
        if self._phase == Phase.DUAL_WRITE:
            bound = self.config.max_write_behind_records
            self.port.refuse_admin_writes(refusal(self._lag(), bound))

    # --- status (any thread) -------------------------------------------------------------

    def zk_connected(self) -> bool | None:
        """Whether the driver's ZooKeeper session is connected (None: it has none)."""
        zk = self._zk
        return None if zk is None else bool(zk.kazoo.connected)

    def zk_broker_ids(self) -> tuple[int, ...] | None:
        """The brokers registered in ZooKeeper's /brokers/ids when the driver last read
        it (while it waited for the brokers); None when it never did."""
        return self._view.zk_broker_ids

    def status(self) -> cpb.DescribeMigrationResponse:
        view = self._view
        return describe(
            view,
            self.config,
            self.cluster_id,
            high_watermark=self._behind.high_watermark(
                view.inputs.high_watermark if view.inputs is not None else -1
            ),
            lag=self._lag(),
        )

    # --- the poll ------------------------------------------------------------------------

    def _run(self) -> None:
        backoff = POLL_MIN_S
        last_outcome = ""
        while not self._stopped.is_set():
            before = self._phase
            try:
                outcome = self._poll()
            except Exception as exc:  # the poll never dies
                log.exception("migration driver: poll failed")
                outcome = failure_outcome(exc)
            outcome = self._public(outcome)
            self._view = replace(self._view, phase=self._phase, outcome=outcome)
            self.stats.enter(self._phase)
            if outcome != last_outcome:
                log.info("migration driver [%s]: %s", self._phase.value, outcome)
                last_outcome = outcome
            if self._phase != before:
                backoff = POLL_MIN_S
                continue
            if self._phase == Phase.DUAL_WRITE:
                backoff = POLL_MIN_S
            self._wake.wait(backoff)
            self._wake.clear()
            backoff = min(backoff * 2, POLL_MAX_S)

    def _poll(self) -> str:
        inputs = self.port.inputs()
        self._view = replace(self._view, inputs=inputs)
        if not inputs.active:
            if self._phase != Phase.INACTIVE:
                self._reset()
            self._behind.drop_incoming()  # a leadership starts from a full sync of the image
            leader = "unknown" if inputs.leader_id is None else str(inputs.leader_id)
            return f"not the active controller (the active controller is {leader})"
        if inputs.epoch != self._epoch:
            self._reset()
            self._epoch = inputs.epoch
            self._phase = Phase.WAIT_FOR_CONTROLLER_QUORUM
        state = inputs.image.zk_migration_state
        if state == ZK_MIGRATION_NONE:
            # nothing to migrate (yet: an image before the bootstrap records says NONE
            # too): no phase to be in, and the next poll starts from the quorum again
            self._reset()
            return (
                "ZkMigrationState is NONE: this quorum was formatted for KRaft, not for a "
                "migration; nothing to do"
            )
        if state == ZK_MIGRATION_POST:
            self._reset()
            return "the migration is finalized (POST_MIGRATION): ZooKeeper is no longer written"
        if not self.config.zk_migration_enabled:
            if state == ZK_MIGRATION_MIGRATION:
                return self._finalize(inputs)
            return (
                f"ZkMigrationState is {ZK_MIGRATION_STATE_NAMES[state]} but "
                "zookeeper.metadata.migration.enable is false on this controller"
            )
        return self._climb(inputs)

    def _climb(self, i: Inputs) -> str:
        """The rung of the current phase (:data:`RUNGS`)."""
        rung = RUNGS[self._phase]
        if rung is None:  # _poll leaves INACTIVE before it climbs
            raise RuntimeError(f"the migration driver has no rung in phase {self._phase}")
        return rung(self, i)

    def _finalize(self, i: Inputs) -> str:
        zk_brokers = finalization.zk_brokers(i.image)
        if not zk_brokers:
            committed, outcome = finalization.commit_post_migration(self.port, i.epoch)
            if committed:
                self._reset()
            return outcome
        why = finalization.refusal(zk_brokers)
        if not (self.config.zk_connect and self.config.inter_broker_listener):
            self.port.renounce(i.epoch, why)
            return (
                f"{why}; without zookeeper.connect and inter.broker.listener.name this "
                "controller cannot keep dual-writing: leadership renounced"
            )
        return f"{why}; dual-writing goes on: {self._climb(i)}"

    # --- helpers -------------------------------------------------------------------------

    def _public(self, outcome: str) -> str:
        """``outcome`` without ZooKeeper's address (the module doc)."""
        return outcome if self._connect is None else self._connect.sub(CONNECT_SHOWN, outcome)

    @property
    def queued_changes(self) -> int:
        """Committed changes held for ZooKeeper, published or pulled (any thread)."""
        return self._behind.queued

    def _reset(self) -> None:
        """Drop whatever belonged to an earlier leadership."""
        self._phase = Phase.INACTIVE
        self._epoch = -1
        self._fence = None
        self._writer = None
        self._behind.reset()
        self._copied = None
        self._drop_copy()
        if self._rpcs is not None:
            self._rpcs.close()
            self._rpcs = None
        self.port.refuse_admin_writes(None)
        self._view = replace(self._view, fence=None)
