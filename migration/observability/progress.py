"""Progress of long work (reading or seeding a large tree), for people and for logs.

:class:`Progress` is what the working code talks to: ``stage(name, total)`` then
``advance(n)``, and ``done()`` at the end. Three reporters:

- :class:`TerminalProgress` redraws one status line on a terminal at most ten times a
  second;
- :class:`LogProgress` writes plain lines (for a CronJob's or a pod's log, a pipe, a
  file): one every ``interval_s`` while a stage advances, and one when a stage that
  lasted that long ends, each with the stage, done/total, the percentage and the rate
  per second; a quicker stage says nothing (a short command's output, and its one-line
  error, stay as they are);
- :class:`NullProgress` is silent.

:func:`for_stream` picks between them. Not thread-safe: one reporter per worker.
"""

from __future__ import annotations

import sys
import time
from typing import Protocol, TextIO

LOG_INTERVAL_S = 5.0  # a line this often off a terminal


class Progress(Protocol):
    def stage(self, name: str, total: int) -> None: ...

    def advance(self, n: int) -> None: ...

    def done(self) -> None: ...


class NullProgress:
    def stage(self, name: str, total: int) -> None:
        pass

    def advance(self, n: int) -> None:
        pass

    def done(self) -> None:
        pass


class _Stages:
    """The counting both visible reporters share: the current stage, its count, its
    start, when it was last shown; ``_show`` is each one's own."""

    def __init__(self, stream: TextIO | None, interval_s: float) -> None:
        self.stream = stream or sys.stderr
        self.interval_s = interval_s
        self.name = ""
        self.total = 0
        self.count = 0
        self.started = time.monotonic()
        self.last_draw = 0.0

    def stage(self, name: str, total: int) -> None:
        self._end()
        self.name, self.total, self.count = name, total, 0
        self.started = time.monotonic()
        self._started()

    def advance(self, n: int) -> None:
        self.count += n
        if time.monotonic() - self.last_draw >= self.interval_s:
            self._show()

    def done(self) -> None:
        self._end()
        self.name = ""

    def _started(self) -> None:
        self._show()

    def _end(self) -> None:
        if self.name:
            self._show(final=True)

    def _rate(self) -> float:
        self.last_draw = time.monotonic()
        elapsed = self.last_draw - self.started
        return self.count / elapsed if elapsed > 0 else 0.0

    def _show(self, final: bool = False) -> None:
        raise NotImplementedError


class TerminalProgress(_Stages):
    """A one-line progress bar on ``stream`` (stderr by default)."""

    WIDTH = 30

    def __init__(self, stream: TextIO | None = None, interval_s: float = 0.1) -> None:
        super().__init__(stream, interval_s)

    def _show(self, final: bool = False) -> None:
        rate = self._rate()
        if self.total > 0:
            frac = min(self.count / self.total, 1.0)
            filled = int(frac * self.WIDTH)
            bar = "#" * filled + "-" * (self.WIDTH - filled)
            text = f"{self.name:<22} [{bar}] {self.count:>9,}/{self.total:,} {rate:>9,.0f}/s"
        else:
            text = f"{self.name:<22} {self.count:>9,} {rate:>9,.0f}/s"
        self.stream.write("\r" + text + ("\n" if final else ""))
        self.stream.flush()


class LogProgress(_Stages):
    """Plain lines on ``stream``: ``progress: <stage>: <done>/<total> (<pct>%),
    <rate>/s``, every ``interval_s`` while a stage advances, and once when a stage that
    lasted ``interval_s`` or more ends (``..., done in <s> s``). A stage without a total
    shows its count only. Each line is whole and flushed, so a log collector never sees
    half of one."""

    def __init__(self, stream: TextIO | None = None, interval_s: float = LOG_INTERVAL_S) -> None:
        super().__init__(stream, interval_s)

    def _started(self) -> None:
        self.last_draw = time.monotonic()  # the first line after an interval, not at 0

    def _end(self) -> None:
        if self.name and time.monotonic() - self.started >= self.interval_s:
            self._show(final=True)

    def _show(self, final: bool = False) -> None:
        rate = self._rate()
        if self.total > 0:
            pct = min(self.count / self.total, 1.0) * 100
            text = f"{self.count:,}/{self.total:,} ({pct:.1f}%)"
        else:
            text = f"{self.count:,}"
        line = f"progress: {self.name}: {text}, {rate:,.0f}/s"
        if final:
            line += f", done in {self.last_draw - self.started:.1f} s"
        self.stream.write(line + "\n")
        self.stream.flush()


def for_stream(stream: TextIO, enabled: bool = True) -> Progress:
    """A progress bar when ``stream`` is a terminal, plain lines every
    :data:`LOG_INTERVAL_S` when it is not (a pipe, a file, a pod's log); silence when
    not ``enabled``."""
    if not enabled:
        return NullProgress()
    return TerminalProgress(stream) if stream.isatty() else LogProgress(stream)
