"""Measurements the working code records and a metrics scrape reads: a latency window
(Kafka's histogram timers: recent quantiles, a count and a sum), a windowed rate
(Kafka's ``*-rate`` meters) and a tally (Kafka's ever-growing ``*Count`` gauges).

Threading: recording and reading may happen on different threads (the Raft loop or the
driver's poll records, the HTTP scrape reads); each object guards itself with a lock held
for a few list operations, never while calling out. Nothing here imports the rest of
the project, so the lowest layers (Raft) may record into it.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

Clock = Callable[[], float]  # seconds, monotonic

QUANTILES = (0.5, 0.75, 0.95, 0.99, 0.999)  # what the JMX exporter renders of a timer


@dataclass(frozen=True)
class LatencySummary:
    count: int
    total_ms: float
    max_ms: float  # over the window; 0 when empty
    mean_ms: float  # over the window; 0 when empty
    quantiles: tuple[tuple[float, float], ...]  # (quantile, ms) over the window


class LatencyWindow:
    """The last ``size`` durations in milliseconds (quantiles, max) plus lifetime count
    and sum. Kafka's timers use a decaying reservoir of about the same size."""

    def __init__(self, size: int = 1024, clock: Clock = time.monotonic) -> None:
        self._recent: deque[float] = deque(maxlen=size)
        self._count = 0
        self._total = 0.0
        self._clock = clock
        self._lock = threading.Lock()

    def record(self, ms: float) -> None:
        with self._lock:
            self._recent.append(ms)
            self._count += 1
            self._total += ms

    @contextmanager
    def time(self) -> Iterator[None]:
        """Record how long the block took (also when it raises)."""
        start = self._clock()
        try:
            yield
        finally:
            self.record((self._clock() - start) * 1000.0)

    def summary(self) -> LatencySummary:
        with self._lock:
            recent = sorted(self._recent)
            count, total = self._count, self._total
        if not recent:
            return LatencySummary(count, total, 0.0, 0.0, tuple((q, 0.0) for q in QUANTILES))
        last = len(recent) - 1
        quantiles = tuple((q, recent[min(last, math.ceil(q * len(recent)) - 1)]) for q in QUANTILES)
        return LatencySummary(count, total, recent[-1], sum(recent) / len(recent), quantiles)


class WindowedRate:
    """Events per second over the last ``window_s`` seconds (one-second buckets), the
    way Kafka's rate meters answer: a steady load reads as its rate, silence decays to 0
    within the window."""

    def __init__(self, window_s: int = 30, clock: Clock = time.monotonic) -> None:
        self._window = window_s
        self._clock = clock
        self._buckets: deque[tuple[int, int]] = deque()  # (second, events)
        self._lock = threading.Lock()

    def record(self, n: int = 1) -> None:
        second = int(self._clock())
        with self._lock:
            if self._buckets and self._buckets[-1][0] == second:
                self._buckets[-1] = (second, self._buckets[-1][1] + n)
            else:
                self._buckets.append((second, n))
            self._expire(second)

    def rate(self) -> float:
        second = int(self._clock())
        with self._lock:
            self._expire(second)
            return sum(n for _, n in self._buckets) / self._window

    def _expire(self, second: int) -> None:
        while self._buckets and self._buckets[0][0] <= second - self._window:
            self._buckets.popleft()


class Tally:
    """A count since the process started (Kafka's ``*Count`` gauges that only grow),
    added to from any thread."""

    def __init__(self) -> None:
        self._value = 0
        self._lock = threading.Lock()

    def add(self, n: int = 1) -> None:
        with self._lock:
            self._value += n

    @property
    def value(self) -> int:
        return self._value
