"""What the migration driver measures for its metrics: the phase and when it was
entered, the time of each full sync and each dual-write to ZooKeeper (Kafka's
ZkWriteSnapshotTimeMs and ZkWriteDeltaTimeMs), and the dual-write errors by kind.

Threading: the poll thread records; a metrics scrape reads (single attributes replaced
whole, the latency windows lock themselves, the error counts under a lock).
"""

from __future__ import annotations

import threading
import time

from migration.driver.states import Phase
from migration.observability.samples import LatencyWindow

WRITE_ERRORS = ("fenced", "drift", "unavailable")


class DriverStats:
    def __init__(self) -> None:
        self.phase = Phase.INACTIVE
        self.phase_since = time.monotonic()
        self.snapshot_ms = LatencyWindow()
        self.delta_ms = LatencyWindow()
        self._errors = dict.fromkeys(WRITE_ERRORS, 0)
        self._lock = threading.Lock()

    def enter(self, phase: Phase) -> None:
        if phase != self.phase:
            self.phase_since = time.monotonic()
            self.phase = phase

    def phase_seconds(self) -> float:
        return time.monotonic() - self.phase_since

    def write_failed(self, error: str) -> None:
        with self._lock:
            self._errors[error] += 1

    def write_errors(self) -> dict[str, int]:
        with self._lock:
            return dict(self._errors)
