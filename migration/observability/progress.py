"""Progress of long work (reading or seeding a large tree), for people and for logs.

:class:`Progress` is what the working code talks to: ``stage(name, total)`` then
``advance(n)``. :class:`TerminalProgress` redraws one status line on a terminal at most
ten times a second; :class:`NullProgress` is silent. Not thread-safe: one reporter per
worker.
"""

from __future__ import annotations

import sys
import time
from typing import Protocol, TextIO


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


class TerminalProgress:
    """A one-line progress bar on ``stream`` (stderr by default)."""

    WIDTH = 30

    def __init__(self, stream: TextIO | None = None, interval_s: float = 0.1) -> None:
        self.stream = stream or sys.stderr
        self.interval_s = interval_s
        self.name = ""
        self.total = 0
        self.count = 0
        self.started = time.monotonic()
        self.last_draw = 0.0

    def stage(self, name: str, total: int) -> None:
        if self.name:
            self._draw(final=True)
        self.name, self.total, self.count = name, total, 0
        self.started = time.monotonic()
        self._draw()

    def advance(self, n: int) -> None:
        self.count += n
        now = time.monotonic()
        if now - self.last_draw >= self.interval_s:
            self._draw()

    def done(self) -> None:
        if self.name:
            self._draw(final=True)
            self.name = ""

    def _draw(self, final: bool = False) -> None:
        self.last_draw = time.monotonic()
        elapsed = self.last_draw - self.started
        rate = self.count / elapsed if elapsed > 0 else 0.0
        if self.total > 0:
            frac = min(self.count / self.total, 1.0)
            filled = int(frac * self.WIDTH)
            bar = "#" * filled + "-" * (self.WIDTH - filled)
            text = f"{self.name:<22} [{bar}] {self.count:>9,}/{self.total:,} {rate:>9,.0f}/s"
        else:
            text = f"{self.name:<22} {self.count:>9,} {rate:>9,.0f}/s"
        self.stream.write("\r" + text + ("\n" if final else ""))
        self.stream.flush()


def for_stream(stream: TextIO, enabled: bool = True) -> Progress:
    """A terminal progress bar when ``stream`` is a terminal, else silence."""
    return TerminalProgress(stream) if enabled and stream.isatty() else NullProgress()
