"""Kafka's copy as the controller that made it logged it, read from its log's text: the
records and the copy's duration (Kafka's "N records were generated in M ms" line, which
zk2kraft's controllers write too) and the metadata write pause, from the migration
driver's BECOME_CONTROLLER (the ZooKeeper controller fenced, metadata writes refused) to
its first DUAL_WRITE, by the log's own timestamps (this machine's local time).

The driver's transitions are read in both forms: zk2kraft's controllers' output
(``... migration driver [PHASE]``) and Apache Kafka's ``server.log`` (``[...]
INFO [KRaftMigrationDriver id=N] N transitioning from A to PHASE state``). Read-only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path


@dataclass
class CopyFigures:
    """The copy as the controller that made it logged it."""

    records: int = 0
    copy_ms: float = 0.0
    write_pause_ms: float = 0.0  # BECOME_CONTROLLER (writes refused) to DUAL_WRITE
    paused_at: datetime | None = None  # when writes were refused (aware, UTC)
    controller: int | None = None


COPY_LINE = re.compile(r"(\d+) records were generated in (\d+) ms")
_STAMP = r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})"
PHASE_LINES = (
    re.compile(rf"^{_STAMP} .*migration driver \[(\w+)\]"),
    re.compile(rf"^\[{_STAMP}\] \w+ \[KRaftMigrationDriver id=\d+\] \d+ transitioning from "
               r"\w+ to (\w+) state"),
)  # fmt: skip


def _phase(line: str) -> tuple[datetime, str] | None:
    for pattern in PHASE_LINES:
        found = pattern.match(line)
        if found is not None:
            return datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S,%f"), found.group(2)
    return None


def copy_figures_in(texts: Mapping[int, str]) -> CopyFigures:
    """The figures of the module doc from each controller's log text (by node id): those
    of the first that logged a copy; empty figures when none did."""
    figures = CopyFigures()
    for node, text in texts.items():
        found = COPY_LINE.search(text)
        if not found:
            continue
        figures.records, figures.copy_ms = int(found.group(1)), float(found.group(2))
        figures.controller = node
        became: datetime | None = None
        for line in text.splitlines():
            phase = _phase(line)
            if phase is None:
                continue
            at, name = phase
            if name == "BECOME_CONTROLLER" and became is None:
                became = at
                figures.paused_at = at.astimezone(UTC)  # the log's times are local
            elif name == "DUAL_WRITE" and became is not None:
                figures.write_pause_ms = (at - became).total_seconds() * 1000
                break
        break
    return figures


def log_sizes(logs: Mapping[int, Path]) -> dict[int, int]:
    """Where each log ends now (a missing one: 0), to read on from there."""
    return {node: path.stat().st_size if path.exists() else 0 for node, path in logs.items()}


def text_since(path: Path, offset: int) -> str:
    """``path``'s text from byte ``offset`` on ("" when it does not exist)."""
    if not path.exists():
        return ""
    with path.open("rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace")
