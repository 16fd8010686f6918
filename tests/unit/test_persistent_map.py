"""PersistentMap behaves as a read-only dict does (order, views, equality), no version
ever changes, and a new version shares every chunk its change did not touch."""

from __future__ import annotations

import pickle
from collections.abc import Iterator

from hypothesis import given
from hypothesis import strategies as st

from migration.image.persistent import CHUNK, PersistentMap, next_version, round_from

# A change: keys to delete (only those present are used) and keys to set.
changes = st.lists(
    st.tuples(
        st.lists(st.integers(0, 3 * CHUNK), max_size=8),
        st.dictionaries(st.integers(0, 3 * CHUNK), st.integers(), max_size=40),
    ),
    max_size=60,
)


def _versions(
    steps: list[tuple[list[int], dict[int, int]]],
) -> Iterator[tuple[PersistentMap[int, int], dict[int, int]]]:
    """Each step's version and the dict the same changes make, as each step is taken
    (the dict is changed in place by the next step)."""
    model: dict[int, int] = {}
    current: PersistentMap[int, int] = PersistentMap.of(model)
    for wanted_gone, put in steps:
        gone = {k for k in wanted_gone if k in model}
        for key in gone:
            del model[key]
        model.update(put)
        current = current.changed(put, gone)
        yield current, model


@given(changes)
def test_every_version_is_the_dict_the_same_changes_make(
    steps: list[tuple[list[int], dict[int, int]]],
) -> None:
    versions: list[tuple[PersistentMap[int, int], dict[int, int]]] = []
    for current, model in _versions(steps):
        versions.append((current, dict(model)))
        assert list(current) == list(model)
        assert list(current.items()) == list(model.items())
        assert list(current.values()) == list(model.values())
        assert len(current) == len(model)
        assert current == model and model == current
    for version, expected in versions:  # nothing a later change did reached an earlier one
        assert list(version.items()) == list(expected.items())


def test_lookups_views_and_equality_are_a_dicts() -> None:
    m = PersistentMap.of({"a": 1, "b": 2, "c": 3})
    assert m["b"] == 2 and m.get("z") is None and m.get("z", 0) == 0
    assert "a" in m and "z" not in m
    assert m.keys() - {"a"} == {"b", "c"} and m.keys() | {"z"} == {"a", "b", "c", "z"}
    assert ("a", 1) in m.items() and ("a", 2) not in m.items()
    assert m.items() & {("c", 3), ("d", 4)} == {("c", 3)}
    assert m == {"c": 3, "b": 2, "a": 1}  # as dicts: order is not content
    for other in ({"a": 1, "b": 2}, {"a": 1, "b": 2, "c": 4}, [1, 2]):
        assert m != other
    assert dict(m) == {"a": 1, "b": 2, "c": 3} and {**m} == dict(m)
    assert pickle.loads(pickle.dumps(m)) == m
    assert list(m.changed({"a": 9}, ["b"])) == ["a", "c"]  # a key set again keeps its place
    assert list(m.changed({"b": 9}, ["b"])) == ["a", "c", "b"]  # deleted then set: last


def test_a_change_copies_only_the_chunks_it_touches() -> None:
    big = PersistentMap.of({i: i for i in range(10 * CHUNK)})
    one = big.changed({5 * CHUNK + 1: -1})
    shared = [a is b for a, b in zip(big._chunks, one._chunks, strict=True)]
    assert shared.count(False) == 1 and not shared[5]
    grown = big.changed({"new": 0})
    assert len(grown._chunks) == len(big._chunks) + 1  # the last chunk was full
    assert all(a is b for a, b in zip(big._chunks, grown._chunks, strict=False))
    assert PersistentMap.of(big) is big


def test_deletes_repack_the_chunks_they_empty() -> None:
    m = PersistentMap.of({i: i for i in range(40 * CHUNK)})
    for start in range(0, 39 * CHUNK, CHUNK):  # every chunk but the last emptied
        m = m.changed(delete=range(start, start + CHUNK))
    assert list(m) == list(range(39 * CHUNK, 40 * CHUNK))
    assert len(m._chunks) <= 2 * (len(m) // CHUNK) + 8


def test_the_next_version_of_a_plain_dict_is_a_copy() -> None:
    plain = {"a": 1, "b": 2}
    after = next_version(plain, {"c": 3}, ["a"])
    assert after == {"b": 2, "c": 3} and type(after) is dict
    assert plain == {"a": 1, "b": 2}
    persistent = next_version(PersistentMap.of(plain), {"c": 3}, ["a"])
    assert isinstance(persistent, PersistentMap) and persistent == after


@given(changes, st.integers(-1, 3 * CHUNK + 1))
def test_a_round_from_a_key_is_the_dicts_keys_rotated_to_it(
    steps: list[tuple[list[int], dict[int, int]]], start: int
) -> None:
    """Every key once, from ``start`` round to the one before it (from the first when
    ``start`` is no key): a stepped scan's order, as a dict's keys give it."""
    current: PersistentMap[int, int] = PersistentMap.of({})
    model: dict[int, int] = {}
    for version in _versions(steps):  # the last step's
        current, model = version
    keys = list(model)
    at = keys.index(start) if start in model else 0
    expected = keys[at:] + keys[:at]
    assert list(current.round_from(start)) == expected
    assert list(round_from(model, start)) == expected
    assert list(current.round_from(None)) == keys
