"""Replica placement: Kafka's assignment rule for new partitions.

Rack-unaware: partition ``p``'s leader is ``brokers[(p + start) % n]`` -- round-robin
from a random start -- and its j-th follower sits ``1 + (shift + j) % (n - 1)``
places after the leader, where ``shift`` starts random and grows by one every ``n``
partitions. So the replicas of one partition are distinct, leaders are spread evenly,
and so are replicas.

Rack-aware (when every broker has a rack; otherwise racks are ignored): the brokers
are first ordered so racks alternate (``r1b1, r2b1, r3b1, r1b2, ...``), leaders go
round-robin over that list, and each follower is the next broker (by the same shifted
walk) whose rack holds no replica of the partition yet -- until every rack has one,
after which any broker not yet holding one will do.

Deterministic for a given ``rng``; callers pass ``random.Random()`` in production.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence


class PlacementError(ValueError):
    """Fewer brokers than the replication factor asks for."""


def place(
    brokers: Sequence[int],
    count: int,
    replication_factor: int,
    *,
    first_partition: int = 0,
    racks: Mapping[int, str | None] | None = None,
    rng: random.Random | None = None,
) -> list[list[int]]:
    """Replica lists for partitions ``first_partition`` .. ``first_partition + count - 1``."""
    if replication_factor <= 0 or count < 0:
        raise PlacementError("replication factor must be positive and count not negative")
    if replication_factor > len(brokers):
        raise PlacementError(
            f"replication factor {replication_factor} is larger than the "
            f"{len(brokers)} available broker(s)"
        )
    rng = rng or random.Random()
    known = {b: rack for b in brokers if (rack := (racks or {}).get(b)) is not None}
    if len(known) != len(brokers):
        known = dict.fromkeys(brokers, "")  # one rack: the rack-unaware rule exactly
    return _assign(known, count, replication_factor, first_partition, rng)


def _follower(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n


def rack_alternated(racks: Mapping[int, str]) -> list[int]:
    """Brokers ordered so consecutive ones sit in different racks where possible."""
    by_rack: dict[str, list[int]] = {}
    for broker in sorted(racks):
        by_rack.setdefault(racks[broker], []).append(broker)
    columns = [by_rack[r] for r in sorted(by_rack)]
    return [col[i] for i in range(max(map(len, columns))) for col in columns if i < len(col)]


def _assign(
    racks: Mapping[int, str],
    count: int,
    rf: int,
    first_partition: int,
    rng: random.Random,
) -> list[list[int]]:
    arranged = rack_alternated(racks)
    n, rack_count = len(arranged), len(set(racks.values()))
    start, shift = rng.randrange(n), rng.randrange(n)
    out = []
    for p in range(first_partition, first_partition + count):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        leader = arranged[first]
        replicas, used_racks, used = [leader], {racks[leader]}, {leader}
        k = 0
        while len(replicas) < rf:
            broker = arranged[_follower(first, shift * rack_count, k, n)] if n > 1 else leader
            k += 1
            rack_ok = racks[broker] not in used_racks or len(used_racks) == rack_count
            if rack_ok and broker not in used:
                replicas.append(broker)
                used_racks.add(racks[broker])
                used.add(broker)
        out.append(replicas)
    return out
