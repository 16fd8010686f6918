"""The log's durability rules in child processes: an append or a quorum-state write the
disk cannot hold is an error, never a partial batch or a cut file; ``log verify`` names
every problem (and does not hang on a FIFO); ``log dump`` names an undecodable batch
without a traceback. The rules in process: tests/unit/test_log_durability.py."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from migration.log.batch import encode_batch, frame_record
from migration.log.errors import CorruptLogError
from migration.log.metadata_log import MetadataLog
from migration.log.segment import segment_name
from migration.raft.quorum_state_store import ElectionState, FileQuorumStateStore
from tests.support import config_record, zk2kraft
from tests.unit.test_log_durability import build

_FILLS_UP = """
import resource, signal, sys
from pathlib import Path
from migration.log.metadata_log import MetadataLog
from tests.support import config_record

log = MetadataLog(Path(sys.argv[1]))
log.append([config_record(0)], epoch=1)
segment = log.segment_paths[-1]
size = segment.stat().st_size
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # over the limit: EFBIG, as a full disk ENOSPC
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 10, resource.RLIM_INFINITY))
try:
    log.append([config_record(i) for i in range(1, 50)], epoch=1)
except OSError as exc:
    print(exc.errno, exc.filename, segment.stat().st_size - size)
"""


def test_an_append_the_disk_cannot_hold_names_why_and_leaves_no_partial_batch(
    tmp_path: Path,
) -> None:
    """The kernel writes what fits and says why it stopped only on the next write: the
    error names the errno and the file (a full disk reads as one), and the segment is
    cut back to its last whole batch. A real limit, in a process of its own."""
    done = subprocess.run(
        [sys.executable, "-c", _FILLS_UP, str(tmp_path / "log")],
        check=False, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    code, path, grown = done.stdout.split()
    assert (int(code), Path(path).parent, int(grown)) == (errno.EFBIG, tmp_path / "log", 0)
    with MetadataLog(tmp_path / "log", read_only=True) as log:
        assert log.end_offset == 1 and not log.problems


def verify(directory: Path) -> tuple[int, str]:
    result = zk2kraft("log", "verify", "--log-dir", str(directory))
    assert "Traceback" not in result.stderr
    return result.returncode, result.stdout + result.stderr


def test_verify_refuses_an_empty_directory(tmp_path: Path) -> None:
    code, out = verify(tmp_path)
    assert code == 1 and "not a metadata log" in out


def test_verify_names_files_a_log_directory_does_not_hold(tmp_path: Path) -> None:
    build(tmp_path, 2)
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "0000000000000000001.log").write_bytes(b"")  # 19 digits: misnamed
    code, out = verify(tmp_path)
    assert code == 1 and "notes.txt" in out and "0000000000000000001.log" in out
    with pytest.raises(CorruptLogError, match="named like a segment"):
        MetadataLog(tmp_path)


def test_verify_refuses_epochs_that_go_back(tmp_path: Path) -> None:
    build(tmp_path, 2, epoch=5)
    with (tmp_path / segment_name(0)).open("ab") as f:  # a whole, valid batch of epoch 1
        f.write(encode_batch(8, 1, 0, [frame_record(config_record(8).SerializeToString())]))
    code, out = verify(tmp_path)
    assert code == 1 and "has epoch 1, older than the epoch 5" in out, out
    with pytest.raises(CorruptLogError, match="older than the epoch 5"):
        MetadataLog(tmp_path)


def test_verify_does_not_hang_on_a_fifo_named_like_a_segment(tmp_path: Path) -> None:
    build(tmp_path, 2)
    os.mkfifo(tmp_path / segment_name(10_000))
    code, out = verify(tmp_path)
    assert code == 1 and "not a regular file" in out


def test_dump_names_an_undecodable_batch_without_a_traceback(tmp_path: Path) -> None:
    build(tmp_path, 1)
    with (tmp_path / segment_name(0)).open("ab") as f:
        f.write(encode_batch(4, 1, 0, [b"\x0a\x05\xff\xff\xff\xff\xff"]))
    result = zk2kraft("log", "dump", "--log-dir", str(tmp_path))
    assert "Traceback" not in result.stderr
    assert segment_name(0) in result.stderr and "offset 4" in result.stderr


_STATE_CUT_SHORT = """
import resource, signal, sys
from pathlib import Path
from migration.raft.quorum_state_store import ElectionState, FileQuorumStateStore

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (20, resource.RLIM_INFINITY))  # the kernel: 20 bytes
try:
    FileQuorumStateStore(Path(sys.argv[1])).write(ElectionState(7, leader_id=2, voted_id=2))
except OSError as exc:
    print(exc.errno)
"""


def test_a_quorum_state_the_disk_cannot_hold_whole_is_an_error_never_a_cut_file(
    tmp_path: Path,
) -> None:
    """A short write of ``quorum-state`` raises (the node halts) and the file in place is
    the previous one: a state cut short would stop the node from starting again."""
    store = FileQuorumStateStore(tmp_path)
    store.write(ElectionState(6, leader_id=1, voted_id=1))
    done = subprocess.run(
        [sys.executable, "-c", _STATE_CUT_SHORT, str(tmp_path)],
        check=False, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stdout.strip()) == (0, str(errno.EFBIG)), done.stderr
    assert store.read() == ElectionState(6, leader_id=1, voted_id=1)
