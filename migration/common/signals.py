"""SIGTERM taken as Ctrl-C, for commands that start local processes (a rehearsal, the
benches): a service manager's or ``timeout``'s SIGTERM then runs the same clean-up as an
operator's Ctrl-C -- the ``finally`` blocks and context managers that stop those
processes -- instead of ending Python at once and leaving them running (each runs in a
session of its own, so no signal reaches them from here)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


@contextmanager
def terminated_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt as Ctrl-C does, inside the block (the main
    thread's); a second SIGINT or SIGTERM during the clean-up that follows is ignored (the
    clean-up is bounded by the processes' own stop budgets). The handlers there were
    before are back after the block."""

    def stop(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise KeyboardInterrupt

    before = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
