"""The rehearsal's real-Kafka engine: the migration rehearsed on Apache Kafka's own
brokers and controllers (Kafka :data:`~migration.local.kafka_cluster.VERSION`), driven
as ``zk2kraft kafka migrate`` drives production -- the same inventory-driven run
(:mod:`migration.operate.run`), its gates, audits and rollback.

Contracts:

- :func:`choose` picks the engine: ``zk2kraft`` when asked; Kafka when asked (it must be
  installed: :class:`~migration.local.kafka_release.KafkaUnavailableError` otherwise),
  or by default when it is installed and production has at most :data:`MAX_BROKERS`
  brokers (each one a JVM on this machine); the choice says why.
- :class:`KafkaEngine` runs the rehearsal's phases from ``brokers`` on, under the same
  names and into the same report sections as zk2kraft's engine: Kafka ZooKeeper-mode
  brokers with production's ids and racks on the loaded copy; Kafka's controllers
  provisioned, formatted and started by the run (``controllers``); every broker but the
  last rolled with the migration flag (``enable-migration``); the last one, Kafka's copy
  and dual-write (``copy``: Kafka's own figures from the copying controller's
  ``server.log``, records by type from its ``__cluster_metadata``); the synthetic admin
  workload through the brokers, the lag read from the log and ``/migration``
  (``dual-write``); the run's audit gate (``audit``); the run's rollback from dual-write,
  checked (``rollback-drill``); the migration again (``second-migration``); the roll into
  KRaft mode, Metadata compared through a ZooKeeper-mode and the KRaft-mode broker after
  each restart (``roll-to-kraft``); finalization (``finalize``).
- Every broker restart is timed from its restart command until its gate opened (the
  broker back, registered as it should be); each controller's restart at finalization
  from its stop to its start. The run's own lines go to the rehearsal's ``say``.
- The caller stops the cluster (:meth:`KafkaEngine.stop`), whatever happened.
"""

from __future__ import annotations

import contextlib
import json
import resource
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from migration import __version__
from migration.driver.states import ZK_MIGRATION_STATE_NAMES
from migration.image.model import ZK_MIGRATION_POST
from migration.kafka.client import KafkaConnection
from migration.local.kafka import STOP_S
from migration.local.kafka_cluster import (
    VERSION,
    LocalKafkaCluster,
    start_local_kafka_cluster,
    wait_led,
)
from migration.local.kafka_release import KafkaUnavailableError, kafka_release
from migration.operate.gates import Baseline, View, dual_write_open, read_view
from migration.operate.inventory import Inventory, load_inventory
from migration.operate.journal import Journal
from migration.operate.run import (
    RefusedError,
    Runner,
    RunOptions,
    StoppedAtError,
    readable_log_dir,
)
from migration.rehearse import report, tree_facts
from migration.rehearse.copy_log import copy_figures_in, log_sizes, text_since
from migration.rehearse.measure import (
    Measured,
    audit_section,
    copy_section,
    drill_section,
    dual_write_section,
    finalized_section,
    roll_section,
)
from migration.rehearse.procedure import WAIT_S, AuditRun, RollFigures, compare_metadata
from migration.rehearse.procedure_back import Drill
from migration.rehearse.workload import under_load
from migration.zk.tree_copy import TreeCopy

if TYPE_CHECKING:
    from migration.rehearse.run import Rehearsal

MAX_BROKERS = 6
OPEN_FILES_BESIDE_LOGS = 1_000  # a Kafka broker's jars, connections and checkpoints
LAG_SAMPLE_S = 1.0  # each sample reads ZooKeeper and the controller's log
CATCH_UP_SAY_S = 30.0  # how often a slow catch-up says where it is
# The rehearsal's brokers share one machine, and Kafka's ZooKeeper controller sends each
# one LeaderAndIsr for all its partitions at once: at the default of 30 s such a request
# to a broker still creating its logs timed out and was sent again from the start (157
# times at 100,000 partitions on 20 brokers, two cores), so the election never ended.
CONTROLLER_SOCKET_TIMEOUT_MS = 300_000
TO_MODE: dict[str, report.BrokerMode] = {
    "brokers-migration": "migrating",
    "brokers-kraft": "kraft",
    "rollback-kraft-brokers": "migrating",
    "rollback-brokers": "zookeeper",
}

_GUIDE = "runbooks/kafka-clusters.md"
RUNBOOK = (
    report.RunbookStep(f"{_GUIDE}#2-plan", "Plan: every diff and command, changing nothing",
                       ('zk2kraft kafka plan --inventory "$INVENTORY"',)),
    report.RunbookStep(f"{_GUIDE}#3-up-to-dual-write", "Up to dual-write, audited",
                       ('zk2kraft kafka migrate --inventory "$INVENTORY" --until brokers-kraft',)),
    report.RunbookStep(f"{_GUIDE}#4-into-kraft-mode", "Into KRaft mode, the way back still open",
                       ('zk2kraft kafka migrate --inventory "$INVENTORY" --until finalize',)),
    report.RunbookStep(f"{_GUIDE}#5-finalize", "Finalize: no way back after this",
                       ('zk2kraft kafka migrate --inventory "$INVENTORY"',)),
)  # fmt: skip
"""Production's steps as the Kafka engine rehearsed them (the runbook's own commands)."""


def choose(requested: str, brokers: int) -> report.Engine:
    """The engine for a rehearsal of ``brokers`` brokers (the module doc)."""
    if requested == "zk2kraft":
        return report.Engine("zk2kraft", __version__, "asked for (--engine zk2kraft)")
    try:
        kafka_release(VERSION)
    except KafkaUnavailableError as exc:
        if requested == "kafka":
            raise
        return report.Engine("zk2kraft", __version__, f"{exc}; zk2kraft's own engine instead")
    if requested == "auto" and brokers > MAX_BROKERS:
        return report.Engine(
            "zk2kraft", __version__,
            f"{brokers} brokers: more Kafka JVMs than this rehearsal runs by default "
            f"({MAX_BROKERS}); --engine kafka runs them anyway",
        )  # fmt: skip
    why = "asked for (--engine kafka)" if requested == "kafka" else "installed here"
    return report.Engine("kafka", VERSION, f"Apache Kafka's own brokers and controllers ({why})")


def check_open_files(hosted: Mapping[int, int], limit: int | None = None) -> None:
    """Refuse, before any broker starts, a tree whose busiest broker's partition logs do
    not fit the open-files limit its Kafka JVM will run under (``limit``, default this
    process's hard RLIMIT_NOFILE: the JVM raises its own soft limit to it). Kafka keeps a
    file open for each log's active segment, and :data:`OPEN_FILES_BESIDE_LOGS` for its
    jars, connections and checkpoints; a broker past the limit fails its partitions'
    start with "Too many open files" and leaves them offline (seen at 100,000
    partitions on 12 brokers under a limit of 20,000). RuntimeError naming the broker,
    its logs and the limit."""
    if limit is None:
        limit = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if limit == resource.RLIM_INFINITY or not hosted:
        return
    broker, logs = max(hosted.items(), key=lambda item: (item[1], -item[0]))
    if logs + OPEN_FILES_BESIDE_LOGS > limit:
        raise RuntimeError(
            f"broker {broker} would host {logs:,} partition logs, and Kafka keeps a file "
            f"open for each: with its own files and connections (~{OPEN_FILES_BESIDE_LOGS:,})"
            f" that is past this machine's open-files limit of {limit:,} (the hard ulimit "
            "-n); raise it (a service's LimitNOFILE) or rehearse with --engine zk2kraft"
        )


def until_caught_up(
    read: Callable[[], tuple[int | None, str | None]],
    say: Callable[[str], None],
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Until ``read()`` -- ``/migration``'s offset (None: not read) and why ZooKeeper is
    not caught up yet (None: it is) -- says it is. Raises TimeoutError when the offset has
    not moved for :data:`WAIT_S` s (a dual-write still writing, however slowly, is waited
    for); says why not yet every :data:`CATCH_UP_SAY_S` s, reads every
    :data:`LAG_SAMPLE_S` s."""
    said = clock()
    deadline, last = said + WAIT_S, -1
    while (got := read())[1] is not None:
        at, why, now = *got, clock()
        if at is not None and at > last:
            last, deadline = at, now + WAIT_S
        elif now > deadline:
            raise TimeoutError(f"ZooKeeper did not catch up in {WAIT_S:g} s: {why}")
        if now - said >= CATCH_UP_SAY_S:
            said = now
            say(f"ZooKeeper catching up: {why}")
        sleep(LAG_SAMPLE_S)


class KafkaEngine:
    """The phases of the module doc, for one rehearsal."""

    def __init__(self, rehearsal: Rehearsal) -> None:
        self.r = rehearsal
        self.cluster: LocalKafkaCluster | None = None
        self.inv: Inventory | None = None
        self._began: dict[str, float] = {}  # a broker's restart step -> its seconds
        self._after_back: Callable[[int], None] | None = None
        self.roll: RollFigures | None = None

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None

    # --- the phases ---------------------------------------------------------------------

    def run(self, connect: str, tree: TreeCopy) -> None:
        r = self.r
        assert r.report.source is not None and r.work is not None
        ids = list(r.report.source.broker_ids)
        with r.phase("brokers") as p:
            hosted = tree_facts.replicas_by_broker(tree)
            check_open_files(hosted)
            settings = {"controller.socket.timeout.ms": str(CONTROLLER_SOCKET_TIMEOUT_MS)}
            if r.o.secret:
                settings["password.encoder.secret"] = r.o.secret
            self.cluster = cluster = start_local_kafka_cluster(
                connect, r.work / "kafka", settings, broker_ids=ids,
                per_broker=tree_facts.racks(tree), heap_mb=tree_facts.kafka_heap_mb(tree),
                start_timeout_s=tree_facts.kafka_start_timeout_s(hosted),
            )  # fmt: skip
            self.inv = load_inventory(cluster.inventory)
            wait_led(connect, WAIT_S, lambda line: r.say(f"  {line}"))
            p.detail = (
                f"Kafka {VERSION} ZooKeeper-mode brokers {ids} at {cluster.bootstrap}, "
                f"{cluster.heap_mb} MiB heaps"
            )
        with r.phase("controllers") as p:
            self._migrate(until="brokers-migration")
            p.detail = f"Kafka controllers {sorted(cluster.controller_ports)} up, a quorum"
        with r.phase("enable-migration") as p:
            self._migrate(until=f"brokers-migration.{ids[-1]}.edit")
            p.detail = (
                f"{len(ids) - 1} of {len(ids)} brokers restarted with the migration flag "
                "(the last one's restart starts Kafka's copy)"
            )
        with r.phase("copy") as p:
            self._migrate(until="audit.before-kraft")
            self._copy(p)
        with r.phase("dual-write") as p:
            r.say(f"a synthetic admin workload through the brokers for {r.o.workload_s:g} s")
            load, sampler = under_load(
                cluster.bootstrap, min(3, len(ids)), self._lag,
                seconds=r.o.workload_s, clock=r.rec.elapsed, caught_up=self._caught_up,
                interval_s=LAG_SAMPLE_S,
            )  # fmt: skip
            r.report.dual_write = r.take(p, dual_write_section(load, sampler))
        with r.phase("audit") as p:
            r.report.audit = r.take(p, self._audited("brokers-kraft"))
        if not r.report.audit.ok:
            return
        with r.phase("rollback-drill") as p:
            drill = self._rollback()
            r.report.rollback_drill = r.take(p, drill_section(drill))
        if not drill.ok:  # the later steps would start from a rollback that did not happen
            return
        with r.phase("second-migration") as p:
            since = log_sizes(self._server_logs())
            self._migrate(until="audit.before-kraft")
            again = copy_figures_in(self._logged(since))
            p.detail = f"migrated again: {again.records:,} records copied in {again.copy_ms:.0f} ms"
        with r.phase("roll-to-kraft") as p:
            self.roll = RollFigures()
            started = time.monotonic()
            self._migrate(until="finalize")
            self.roll.seconds = time.monotonic() - started
            r.report.roll = r.take(p, roll_section(self.roll))
        with r.phase("finalize") as p:
            started = time.monotonic()
            self._migrate(until=None)
            view = self._view()
            state = view.image.zk_migration_state if view.image is not None else None
            shown = (
                "KRaft"
                if state == ZK_MIGRATION_POST
                else ZK_MIGRATION_STATE_NAMES.get(state if state is not None else -1, "not read")
            )
            r.report.finalized = r.take(p, finalized_section(shown, time.monotonic() - started))

    # --- the run ------------------------------------------------------------------------

    def _inventory(self) -> Inventory:
        assert self.inv is not None
        return self.inv

    def _runner(self, until: str | None) -> Runner:
        assert self.cluster is not None
        restart_s = STOP_S + self.cluster.start_timeout_s  # a node's stop, then its start
        options = RunOptions(
            gate_timeout_s=WAIT_S, command_timeout_s=max(WAIT_S, restart_s), until=until,
            step_taken=self._taken,
        )  # fmt: skip
        return Runner(self._inventory(), lambda line: self.r.say(f"  {line}"), options)

    def _migrate(self, until: str | None) -> None:
        """The run's migration up to ``until`` (a phase or step; None: to the end)."""
        try:
            self._runner(until).migrate()
        except StoppedAtError:
            if until is None:
                raise

    def _taken(self, step_id: str, seconds: float) -> None:
        """A step done: a broker's restart timed from its command to its gate."""
        phase, _, rest = step_id.partition(".")
        node, _, kind = rest.partition(".")
        if phase in TO_MODE and kind == "restart":
            self._began[step_id] = seconds
        elif phase in TO_MODE and kind == "back":
            restarted = report.Restart(
                int(node), TO_MODE[phase], self._began.pop(f"{phase}.{node}.restart", 0.0) + seconds
            )
            self.r.restarts([restarted])
            if phase == "brokers-kraft" and self.roll is not None:
                self.roll.restarts.append(restarted)
                self._compare(self.roll, int(node))
        elif phase == "finalize" and kind in ("stop", "start"):
            if kind == "stop":
                self._began[step_id] = seconds
            else:
                self.r.controller_restarts.append(
                    self._began.pop(f"finalize.{node}.stop", 0.0) + seconds
                )

    # --- what is measured ---------------------------------------------------------------

    def _server_logs(self) -> dict[int, Path]:
        return {c.id: c.properties.parent / "server.log" for c in self._inventory().controllers}

    def _logged(self, since: dict[int, int] | None = None) -> dict[int, str]:
        return {
            n: text_since(path, (since or {}).get(n, 0)) for n, path in self._server_logs().items()
        }

    def _copy(self, p: report.PhaseRecord) -> None:
        figures = copy_figures_in(self._logged())
        by_id = {c.id: c.metadata_log_dir for c in self._inventory().controllers}
        log_dir = by_id.get(figures.controller) if figures.controller is not None else None
        self.r.report.copy = self.r.take(p, copy_section(figures, log_dir, self.r.report.started))

    def _view(self) -> View:
        """The cluster as the gates read it, without ZooKeeper's topics (none of the
        engine's readings judges partitions)."""
        inv = self._inventory()
        return read_view(inv, readable_log_dir(inv), topics=False)

    def _lag(self) -> int | None:
        return self._view().write_behind_lag()

    def _caught_up(self) -> None:
        """Until ZooKeeper holds the log as it was when the wait began, as the driven
        migration's gate judges it (:func:`dual_write_open`). Not a lag of 0: Kafka's
        active controller appends a NoOp record every 500 ms and moves ``/migration``
        after it, and at 100,000 partitions the log, read seconds after ZooKeeper, was
        always some records ahead of it, however long the wait."""
        inv = self._inventory()
        before = Baseline(log_end=self._view().log_end)

        def read() -> tuple[int | None, str | None]:
            view = self._view()
            return view.zk_offset(), dual_write_open(inv, view, before)

        until_caught_up(read, lambda line: self.r.say(f"  {line}"))

    def _audited(self, until: str) -> Measured[report.Audit]:
        """The run's audit gate, up to ``until``: its verdict as the audit section (an
        audit that finds differences is a problem here, not an error)."""
        started = time.monotonic()
        with contextlib.suppress(RefusedError):  # the audit's verdict: in the journal
            self._migrate(until=until)
        audits = Journal.open(self._inventory()).audits
        last = audits[-1] if audits else {"verdict": "NOT COMPARED", "differences": None}
        code = {"CONSISTENT": 0, "DIFFERENCES FOUND": 1}.get(str(last["verdict"]), 2)
        answer: dict[str, Any] = {
            "consistent": code == 0, "differences": last["differences"],
            "offset": last.get("offset"),
        }  # fmt: skip
        stdout = json.dumps(answer) if code < 2 else ""
        run = AuditRun("zk2kraft kafka migrate", code, time.monotonic() - started, stdout, "")
        return audit_section(run)

    def _rollback(self) -> Drill:
        """The run's rollback from dual-write: each of its phases a finding."""
        started = time.monotonic()
        findings: list[report.DrillFinding] = []
        try:
            plan = self._runner(None).rollback()
        except (RefusedError, StoppedAtError) as exc:
            findings.append(report.DrillFinding(exc.step, False, str(exc)))
            return Drill(findings, seconds=time.monotonic() - started)
        findings += [report.DrillFinding(ph.name, True, ph.title) for ph in plan.phases]
        written = [s.what for ph in plan.phases for s in ph.steps if s.kind == "zookeeper"]
        inv = self._inventory()
        view = read_view(inv, None, topics=False)
        controller = view.snap.controller if view.snap is not None else None
        return Drill(
            findings,
            written,
            seconds=time.monotonic() - started,
            zk_controller=controller.broker_id if controller is not None else None,
        )

    def _compare(self, roll: RollFigures, kraft_broker: int) -> None:
        """After a broker's roll into KRaft mode: Metadata through it and a broker still
        in ZooKeeper mode (the last one to roll), until they agree."""
        assert self.cluster is not None
        ids = list(self.cluster.brokers)
        if kraft_broker == ids[-1]:
            return
        ports = self.cluster.broker_ports

        def metadata(broker: int) -> Any:
            with KafkaConnection("127.0.0.1", ports[broker]) as conn:
                return conn.metadata()

        agreed = compare_metadata(metadata, ids[-1], kraft_broker, roll)
        roll.agreed = roll.agreed and agreed
        self.r.say(
            f"  broker {kraft_broker} in KRaft mode; Metadata through ZooKeeper-mode broker "
            f"{ids[-1]} and KRaft-mode broker {kraft_broker} {'agree' if agreed else 'DISAGREE'}"
        )
