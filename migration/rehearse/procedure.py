"""The migration as an operator runs it on a local cluster, by configuration and restart:
the one implementation ``zk2kraft demo`` and ``zk2kraft rehearse`` share.

Contracts:

- Nothing here prints: every step tells ``say`` (one line of text, no trailing
  newline) what it does, as an operator would read it; the demo prints the lines, the
  rehearsal shows them as progress and keeps them.
- :class:`PhaseWatch` polls ``migration status`` (the active controller's answer) and
  tells each new (state, phase, outcome) once; :meth:`PhaseWatch.until` raises
  TimeoutError after :data:`WAIT_S` (a hang guard per step, never a measurement).
- The steps follow runbooks/migration.md (controllers provisioned, brokers rolled with
  the flag, DUAL_WRITE), the roll into KRaft mode (runbooks/migration.md section 4, with
  Metadata through a ZooKeeper-mode and a KRaft-mode broker compared at each restart)
  and runbooks/finalize.md section 4 (controllers restarted without the flag) -- see
  :mod:`.procedure_back` for the ways back. Each broker restart is timed
  (:class:`~.report.Restart`).
- Figures read from the controllers' own output (the copy's log line, the driver's
  phase lines) are read from ``since`` (a byte offset per controller) on, so a second
  migration by the same controllers is told apart from the first.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migration.broker.modes import Mode
from migration.controller.storage import format_storage
from migration.driver.describe import describe_migration, status_json
from migration.local.cluster import INTERNAL_LISTENER, PROTOCOLS, LocalCluster
from migration.local.quorum import (
    LocalQuorum,
    broker_migration_properties,
    controller_migration_properties,
)
from migration.records import versions
from migration.rehearse.copy_log import CopyFigures, copy_figures_in, log_sizes, text_since
from migration.rehearse.report import Restart

WAIT_S = 300.0  # a hang guard for each step
Say = Callable[[str], None]
Status = dict[str, Any]


def quiet(_: str) -> None:
    """A ``say`` that keeps nothing."""


class PhaseWatch:
    """Tells each new (state, phase, outcome) ``migration status`` reports."""

    def __init__(self, quorum: LocalQuorum, say: Say = quiet) -> None:
        self.quorum = quorum
        self.say = say
        self.last: tuple[str, str] | None = None
        self.reached: list[tuple[float, str, str]] = []  # (time.time(), state, phase)

    def poll(self) -> Status | None:
        """The active controller's status (None when no controller answered)."""
        try:
            report = status_json(describe_migration(self.quorum.bootstrap))
        except ConnectionError:
            return None
        now = (report["driver_phase"], report["outcome"])
        if now != self.last and report["active_controller"] >= 0:
            self.say(f"  [{report['state']} / {report['driver_phase']}] {report['outcome']}")
            self.last = now
            seen = (report["state"], report["driver_phase"])
            if not self.reached or self.reached[-1][1:] != seen:
                self.reached.append((time.time(), *seen))
        return report

    def until(self, done: Callable[[Status], bool]) -> Status:
        """The first report of an active controller for which ``done`` holds."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            report = self.poll()
            if report is not None and report["active_controller"] >= 0 and done(report):
                return report
            time.sleep(0.1)
        raise TimeoutError(f"the migration did not get there within {WAIT_S:g}s")


def _output(quorum: LocalQuorum, node: int) -> Path:
    return quorum.root / f"controller{node}.out"


def output_offsets(quorum: LocalQuorum) -> dict[int, int]:
    """Where each controller's output ends now (:func:`copy_figures` reads on from there)."""
    return log_sizes({node: _output(quorum, node) for node in quorum.ids})


def _output_since(quorum: LocalQuorum, node: int, since: dict[int, int] | None) -> str:
    return text_since(_output(quorum, node), (since or {}).get(node, 0))


def migration_quorum(cluster: LocalCluster, root: Path, secret: str | None) -> LocalQuorum:
    """runbooks/migration.md section 2's three controllers, configured with the migration
    flag (the brokers' ZooKeeper, their listener, ``secret``), not started yet
    (:func:`start_controllers`: the caller holds them first, to stop them however it
    ends)."""
    return LocalQuorum(
        root,
        first_id=3000,
        cluster_id=None,
        metrics=True,
        extra=controller_migration_properties(cluster.zk_connect, INTERNAL_LISTENER, secret),
    )


def start_controllers(quorum: LocalQuorum, cluster_id: str, say: Say = quiet) -> None:
    """Format each controller's (empty) storage with ``cluster_id`` and start it."""
    say(f"{len(quorum.ids)} KRaft controllers with zookeeper.metadata.migration.enable=true")
    for node in quorum.ids:
        format_storage(quorum.log_dir(node), node, cluster_id, versions.LATEST)
        say(f"zk2kraft storage format --config {quorum.config(node)} --cluster-id={cluster_id}")
    quorum.start_all()


def roll_with_flag(
    cluster: LocalCluster,
    quorum: LocalQuorum,
    watch: PhaseWatch,
    say: Say = quiet,
    brokers: Sequence[int] | None = None,
) -> list[Restart]:
    """runbooks/migration.md section 3: once the quorum waits for the brokers, each of
    ``brokers`` (default every broker, in order) restarted with the flag, the voters and
    the controller listener (timed). The restart that completes the set of migrating
    brokers starts the copy: the rehearsal rolls all but the last, then the last apart."""
    watch.until(lambda r: r["driver_phase"] == "WAIT_FOR_BROKERS")
    ids = cluster.broker_ids if brokers is None else list(brokers)
    if not ids:
        return []
    say(
        "rolling restart of the brokers with zookeeper.metadata.migration.enable=true"
        if brokers is None
        else f"broker(s) {', '.join(map(str, ids))} restarted with "
        "zookeeper.metadata.migration.enable=true"
    )
    cluster.reconfigure(**broker_migration_properties(quorum, PROTOCOLS))
    restarts = []
    for broker in ids:
        say(f"  restarting broker {broker}")
        if cluster.brokers[broker].mode is not None:  # set back to ZooKeeper by a rollback
            cluster.set_mode(broker, Mode.MIGRATING)
        started = time.monotonic()
        cluster.restart(broker)
        cluster.wait_ready(WAIT_S)
        restarts.append(Restart(broker, "migrating", time.monotonic() - started))
        watch.poll()
    return restarts


def until_dual_write(
    quorum: LocalQuorum, watch: PhaseWatch, say: Say = quiet, since: dict[int, int] | None = None
) -> Status:
    """Until DUAL_WRITE (the copy done, ZooKeeper synced, the brokers told); the active
    controller's driver lines (from ``since``) told."""
    done = watch.until(lambda r: r["driver_phase"] == "DUAL_WRITE")
    say(f"the active controller's log ({done['active_controller']}):")
    for line in _output_since(quorum, done["active_controller"], since).splitlines():
        if "migration driver [" in line or "Completed migration" in line:
            say("  " + line.split(": ", 1)[-1][:200])
    return done


def copy_figures(quorum: LocalQuorum, since: dict[int, int] | None = None) -> CopyFigures:
    """The copy as the quorum's controllers logged it (:func:`.copy_log.copy_figures_in`),
    their output read from ``since`` (:func:`output_offsets`; None: from the start)."""
    return copy_figures_in({node: _output_since(quorum, node, since) for node in quorum.ids})


@dataclass(frozen=True)
class AuditRun:
    """``zk2kraft audit`` run as an operator runs it."""

    command: str
    exit_code: int
    seconds: float
    stdout: str
    stderr: str


def audit(
    connect: str, quorum: LocalQuorum, *, json: bool = False, secret_file: Path | None = None
) -> AuditRun:
    """The Spark audit of ZooKeeper against the quorum's log, as a subprocess."""
    bootstrap = ",".join(quorum.bootstrap)
    words = ["audit", "--zk", connect, "--bootstrap-controller", bootstrap]
    if secret_file is not None:
        words += ["--password-encoder-secret-file", str(secret_file)]
    if json:
        words.append("--json")
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "migration.cli.main", *words],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    return AuditRun(
        "zk2kraft " + " ".join(words),
        done.returncode,
        time.monotonic() - started,
        done.stdout,
        done.stderr,
    )


@dataclass
class RollFigures:
    """The roll into KRaft mode: restarts, Metadata comparisons, offline partitions."""

    restarts: list[Restart] = field(default_factory=list)
    offline: set[str] = field(default_factory=set)
    comparisons: int = 0
    disagreements: int = 0  # answers still converging when sampled
    agreed: bool = True  # every comparison agreed in the end
    max_lag: int = 0
    seconds: float = 0.0


def _shape(m: Any) -> tuple[Any, ...]:
    """A Metadata answer's brokers and partitions (leader, ISR), as comparable."""
    brokers = tuple(sorted(b.node_id for b in m.brokers))
    topics = tuple(
        sorted(
            (t.name, p.partition_index, p.leader_id, tuple(sorted(p.isr_nodes)))
            for t in m.topics
            for p in t.partitions
        )
    )
    return brokers, topics


def compare_metadata(
    metadata: Callable[[int], Any], zk_broker: int, kraft_broker: int, roll: RollFigures
) -> bool:
    """Metadata through both brokers (``metadata(broker id)``), until they agree
    (bounded); offline partitions counted on every answer."""
    deadline = time.monotonic() + WAIT_S
    while True:
        a, b = _shape(metadata(zk_broker)), _shape(metadata(kraft_broker))
        roll.comparisons += 1
        for name, index, leader, _ in (*a[1], *b[1]):
            if leader < 0:
                roll.offline.add(f"{name}-{index}")
        if a == b:
            return True
        roll.disagreements += 1
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)


def roll_to_kraft(cluster: LocalCluster, watch: PhaseWatch, say: Say = quiet) -> RollFigures:
    """runbooks/migration.md section 4: each broker restarted into KRaft mode, Metadata
    through the last ZooKeeper-mode broker and the new KRaft-mode one compared; until
    MigrationFinished."""
    say("rolling restart of the brokers into KRaft mode (process.roles=broker, node.id)")
    roll = RollFigures()
    started = time.monotonic()
    ids = cluster.broker_ids
    for i, broker in enumerate(ids):
        cluster.set_mode(broker, Mode.KRAFT)
        began = time.monotonic()
        cluster.restart(broker)
        cluster.wait_ready(WAIT_S, expected=ids)
        roll.restarts.append(Restart(broker, "kraft", time.monotonic() - began))
        report = watch.poll()
        if report is not None:
            roll.max_lag = max(roll.max_lag, report["zk_write_behind_lag"])
        if i + 1 < len(ids):
            agreed = compare_metadata(cluster.metadata, ids[-1], broker, roll)
            roll.agreed = roll.agreed and agreed
            say(
                f"  broker {broker} in KRaft mode; Metadata through ZooKeeper-mode broker "
                f"{ids[-1]} and KRaft-mode broker {broker} {'agree' if agreed else 'DISAGREE'}"
            )
        else:
            say(f"  broker {broker} in KRaft mode")
    watch.until(lambda r: r["state"] == "MigrationFinished")
    roll.seconds = time.monotonic() - started
    return roll


def finalize(quorum: LocalQuorum, watch: PhaseWatch, say: Say = quiet) -> Status:
    """runbooks/finalize.md section 4: the controllers restarted one at a time without
    the flag and zookeeper.connect; the status once the cluster is KRaft."""
    say(
        "finalizing: controllers restarted one at a time with "
        "zookeeper.metadata.migration.enable=false and no zookeeper.connect"
    )
    for node in quorum.ids:
        quorum.reconfigure(
            node, **{"zookeeper.metadata.migration.enable": "false", "zookeeper.connect": None}
        )
        quorum.restart(node)
        say(f"  controller {node} restarted")
        watch.until(lambda r: r["state"] in ("MigrationFinished", "KRaft"))
    return watch.until(lambda r: r["state"] == "KRaft")
