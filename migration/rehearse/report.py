"""The rehearsal's report: typed sections, ``report.json`` (version 1) and ``report.html``.

Contract (documented field by field in docs/operations.md, "report.json"):

- :class:`Report` holds one dataclass per section. A section the rehearsal never reached
  (it failed or was stopped before) is ``None`` and written as ``null``; the list
  sections (``phases``, ``restarts``, ``runbook``) are empty instead, never ``null``.
- ``ok`` is true exactly when ``problems`` is empty: the orchestrator names every problem
  (a preflight blocker, an audit difference, a failed drill, an error that stopped it),
  and the phase that found one is not ok (:meth:`Recorder.fail`).
- Times are ISO 8601 in UTC (``2026-11-27T06:49:03.120Z``); durations are seconds
  (``*_s``, ``seconds``) or milliseconds (``*_ms``) as their names say; a series'
  time is seconds since the rehearsal started (:attr:`Report.started`).
- :func:`write_reports` writes both files atomically (a reader never sees half of one).

:class:`Recorder` is what the orchestrator measures phases with: ``with
recorder.phase("copy") as p: ...`` records a phase's start, end, duration and whether it
went through -- not when its block raised, nor when :meth:`Recorder.fail` was called while
it ran (a phase that found a problem). Phases do not nest. A report built from it takes
``started=recorder.started`` and ``phases=recorder.phases`` (so series timed with
:meth:`Recorder.elapsed` and the phases share one origin) and ``finished=recorder.now()``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import platform
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from migration.common.files import ensure_dir, replace_contents
from migration.common.times import iso
from migration.pages import rehearsal as rehearsal_page

VERSION = 1
REPORT_JSON = "report.json"
REPORT_HTML = "report.html"

BrokerMode = Literal["migrating", "kraft", "zookeeper"]
SourceKind = Literal["zookeeper", "files"]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Machine:
    """The machine the rehearsal ran on: its times are this machine's, not production's."""

    cpus: int
    platform: str
    python: str

    @classmethod
    def this_one(cls) -> Machine:
        """This machine; ``platform`` as ``platform.platform()`` spells it on Linux, read from the
        kernel's uname and the C library without running ``uname -p``."""
        kernel = os.uname()
        libc, libc_version = platform.libc_ver()
        with_libc = f"-with-{libc}{libc_version}" if libc else ""
        return cls(
            cpus=os.cpu_count() or 1,
            platform=f"{kernel.sysname}-{kernel.release}-{kernel.machine}{with_libc}",
            python=sys.version.split()[0],
        )


@dataclass(frozen=True)
class Engine:
    """What ran the local cluster: ``kafka`` (Apache Kafka's own brokers and controllers,
    driven as ``zk2kraft kafka migrate`` drives production) or ``zk2kraft`` (zk2kraft's
    brokers and controllers); its version, and why it was chosen."""

    name: Literal["kafka", "zk2kraft"]
    version: str
    why: str


@dataclass(frozen=True)
class Source:
    """Production's tree as read: ``name`` is the connect string or directory, without
    credentials; ``counts`` are the tree's objects (topics, partitions, ...)."""

    kind: SourceKind
    name: str
    chroot: str
    znodes: int
    bytes: int
    read_s: float
    cluster_id: str
    broker_ids: tuple[int, ...]
    counts: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Finding:
    """A preflight blocker or warning on production's tree, with what to do about it."""

    code: str
    message: str
    fix: str
    path: str | None = None  # the znode concerned, when one is


@dataclass(frozen=True)
class Preflight:
    ok: bool
    blockers: tuple[Finding, ...] = ()
    warnings: tuple[Finding, ...] = ()


@dataclass(frozen=True)
class Setting:
    name: str
    value: str


@dataclass(frozen=True)
class EnableMigration:
    """What step 3 (``runbook``: "Enable the migration on the brokers") will change on
    production: ``restart``, the brokers to restart one at a time with ``settings`` in
    their ``server.properties``; ``flagged``, those registered with the migration flag
    already (none before step 3). The rehearsal's local brokers, with production's ids,
    go through the same restarts."""

    runbook: str
    restart: tuple[int, ...]
    flagged: tuple[int, ...]
    settings: tuple[Setting, ...]


@dataclass
class PhaseRecord:
    """One step of the procedure: ``ok`` false when it raised or found a problem;
    ``detail`` says what it did (or, when it raised and nothing was set, the error)."""

    name: str
    started: datetime
    finished: datetime | None = None
    seconds: float = 0.0
    ok: bool = False
    detail: str = ""


@dataclass(frozen=True)
class Copy:
    """The controllers' copy of ZooKeeper into the metadata log. ``pause_started_s``:
    seconds since the rehearsal started when the controllers' writes paused for it
    (``None``: not known; the chart then marks the pause at the copy phase's start)."""

    records: int
    records_by_type: dict[str, int]
    copy_ms: float
    write_pause_ms: float
    pause_started_s: float | None = None


@dataclass(frozen=True)
class DualWrite:
    """The synthetic admin workload during dual-write: ``lag`` is the write-behind lag
    (records in the log not yet in ZooKeeper) and ``latency_ms`` each admin request's
    latency, both as ``(seconds since start, value)``."""

    changes: int
    by_kind: dict[str, int]
    errors: int
    max_lag: int
    lag: tuple[tuple[float, int], ...] = ()
    latency_ms: tuple[tuple[float, float], ...] = ()


@dataclass(frozen=True)
class Restart:
    """One broker restarted into a mode, and how long until the cluster was ready again."""

    broker: int
    to: BrokerMode
    seconds: float


@dataclass(frozen=True)
class Audit:
    ok: bool
    seconds: float
    exit_code: int
    differences: int
    summary: str


@dataclass(frozen=True)
class DrillFinding:
    """One check of the rollback drill: ``zk2kraft rollback``'s own, then the drill's."""

    code: str
    ok: bool
    message: str


@dataclass(frozen=True)
class RollbackDrill:
    ok: bool
    seconds: float
    from_state: str  # "from" in JSON: the cluster state rolled back from
    findings: tuple[DrillFinding, ...] = ()
    detail: str = ""


@dataclass(frozen=True)
class Roll:
    """The roll of every broker into KRaft mode."""

    seconds: float
    brokers: tuple[int, ...]
    offline_partitions: int
    metadata_agreed: bool


@dataclass(frozen=True)
class Finalized:
    ok: bool
    seconds: float
    state: str


@dataclass(frozen=True)
class RunbookStep:
    """A production runbook section with production's values filled in."""

    runbook: str
    title: str
    commands: tuple[str, ...]


@dataclass
class Report:
    started: datetime
    finished: datetime
    machine: Machine
    problems: list[str] = field(default_factory=list)
    engine: Engine | None = None
    source: Source | None = None
    preflight: Preflight | None = None
    enable_migration: EnableMigration | None = None
    phases: list[PhaseRecord] = field(default_factory=list)
    copy: Copy | None = None
    dual_write: DualWrite | None = None
    restarts: list[Restart] = field(default_factory=list)
    audit: Audit | None = None
    rollback_drill: RollbackDrill | None = None
    roll: Roll | None = None
    finalized: Finalized | None = None
    estimate: dict[str, Any] | None = None  # migration.rehearse.estimate.estimate's dict
    runbook: list[RunbookStep] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def since_start(self, moment: datetime) -> float:
        """Seconds from the rehearsal's start to ``moment``."""
        return (moment - self.started).total_seconds()


_JSON_NAMES = {"from_state": "from"}  # a Python keyword in JSON


def _plain(value: Any) -> Any:
    """A section as JSON types: dataclasses as objects (fields in order, renamed per
    ``_JSON_NAMES``), datetimes ISO 8601, tuples as arrays, floats to the thousandth (of
    the seconds or milliseconds they are), a non-finite one as null (JSON has none)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            _JSON_NAMES.get(f.name, f.name): _plain(getattr(value, f.name))
            for f in dataclasses.fields(value)
        }
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, float):
        return round(value, 3) if math.isfinite(value) else None
    return value


def to_json(report: Report) -> dict[str, Any]:
    """``report`` as report.json's object (version 1): only JSON types, keys in the
    documented order."""
    body = _plain(report)
    return {"version": VERSION, "ok": report.ok, "problems": body.pop("problems"), **body}


def write_reports(report: Report, out_dir: Path) -> tuple[Path, Path]:
    """Write ``out_dir/report.json`` and ``out_dir/report.html`` (the directory created if
    missing), each atomically; returns their paths (json, html)."""
    ensure_dir(out_dir)
    json_path, html_path = out_dir / REPORT_JSON, out_dir / REPORT_HTML
    text = json.dumps(to_json(report), indent=2, ensure_ascii=False) + "\n"
    replace_contents(json_path, text.encode())
    replace_contents(html_path, rehearsal_page.render(report).encode())
    return json_path, html_path


class Recorder:
    """Phases measured as the rehearsal runs (see the module doc). Durations come from the
    monotonic clock; ``started``/``finished`` are wall-clock UTC."""

    def __init__(self) -> None:
        self.started = utc_now()
        self._t0 = time.monotonic()
        self.phases: list[PhaseRecord] = []
        self._running: PhaseRecord | None = None
        self._failed = False  # the running phase found a problem

    def elapsed(self) -> float:
        """Seconds since the recorder started: the ``t`` of a sample taken now."""
        return time.monotonic() - self._t0

    def now(self) -> datetime:
        """The wall-clock time now on the recorder's clock (a report's ``finished``)."""
        return self._wall(time.monotonic())

    @contextmanager
    def phase(self, name: str) -> Iterator[PhaseRecord]:
        """Record the block as the phase ``name`` (appended when it starts, so a report
        written meanwhile shows it unfinished); an exception, ``KeyboardInterrupt``
        included, marks it not ok and propagates; so does :meth:`fail` called inside."""
        start = time.monotonic()
        record = PhaseRecord(name=name, started=self._wall(start))
        self.phases.append(record)
        self._running, self._failed = record, False
        try:
            yield record
        except BaseException as e:
            record.ok = False
            if not record.detail:
                record.detail = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            raise
        else:
            record.ok = not self._failed
        finally:
            end = time.monotonic()
            record.seconds = end - start
            record.finished = self._wall(end)
            self._running = None

    def fail(self) -> PhaseRecord | None:
        """Mark the running phase failed (it found a problem): it ends not ok even when its
        block returns. The phase, or None outside of one."""
        if self._running is not None:
            self._failed = True
        return self._running

    def _wall(self, monotonic: float) -> datetime:
        # Wall times derived from the monotonic clock, so phases never overlap or run
        # backwards on the timeline when the system clock is stepped.
        return self.started + timedelta(seconds=monotonic - self._t0)
