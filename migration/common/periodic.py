"""A view's sampling thread: one callable run at once and then every period, on a
daemon thread, until stopped. What a live page reads runs on it (the controllers'
page, the driven migration's page): a failed sample is logged at DEBUG with its
traceback and the next one is taken on time -- a view never stops what it watches."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

JOIN_S = 5.0  # stop() waits this long for a sample under way


class Periodic:
    """``tick()`` on a daemon thread named ``name``: at :meth:`start`, then every
    ``period_s`` (from one sample's end to the next's start) until :meth:`stop`.
    Not restartable; stop() before start() is allowed and makes start() idle."""

    def __init__(self, name: str, period_s: float, tick: Callable[[], None]) -> None:
        self._tick = tick
        self._period_s = period_s
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop sampling: returns once the sample under way ended, or after
        :data:`JOIN_S` (the thread is a daemon: it never holds the process)."""
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join(timeout=JOIN_S)

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                self._tick()
            except Exception:
                log.debug("%s: a sample failed", self._thread.name, exc_info=True)
            self._stopped.wait(self._period_s)
