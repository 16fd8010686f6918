"""Progress off a terminal: plain lines on a real pipe and a real file, one per interval
while a stage advances and one at each stage's end, each naming the stage, done/total,
the percentage and the rate; the terminal bar only on a terminal (a real pty)."""

from __future__ import annotations

import os
import pty
import re
import select
import time
from pathlib import Path

from migration.observability.progress import (
    LogProgress,
    NullProgress,
    TerminalProgress,
    for_stream,
)

LINE = re.compile(
    r"progress: (?P<stage>[^:]+): (?P<done>[\d,]+)/(?P<total>[\d,]+) "
    r"\((?P<pct>[\d.]+)%\), (?P<rate>[\d,]+)/s(?P<end>, done in [\d.]+ s)?"
)


def test_off_a_terminal_a_pipe_gets_a_line_per_interval_and_one_per_stage_end() -> None:
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "w") as writer, os.fdopen(read_end) as reader:
        progress = for_stream(writer)
        assert isinstance(progress, LogProgress)
        progress.interval_s = 0.05
        progress.stage("reading znodes", 40)
        for _ in range(4):
            time.sleep(0.06)  # each advance lands past the interval: one line each
            progress.advance(10)
        progress.stage("translating", 0)  # ends the first stage
        progress.advance(7)
        time.sleep(0.06)  # lasts the interval: its end is shown
        progress.done()
        writer.close()
        lines = reader.read().splitlines()
    matched = [LINE.fullmatch(line) for line in lines[:-1]]
    assert all(matched), lines
    periodic = [m for m in matched if m and not m["end"]]
    assert [m["done"] for m in periodic] == ["10", "20", "30", "40"]
    assert [m["pct"] for m in periodic] == ["25.0", "50.0", "75.0", "100.0"]
    assert all(m["stage"] == "reading znodes" and m["total"] == "40" for m in periodic)
    assert all(int(m["rate"].replace(",", "")) > 0 for m in periodic)
    end = matched[-1]
    assert end and end["end"] and end["done"] == "40" and end["pct"] == "100.0"
    assert re.fullmatch(r"progress: translating: 7, [\d,]+/s, done in [\d.]+ s", lines[-1])


def test_a_stage_shorter_than_the_interval_says_nothing(tmp_path: Path) -> None:
    """A quick command's stderr stays as it was: its one-line error is still one line."""
    path = tmp_path / "audit.log"
    with path.open("w") as stream:
        progress = LogProgress(stream, interval_s=3600)
        progress.stage("reading znodes", 1_000_000)
        progress.advance(250_000)
        progress.stage("rows handed to Spark", 10)
        progress.advance(10)
        progress.done()
    assert path.read_text() == ""


def test_a_stage_end_is_shown_once(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    with path.open("w") as stream:
        progress = LogProgress(stream, interval_s=0.01)
        progress.stage("rows handed to Spark", 1_000_000)
        time.sleep(0.02)
        progress.done()
        progress.done()  # once only
    (line,) = path.read_text().splitlines()
    match = LINE.fullmatch(line)
    assert match and match["end"] and match["done"] == "0" and match["pct"] == "0.0"


def read_until(fd: int, end: str, hang_guard_s: float = 10.0) -> str:
    """What the pty's other end shows, read until ``end`` has come (a pty hands a read
    what has arrived so far, not every write)."""
    shown = ""
    while end not in shown:
        ready, _, _ = select.select([fd], [], [], hang_guard_s)
        assert ready, f"nothing more within {hang_guard_s} s: {shown!r}"
        shown += os.read(fd, 65536).decode()
    return shown


def test_a_terminal_keeps_the_bar_and_disabled_is_silent() -> None:
    leader, follower = pty.openpty()
    with os.fdopen(follower, "w") as tty:
        assert isinstance(for_stream(tty), TerminalProgress)
        assert isinstance(for_stream(tty, enabled=False), NullProgress)
        bar = for_stream(tty)
        bar.stage("reading znodes", 10)
        bar.advance(10)
        bar.done()
        shown = read_until(leader, "\n")  # the stage's end: the last thing drawn
    os.close(leader)
    assert "[" + "#" * TerminalProgress.WIDTH + "]" in shown and "progress:" not in shown
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "w") as writer, os.fdopen(read_end):
        assert isinstance(for_stream(writer, enabled=False), NullProgress)
