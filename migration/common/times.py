"""Wall-clock times as the reports and pages write them: one form everywhere.

:func:`iso` is total: a value a datetime cannot hold renders as a marker, never raises,
so no stored number can make a page or a report fail. What can be represented is one
rule, :func:`representable_ms` (the RPCs that take a wall-clock time from a peer refuse
the rest at the edge with it)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MIN_MS = -62_135_596_800_000  # 0001-01-01T00:00:00.000Z, datetime.min in UTC
MAX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z, the last ms of datetime.max


def representable_ms(ms: int) -> bool:
    """Whether ``ms`` (milliseconds since the Unix epoch) is a time Python's datetime
    holds, i.e. within [:data:`MIN_MS`, :data:`MAX_MS`]."""
    return MIN_MS <= ms <= MAX_MS


def iso(moment: datetime | int) -> str:
    """``moment`` (a datetime, or an int of milliseconds since the Unix epoch) in UTC as
    ISO 8601 to the millisecond with a ``Z``: ``2026-11-27T06:49:03.120Z``.

    Total: an int outside :func:`representable_ms` (or a datetime whose UTC form falls
    outside datetime's range) gives ``<out of range: N ms>`` instead of raising."""
    if isinstance(moment, int):
        if not representable_ms(moment):
            return f"<out of range: {moment} ms>"
        moment = EPOCH + timedelta(milliseconds=moment)  # exact: integer arithmetic
    try:
        text = moment.astimezone(UTC).isoformat(timespec="milliseconds")
    except (OverflowError, ValueError, OSError):  # a naive or offset datetime at the edge
        return f"<out of range: {moment!r}>"
    return text.removesuffix("+00:00") + "Z"
