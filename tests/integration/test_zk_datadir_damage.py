"""Damaged data directories, made from a real one by editing bytes of copies: what
ZooKeeper would cut or skip is cut or skipped with a warning naming the file, what it
could not restore is a ZkDataDirError naming the file and the byte; nothing under the
directory is ever changed by reading it."""

from __future__ import annotations

import shutil
import time
import zlib
from pathlib import Path

import pytest

from migration.local.zookeeper import EmbeddedZooKeeper
from migration.zk.client import ZkClient
from migration.zk.jute import TXN_HEADER
from migration.zk.multiwrite import CreateMode, create, set_data
from migration.zkfiles.datadir import ZkDataDirError, open_data_dir
from migration.zkfiles.datafiles import find_data_files
from migration.zkfiles.datatree import OfflineTree
from migration.zkfiles.txnlog import RECORD_HEAD, LogScan, txn_zxid
from tests.zk_files import Znodes, dir_digest, walk

LOG_ONLY = 3  # the damage below reaches back this many records: all after the snapshot


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real data directory: several snapshots and logs (snapCount 20, logs
    preallocated 64 KiB at a time), its last transaction ``/final``'s setData, held by
    the log only; the server stopped by SIGKILL. ZooKeeper's snapshots are fuzzy (one
    started before that setData may still capture it), so the premise is checked on a
    copy and the directory made again when it does not hold."""
    for _ in range(5):
        data_dir = _data_dir(tmp_path_factory.mktemp("zk"))
        if _last_set_in_log_only(data_dir, tmp_path_factory.mktemp("check") / "data"):
            return data_dir
    raise AssertionError("five times, the newest snapshot held the last transaction")


def _data_dir(base: Path) -> Path:
    config = {"snapCount": "20", "preAllocSize": "64"}
    with EmbeddedZooKeeper(base_dir=base, extra_config=config) as zk:
        data_dir = zk.servers[0].data_dir
        with ZkClient(zk.connect_string) as client:
            client.multi_write([create("/kafka"), create("/kafka/brokers")])
            for i in range(120):
                client.multi_write([create(f"/kafka/brokers/t{i}", b"%d" % i)])
                if i % 4 == 0:
                    client.multi_write([set_data(f"/kafka/brokers/t{i}", b"again")])
            client.multi_write([create("/final", b"first", CreateMode.PERSISTENT)])
            for _ in range(30):  # until the newest snapshot is 3 transactions behind
                client.multi_write([set_data("/final", b"last")])
                time.sleep(0.3)  # a snapshot it set off is written by now
                newest = find_data_files([data_dir]).snapshots[0][0]
                if open_data_dir([data_dir]).zxid >= newest + LOG_ONLY:
                    break
            zk.kill(1)  # before the client's session closes
    return data_dir


def _last_set_in_log_only(data_dir: Path, scratch: Path) -> bool:
    """Whether the last LOG_ONLY records of the last log are newer than the newest
    snapshot, and the last one is all that holds ``/final``'s last setData: cut from a
    copy of the log (at the record's start), ``/final`` reads one version older."""
    newest = find_data_files([data_dir]).snapshots[0][0]
    tail = records(last_log(data_dir))[-LOG_ONLY:]
    if len(tail) < LOG_ONLY or any(txn_zxid(body) <= newest for _, body in tail):
        return False
    shutil.copytree(data_dir, scratch)
    log = last_log(scratch)
    offset, _ = records(log)[-1]
    log.write_bytes(log.read_bytes()[:offset])
    before = walk(open_data_dir([data_dir]))["/final"]
    after = walk(open_data_dir([scratch]))["/final"]
    return after[1] == before[1] - 1


@pytest.fixture
def copy(pristine: Path, tmp_path: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(pristine, target)
    return target


def read(directory: Path) -> OfflineTree:
    """open_data_dir, checking that nothing under ``directory`` changed."""
    before = dir_digest(directory)
    try:
        return open_data_dir([directory])
    finally:
        assert dir_digest(directory) == before, "reading changed the files"


def whole(directory: Path) -> Znodes:
    return walk(read(directory))


def last_log(directory: Path) -> Path:
    return find_data_files([directory]).logs[-1][1]


def records(log: Path) -> list[tuple[int, bytes]]:
    buf = log.read_bytes()
    return list(LogScan(buf, 0))


def test_the_pristine_copy_reads_whole_without_warnings(copy: Path) -> None:
    tree = read(copy)
    assert tree.warnings == ()
    assert walk(tree)["/final"][0] == b"last"


@pytest.mark.parametrize("how", ["truncated", "zeroed", "crc", "no-end-byte"])
def test_a_torn_tail_is_cut_with_a_warning(copy: Path, how: str) -> None:
    expected = whole(copy)
    data, version, owner, children = expected["/final"]
    assert data == b"last"
    expected["/final"] = (b"first" if version == 1 else b"last", version - 1, owner, children)
    log = last_log(copy)
    offset, body = records(log)[-1]
    raw = bytearray(log.read_bytes())
    middle = offset + RECORD_HEAD.size + len(body) // 2
    if how == "truncated":
        del raw[middle:]
    elif how == "zeroed":
        raw[middle:] = bytes(len(raw) - middle)
    elif how == "crc":
        raw[middle] ^= 0xFF
    else:
        raw[offset + RECORD_HEAD.size + len(body)] = 0
    log.write_bytes(bytes(raw))
    tree = read(copy)
    assert walk(tree) == expected
    (warning,) = tree.warnings
    assert warning.startswith(f"{log}: torn tail cut at byte {offset}")


def test_damage_followed_by_valid_records_is_refused(copy: Path) -> None:
    log = last_log(copy)
    offset, body = records(log)[-3]
    raw = bytearray(log.read_bytes())
    raw[offset + RECORD_HEAD.size + len(body) // 2] ^= 0x01
    log.write_bytes(bytes(raw))
    with pytest.raises(ZkDataDirError) as caught:
        read(copy)
    assert str(caught.value).startswith(f"{log}: bad record at byte {offset}: CRC mismatch")
    assert caught.value.offset == offset


def _only_first_snapshot(copy: Path) -> list[Path]:
    """Keep the oldest snapshot alone, so that every later log is replayed."""
    files = find_data_files([copy])
    for _, path in files.snapshots[:-1]:
        path.unlink()
    return [path for _, path in files.logs_from(files.snapshots[-1][0] + 1)]


def test_a_torn_log_that_another_resumes_after_is_read(copy: Path) -> None:
    expected = whole(copy)
    logs = _only_first_snapshot(copy)
    assert len(logs) >= 2
    first, second = logs[0], logs[1]
    next_offset = records(second)[0][0]
    end = records(first)[-1]
    raw = bytearray(first.read_bytes())
    tail = end[0] + RECORD_HEAD.size + len(end[1]) + 1
    partial = second.read_bytes()[next_offset : next_offset + RECORD_HEAD.size + 10]
    raw[tail : tail + len(partial)] = partial  # a write the crash cut, then a restart
    first.write_bytes(bytes(raw))
    tree = read(copy)
    assert walk(tree) == expected
    assert [w.split(":")[0] for w in tree.warnings] == [str(first)]


def test_a_torn_log_that_no_log_resumes_after_is_refused(copy: Path) -> None:
    first = _only_first_snapshot(copy)[0]
    offset, body = records(first)[-1]
    raw = first.read_bytes()
    first.write_bytes(raw[: offset + RECORD_HEAD.size + len(body) // 2])
    with pytest.raises(ZkDataDirError, match="in a log that is not the last") as caught:
        read(copy)
    assert str(caught.value).startswith(f"{first}: bad record at byte {offset}")


def test_a_damaged_snapshot_is_skipped_for_the_one_before(copy: Path) -> None:
    expected = whole(copy)
    newest = find_data_files([copy]).snapshots[0][1]
    older = find_data_files([copy]).snapshots[1][1]
    raw = bytearray(newest.read_bytes())
    raw[len(raw) // 2] ^= 0x20
    newest.write_bytes(bytes(raw))
    tree = read(copy)
    assert walk(tree) == expected
    (warning,) = tree.warnings
    assert warning.startswith(f"{newest}: bad snapshot at byte ")
    assert warning.endswith(f"skipped for {older.name}")
    assert tree.source.startswith(older.name)


def test_a_snapshot_cut_short_is_skipped(copy: Path) -> None:
    expected = whole(copy)
    newest = find_data_files([copy]).snapshots[0][1]
    newest.write_bytes(newest.read_bytes()[:-100])
    tree = read(copy)
    assert walk(tree) == expected
    assert "does not end with a seal" in tree.warnings[0]


def test_no_valid_snapshot_at_all_is_refused(copy: Path) -> None:
    snapshots = [p for _, p in find_data_files([copy]).snapshots]
    for path in snapshots:
        raw = bytearray(path.read_bytes())
        raw[-20] ^= 0xFF  # inside the stored checksum or the node before it
        path.write_bytes(bytes(raw))
    with pytest.raises(ZkDataDirError) as caught:
        read(copy)
    message = str(caught.value)
    assert message.startswith(f"{snapshots[0]}: bad snapshot at byte ")
    assert caught.value.offset is not None and caught.value.offset > 0
    assert "no valid snapshot" in message and snapshots[-1].name in message


def test_logs_without_a_snapshot_are_refused(copy: Path) -> None:
    for _, path in find_data_files([copy]).snapshots:
        path.unlink()
    with pytest.raises(ZkDataDirError, match=r"no snapshot\.\* file beside \d+ log file"):
        read(copy)


def test_an_unknown_transaction_type_is_refused_where_it_is(copy: Path) -> None:
    log = last_log(copy)
    offset, body = records(log)[-1]
    header = list(TXN_HEADER.unpack_from(body, 0))
    header[2] += 1  # the next zxid
    header[4] = 99  # no such transaction type
    bogus = TXN_HEADER.pack(*header)
    record = RECORD_HEAD.pack(zlib.adler32(bogus), len(bogus)) + bogus + b"B"
    raw = bytearray(log.read_bytes())
    at = offset + RECORD_HEAD.size + len(body) + 1
    raw[at : at + len(record)] = record
    log.write_bytes(bytes(raw))
    with pytest.raises(ZkDataDirError, match="unknown transaction type 99") as caught:
        read(copy)
    assert str(caught.value).startswith(f"{log}: bad record at byte {at}")


def test_an_empty_last_log_is_read_as_empty(copy: Path) -> None:
    expected = whole(copy)
    zxid = find_data_files([copy]).logs[-1][0]
    empty = copy / "version-2" / f"log.{zxid + 0x1000:x}"
    empty.touch()
    tree = read(copy)
    assert walk(tree) == expected
    assert tree.warnings[0].startswith(f"{empty}: torn tail cut at byte 0 (empty")


def test_the_version_directory_itself_may_be_named(copy: Path) -> None:
    assert walk(open_data_dir([copy / "version-2"])) == whole(copy)


def test_a_directory_that_is_not_zookeepers_is_refused(tmp_path: Path) -> None:
    (tmp_path / "version-2").mkdir()
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(ZkDataDirError) as caught:
        open_data_dir([tmp_path])
    assert str(caught.value) == (
        f"{tmp_path}: not a ZooKeeper data directory (no version-2/ with snapshot.* or log.* files)"
    )
