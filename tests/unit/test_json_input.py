"""The bounded JSON decoder: nesting measured before decoding (never a RecursionError),
brackets inside strings not counted, a size bound; and the readers that use it (every
znode codec, the quorum-state file, a controller's copy of /migration)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from migration.common.json_input import MAX_BYTES, MAX_DEPTH, JsonInputError, decode_json
from migration.driver.describe import status_json
from migration.proto import controller_pb2 as cpb
from migration.raft.quorum_state_store import FileQuorumStateStore, QuorumStateError
from migration.zk.errors import ZnodeFormatError
from migration.zk.model import cluster, topics

DEEP = 10_000  # what the probe wrote: far past the interpreter's recursion limit


def _nested(depth: int, opening: str = "[", closing: str = "]", inner: str = "1") -> bytes:
    return (opening * depth + inner + closing * depth).encode()


def _objects(depth: int) -> bytes:
    return ('{"a":' * depth + "1" + "}" * depth).encode()


@pytest.mark.parametrize(
    "raw",
    [_nested(DEEP), _objects(DEEP), _nested(DEEP, "[", "]", '"x"'), b"[" * DEEP, b'{"a":' * DEEP],
    ids=["array", "object", "array-of-string", "unclosed-arrays", "unclosed-objects"],
)
def test_deep_json_is_refused_before_decoding(raw: bytes) -> None:
    with pytest.raises(JsonInputError) as info:
        decode_json("/brokers/topics/deep", raw)
    assert info.value.source == "/brokers/topics/deep"
    assert f"nested more than {MAX_DEPTH} levels deep" in info.value.problem
    assert str(info.value).startswith("/brokers/topics/deep: ")


def test_the_bound_is_exactly_max_depth() -> None:
    assert decode_json("x", _nested(MAX_DEPTH)) is not None
    assert decode_json("x", _objects(MAX_DEPTH)) is not None
    mixed = ('{"a":[' * (MAX_DEPTH // 2) + "1" + "]}" * (MAX_DEPTH // 2)).encode()
    assert decode_json("x", mixed) is not None
    for raw in (_nested(MAX_DEPTH + 1), _objects(MAX_DEPTH + 1)):
        with pytest.raises(JsonInputError, match="nested more than"):
            decode_json("x", raw)


@pytest.mark.parametrize(
    "value",
    [
        {"name": "[" * DEEP},
        {"name": "{" * DEEP, "other": "]" * DEEP},
        {"escaped": '\\"[[[' * DEEP, "quote": '"' * 10},
        ["[]" * DEEP, "}{" * DEEP],
        {"wide": [[1, 2, 3]] * DEEP},  # many brackets, but only three levels
    ],
    ids=["opening-in-string", "both-in-strings", "escapes", "pairs-in-strings", "wide"],
)
def test_brackets_inside_strings_are_not_counted(value: object) -> None:
    raw = json.dumps(value).encode()
    assert decode_json("x", raw) == value


def test_too_big_is_refused_before_decoding() -> None:
    raw = json.dumps({"v": "x" * MAX_BYTES}).encode()
    with pytest.raises(JsonInputError, match=f"more than {MAX_BYTES:,} bytes"):
        decode_json("/config/topics/big", raw)
    small = json.dumps({"v": "x" * 100}).encode()
    with pytest.raises(JsonInputError, match="more than 50 bytes"):
        decode_json("x", small, max_bytes=50)


@pytest.mark.parametrize(
    ("raw", "hint"),
    [
        (b"\xff{}", "not UTF-8"),
        (b"{", "invalid JSON"),
        (b"[1]]" + b"[" * DEEP, "nested more than"),  # after the end: still refused
        (b"9" * 5000, "invalid JSON"),  # an integer past Python's 4,300 digits
    ],
)
def test_other_bad_input_is_one_error(raw: bytes, hint: str) -> None:
    with pytest.raises(JsonInputError, match=hint):
        decode_json("x", raw)


def test_every_znode_codec_names_the_znode_for_deep_json() -> None:
    deep_topic = b'{"version":3,"partitions":' + _nested(DEEP) + b"}"
    with pytest.raises(ZnodeFormatError) as info:
        topics.parse_topic("/brokers/topics/deep", deep_topic, "deep")
    assert info.value.path == "/brokers/topics/deep"
    assert "nested more than 64 levels deep" in info.value.problem
    with pytest.raises(ZnodeFormatError, match=r"^/migration: JSON nested more than 64"):
        cluster.parse_migration("/migration", _objects(DEEP))


def test_a_deep_quorum_state_file_is_unusable_naming_the_file(tmp_path: Path) -> None:
    store = FileQuorumStateStore(tmp_path)
    store.path.write_bytes(_objects(DEEP))
    with pytest.raises(QuorumStateError) as info:
        store.read()
    assert str(store.path) in str(info.value)
    assert "nested more than 64 levels deep" in str(info.value)
    store.path.write_bytes(b" " * (MAX_BYTES + 10) + b"{}")
    with pytest.raises(QuorumStateError, match="more than 1,048,576 bytes"):
        store.read()


def test_a_controllers_migration_znode_answer_is_bounded_too() -> None:
    """``migration status`` decodes the /migration copy a controller sends: the same rule."""
    answer = cpb.DescribeMigrationResponse(node_id=3000, migration_znode_json="[" * DEEP)
    with pytest.raises(JsonInputError, match="controller 3000's DescribeMigration answer"):
        status_json(answer)
    answer.migration_znode_json = '{"kraft_controller_id":3000}'
    assert status_json(answer)["migration_znode"] == {"kraft_controller_id": 3000}
