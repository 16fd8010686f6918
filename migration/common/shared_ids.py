"""One tuple object for each distinct list of broker ids, wherever many are held.

A million partitions on a few dozen brokers hold a few thousand distinct replica and
ISR lists, and a tuple of three ids costs 80 bytes: the images (the controllers' and
the brokers'), the ZooKeeper-mode brokers' metadata caches and a read of ZooKeeper's
tree hold their lists through :func:`shared_ids`, so equal lists are one object.
"""

from __future__ import annotations

from collections.abc import Iterable

_SHARED_IDS: dict[tuple[int, ...], tuple[int, ...]] = {}
_SHARED_IDS_MAX = 1 << 16


def shared_ids(ids: Iterable[int]) -> tuple[int, ...]:
    """``tuple(ids)``, the same tuple object for equal lists. At most
    ``_SHARED_IDS_MAX`` are kept (then forgotten and started over); any thread may call
    it (a lost race costs a second copy, no more)."""
    made = tuple(ids)
    found = _SHARED_IDS.get(made)
    if found is not None:
        return found
    if len(_SHARED_IDS) >= _SHARED_IDS_MAX:
        _SHARED_IDS.clear()
    _SHARED_IDS[made] = made
    return made
