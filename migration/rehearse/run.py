"""The rehearsal, start to end: production's tree read once, then the whole migration run
on a local copy of it, measured phase by phase into a :class:`~.report.Report`.

Contracts:

- Production is only read: :func:`~migration.zk.tree_copy.read_tree` on the source the
  caller opened (a live ensemble or ZooKeeper's files), once. The rehearsal owns the
  source from then on: it closes it right after the read, read or not (production's
  ZooKeeper session ends there). ``source`` is reported from the tree as read; the
  preflight adds its counts. Everything after runs on this machine: an embedded
  ZooKeeper loaded with the copy under the same chroot, local ZooKeeper-mode brokers
  with production's broker ids (each registering with the rack its production
  registration has; endpoints local), three local controllers.
- Live state is not copied (:func:`~migration.zk.tree_copy.read_tree`): production's
  ``/controller`` and broker registrations stay out of the local tree whatever their
  owner (a backup restores them persistent), and the local processes create their own.
- The preflight runs on the copy as production has it, the brokers' registrations
  included (created as ephemerals, as production's are, by a session closed before the
  local brokers start), with the controllers' translation of the whole tree run in
  memory (a znode that would stop the copy -- an encrypted password config without
  production's password.encoder.secret, say -- is found here, not minutes later). A
  blocker or such a znode stops the rehearsal there: each one is a problem. Brokers
  registered without the migration flag are not (before step 3 every broker is): the
  local brokers, with production's ids, play them, and the report's ``enable_migration``
  says which brokers step 3 restarts with which settings.
- Phases, in order (:data:`PHASES`); each recorded by the recorder, its ``detail`` saying
  what it found (:mod:`.measure` builds the sections). ``enable-migration`` restarts
  every broker but the last with the flag; ``copy`` is the last broker's restart, whose
  registration starts the controllers' copy, until DUAL_WRITE. A phase that raises ends
  the rehearsal: the problem names the phase and the error; the sections it did not
  reach stay ``None``. A phase that finds a problem (:meth:`Rehearsal.problem`: a
  blocker, an audit difference, a failed rollback drill, admin requests that failed
  under the workload, Metadata that did not agree, a finalization that did not reach
  KRaft) is not ok either; a failed rollback drill also ends the rehearsal (the later
  steps would start from a rollback that did not happen).
- The report is written (:func:`~.report.write_reports`) whatever happened, also when
  the rehearsal is interrupted (KeyboardInterrupt, re-raised after); every local
  process is stopped -- brokers first, while their controllers still run, each process
  in a session of its own so a terminal's Ctrl-C does not reach it first -- and, unless
  ``keep`` or a phase raised (its error may name a log there: the problem says where
  they are kept, and so does :attr:`Outcome.kept`), every local directory removed.
  SIGINT and SIGTERM are held off while local processes are being stopped, so a stop
  is not cut short; a stop that failed anyway is retried by the next clean-up.
- Errors before anything local started (the source cannot be read) are raised to the
  caller; so is a machine without ZooKeeper's jars or Java.
"""

from __future__ import annotations

import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from migration.bridge.preflight import run_preflight
from migration.driver import next_steps
from migration.local.cluster import LocalCluster
from migration.local.quorum import LocalQuorum
from migration.local.zookeeper import EmbeddedZooKeeper, ZooKeeperUnavailableError
from migration.observability.progress import Progress
from migration.rehearse import procedure, report, tree_facts
from migration.rehearse.estimate import estimate, measurements_from
from migration.rehearse.kafka_engine import RUNBOOK, KafkaEngine, choose
from migration.rehearse.measure import (
    Measured,
    audit_section,
    copy_section,
    drill_section,
    dual_write_section,
    finalized_section,
    preflight_section,
    roll_section,
)
from migration.rehearse.procedure import WAIT_S, PhaseWatch, Say, quiet
from migration.rehearse.procedure_back import rollback_from_active
from migration.rehearse.workload import AdminWorkload, LagSampler, under_load, zk2kraft_lag
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.reader import read_snapshot
from migration.zk.tree_copy import TreeCopy, load_tree, read_tree
from migration.zkfiles.datatree import OfflineTree

PHASES = (
    "read",
    "load",
    "preflight",
    "brokers",
    "controllers",
    "enable-migration",
    "copy",
    "dual-write",
    "audit",
    "rollback-drill",
    "second-migration",
    "roll-to-kraft",
    "finalize",
)
CONTROLLERS = 3


@dataclass(frozen=True)
class Options:
    """What the rehearsal is given: the opened source (the rehearsal closes it), where the
    reports go, whether the local cluster's directories stay, production's
    password.encoder.secret (the copy and the audit decrypt password configs with it;
    never written anywhere but the local controllers' and brokers' properties) and the
    file it came from."""

    source: ZkClient | OfflineTree
    source_kind: report.SourceKind
    source_name: str
    out: Path
    keep: bool = False
    secret: str | None = None
    secret_file: Path | None = None
    workload_s: float = 10.0
    engine: str = "auto"  # "kafka", "zk2kraft" or "auto" (:func:`.kafka_engine.choose`)
    progress: Progress | None = None
    say: Say = quiet


@dataclass
class Outcome:
    report: report.Report
    json_path: Path | None
    html_path: Path | None
    kept: Path | None  # the local cluster's directories, with --keep or after a failed phase


T = TypeVar("T")
HELD_OFF = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM held off for the block (in the main thread; elsewhere no
    signal handler runs anyway): one that arrives meanwhile is delivered to the handler
    there was before, once the block is over."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []
    before = {s: signal.signal(s, lambda signum, _: arrived.append(signum)) for s in HELD_OFF}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, signal.SIG_DFL if handler is None else handler)
        if arrived:
            signal.raise_signal(arrived[0])


def _connect_of(zk: EmbeddedZooKeeper, chroot: str) -> str:
    return zk.connect_string + (chroot if chroot not in ("", "/") else "")


class Rehearsal:
    """One rehearsal (see the module's contract); :meth:`run` once."""

    def __init__(self, options: Options) -> None:
        self.o = options
        self.rec = report.Recorder()
        self.report = report.Report(
            started=self.rec.started,
            finished=self.rec.started,
            machine=report.Machine.this_one(),
            phases=self.rec.phases,
        )
        self.work: Path | None = None  # the local cluster's directories, once made
        self.cluster: LocalCluster | None = None
        self.quorum: LocalQuorum | None = None
        self.kafka: KafkaEngine | None = None
        self.controller_restarts: list[float] = []
        self.raised_in: str | None = None  # the phase that raised
        self.keep_logs = False  # a phase failed: its logs stay for the operator

    def say(self, line: str) -> None:
        self.o.say(line)

    def problem(self, text: str) -> None:
        """A problem found: named in the report, and the phase running now is not ok."""
        self.report.problems.append(text)
        self.rec.fail()

    def take(self, record: report.PhaseRecord, measured: Measured[T]) -> T:
        """A section measured in the phase ``record``: its detail and problems taken."""
        record.detail = measured.detail
        for text in measured.problems:
            self.problem(text)
        return measured.section

    @contextmanager
    def phase(self, name: str) -> Iterator[report.PhaseRecord]:
        """The recorder's phase, announced once recorded and when it ends."""
        with self.rec.phase(name) as record:
            self.say(f"== {name}")
            try:
                yield record
            except BaseException:
                self.raised_in = name
                raise
        verdict = "" if record.ok else "FAILED: "
        self.say(f"== {name}: {record.seconds:.1f} s; {verdict}{record.detail}")

    def run(self) -> Outcome:
        """The rehearsal; the report is written whatever happens (see the contract)."""
        try:
            with self.phase("read") as p:
                tree = read_tree(self.o.source, self.o.progress)
                p.detail = f"{tree.znodes:,} znodes, {tree.bytes:,} bytes read once"
        finally:
            self.o.source.close()  # production's session ends before anything local starts
        self.report.source = report.Source(
            kind=self.o.source_kind,
            name=self.o.source_name,
            chroot=tree.chroot,
            znodes=tree.znodes,
            bytes=tree.bytes,
            read_s=tree.read_s,
            cluster_id=tree_facts.cluster_id(tree),
            broker_ids=tuple(sorted(tree.registrations)),
        )
        try:
            self.work = Path(tempfile.mkdtemp(prefix="zk2kraft-rehearse-"))
            self._local(tree)
        except KeyboardInterrupt:
            where = f" in phase {self.raised_in}" if self.raised_in else ""
            self.problem(f"interrupted{where}: the rehearsal did not finish")
            self._finish()
            raise
        except ZooKeeperUnavailableError:
            self._cleanup()
            raise
        except Exception as exc:
            where = f"phase {self.raised_in}" if self.raised_in else "the local cluster"
            self.keep_logs = True  # the error may name a log under them
            self.problem(
                f"{where} failed: {type(exc).__name__}: {exc} (the local cluster's "
                f"directories and logs are kept in {self.work})"
            )
        return self._finish()

    def _finish(self) -> Outcome:
        self.report.finished = self.rec.now()
        if self.report.copy is not None:  # nothing to scale before the copy was measured
            self.report.estimate = estimate(
                measurements_from(self.report, CONTROLLERS, tuple(self.controller_restarts))
            )
        self.report.runbook = self._runbook()
        try:
            json_path, html_path = report.write_reports(self.report, self.o.out)
        finally:
            kept = self._cleanup()
        return Outcome(self.report, json_path, html_path, kept)

    def _stop_processes(self) -> None:
        """The local brokers, then the controllers, stopped (SIGTERM: the brokers' controlled
        shutdown still finds their controller; each killed past its stop budget). Each is
        forgotten only once its stop returned: a stop that raised is retried next time."""
        if self.quorum is None and self.cluster is None and self.kafka is None:
            return
        self.say("stopping the local brokers and controllers")
        with _signals_held():
            try:
                if self.kafka is not None:
                    self.kafka.stop()
                    self.kafka = None
                if self.cluster is not None:
                    self.cluster.stop()
                    self.cluster = None
            finally:
                if self.quorum is not None:
                    try:
                        self.quorum.stop_all(signal.SIGTERM)
                    except TimeoutError:  # one did not stop in time: none is left running
                        self.quorum.stop_all(signal.SIGKILL)
                    self.quorum = None

    def _cleanup(self) -> Path | None:
        """Stop every local process; remove the local directories unless ``keep`` or a
        phase failed (its error may name a log there)."""
        with _signals_held():
            self._stop_processes()
            if self.work is None or self.o.keep or self.keep_logs:
                return self.work
            shutil.rmtree(self.work, ignore_errors=True)
            return None

    def _runbook(self) -> list[report.RunbookStep]:
        if self.report.engine is not None and self.report.engine.name == "kafka":
            return list(RUNBOOK)
        values = {}
        if self.report.source is not None:
            values["BROKER_IDS"] = " ".join(map(str, self.report.source.broker_ids))
            if self.o.source_kind == "zookeeper":
                values["ZK"] = self.o.source_name
        return [
            report.RunbookStep(
                step.runbook, step.title, tuple(next_steps.fill(c, values) for c in step.commands)
            )
            for step in next_steps.production_steps()
        ]

    def _local(self, tree: TreeCopy) -> None:
        assert self.work is not None
        with EmbeddedZooKeeper(
            base_dir=self.work / "zookeeper", heap_mb=tree_facts.zookeeper_heap_mb(tree)
        ) as zk:
            connect = _connect_of(zk, tree.chroot)
            with ZkClient(connect) as client:
                with self.phase("load") as p:
                    written = load_tree(client, tree, self.o.progress)
                    p.detail = f"{written:,} znodes into a local ZooKeeper at {connect}"
                self._preflight(connect, tree)
                if self.report.problems:
                    return
                assert self.report.source is not None
                self.report.engine = engine = choose(
                    self.o.engine, len(self.report.source.broker_ids)
                )
                self.say(f"engine: {engine.name} {engine.version} ({engine.why})")
                try:
                    if engine.name == "kafka":
                        self.kafka = KafkaEngine(self)
                        self.kafka.run(connect, tree)
                    else:
                        self._migrate(connect, client, tree)
                finally:  # while their ZooKeeper still runs: they stop at once
                    self._stop_processes()

    def _preflight(self, connect: str, tree: TreeCopy) -> None:
        with self.phase("preflight") as p:
            with ZkClient(connect) as session:  # production's registrations, as ephemerals
                for bid, raw in sorted(tree.registrations.items()):
                    session.kazoo.create(paths.broker(bid), raw, ephemeral=True, makepath=True)
                started = time.monotonic()
                snap = read_snapshot(session)
                found = tree_facts.as_rehearsed(
                    run_preflight(snap, tree.read_s + time.monotonic() - started), tree
                )
            assert self.report.source is not None
            self.report.source = replace(
                self.report.source,
                broker_ids=tuple(tree_facts.broker_ids(tree, snap)),
                counts=snap.counts(),
            )
            self.report.enable_migration = tree_facts.enable_migration(tree, snap)
            records, copy_problem = tree_facts.translates(snap, self.o.secret)
            self.report.preflight = self.take(p, preflight_section(found, records, copy_problem))

    def _migrate(self, connect: str, client: ZkClient, tree: TreeCopy) -> None:
        """From the brokers' start to finalization (runbooks/migration.md, rollback.md
        sections 3-5 from MigrationActive, finalize.md section 4)."""
        assert self.report.source is not None
        assert self.work is not None
        ids, cluster_id = list(self.report.source.broker_ids), self.report.source.cluster_id
        say, work = self.say, self.work
        with self.phase("brokers") as p:
            props = {"password.encoder.secret": self.o.secret} if self.o.secret else {}
            self.cluster = cluster = LocalCluster(
                connect, ids, work / "cluster", properties=props,
                broker_properties=tree_facts.racks(tree),
            )  # fmt: skip
            cluster.start()
            cluster.wait_ready(WAIT_S)
            p.detail = f"ZooKeeper-mode brokers {ids} serving at {cluster.bootstrap}"
        with self.phase("controllers") as p:
            quorum = procedure.migration_quorum(cluster, work / "quorum", self.o.secret)
            self.quorum = quorum  # before any starts: a clean-up stops those started
            procedure.start_controllers(quorum, cluster_id, say)
            watch = PhaseWatch(quorum, say)
            watch.until(lambda r: r["driver_phase"] == "WAIT_FOR_BROKERS")
            p.detail = f"controllers {quorum.ids} waiting for the brokers"
        first, last = cluster.broker_ids[:-1], cluster.broker_ids[-1:]
        with self.phase("enable-migration") as p:
            restarts = self.restarts(procedure.roll_with_flag(cluster, quorum, watch, say, first))
            p.detail = (
                f"{len(restarts)} of {len(ids)} brokers restarted with the migration flag "
                "(the last one's restart starts the copy)"
            )
        with self.phase("copy") as p:  # the last broker's restart until DUAL_WRITE
            self.restarts(procedure.roll_with_flag(cluster, quorum, watch, say, last))
            procedure.until_dual_write(quorum, watch, say)
            figures = procedure.copy_figures(quorum)
            node = figures.controller
            log_dir = quorum.log_dir(node) if node is not None else None
            self.report.copy = self.take(p, copy_section(figures, log_dir, self.report.started))
        with self.phase("dual-write") as p:
            measured = dual_write_section(*self._under_load(cluster, quorum, watch))
            self.report.dual_write = self.take(p, measured)
        with self.phase("audit") as p:
            run = procedure.audit(connect, quorum, json=True, secret_file=self.o.secret_file)
            self.report.audit = self.take(p, audit_section(run))
        with self.phase("rollback-drill") as p:
            drill = rollback_from_active(cluster, quorum, client, watch, say)
            self.restarts(drill.restarts)
            self.report.rollback_drill = self.take(p, drill_section(drill))
        if not drill.ok:  # the later steps would start from a rollback that did not happen
            return
        with self.phase("second-migration") as p:
            since = procedure.output_offsets(quorum)
            procedure.start_controllers(quorum, cluster_id, say)
            self.restarts(procedure.roll_with_flag(cluster, quorum, watch, say))
            procedure.until_dual_write(quorum, watch, say, since)
            again = procedure.copy_figures(quorum, since)
            p.detail = f"migrated again: {again.records:,} records copied in {again.copy_ms:.0f} ms"
        with self.phase("roll-to-kraft") as p:
            roll = procedure.roll_to_kraft(cluster, watch, say)
            self.restarts(roll.restarts)
            self.report.roll = self.take(p, roll_section(roll))
        with self.phase("finalize") as p:
            started = time.monotonic()
            state = self._finalize(quorum, watch)
            seconds = time.monotonic() - started
            self.report.finalized = self.take(p, finalized_section(state, seconds))

    def restarts(self, restarts: list[report.Restart]) -> list[report.Restart]:
        self.report.restarts.extend(restarts)
        return restarts

    def _under_load(
        self, cluster: LocalCluster, quorum: LocalQuorum, watch: PhaseWatch
    ) -> tuple[AdminWorkload, LagSampler]:
        """The workload for ``workload_s`` seconds, the lag sampled beside it, until
        ZooKeeper has caught up (:func:`~.workload.under_load`)."""
        self.say(f"a synthetic admin workload through the brokers for {self.o.workload_s:g} s")
        return under_load(
            cluster.bootstrap,
            min(3, len(cluster.broker_ids)),
            zk2kraft_lag(quorum.bootstrap),
            seconds=self.o.workload_s,
            clock=self.rec.elapsed,
            caught_up=lambda: watch.until(lambda r: r["zk_write_behind_lag"] == 0),
        )

    def _finalize(self, quorum: LocalQuorum, watch: PhaseWatch) -> str:
        """finalize.md section 4, each controller's restart timed (for the estimate); the
        state it ends in."""
        watch.until(lambda r: r["zk_write_behind_lag"] == 0)
        before = time.monotonic()
        status = procedure.finalize(quorum, watch, self.say)
        self.controller_restarts.append((time.monotonic() - before) / CONTROLLERS)
        return str(status["state"])


def rehearse(options: Options) -> Outcome:
    """Run one rehearsal (see the module's contract)."""
    return Rehearsal(options).run()
