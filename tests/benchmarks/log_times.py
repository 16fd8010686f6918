"""When a process logged something: the benchmarks time the migration from the
processes' own log lines (``2026-11-23 02:48:07,324 INFO ...``)."""

from __future__ import annotations

import re
from datetime import datetime

TIMESTAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")


def at(line: str) -> float:
    """The line's time (epoch seconds); the line must start with a timestamp."""
    found = TIMESTAMP.match(line)
    assert found is not None, line
    return datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()


def first(text: str, needle: str, after: float = 0.0) -> float | None:
    """The time of the first timestamped line holding ``needle`` logged after ``after``."""
    for line in text.splitlines():
        if needle in line and TIMESTAMP.match(line) and (when := at(line)) > after:
            return when
    return None
