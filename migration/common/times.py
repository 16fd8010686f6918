"""Wall-clock times as the reports and pages write them: one form everywhere."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


def iso(moment: datetime | int) -> str:
    """``moment`` (a datetime, or an int of milliseconds since the Unix epoch) in UTC as
    ISO 8601 to the millisecond with a ``Z``: ``2026-11-27T06:49:03.120Z``."""
    if isinstance(moment, int):
        seconds, ms = divmod(moment, 1000)  # exact: no float in between
        moment = datetime.fromtimestamp(seconds, UTC) + timedelta(milliseconds=ms)
    text = moment.astimezone(UTC).isoformat(timespec="milliseconds")
    return text.removesuffix("+00:00") + "Z"
