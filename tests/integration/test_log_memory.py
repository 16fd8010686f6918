"""A log file far larger than any batch is read a batch at a time: ``zk2kraft log
verify`` and ``log dump`` on a sparse 1 GiB segment or snapshot report what the recovery
rules say, with the child process's peak memory (its ru_maxrss, from wait4) far below
the file's size. Reading the file whole took more than the file (2 GiB for a 1 GiB
segment)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from migration.log.metadata_log import MetadataLog
from migration.log.snapshots import SnapshotId
from tests.support import config_record

SPARSE_BYTES = 1 << 30
PEAK_BOUND = SPARSE_BYTES // 4  # the interpreter and its imports take about 60 MiB


# The command runs as the grandchild of a small Python: on Linux a child's ru_maxrss
# starts from its parent's resident size at the fork (the exec keeps the high-water
# mark), and pytest's own is hundreds of MiB by the time these tests run.
_RUNNER = """
import os, sys
pid = os.spawnv(os.P_NOWAIT, sys.executable, [sys.executable, "-m", "migration.cli.main",
                                              *sys.argv[2:]])
_, status, usage = os.wait4(pid, 0)
open(sys.argv[1], "w").write(str(usage.ru_maxrss * 1024))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def peak_rss(tmp_path: Path, *args: str) -> tuple[int, int, str, str]:
    """Run zk2kraft in a child process: (its peak RSS in bytes, exit code, stdout,
    stderr). Output goes to files (a full pipe would block the child)."""
    out, err, peak = tmp_path / "stdout", tmp_path / "stderr", tmp_path / "peak"
    with out.open("w") as stdout, err.open("w") as stderr:
        proc = subprocess.run(
            [sys.executable, "-c", _RUNNER, str(peak), *args],
            stdout=stdout,
            stderr=stderr,
            timeout=300,  # a hang guard, not a time limit on the work
            check=False,
        )
    return int(peak.read_text()), proc.returncode, out.read_text(), err.read_text()


def small_log(directory: Path) -> int:
    """Twelve records in three batches; returns the segment's size."""
    with MetadataLog(directory) as log:
        for b in range(3):
            log.append([config_record(b * 4 + i) for i in range(4)], epoch=1)
        return log.size_bytes


def test_a_sparse_segment_is_verified_and_dumped_in_bounded_memory(tmp_path: Path) -> None:
    log_dir = tmp_path / "log"
    end = small_log(log_dir)
    (segment,) = log_dir.glob("*.log")
    os.truncate(segment, SPARSE_BYTES)  # a crash's zero fill, a gigabyte of it

    peak, code, out, _ = peak_rss(tmp_path, "log", "verify", "--log-dir", str(log_dir))
    assert code == 0, out
    assert "OK (zk2kraft format): log start offset 0, end offset 12" in out
    assert f"segment {segment.name}: offsets 0..11, 12 records in 3 batches" in out
    assert f"{segment.name} at byte {end}: impossible batch length 0 (a write cut short" in out
    assert peak < PEAK_BOUND, f"peak RSS {peak:,} bytes for a {SPARSE_BYTES:,}-byte segment"

    peak, code, out, err = peak_rss(tmp_path, "log", "dump", "--log-dir", str(log_dir))
    assert code == 0, err
    assert len(out.splitlines()) == 12 and "(torn tail, not shown)" in err
    assert peak < PEAK_BOUND, f"peak RSS {peak:,} bytes for a {SPARSE_BYTES:,}-byte segment"


def test_a_sparse_snapshot_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    log_dir = tmp_path / "log"
    small_log(log_dir)
    with MetadataLog(log_dir) as log:
        path = log.write_snapshot(SnapshotId(12, 1), [config_record(i) for i in range(12)])
    end = path.stat().st_size
    os.truncate(path, SPARSE_BYTES)

    peak, code, out, _ = peak_rss(tmp_path, "log", "verify", "--log-dir", str(log_dir))
    assert code == 1, out
    assert f"error: {path} at byte {end}: impossible batch length 0" in out
    assert peak < PEAK_BOUND, f"peak RSS {peak:,} bytes for a {SPARSE_BYTES:,}-byte snapshot"
