"""Decompression bombs through the real command line, under a memory limit: a Kafka
metadata log whose batch is a zstd, gzip, lz4 or snappy bomb (a valid CRC, so only its
size is wrong) fails ``log verify`` with the file, the byte and the cap named; ZooKeeper
snapshots of GBs of zeros (gzip, one member or many) and a snappy block declaring 4 GiB
fail ``preflight --zk-data-dir`` the same way. Each child runs under ``prlimit --as``
and its peak resident memory is measured: bounded by the cap, not by the bomb."""

from __future__ import annotations

import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

import cramjam
import pytest

from migration.common.limits import MAX_DECOMPRESSED_BATCH_BYTES
from migration.common.snappy import SNAPPY_MAGIC
from tests.kafka_log_dir import write_kafka_dir

# Address space for the child: what Python, the project's imports and their threads
# reserve (a clean `log verify` runs within 300 MiB) with room for one batch at the cap.
ADDRESS_SPACE = 1024**3
# Resident memory the child may reach: its own baseline (~60-80 MB) and a bomb's worth of
# a capped buffer (64 MiB, doubled into: 64 + the buffer before it), never the bomb.
PEAK_BYTES = 300 * 1024**2
ZEROS = bytes(1 << 24)


def run_capped(*args: str) -> tuple[subprocess.CompletedProcess[str], int]:
    """``zk2kraft args`` under :data:`ADDRESS_SPACE`, and its peak resident bytes (a
    fresh wrapper process waits for it alone, so RUSAGE_CHILDREN is the command's)."""
    wrapper = (
        "import resource, subprocess, sys\n"
        "r = subprocess.run(sys.argv[1:])\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
        "sys.exit(r.returncode)\n"
    )
    command = ["prlimit", f"--as={ADDRESS_SPACE}", "--"]
    command += [sys.executable, "-m", "migration.cli.main", *args]
    done = subprocess.run(
        [sys.executable, "-c", wrapper, *command],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    *rest, peak_kib = done.stderr.rstrip("\n").rsplit("\n", 1)
    done.stderr = "\n".join(rest)
    return done, int(peak_kib) * 1024


# --- Kafka's metadata log ---------------------------------------------------------------


Compressor = cramjam.zstd.Compressor | cramjam.gzip.Compressor | cramjam.lz4.Compressor


def streamed(compressor: Compressor, total: int) -> bytes:
    """``total`` zero bytes through a cramjam streaming compressor."""
    for _ in range(total // len(ZEROS)):
        compressor.compress(ZEROS)
    return bytes(compressor.finish())


def xerial(block_size: int, total: int) -> bytes:
    """snappy-java's framing over ``total`` zeros in blocks of ``block_size``."""
    block = bytes(cramjam.snappy.compress_raw(bytes(block_size)))
    framed = block.__len__().to_bytes(4, "big") + block
    return SNAPPY_MAGIC + (1).to_bytes(4, "big") * 2 + framed * (total // block_size)


BOMB = 4 * MAX_DECOMPRESSED_BATCH_BYTES  # 256 MiB of zeros in each Kafka batch bomb
KAFKA_BOMBS: dict[str, tuple[int, Callable[[], bytes]]] = {
    "zstd": (4, lambda: streamed(cramjam.zstd.Compressor(), BOMB)),
    "gzip": (1, lambda: streamed(cramjam.gzip.Compressor(), BOMB)),
    "lz4": (3, lambda: streamed(cramjam.lz4.Compressor(), BOMB)),
    "snappy": (2, lambda: xerial(1 << 20, BOMB)),
    "snappy-raw": (2, lambda: bytes(cramjam.snappy.compress_raw(bytes(BOMB // 2)))),
}


@pytest.mark.parametrize("name", list(KAFKA_BOMBS))
def test_a_kafka_batch_bomb_is_a_named_error_within_a_memory_cap(tmp_path: Path, name: str) -> None:
    from tests.unit.test_decompression_bombs import bomb_batch

    codec, body = KAFKA_BOMBS[name]
    kd = write_kafka_dir(tmp_path / "kafka")
    segment = kd.segment.read_bytes()
    next_offset = sum(len(b.records) for b in kd.batches)
    kd.segment.write_bytes(
        segment + bomb_batch(next_offset, codec, body(), epoch=kd.batches[-1].epoch)
    )
    done, peak = run_capped("log", "verify", "--log-dir", str(kd.root))
    assert done.returncode == 1, (done.stdout, done.stderr)
    said = done.stdout + done.stderr
    assert kd.segment.name in said and f"byte {len(segment)}" in said, said
    assert f"past {MAX_DECOMPRESSED_BATCH_BYTES} bytes" in said, said
    print(f"{name}: peak {peak / 2**20:.0f} MiB")
    assert peak < PEAK_BYTES, f"{name}: peak {peak / 2**20:.0f} MiB"


# --- ZooKeeper's snapshots -------------------------------------------------------------


def gzip_of_zeros(total: int) -> bytes:
    """One gzip member of ``total`` zeros, built without ever holding them: a deflate
    chunk ending in a full flush (byte-aligned, no back-references past it) repeated."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = deflate.compress(ZEROS) + deflate.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(total // len(ZEROS)):
        crc = zlib.crc32(ZEROS, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    trailer = crc.to_bytes(4, "little") + (total % 2**32).to_bytes(4, "little")
    return header + chunk * (total // len(ZEROS)) + deflate.flush() + trailer


def snapshot_dir(tmp_path: Path, name: str, content: bytes) -> Path:
    version = tmp_path / "zk" / "version-2"
    version.mkdir(parents=True)
    (version / name).write_bytes(content)
    return tmp_path / "zk"


ZK_BOMBS: dict[str, tuple[str, Callable[[], bytes], str]] = {
    "gzip": (
        "snapshot.100.gz",
        lambda: gzip_of_zeros(6 * 1024**3),
        "gzip stream decompresses past",
    ),
    "gzip-members": (
        "snapshot.100.gz",
        lambda: gzip_of_zeros(1 << 28) * 8,
        "gzip stream decompresses past",
    ),
    "snappy-4GiB-block": (
        "snapshot.100.snappy",
        lambda: SNAPPY_MAGIC + bytes(8) + (7).to_bytes(4, "big") + b"\xff\xff\xff\xff\x0f\x00\x00",
        "snappy block at byte 16 declares 4294967295 bytes",
    ),
    # snappy cannot pass 22x: 2 GiB takes a 100 MB file, under the cap; the memory limit
    # refuses the stream's buffer, and that is said as plainly.
    "snappy-2GiB": (
        "snapshot.100.snappy",
        lambda: xerial(1 << 20, 1 << 31),
        "no memory for its 2147483648-byte decompressed stream",
    ),
}


@pytest.mark.parametrize("name", list(ZK_BOMBS))
def test_a_zookeeper_snapshot_bomb_is_a_named_error_within_a_memory_cap(
    tmp_path: Path, name: str
) -> None:
    file, content, problem = ZK_BOMBS[name]
    data_dir = snapshot_dir(tmp_path, file, content())
    done, peak = run_capped("preflight", "--zk-data-dir", str(data_dir))
    assert done.returncode == 2, (done.stdout, done.stderr)
    said = done.stdout + done.stderr
    assert file in said and problem in said, said
    assert "INTERNAL" not in said and "MemoryError" not in said, said
    print(f"{name}: peak {peak / 2**20:.0f} MiB")
    assert peak < PEAK_BYTES, f"{name}: peak {peak / 2**20:.0f} MiB"
