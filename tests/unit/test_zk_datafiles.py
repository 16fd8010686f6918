"""ZooKeeper's file formats read offline, on bytes written here by jute's rules: file
names, snappy-java framing, snapshots (seals, trailers, damage), transaction logs
(records, torn tails, damage with data after it), transactions decoded as ZooKeeper
applies them, and the offline tree's answers."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import cramjam
import pytest

from migration.common.snappy import SNAPPY_MAGIC, xerial_snappy
from migration.zk.jute import (
    CONTAINER_OWNER,
    FILE_HEADER,
    SEAL_END,
    SNAP_MAGIC,
    TXN_HEADER,
    TXNLOG_MAGIC,
    is_session_owner,
    ttl_owner,
)
from migration.zk.multiread import NodeData, ReadError, ReadOp
from migration.zkfiles.datadir import open_data_dir
from migration.zkfiles.datafiles import (
    ZkDataDirError,
    compression_of,
    find_data_files,
    zxid_from_name,
)
from migration.zkfiles.datatree import OfflineTree
from migration.zkfiles.replay import Replay
from migration.zkfiles.snapfile import SnapshotError, parse_snapshot
from migration.zkfiles.txnlog import Change, LogScan, TxnFormatError, TxnType, decode

SESSION = 0x1000_0000_0000_0042
OPEN_ACL = (
    struct.pack("!ii", 1, 31) + struct.pack("!i", 5) + b"world" + struct.pack("!i", 6) + b"anyone"
)


# --- jute, written the way ZooKeeper writes it ----------------------------------------


def i32(value: int) -> bytes:
    return struct.pack("!i", value)


def i64(value: int) -> bytes:
    return struct.pack("!q", value)


def string(text: str) -> bytes:
    raw = text.encode()
    return i32(len(raw)) + raw


def buffer(data: bytes | None) -> bytes:
    return i32(-1) if data is None else i32(len(data)) + data


def seal(stream: bytes) -> bytes:
    return i64(zlib.adler32(stream)) + SEAL_END


def snapshot(
    nodes: list[tuple[str, bytes | None, int, int]],
    sessions: dict[int, int] | None = None,
    trailer: bytes = b"",
) -> bytes:
    """A snapshot stream: nodes as (path, data, version, ephemeral owner), depth first."""
    out = FILE_HEADER.pack(SNAP_MAGIC, 2, -1)
    out += i32(len(sessions or {})) + b"".join(i64(s) + i32(t) for s, t in (sessions or {}).items())
    out += i32(1) + i64(1) + OPEN_ACL  # the ACL cache: id 1 -> [world:anyone]
    for path, data, version, owner in nodes:
        stat = i64(1) * 4 + i32(version) + i32(0) + i32(0) + i64(owner) + i64(1)
        out += string(path) + buffer(data) + i64(1) + stat
    out += string("/")
    out += seal(out)
    if trailer:
        digest = i64(5) + i32(2) + i64(123)
        out += digest + seal(out + digest)
    return out


TREE = [
    ("", b"", 0, 0),
    ("/zookeeper", b"", 0, 0),
    ("/zookeeper/quota", b"", 0, 0),
    ("/kafka", None, 0, 0),
    ("/kafka/brokers", None, 0, 0),
    ("/kafka/brokers/ids", None, 0, 0),
    ("/kafka/brokers/ids/1", b'{"host":"a"}', 0, SESSION),
    ("/kafka/brokers/topics", None, 0, 0),
    ("/kafka/brokers/topics/t", b"{}", 3, 0),
]


def txn(kind: int, body: bytes, zxid: int = 0x10, session: int = SESSION) -> bytes:
    return TXN_HEADER.pack(session, 1, zxid, 0, kind) + body


def create_body(path: str, data: bytes | None, ephemeral: bool = False) -> bytes:
    return string(path) + buffer(data) + i32(1) + OPEN_ACL[4:] + bytes([ephemeral]) + i32(-1)


def multi(*subs: tuple[int, bytes]) -> bytes:
    return i32(len(subs)) + b"".join(i32(kind) + buffer(body) for kind, body in subs)


def record(body: bytes) -> bytes:
    return i64(zlib.adler32(body)) + buffer(body) + b"B"


def log(*bodies: bytes, zeros: int = 64) -> bytes:
    return FILE_HEADER.pack(TXNLOG_MAGIC, 2, 0) + b"".join(map(record, bodies)) + bytes(zeros)


# --- names and framing ----------------------------------------------------------------


def test_names_are_read_as_zookeeper_reads_them() -> None:
    assert zxid_from_name("snapshot.1a2b", "snapshot") == 0x1A2B
    assert zxid_from_name("snapshot.1a2b.snappy", "snapshot") == 0x1A2B
    assert zxid_from_name("log.100000001", "log") == 0x100000001
    assert zxid_from_name("log.xyz", "log") == -1
    assert zxid_from_name("snapshot.1", "log") == -1
    assert zxid_from_name("acceptedEpoch", "log") == -1
    assert [compression_of(n) for n in ("snapshot.1.gz", "snapshot.1.snappy", "snapshot.1")] == [
        "gz",
        "snappy",
        "",
    ]


def test_snappy_java_framing_is_decoded_block_by_block() -> None:
    blocks = [b"a" * 1000, b"zookeeper " * 300, b"tail"]
    header = SNAPPY_MAGIC + i32(1) + i32(1)
    framed = header
    for i, block in enumerate(blocks):
        raw = bytes(cramjam.snappy.compress_raw(block))
        framed += (header if i == 2 else b"") + i32(len(raw)) + raw  # a concatenated stream
    assert xerial_snappy(framed) == b"".join(blocks)
    with pytest.raises(ValueError, match="runs past the end"):
        xerial_snappy(framed[:-2])
    with pytest.raises(ValueError, match="bad magic"):
        xerial_snappy(b"\x00" * 20)


# --- snapshots ------------------------------------------------------------------------


def test_a_snapshot_is_parsed_with_its_sessions_and_ephemerals() -> None:
    contents = parse_snapshot(snapshot(TREE, {SESSION: 18000}, trailer=b"digest"))
    assert contents.znodes == len(TREE)
    assert contents.sessions == {SESSION: 18000}
    assert contents.ephemerals == {SESSION: {b"/kafka/brokers/ids/1"}}
    assert contents.nodes[b"/kafka"] == b""  # null data reads as empty
    assert contents.nodes[b"/kafka/brokers/topics/t"] == (b"{}", 3, 0)
    assert contents.children[b"/kafka/brokers"] == [b"/kafka/brokers/ids", b"/kafka/brokers/topics"]


def test_a_flipped_byte_fails_the_checksum_and_names_the_seal() -> None:
    raw = bytearray(snapshot(TREE))
    raw[-40] ^= 0x01  # inside the last node's stat
    with pytest.raises(SnapshotError, match="checksum mismatch") as caught:
        parse_snapshot(bytes(raw))
    assert caught.value.offset == len(raw) - 13


def test_a_snapshot_cut_short_or_orphaned_is_refused() -> None:
    whole = snapshot(TREE)
    with pytest.raises(SnapshotError, match="cut short"):
        parse_snapshot(whole[: len(whole) // 2])
    orphan = [*TREE[:3], ("/missing/child", b"", 0, 0)]
    with pytest.raises(SnapshotError):
        parse_snapshot(snapshot(orphan))
    trailer = snapshot(TREE, trailer=b"digest")
    with pytest.raises(SnapshotError, match="the digest"):
        parse_snapshot(trailer[:-14] + bytes([trailer[-14] ^ 1]) + trailer[-13:])


# --- transactions ---------------------------------------------------------------------


def test_creates_carry_the_owner_zookeeper_stores() -> None:
    plain = decode(txn(TxnType.CREATE, create_body("/a", None)))
    eph = decode(txn(TxnType.CREATE2, create_body("/e", b"x", ephemeral=True)))
    container = decode(txn(TxnType.CREATE_CONTAINER, string("/c") + buffer(b"") + i32(0) + i32(0)))
    ttl = decode(txn(TxnType.CREATE_TTL, string("/t") + buffer(b"") + i32(0) + i32(0) + i64(5000)))
    assert plain == (0x10, [Change(TxnType.CREATE, b"/a", b"", 0)])
    assert eph[1] == [Change(TxnType.CREATE, b"/e", b"x", SESSION)]
    assert container[1][0].value == CONTAINER_OWNER
    assert ttl[1][0].value == ttl_owner(5000)
    assert [is_session_owner(o) for o in (SESSION, 0, CONTAINER_OWNER, ttl_owner(5000))] == [
        True,
        False,
        False,
        False,
    ]


def test_a_multi_applies_in_order_and_a_failed_one_changes_nothing() -> None:
    ok = multi(
        (TxnType.CREATE, create_body("/a", b"1")),
        (TxnType.SET_DATA, string("/a") + buffer(b"2") + i32(7)),
        (TxnType.CHECK, string("/a") + i32(7)),
        (TxnType.DELETE, string("/b")),
    )
    assert decode(txn(TxnType.MULTI, ok))[1] == [
        Change(TxnType.CREATE, b"/a", b"1", 0),
        Change(TxnType.SET_DATA, b"/a", b"2", 7),
        Change(TxnType.DELETE, b"/b"),
    ]
    failed = multi((TxnType.ERROR, i32(0)), (TxnType.ERROR, i32(-110)))
    assert decode(txn(TxnType.MULTI, failed))[1] == []


def test_sessions_and_unknown_types() -> None:
    assert decode(txn(TxnType.CREATE_SESSION, i32(18000)))[1] == [
        Change(TxnType.CREATE_SESSION, value=SESSION)
    ]
    closing = i32(2) + string("/e1") + string("/e2")
    assert decode(txn(TxnType.CLOSE_SESSION, closing))[1][0].paths == (b"/e1", b"/e2")
    assert decode(txn(TxnType.CLOSE_SESSION, b""))[1][0].paths == ()
    assert decode(txn(TxnType.SET_ACL, string("/a") + i32(0) + i32(1)))[1] == []
    with pytest.raises(TxnFormatError, match="unknown transaction type 42"):
        decode(txn(42, b""))
    with pytest.raises(TxnFormatError, match="a multi carries a transaction of type 8"):
        decode(txn(TxnType.MULTI, multi((8, b""))))


def test_replay_tolerates_what_a_fuzzy_snapshot_already_holds() -> None:
    replay = Replay(parse_snapshot(snapshot(TREE, {SESSION: 18000})))
    replay.apply(
        [
            Change(TxnType.CREATE, b"/kafka/brokers", b"again", 0),  # NodeExists: ignored
            Change(TxnType.CREATE, b"/nowhere/x", b"", 0),  # NoNode: ignored
            Change(TxnType.DELETE, b"/kafka/gone"),  # NoNode: ignored
            Change(TxnType.SET_DATA, b"/kafka/brokers/topics/t", b"v9", 9),
            Change(TxnType.CREATE, b"/kafka/brokers/ids/2", b"b2", SESSION + 1),
            Change(TxnType.CREATE_SESSION, value=SESSION + 2),
        ]
    )
    assert replay.nodes[b"/kafka/brokers"] == b""
    assert replay.nodes[b"/kafka/brokers/topics/t"] == (b"v9", 9, 0)
    replay.apply([Change(TxnType.CLOSE_SESSION, value=SESSION, paths=())])
    assert b"/kafka/brokers/ids/1" not in replay.nodes
    assert replay.children[b"/kafka/brokers/ids"] == [b"/kafka/brokers/ids/2"]
    replay.drop_dead_sessions()  # SESSION + 1 never opened in these files
    assert b"/kafka/brokers/ids" not in replay.children
    assert replay.sessions == {SESSION + 2}


def test_wide_parents_lose_children_in_constant_time() -> None:
    replay = Replay(parse_snapshot(snapshot(TREE)))
    for i in range(100):
        replay.create(b"/kafka/c%d" % i, b"", 0)
    for i in range(0, 100, 2):
        replay.delete(b"/kafka/c%d" % i)
    assert list(replay.children[b"/kafka"]) == [
        b"/kafka/brokers",
        *(b"/kafka/c%d" % i for i in range(1, 100, 2)),
    ]


# --- logs -----------------------------------------------------------------------------


def _scan(buf: bytes, first: int = 0x10) -> tuple[list[int], LogScan]:
    scan = LogScan(buf, first)
    return [TXN_HEADER.unpack_from(body, 0)[2] for _, body in scan], scan


def test_a_log_ends_at_its_preallocated_zeros() -> None:
    bodies = [txn(TxnType.CREATE, create_body(f"/n{z}", b"x"), zxid=z) for z in (0x10, 0x11)]
    zxids, scan = _scan(log(*bodies))
    assert zxids == [0x10, 0x11] and scan.damage is None
    zxids, scan = _scan(log(*bodies, zeros=0))  # not preallocated: the file's end
    assert zxids == [0x10, 0x11] and scan.damage is None


def test_a_torn_last_record_is_damage_with_nothing_after() -> None:
    bodies = [txn(TxnType.CREATE, create_body(f"/n{z}", b"x" * 40), zxid=z) for z in (0x10, 0x11)]
    whole = log(*bodies, zeros=0)
    second = whole.index(record(bodies[1]))
    for cut in (second + 5, second + 30, len(whole) - 1):
        zxids, scan = _scan(whole[:cut] + bytes(100))
        assert zxids == [0x10]
        assert scan.damage is not None and scan.damage.offset == second
        assert not scan.damage.followed


def test_damage_before_valid_records_is_followed() -> None:
    bodies = [
        txn(TxnType.CREATE, create_body(f"/n{z}", b"x" * 40), zxid=z) for z in (0x10, 0x11, 0x12)
    ]
    raw = bytearray(log(*bodies))
    second = bytes(raw).index(record(bodies[1]))
    raw[second + 20] ^= 0xFF
    zxids, scan = _scan(bytes(raw))
    assert zxids == [0x10]
    assert scan.damage is not None and scan.damage.problem == "CRC mismatch"
    assert scan.damage.followed
    raw[second + 8 : second + 12] = i32(10**6)  # a length running past the end
    _, scan = _scan(bytes(raw))
    assert scan.damage is not None and scan.damage.followed


# --- the offline tree -----------------------------------------------------------------


class Recording:
    """A Progress that keeps each stage's total and the bytes advanced in it."""

    def __init__(self) -> None:
        self.stages: dict[str, list[int]] = {}
        self.current: list[int] = []
        self.finished = False

    def stage(self, name: str, total: int) -> None:
        self.current = self.stages[name] = [total, 0]

    def advance(self, n: int) -> None:
        self.current[1] += n

    def done(self) -> None:
        self.finished = True


def test_the_offline_tree_answers_as_zookeeper_does() -> None:
    contents = parse_snapshot(snapshot(TREE))
    tree = OfflineTree(contents.nodes, contents.children, chroot="kafka/")
    assert tree.chroot == "/kafka"
    got = tree.multi_read(
        [
            (ReadOp.GET_DATA, "/brokers"),
            (ReadOp.GET_CHILDREN, "/brokers"),
            (ReadOp.GET_DATA, "/brokers/ids/1"),
            (ReadOp.GET_DATA, "/brokers/topics/t"),
            (ReadOp.GET_CHILDREN, "/brokers/topics/t"),
            (ReadOp.GET_DATA, "/absent"),
            (ReadOp.GET_DATA, ""),
            (ReadOp.GET_DATA, "/"),
        ],
        batch=3,
    )
    assert got == [
        NodeData(b"", 0, 0, 2),
        ("ids", "topics"),
        NodeData(b'{"host":"a"}', 0, SESSION, 0),
        NodeData(b"{}", 3, 0, 0),
        (),
        ReadError(-101),
        NodeData(b"", 0, 0, 1),
        ReadError(-101),
    ]
    root = OfflineTree(contents.nodes, contents.children)
    assert root.multi_read([(ReadOp.GET_CHILDREN, "/"), (ReadOp.GET_DATA, "")]) == [
        ("zookeeper", "kafka"),
        NodeData(b"", 0, 0, 2),
    ]


def test_open_data_dir_reads_a_snapshot_and_the_logs_after_it(tmp_path: Path) -> None:
    version = tmp_path / "data" / "version-2"
    version.mkdir(parents=True)
    (version / "snapshot.f").write_bytes(snapshot(TREE, {SESSION: 18000}))
    (version / "log.1").write_bytes(log(txn(TxnType.CREATE, create_body("/old", b""), zxid=0xF)))
    later = [
        txn(TxnType.CREATE, create_body("/kafka/x", b"1"), zxid=0x10),
        txn(TxnType.CLOSE_SESSION, i32(0), zxid=0x11),
        txn(TxnType.CREATE_SESSION, i32(6000), zxid=0x12, session=SESSION + 1),
    ]
    (version / "log.10").write_bytes(log(*later))
    (tmp_path / "other").mkdir()
    assert [p.name for _, p in find_data_files([tmp_path / "data"]).logs_from(0x10)] == [
        "log.1",
        "log.10",
    ]
    progress = Recording()
    tree = open_data_dir([tmp_path / "data", tmp_path / "other"], "/kafka", progress)
    read = [("snapshot", "snapshot.f"), ("log", "log.1"), ("log", "log.10")]
    sizes = {f"{kind} {name}": (version / name).stat().st_size for kind, name in read}
    assert progress.stages == {stage: [size, size] for stage, size in sizes.items()}
    assert progress.finished
    assert tree.zxid == 0x12 and tree.warnings == ()
    assert tree.open_sessions == frozenset({SESSION + 1})
    assert tree.multi_read([(ReadOp.GET_DATA, "/x"), (ReadOp.GET_DATA, "/brokers/ids/1")]) == [
        NodeData(b"1", 0, 0, 0),
        ReadError(-101),
    ]
    assert "snapshot.f (zxid 0xf, 9 znodes) + 2 log file(s)" in tree.source
    with pytest.raises(ZkDataDirError, match="not a ZooKeeper data directory"):
        open_data_dir([tmp_path / "other"])
