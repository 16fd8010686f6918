"""The partitions a broker leads whose ISR lacks some of their replicas, indexed by each
replica missing: what an ISR expansion looks at, in either mode.

Contract:

- :meth:`ShortIsrs.put` is told each partition's new state (None: gone); the index then
  holds the partition under every replica missing from its ISR while this broker leads
  it, and nowhere otherwise.
- :meth:`ShortIsrs.of` is the partitions some of the given (live) brokers are missing
  from. A broker in controlled shutdown leaves nearly every ISR, a step at a time, and
  an expansion that walked every partition led here after each step was quadratic in
  the tree; one that asks the index walks only what a live broker could be added to.
- Not thread-safe: its owner serializes :meth:`put` and :meth:`of`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Generic, Protocol, TypeVar

K = TypeVar("K", bound=Hashable)


class Partition(Protocol):
    """What the index reads of a partition's state (a ZooKeeper-mode broker's
    ``ReplicaState``, a KRaft-mode broker's ``PartitionImage``)."""

    @property
    def leader(self) -> int: ...

    @property
    def replicas(self) -> Sequence[int]: ...

    @property
    def isr(self) -> Sequence[int]: ...


class ShortIsrs(Generic[K]):
    """The module doc's index, for the partitions ``broker_id`` leads."""

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.by_missing: dict[int, set[K]] = {}  # replica -> the partitions lacking it
        self._missing: dict[K, tuple[int, ...]] = {}  # partition -> replicas it lacks

    def put(self, key: K, partition: Partition | None) -> None:
        """``key``'s state is now ``partition`` (None: no longer known here)."""
        for b in self._missing.pop(key, ()):
            self.by_missing[b].discard(key)
        if partition is None or partition.leader != self.broker_id:
            return
        missing = tuple(b for b in partition.replicas if b not in partition.isr)
        if missing:
            self._missing[key] = missing
            for b in missing:
                self.by_missing.setdefault(b, set()).add(key)

    def clear(self) -> None:
        self.by_missing.clear()
        self._missing.clear()

    def of(self, brokers: Iterable[int]) -> set[K]:
        """The partitions led here whose ISR lacks one or more of ``brokers``."""
        out: set[K] = set()
        for b in brokers:
            out.update(self.by_missing.get(b, ()))
        return out
