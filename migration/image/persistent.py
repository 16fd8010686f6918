"""PersistentMap: an insertion-ordered mapping that is never changed in place; a new
version shares everything but what its change touched.

An image's topic maps hold 100,000s of entries at a million partitions, and every
write builds a new pending image: copying them cost ~1.4 ms a write and a copy's worth
of memory for every image alive. A new version here costs what the change touches: a
path in the key index (``immutables.Map``, a hash array mapped trie) and a copy of each
chunk of at most :data:`CHUNK` entries that changed.

The contract is a read-only ``dict``'s: iteration in insertion order (a key that is set
again keeps its place; a deleted one set again goes last), ``keys()`` and ``items()``
set views, and equality with any mapping of the same items, in any order.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterable, Iterator, Mapping, ValuesView
from itertools import chain
from typing import Any, TypeVar, overload

import immutables

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")

CHUNK = 256
"""Entries a chunk holds at most: a change copies the chunks it touches and the tuple
of chunks (a pointer per chunk), so both stay small."""


class PersistentMap(Mapping[K, V]):
    """A read-only ordered mapping. Build one with :meth:`of`, derive the next with
    :meth:`changed`; neither mutates anything another version can see."""

    __slots__ = ("_chunks", "_index")

    _index: immutables.Map[K, int]  # key -> position of its chunk
    _chunks: tuple[dict[K, V], ...]  # in insertion order; only ever replaced, never changed

    def __init__(self) -> None:
        self._index = immutables.Map()
        self._chunks = ()

    @classmethod
    def of(cls, items: Mapping[K, V] | Iterable[tuple[K, V]] = ()) -> PersistentMap[K, V]:
        """A map of ``items`` in their order (a mapping as-is when it is one already)."""
        if isinstance(items, PersistentMap):
            return items
        pairs = list(items.items() if isinstance(items, Mapping) else items)
        chunks = tuple(dict(pairs[i : i + CHUNK]) for i in range(0, len(pairs), CHUNK))
        made: PersistentMap[K, V] = cls()
        made._chunks = chunks
        made._index = immutables.Map(
            (key, position) for position, chunk in enumerate(chunks) for key in chunk
        )
        return made

    def changed(
        self, put: Mapping[K, V] | None = None, delete: Iterable[K] = ()
    ) -> PersistentMap[K, V]:
        """This map with ``delete``'s keys removed (each must be present), then ``put``'s
        set. ``self`` is unchanged."""
        put = put or {}
        chunks = list(self._chunks)
        owned: set[int] = set()

        def own(position: int) -> dict[K, V]:
            if position not in owned:
                chunks[position] = dict(chunks[position]) if position < len(self._chunks) else {}
                owned.add(position)
            return chunks[position]

        with self._index.mutate() as index:
            for key in delete:
                del own(index[key])[key]
                del index[key]
            for key, value in put.items():
                position = index.get(key)
                if position is None:
                    position = len(chunks) - 1
                    if position < 0 or len(chunks[position]) >= CHUNK:
                        position = len(chunks)
                        chunks.append({})
                    index[key] = position
                own(position)[key] = value
            new_index = index.finish()
        if len(chunks) > 2 * (len(new_index) // CHUNK) + 8:  # emptied by deletes: repack
            return PersistentMap.of(chain.from_iterable(c.items() for c in chunks))
        made: PersistentMap[K, V] = PersistentMap()
        made._index, made._chunks = new_index, tuple(chunks)
        return made

    # --- Mapping -------------------------------------------------------------------------

    def __getitem__(self, key: K) -> V:
        return self._chunks[self._index[key]][key]

    @overload
    def get(self, key: K, /) -> V | None: ...
    @overload
    def get(self, key: K, default: V | T, /) -> V | T: ...
    def get(self, key: K, default: Any = None) -> Any:
        position = self._index.get(key)
        return default if position is None else self._chunks[position][key]

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def __iter__(self) -> Iterator[K]:
        return chain.from_iterable(self._chunks)

    def __len__(self) -> int:
        return len(self._index)

    def values(self) -> _Values[V]:
        return _Values(self)

    def items(self) -> _Items[K, V]:
        return _Items(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PersistentMap) and other._chunks is self._chunks:
            return True
        if not isinstance(other, Mapping):
            return NotImplemented
        if len(other) != len(self):
            return False
        missing = object()
        return all(other.get(key, missing) == value for key, value in self.items())

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PersistentMap({dict(self.items())!r})"

    def round_from(self, start: K | None) -> Iterator[K]:
        """Every key once, in order, from ``start`` (the first key when ``start`` is None
        or not a key) round to the one before it: what it costs is the keys passed, not
        a copy of them all (a stepped scan resumes so, a step at a time)."""
        if start is None or (position := self._index.get(start)) is None:
            return iter(self)
        chunk = list(self._chunks[position])
        at = chunk.index(start)
        return chain(
            chunk[at:],
            chain.from_iterable(self._chunks[position + 1 :]),
            chain.from_iterable(self._chunks[:position]),
            chunk[:at],
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (PersistentMap.of, (list(self.items()),))


class _Values(ValuesView[V]):
    """``values()`` straight from the chunks (no lookup per key)."""

    _mapping: PersistentMap[Any, V]

    def __iter__(self) -> Iterator[V]:
        return chain.from_iterable(c.values() for c in self._mapping._chunks)


class _Items(ItemsView[K, V]):
    """``items()`` straight from the chunks; a set view, as ``dict``'s is."""

    _mapping: PersistentMap[K, V]

    def __iter__(self) -> Iterator[tuple[K, V]]:
        return chain.from_iterable(c.items() for c in self._mapping._chunks)


def round_from(mapping: Mapping[K, V], start: K | None) -> Iterator[K]:
    """``mapping``'s keys as :meth:`PersistentMap.round_from` gives them (any other
    mapping's listed whole first)."""
    if isinstance(mapping, PersistentMap):
        return mapping.round_from(start)
    keys = list(mapping)
    at = keys.index(start) if start is not None and start in mapping else 0
    return chain(keys[at:], keys[:at])


def next_version(mapping: Mapping[K, V], put: Mapping[K, V], delete: Iterable[K]) -> Mapping[K, V]:
    """``mapping`` with ``delete``'s keys removed, then ``put``'s set. A PersistentMap's
    next version shares what is unchanged; any other mapping (an image built whole for
    reading, as a ZooKeeper-mode broker's is, where indexing it would cost more than
    copying it) is copied into a dict."""
    if isinstance(mapping, PersistentMap):
        return mapping.changed(put, delete)
    copied = dict(mapping)
    for key in delete:
        del copied[key]
    copied.update(put)
    return copied
