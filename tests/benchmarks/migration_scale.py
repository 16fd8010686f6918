"""The live migration's cost as it grows (``make bench``, with :mod:`.migration_bench`):
what the copy moves per second through the quorum, how long a new leader's full sync of
ZooKeeper takes, the Spark audit of the migrated cluster, the memory the controllers and
brokers hold, and how each figure grows from one size to the next (the goal: linearly,
no more than 10.5x for 10x the partitions).

Memory: the active controller's peak and steady resident set (``/proc``'s VmHWM and
VmRSS), the brokers' beside it, and the bytes the metadata image itself takes per
partition — the log replayed in this process under ``tracemalloc`` (what Python
allocated for the image, nothing else); at the end every process's peak (controllers,
brokers, ZooKeeper) and the machine's: the most memory in use (MemTotal - MemAvailable)
sampled through the whole run, beside what was in use before it.
"""

from __future__ import annotations

import itertools
import json
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

from migration.local.zookeeper import EmbeddedZooKeeper
from tests.benchmarks import log_times
from tests.migration_harness import MigrationRig, replay_log

COPIED = re.compile(
    r"Completed migration of metadata from Zookeeper to KRaft\. (\d+) records were "
    r"generated in (\d+) ms"
)
GROWTH_GOAL = 10.5  # for 10x the partitions
TIMED = (
    "write_pause_s",
    "unavailable_s",
    "copy_s",
    "full_sync_s",
    "audit_s",
    "kraft_restart_s",
    "reader_s",
)


SLOWEST = re.compile(r"the slowest, (.+), took ([\d.]+) ms\.$", re.M)
SLOW = re.compile(r"Exceptionally slow controller event (.+) took ([\d.]+) ms\.$", re.M)
# the controllers' performance log in the bench: a summary every 10 s, and every event
# holding the loop as long as the goal's bound logged at once
PERFORMANCE_PROPS = {
    "controller.performance.sample.period.ms": "10000",
    "controller.performance.always.log.threshold.ms": "200",
}
SLOW_EVENT_GOAL_MS = 200.0


def slowest_event(outputs: list[str]) -> dict[str, Any]:
    """The longest any one event held a controller's loop in the run (the controllers'
    performance logs: each period's slowest and each event past the threshold), its
    name, how many events held a loop ``SLOW_EVENT_GOAL_MS`` or more, and those by name
    (count and longest, in ms): where the loops' time went."""
    seen = [
        (float(ms), name)
        for output in outputs
        for pattern in (SLOWEST, SLOW)
        for name, ms in pattern.findall(output)
    ]
    over: dict[str, list[float]] = {}
    for output in outputs:
        for name, ms in SLOW.findall(output):
            over.setdefault(name, []).append(float(ms))
    took, name = max(seen, default=(0.0, ""))
    return {
        "slowest_event_ms": round(took, 1),
        "slowest_event": name,
        "events_over_goal": sum(len(times) for times in over.values()),
        "events_over_goal_by_name": {
            n: [len(times), round(max(times), 1)]
            for n, times in sorted(over.items(), key=lambda item: -len(item[1]))
        },
    }


def copy_rate(output: str) -> dict[str, Any]:
    """The copy's records and its whole time (the pre-copy before the claim and the
    catch-up after it, from its own log line), and records/s through the quorum."""
    found = COPIED.search(output)
    records = int(found.group(1)) if found else 0
    ms = int(found.group(2)) if found else 0
    return {
        "copy_records": records,
        "copy_whole_s": round(ms / 1000, 3),
        "copy_records_per_s": round(records * 1000 / ms) if ms else 0,
    }


def full_sync(rig: MigrationRig, wait: Any, timeout_s: float) -> dict[str, Any]:
    """The active controller SIGKILLed; the next leader's full sync: from its claim of
    ZooKeeper to ZooKeeper synced with the log (every znode read and compared), and
    the failover in all (the kill to dual-writing again). The killed one restarts."""
    old = rig.status()["active_controller"]
    killed = time.time()
    rig.quorum.kill(old, signal.SIGKILL)
    status = wait(
        lambda: (
            (s := rig.status())["active_controller"] not in (-1, old)
            and s["driver_phase"] == "DUAL_WRITE"
            and s
        ),
        timeout_s,
    )
    back = time.time()
    rig.quorum.start(old)
    text = rig.quorum.output(status["active_controller"])
    claimed = log_times.first(text, "]: claimed ZooKeeper", killed)
    synced = log_times.first(text, "ZooKeeper synced with the log", killed)
    assert claimed is not None and synced is not None, "the new leader's sync is not logged"
    return {
        "full_sync_s": round(synced - claimed, 3),
        "failover_s": round(back - killed, 3),
        "failover_killed": old,
    }


def audit(rig: MigrationRig, timeout_s: float) -> dict[str, Any]:
    """``zk2kraft audit`` of the migrated cluster against the quorum, as an operator
    runs it: its own process, Spark's JVM started cold (local[2])."""
    with tempfile.NamedTemporaryFile("w", suffix=".secret") as secret:
        secret.write(rig.quorum.extra["password.encoder.secret"])
        secret.flush()
        done = subprocess.run(
            [sys.executable, "-m", "migration.cli.main", "audit", "--zk", rig.zk_connect,
             "--bootstrap-controller", ",".join(rig.quorum.bootstrap),
             "--password-encoder-secret-file", secret.name, "--json"],
            capture_output=True, text=True, timeout=timeout_s, check=False,
        )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr[-2000:]
    report = json.loads(done.stdout)
    return {"audit_s": report["seconds"]["total"], "audit_consistent": report["consistent"]}


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def _used_mib() -> int:
    """The machine's memory in use: MemTotal - MemAvailable (page cache not counted)."""
    fields = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        name, value = line.split(":", 1)
        fields[name] = int(value.split()[0])
    return (fields["MemTotal"] - fields["MemAvailable"]) // 1024


class MemoryPeak:
    """The machine's memory in use, sampled every 0.5 s while the context is open."""

    def __init__(self) -> None:
        self.before = self.peak = _used_mib()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="memory-peak", daemon=True)

    def _sample(self) -> None:
        while not self._done.wait(0.5):
            self.peak = max(self.peak, _used_mib())

    def __enter__(self) -> MemoryPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()

    def figures(self) -> dict[str, Any]:
        return {"machine_used_before_mib": self.before, "machine_used_peak_mib": self.peak}


def process_peaks(
    rig: MigrationRig, zk: EmbeddedZooKeeper, restarted: int | None
) -> dict[str, Any]:
    """Every running process's peak resident set (VmHWM), MiB: the controllers but
    ``restarted`` (the one :func:`full_sync` killed and started again: its peak says
    nothing yet), the brokers (a rolled broker's peak is its KRaft-mode run's) and the
    ZooKeeper servers."""

    def peak(pid: int) -> int:
        return round(_status_kib(pid, "VmHWM") / 1024)

    return {
        "controllers_peak_rss_mib": [
            peak(c.pid) for node, c in rig.quorum.children.items() if node != restarted and c.pid
        ],
        "brokers_peak_rss_mib": [
            peak(c.process.pid) for c in rig.cluster.brokers.values() if c.process is not None
        ],
        "zookeeper_peak_rss_mib": [
            peak(s.process.pid) for s in zk.servers if s.process is not None
        ],
    }


def memory(rig: MigrationRig, partitions: int) -> dict[str, Any]:
    """Resident memory of the active controller and the brokers, and the image's own
    bytes per partition (the active controller's log replayed here, traced)."""
    active = rig.status()["active_controller"]
    pid = rig.quorum.children[active].pid
    brokers = [c.process.pid for c in rig.cluster.brokers.values() if c.process is not None]
    tracemalloc.start()
    try:
        image = replay_log(rig.quorum.log_dir(active))
        image_bytes = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del image
    mib = 1024
    return {
        "controller_peak_rss_mib": round(_status_kib(pid, "VmHWM") / mib),
        "controller_rss_mib": round(_status_kib(pid, "VmRSS") / mib),
        "brokers_rss_mib": [round(_status_kib(p, "VmRSS") / mib) for p in brokers],
        "image_bytes_per_partition": round(image_bytes / partitions),
    }


def growth(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each timed figure at one size over the same figure at the size before it, per
    10x the partitions (goal: <= 10.5)."""
    out = []
    for small, big in itertools.pairwise(results):
        scale = big["partitions"] / small["partitions"]
        ratios = {
            key: round(big[key] / small[key] * 10 / scale, 2)
            for key in TIMED
            if small.get(key) and big.get(key)
        }
        out.append({"from": small["partitions"], "to": big["partitions"], "per_10x": ratios})
    return out


def report(results: list[dict[str, Any]]) -> None:
    for r in results:
        if "full_sync_s" not in r:
            continue
        print(
            f"  {r['partitions']:,} partitions: copy {r['copy_records']:,} records at "
            f"{r['copy_records_per_s']:,} records/s through the quorum; full sync by a new "
            f"leader {r['full_sync_s']:.3f} s (failover, kill to dual-writing "
            f"{r['failover_s']:.3f} s); audit {r['audit_s']:.1f} s "
            f"({'consistent' if r['audit_consistent'] else 'DIFFERENCES'})"
        )
        print(
            f"  memory: active controller peak {r['controller_peak_rss_mib']:,} MiB, now "
            f"{r['controller_rss_mib']:,} MiB; brokers {r['brokers_rss_mib']} MiB; the image "
            f"{r['image_bytes_per_partition']:,} bytes/partition"
        )
        if "slowest_event_ms" in r:
            print(
                f"  the slowest event held a controller's loop {r['slowest_event_ms']:,.1f} ms "
                f"({r['slowest_event'] or 'none logged'}); events at or over "
                f"{SLOW_EVENT_GOAL_MS:.0f} ms: {r['events_over_goal']} (goal: none)"
            )
        if "machine_used_peak_mib" in r:
            print(
                f"  peaks: controllers {r['controllers_peak_rss_mib']} MiB, brokers "
                f"{r['brokers_peak_rss_mib']} MiB, ZooKeeper {r['zookeeper_peak_rss_mib']} MiB; "
                f"the machine's memory in use peaked at {r['machine_used_peak_mib']:,} MiB "
                f"({r['machine_used_before_mib']:,} MiB before the run)"
            )
    for g in growth(results):
        figures = ", ".join(f"{k} {v}x" for k, v in g["per_10x"].items())
        worst = max(g["per_10x"].values(), default=0.0)
        verdict = "met" if worst <= GROWTH_GOAL else "NOT met"
        print(
            f"  growth {g['from']:,} -> {g['to']:,} (per 10x partitions): {figures} "
            f"(goal <= {GROWTH_GOAL}x: {verdict})"
        )
