"""Broker sessions on the active controller: heartbeats are kept in memory only (as in
Kafka); what they change (fencing, controlled shutdown) becomes records."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from migration.image.model import MetadataImage


class ScanKind(Enum):
    """What a stepped scan of every partition does on a broker's behalf."""

    MOVE_OFF = "move off"  # leaderships and ISR places off a broker leaving
    LEAD_LEADERLESS = "lead leaderless"  # a broker back leads what waited for it


@dataclass
class ScanPlace:
    """Where a stepped scan is: the broker's registration epoch it runs for (a broker
    registered anew starts afresh), the topic its next step starts at (None: the first),
    and how many topics it has passed whole since it last stopped at its step's limit
    (all of them end it)."""

    epoch: int
    resume: bytes | None = None
    passed: int = 0


class BrokerRegistry:
    """When each registered broker was last heard from. A broker not heard from for
    ``session_timeout_ms`` (Kafka's ``broker.session.timeout.ms``) is to be fenced. A
    newly active controller gives every broker a full session before judging it."""

    def __init__(self, session_timeout_ms: int, clock: Callable[[], float]) -> None:
        self.session_timeout_ms = session_timeout_ms
        self._clock = clock
        self._last_seen: dict[int, float] = {}
        self._fenced: set[int] = set()
        self._scans: dict[tuple[int, ScanKind], ScanPlace] = {}

    def reset(self, image: MetadataImage) -> None:
        """A newly active controller: every broker's session starts now, and every
        unfenced broker's leaderless partitions are looked for again (the last leader
        may have stopped half-way)."""
        now = self._clock()
        self._last_seen = {b: now for b in image.brokers}
        self._fenced = {b for b, reg in image.brokers.items() if reg.fenced}
        self._scans = {
            (b, ScanKind.LEAD_LEADERLESS): ScanPlace(reg.epoch)
            for b, reg in image.brokers.items()
            if not reg.fenced
        }

    def scan(self, broker_id: int, epoch: int, kind: ScanKind) -> ScanPlace:
        """The place of ``broker_id``'s scan of ``kind`` for its registration ``epoch``
        (a new one, from the start, when there is none for that epoch)."""
        place = self._scans.get((broker_id, kind))
        if place is None or place.epoch != epoch:
            place = self._scans[broker_id, kind] = ScanPlace(epoch)
        return place

    def scanning(self, broker_id: int, epoch: int, kind: ScanKind) -> bool:
        place = self._scans.get((broker_id, kind))
        return place is not None and place.epoch == epoch

    def scan_done(self, broker_id: int, kind: ScanKind) -> None:
        self._scans.pop((broker_id, kind), None)

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
