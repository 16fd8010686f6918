"""The pure half of :mod:`tests.benchmarks.kafka_side_bench`: the figures read off the
controllers' own log lines, and the table of how far zk2kraft is ahead of Apache Kafka.

Contracts:

- A log line's time is its leading timestamp, in either engine's form: zk2kraft's
  controllers' ``2026-11-29 14:07:23,123 INFO ...`` and Kafka's ``server.log``
  ``[2026-11-29 14:07:23,123] INFO ...`` (both this machine's local time, naive); a line
  without one has none and is skipped.
- The claim is the line the active controller writes once it holds ZooKeeper's
  ``/controller`` (:data:`CLAIM`); dual-writing is the migration driver's transition
  into DUAL_WRITE (:data:`migration.rehearse.copy_log.PHASE_LINES`, both forms).
- :func:`ahead` says, per figure, how many times zk2kraft is ahead of Kafka: Kafka's
  figure over zk2kraft's for a cost (a pause, a time, memory: lower is better), and
  zk2kraft's over Kafka's for a rate (records/s: higher is better); so above 1 means
  zk2kraft is ahead either way. None when either figure is missing or not positive.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from typing import Any

from migration.rehearse.copy_log import PHASE_LINES

ENGINES = ("zk2kraft", "kafka")
CLAIM = {
    "zk2kraft": "]: claimed ZooKeeper",  # migration/driver/rungs.py
    "kafka": "Claimed ZK controller leadership",  # KRaftMigrationDriver
}
STAMP = re.compile(r"^\[?(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]? ")

# (key, label, unit, cost): a cost is better lower, a rate higher
FIGURES: tuple[tuple[str, str, str, bool], ...] = (
    ("write_pause_ms", "copy's write pause (BECOME_CONTROLLER -> DUAL_WRITE)", "ms", True),
    ("copy_records_per_s", "copy's records/s (records / the copy's own ms)", "rec/s", False),
    ("claim_to_dual_write_ms", "claim -> dual-writing", "ms", True),
    ("failover_ms", "failover in dual-write (SIGKILL -> new leader DUAL_WRITE)", "ms", True),
    ("controllers_peak_rss_mib", "controllers' peak RSS (max VmHWM of the three)", "MiB", True),
)


def timed_lines(text: str) -> Iterator[tuple[datetime, str]]:
    """Each timestamped line of ``text`` with its time, in order."""
    for line in text.splitlines():
        found = STAMP.match(line)
        if found is not None:
            yield datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S,%f"), line


def is_dual_write(line: str) -> bool:
    """The migration driver's transition into DUAL_WRITE, in either engine's form."""
    for pattern in PHASE_LINES:
        found = pattern.match(line)
        if found is not None and found.group(2) == "DUAL_WRITE":
            return True
    return False


def first_at(text: str, matches: Callable[[str], bool]) -> datetime | None:
    """The time of the first timestamped line of ``text`` that ``matches``."""
    return next((at for at, line in timed_lines(text) if matches(line)), None)


def last_at(text: str, matches: Callable[[str], bool]) -> datetime | None:
    """The time of the last timestamped line of ``text`` that ``matches``."""
    found = None
    for at, line in timed_lines(text):
        if matches(line):
            found = at
    return found


def span_ms(text: str, start: Callable[[str], bool], end: Callable[[str], bool]) -> float | None:
    """Milliseconds from the first line that matches ``start`` to the first one after it
    that matches ``end``; None when either is not logged."""
    began: datetime | None = None
    for at, line in timed_lines(text):
        if began is None and start(line):
            began = at
        elif began is not None and end(line):
            return (at - began).total_seconds() * 1000
    return None


def claimed(engine: str) -> Callable[[str], bool]:
    """Whether a line is ``engine``'s controller claiming ZooKeeper."""
    needle = CLAIM[engine]
    return lambda line: needle in line


def ahead(zk2kraft: Mapping[str, Any], kafka: Mapping[str, Any]) -> dict[str, float | None]:
    """How many times zk2kraft is ahead on each of :data:`FIGURES` (the module's contract);
    None where either engine has no figure (or did not run: an empty mapping)."""
    out: dict[str, float | None] = {}
    for key, _, _, cost in FIGURES:
        ours, theirs = zk2kraft.get(key), kafka.get(key)
        if isinstance(ours, int | float) and isinstance(theirs, int | float) and ours > 0 < theirs:
            out[key] = round(theirs / ours if cost else ours / theirs, 2)
        else:
            out[key] = None
    return out


def table(result: Mapping[str, Any]) -> list[str]:
    """One profile's figures as text: a line per figure, both engines and how far ahead
    (an engine the run left out: "not run")."""
    engines = {e: result["engines"].get(e, {}) for e in ENGINES}
    ratios = result["ahead"]
    lines = [
        f"kafka-side {result['profile']} ({result['partitions']:,} partitions, "
        f"{result['brokers']} brokers, replication factor {result['replication_factor']}): "
        "Apache Kafka "
        f"{engines['kafka'].get('version', '(not run)')} against zk2kraft, "
        + ("same tree, same run" if all(engines.values()) else "one side run alone"),
        f"  {'figure':<58} {'zk2kraft':>12} {'kafka':>12} {'zk2kraft ahead':>15}",
    ]
    for key, label, unit, _ in FIGURES:
        row = [engines[e].get(key) if engines[e] else "not run" for e in ENGINES]
        shown = [
            f"{v:,.0f} {unit}" if isinstance(v, int | float) else v or "not measured" for v in row
        ]
        ratio = ratios.get(key)
        lines.append(
            f"  {label:<58} {shown[0]:>12} {shown[1]:>12} "
            f"{f'{ratio:.2f}x' if ratio is not None else '-':>15}"
        )
    for engine in (e for e in ENGINES if engines[e]):
        e = engines[engine]
        lines.append(
            f"  {engine}: {e.get('copy_records')} records in {e.get('copy_ms')} ms; failover "
            f"killed {e.get('failover_killed')}, new leader {e.get('failover_leader')} "
            f"claimed after {e.get('failover_claim_ms')} ms; peaks by controller "
            f"{e.get('controllers_peak_rss_by_node')} MiB; wall {e.get('wall_s')} s"
        )
        lines.extend(f"  {engine} problem: {p}" for p in e.get("problems", []))
    return lines
