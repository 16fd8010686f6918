"""zk2kraft beside Apache Kafka 3.9.2 (``make bench-kafka``; ``python -m
tests.benchmarks.run --only-kafka-side [--kafka-side-profiles medium,large]``): one
"production" ZooKeeper seeded once per profile (``medium``: 10,000 partitions on 6
brokers; ``large``: 100,000 on 12, one replica each, :data:`SPECS`), its tree migrated in
the same run by each engine in turn -- Kafka's own brokers and controllers, then
zk2kraft's -- through the rehearsal (:mod:`migration.rehearse.run`, in this process;
its brokers and controllers are processes of their own).

Each engine's rehearsal runs from the read to dual-write under the synthetic workload
(until ZooKeeper has caught up), exactly as ``zk2kraft rehearse`` does; then, instead of
the audit and the later phases, the bench measures and ends it:

- the copy, as the copying controller logged it (:mod:`migration.rehearse.copy_log`;
  Kafka's own "N records were generated in M ms" line): records, its ms, records/s, and
  the write pause from BECOME_CONTROLLER to DUAL_WRITE;
- claim -> dual-writing: from the copying controller's claim of ZooKeeper to its
  DUAL_WRITE, by its own log lines (:mod:`tests.benchmarks.kafka_side`);
- the controllers' peak RSS: each controller process's VmHWM (``/proc/<pid>/status``),
  read before the failover and, for the two that survive it, again after;
- a failover during dual-write: the active controller (the last one to log DUAL_WRITE)
  SIGKILLed; from the kill to the first DUAL_WRITE a surviving controller logs after
  it (the kill's time is this machine's local clock, the logs' too), and to its claim.

A figure the logs do not hold is None ("not measured"). Progress goes to stderr; each
profile's figures are printed as text and as one JSON line (stdout). A rehearsal that
fails before dual-write (a phase raised: its problem is reported) still has its copy's
figures and its controllers' peaks read off its controllers before they stop, and its
directories kept (the problem says where); a measured one's are removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from migration.local import kafka_service, seed
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.rehearse import report
from migration.rehearse.copy_log import copy_figures_in, log_sizes, text_since
from migration.rehearse.procedure import WAIT_S
from migration.rehearse.run import Options, Rehearsal
from migration.zk.client import ZkClient
from tests.benchmarks import kafka_side

PROFILES = ("medium", "large")
RUN_ORDER = ("kafka", "zk2kraft")  # the engines run, in this order, unless told otherwise
# Kafka keeps a file open for each partition log it hosts, and this machine's hard
# open-files limit is 20,000 (a container's; not raisable from inside): the large
# profile's 300,000 replicas on its 12 brokers would be ~25,000 logs each, and Kafka's
# brokers failed their partitions with "Too many open files" (kafka_engine.check_open_files
# now refuses that up front); on 20 brokers two cores could not run Kafka's election of
# them (docs/proof.md). The bench gives the large tree one replica a partition (~8,300
# logs a broker), for both engines alike: the same 100,000 partitions, 5,000 topics and
# the rest of the profile.
SPECS = {"large": {"replication_factor": 1}}
MEASURE_AT = "audit"  # the phase after dual-write: the bench measures instead
POLL_S = 0.05


class Measured(Exception):  # noqa: N818 - not an error: the end the bench chose
    """The bench's end of a rehearsal: its figures are in, the later phases not run."""


@dataclass(frozen=True)
class Controller:
    node: int
    log: Path  # its own log: zk2kraft's output, Kafka's server.log
    pid: int | None


def _peak_mib(pid: int | None) -> int | None:
    """The process's VmHWM (peak resident set) in MiB; None when it is gone."""
    if pid is None:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024)
    except OSError:
        return None
    return None


def _peaks(peaks: dict[int, int | None]) -> dict[str, Any]:
    known = [p for p in peaks.values() if p is not None]
    return {
        "controllers_peak_rss_mib": max(known) if known else None,
        "controllers_peak_rss_by_node": peaks,
    }


class BenchRehearsal(Rehearsal):
    """A rehearsal that, on reaching :data:`MEASURE_AT`, measures (the module doc) into
    :attr:`figures` and ends by raising :class:`Measured` (the rehearsal's own handling
    then writes its report and stops and keeps its processes' directories)."""

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        self.figures: dict[str, Any] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[report.PhaseRecord]:
        if name == MEASURE_AT:
            self.say("== measuring: the copy, the controllers' peaks, a failover")
            self.figures = self._measure()
            raise Measured(f"measured at {name}")
        with super().phase(name) as record:
            yield record

    def _controllers(self) -> tuple[list[Controller], Callable[[int], None]]:
        """The running controllers and how to SIGKILL one, for either engine."""
        if self.kafka is not None and self.kafka.cluster is not None:
            cluster = self.kafka.cluster
            nodes = [
                Controller(
                    node,
                    cluster.controller_properties(node).parent / "server.log",
                    kafka_service.status(cluster.controller_properties(node)),
                )
                for node in sorted(cluster.controller_ports)
            ]
            pids = {c.node: c.pid for c in nodes}

            def kill_kafka(node: int) -> None:
                pid = pids[node]
                assert pid is not None, f"Kafka controller {node} does not run"
                os.kill(pid, signal.SIGKILL)
                with contextlib.suppress(ChildProcessError):  # reaped here if it is ours
                    os.waitpid(pid, 0)

            return nodes, kill_kafka
        assert self.quorum is not None, "no controllers to measure"
        quorum = self.quorum

        def kill_zk2kraft(node: int) -> None:
            quorum.kill(node, signal.SIGKILL)  # waits for its exit

        nodes = [Controller(n, c.log, c.pid) for n, c in sorted(quorum.children.items())]
        return nodes, kill_zk2kraft

    def _stop_processes(self) -> None:
        """A rehearsal that ends before :data:`MEASURE_AT` (a failed phase) still has its
        copy's figures and its controllers' peaks read, while they run, before they stop."""
        running = self.quorum is not None or (self.kafka is not None and self.kafka.cluster)
        if not self.figures and running and self.report.engine is not None:
            try:
                nodes, _ = self._controllers()
                texts = {c.node: text_since(c.log, 0) for c in nodes}
                peaks = {c.node: _peak_mib(c.pid) for c in nodes}
                self.figures = self._copy_figures(texts) | _peaks(peaks)
            except (OSError, ValueError, AssertionError) as exc:
                self.say(f"the copy's figures could not be read: {exc}")
        super()._stop_processes()

    def _copy_figures(self, texts: dict[int, str]) -> dict[str, Any]:
        """The copy as its controller logged it; pause and claim -> DUAL_WRITE None when
        it never logged DUAL_WRITE."""
        assert self.report.engine is not None
        copy = copy_figures_in(texts)
        text = texts.get(copy.controller, "") if copy.controller is not None else ""
        dual = kafka_side.first_at(text, kafka_side.is_dual_write) is not None
        return {
            "copy_controller": copy.controller,
            "copy_records": copy.records,
            "copy_ms": copy.copy_ms,
            "copy_records_per_s": round(copy.records / copy.copy_ms * 1000)
            if copy.copy_ms > 0
            else None,
            "write_pause_ms": round(copy.write_pause_ms) if dual else None,
            "claim_to_dual_write_ms": kafka_side.span_ms(
                text, kafka_side.claimed(self.report.engine.name), kafka_side.is_dual_write
            ),
            "reached_dual_write": dual,
        }

    def _measure(self) -> dict[str, Any]:
        assert self.report.engine is not None
        engine = self.report.engine.name
        nodes, kill = self._controllers()
        texts = {c.node: text_since(c.log, 0) for c in nodes}
        last_dual = {n: kafka_side.last_at(t, kafka_side.is_dual_write) for n, t in texts.items()}
        active = max((at, n) for n, at in last_dual.items() if at is not None)[1]
        figures = self._copy_figures(texts)
        peaks = {c.node: _peak_mib(c.pid) for c in nodes}
        since = log_sizes({c.node: c.log for c in nodes})
        self.say(f"SIGKILL the active controller {active} while dual-writing")
        killed_at = datetime.now()  # naive local time, as the logs write theirs
        kill(active)
        leader, back = self._back_in_dual_write(nodes, active, since)
        new_text = text_since(next(c.log for c in nodes if c.node == leader), since[leader])
        claim_at = kafka_side.first_at(new_text, kafka_side.claimed(engine))
        for c in nodes:  # the survivors' peaks may have grown with the failover
            if c.node != active:
                peaks[c.node] = max(filter(None, (peaks[c.node], _peak_mib(c.pid))), default=None)
        return (
            figures
            | _peaks(peaks)
            | {
                "failover_killed": active,
                "failover_leader": leader,
                "failover_ms": round((back - killed_at).total_seconds() * 1000),
                "failover_claim_ms": round((claim_at - killed_at).total_seconds() * 1000)
                if claim_at is not None
                else None,
            }
        )

    def _back_in_dual_write(
        self, nodes: list[Controller], killed: int, since: dict[int, int]
    ) -> tuple[int, datetime]:
        """The surviving controller that logs DUAL_WRITE first after the kill, and when."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            for c in nodes:
                if c.node == killed:
                    continue
                at = kafka_side.first_at(text_since(c.log, since[c.node]), kafka_side.is_dual_write)
                if at is not None:
                    return c.node, at
            time.sleep(POLL_S)
        raise TimeoutError(f"no controller dual-writing again within {WAIT_S:g} s of the kill")


def _say(engine: str) -> Callable[[str], None]:
    def say(line: str) -> None:
        print(f"[{engine}] {line}", file=sys.stderr, flush=True)

    return say


def rehearse(
    connect: str, engine: str, secret: str, tmp: Path, workload_s: float
) -> dict[str, Any]:
    """One engine's measured rehearsal of the tree at ``connect``: its figures, its
    engine's version, the problems it found (the bench's own end not counted), wall s."""
    secret_file = tmp / "encoder-secret"
    secret_file.write_text(secret)
    rehearsal = BenchRehearsal(
        Options(
            source=ZkClient(connect), source_kind="zookeeper", source_name=connect,
            out=tmp / f"out-{engine}", secret=secret, secret_file=secret_file,
            workload_s=workload_s, engine=engine, say=_say(engine),
        )
    )  # fmt: skip
    started = time.monotonic()
    outcome = rehearsal.run()
    wall_s = time.monotonic() - started
    problems = [p for p in outcome.report.problems if Measured.__name__ + ":" not in p]
    if outcome.kept is not None and not problems:  # a failure's logs stay, the problem says where
        shutil.rmtree(outcome.kept, ignore_errors=True)
    if "failover_ms" not in rehearsal.figures:
        problems.append(
            "failover not measured: the rehearsal ended before dual-write under the workload"
        )
    version = outcome.report.engine.version if outcome.report.engine is not None else None
    return rehearsal.figures | {
        "version": version,
        "problems": problems,
        "wall_s": round(wall_s, 1),
        "phases": {p.name: round(p.seconds, 2) for p in outcome.report.phases},
    }


def run(
    profile: str, workload_s: float = 10.0, engines_run: tuple[str, ...] = RUN_ORDER
) -> dict[str, Any]:
    """``engines_run`` (both: Kafka's, then zk2kraft's) on ``profile``'s seeded tree, one
    after the other (module doc); one alone reruns its side on the same seeded tree."""
    spec = replace(seed.PROFILES[profile], **SPECS.get(profile, {}))
    engines: dict[str, dict[str, Any]] = {}
    with EmbeddedZooKeeper(heap_mb=4096) as zk, tempfile.TemporaryDirectory() as tmp:
        connect = f"{zk.connect_string}/kafka"
        with ZkClient(connect) as production:
            print(f"seeding {profile} ({spec.partitions:,} partitions)", file=sys.stderr)
            seed.write(production, seed.generate(spec), ephemeral=True)
            for engine in engines_run:
                engines[engine] = rehearse(
                    connect, engine, spec.password_encoder_secret, Path(tmp), workload_s
                )
    return {
        "profile": profile,
        "partitions": spec.partitions,
        "brokers": spec.brokers,
        "replication_factor": spec.replication_factor,
        "engines": engines,
        "ahead": kafka_side.ahead(engines.get("zk2kraft", {}), engines.get("kafka", {})),
    }


def report_result(result: dict[str, Any]) -> None:
    """The profile's figures as text, then as one JSON line."""
    print("\n".join(kafka_side.table(result)))
    print(json.dumps(result, default=str), flush=True)
