"""Broker sessions on the active controller: heartbeats are kept in memory only (as in
Kafka); what they change (fencing, controlled shutdown) becomes records."""

from __future__ import annotations

from collections.abc import Callable

from migration.image.model import MetadataImage


class BrokerRegistry:
    """When each registered broker was last heard from. A broker not heard from for
    ``session_timeout_ms`` (Kafka's ``broker.session.timeout.ms``) is to be fenced. A
    newly active controller gives every broker a full session before judging it."""

    def __init__(self, session_timeout_ms: int, clock: Callable[[], float]) -> None:
        self.session_timeout_ms = session_timeout_ms
        self._clock = clock
        self._last_seen: dict[int, float] = {}
        self._fenced: set[int] = set()
        self._scan_from: dict[int, bytes] = {}

    def reset(self, image: MetadataImage) -> None:
        now = self._clock()
        self._last_seen = {b: now for b in image.brokers}
        self._fenced = {b for b, reg in image.brokers.items() if reg.fenced}
        self._scan_from = {}

    def scan_from(self, broker_id: int) -> bytes | None:
        """The topic id where the next step of moving partitions off ``broker_id`` goes
        on (None: from the start)."""
        return self._scan_from.get(broker_id)

    def scanned_to(self, broker_id: int, topic_id: bytes | None) -> None:
        """A step stopped at ``topic_id`` (None: it finished)."""
        if topic_id is None:
            self._scan_from.pop(broker_id, None)
        else:
            self._scan_from[broker_id] = topic_id

    def heard_from(self, broker_id: int) -> None:
        self._last_seen[broker_id] = self._clock()

    def mark(self, broker_id: int, fenced: bool) -> None:
        (self._fenced.add if fenced else self._fenced.discard)(broker_id)

    def expired(self) -> list[int]:
        """Unfenced brokers whose session timed out: named again each time until
        :meth:`mark` says they are fenced (fencing a broker leading many partitions
        takes several steps)."""
        deadline = self._clock() - self.session_timeout_ms
        return sorted(
            b for b, seen in self._last_seen.items() if seen < deadline and b not in self._fenced
        )
