"""How long the event loop's work holds it: Kafka's controller event performance log.

Every hold of the loop (a posted event, a timer, an idle hook, the node's tick) is
recorded under its name. One taking ``controller.performance.always.log.threshold.ms``
or more is logged at WARN at once ("Exceptionally slow controller event ..."); every
``controller.performance.sample.period.ms`` one INFO line sums the period up: how many
holds, their average, and the slowest with its name. A loop held past the followers'
fetch timeout costs the quorum its leader; these lines say what held it and for how
long, also when nothing reached the threshold.

Threading: used by the loop's thread only.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

log = logging.getLogger("migration.raft.event_loop")  # the lines operators grep for

DEFAULT_SAMPLE_PERIOD_MS = 60_000  # Kafka's controller.performance.sample.period.ms
DEFAULT_ALWAYS_LOG_THRESHOLD_MS = 2_000  # controller.performance.always.log.threshold.ms


@dataclass
class EventPerformance:
    """The period's count, total and slowest hold; ``report`` ends a period when due."""

    sample_period_ms: float = DEFAULT_SAMPLE_PERIOD_MS
    always_log_threshold_ms: float = DEFAULT_ALWAYS_LOG_THRESHOLD_MS
    _started_ms: float | None = None
    _count: int = 0
    _total_ms: float = 0.0
    _slowest_ms: float = -1.0
    _slowest: str = ""

    def record(self, name: str, took_ms: float) -> None:
        """One hold of the loop, ``took_ms`` long."""
        if took_ms >= self.always_log_threshold_ms:
            log.warning("Exceptionally slow controller event %s took %.0f ms.", name, took_ms)
        self._count += 1
        self._total_ms += took_ms
        if took_ms > self._slowest_ms:
            self._slowest_ms, self._slowest = took_ms, name

    def report(self, now_ms: float) -> None:
        """Log the period's summary and start the next one, once the period is over."""
        if self._started_ms is None:
            self._started_ms = now_ms
            return
        if now_ms - self._started_ms < self.sample_period_ms:
            return
        if self._count:
            log.info(
                "In the last %.0f ms, %d controller events took %.2f ms on average; the "
                "slowest, %s, took %.2f ms.",
                now_ms - self._started_ms,
                self._count,
                self._total_ms / self._count,
                self._slowest,
                self._slowest_ms,
            )
        self._started_ms, self._count, self._total_ms = now_ms, 0, 0.0
        self._slowest_ms, self._slowest = -1.0, ""
