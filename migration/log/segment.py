"""One segment file ``<base_offset:020>.log`` and its in-memory batch index.

A segment is a run of batches with contiguous offsets starting at its base offset.
The index (base offset, file position and epoch of every batch) is rebuilt by a
scan on open -- a batch at a time (:mod:`.frame_file`: memory bounded by the largest
batch, whatever the file's size) -- and kept in step by appends and truncations. Not
thread-safe: the owning :class:`~migration.log.metadata_log.MetadataLog` serializes
access.
"""

from __future__ import annotations

import os
from array import array
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path

from migration.log.batch import BatchHeader, LogBatch, decode_records, parse_header
from migration.log.errors import CorruptLogError
from migration.log.files import open_regular
from migration.log.frame_file import FrameFile

SUFFIX = ".log"


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}{SUFFIX}"


def parse_segment_name(name: str) -> int | None:
    stem = name.removesuffix(SUFFIX)
    if name.endswith(SUFFIX) and len(stem) == 20 and stem.isdigit():
        return int(stem)
    return None


@dataclass
class ScanProblem:
    """The first invalid bytes of a segment: where, what is wrong with them, and whether
    they look like a write cut short by a crash (``torn``) rather than damage."""

    position: int
    problem: str
    torn: bool


class Segment:
    def __init__(self, path: Path, base_offset: int, fd: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.fd = fd
        self.size = 0
        self.next_offset = base_offset
        self.offsets = array("q")  # base offset of each batch
        self.positions = array("q")  # file position of each batch
        self.epochs = array("i")  # leader epoch of each batch

    # --- opening ------------------------------------------------------------------------

    @classmethod
    def create(cls, path: Path, base_offset: int) -> Segment:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        return cls(path, base_offset, fd)

    @classmethod
    def open(
        cls, path: Path, base_offset: int, read_only: bool
    ) -> tuple[Segment, ScanProblem | None]:
        """Open and index the segment, checking every batch's CRC and that its records
        decode. Returns the first problem found (the index stops just before it); the
        caller decides what to do with a torn tail or corruption. Anything but a
        regular file is refused (OSError) before it is read: a FIFO would hang."""
        flags = os.O_RDONLY if read_only else os.O_RDWR | os.O_APPEND
        seg = cls(path, base_offset, open_regular(path, flags))
        return seg, seg._scan()

    def _scan(self) -> ScanProblem | None:
        frames = FrameFile(self.fd)
        pos = 0
        problem: ScanProblem | None = None
        while pos < frames.size:
            header = frames.check(pos)
            if isinstance(header, str):
                torn = frames.is_torn_tail(pos, self.next_offset)
                problem = ScanProblem(pos, header, torn)
                break
            if header.base_offset != self.next_offset:
                problem = ScanProblem(
                    pos,
                    f"batch starts at offset {header.base_offset}, expected {self.next_offset}",
                    torn=False,
                )
                break
            if self.epochs and header.epoch < self.epochs[-1]:
                problem = ScanProblem(
                    pos,
                    f"batch at offset {header.base_offset} has epoch {header.epoch}, "
                    f"older than the epoch {self.epochs[-1]} before it",
                    torn=False,
                )
                break
            self._index(header, pos)
            pos += header.size
        self.size = pos
        return problem

    def _index(self, header: BatchHeader, position: int) -> None:
        self.offsets.append(header.base_offset)
        self.positions.append(position)
        self.epochs.append(header.epoch)
        self.next_offset = header.next_offset

    # --- writing ------------------------------------------------------------------------

    def append(self, frame: bytes, header: BatchHeader) -> None:
        """The whole frame, or OSError naming the file and the errno that stopped it
        (a full disk: ENOSPC) with no partial batch left behind. A short write is
        followed by one for the rest, as the kernel says only then why it stopped."""
        view = memoryview(frame)
        try:
            while view:
                view = view[os.write(self.fd, view) :]
        except OSError as exc:
            os.ftruncate(self.fd, self.size)
            raise OSError(exc.errno, exc.strerror, str(self.path)) from exc
        self._index(header, self.size)
        self.size += len(frame)

    def truncate_at_batch(self, index: int) -> None:
        """Drop batch ``index`` and everything after it."""
        if index >= len(self.offsets):
            return
        self.size = self.positions[index]
        self.next_offset = self.offsets[index]
        del self.offsets[index:], self.positions[index:], self.epochs[index:]
        os.ftruncate(self.fd, self.size)

    def truncate_bytes(self, position: int) -> None:
        """Cut a torn or corrupt tail found by the scan (the index already stops there)."""
        os.ftruncate(self.fd, position)
        self.size = position

    def flush(self) -> None:
        os.fsync(self.fd)

    def size_on_disk(self) -> int:
        return os.fstat(self.fd).st_size

    def close(self) -> None:
        os.close(self.fd)

    # --- reading ------------------------------------------------------------------------

    def batch_index(self, offset: int) -> int:
        """Index of the batch holding ``offset`` (which the segment must hold)."""
        return bisect_right(self.offsets, offset) - 1

    def read_frame(self, index: int) -> bytes:
        """The raw frame of batch ``index``, its CRC checked again (bytes may have rotted
        since the scan)."""
        data, _ = self._checked(index)
        return data

    def _checked(self, index: int) -> tuple[bytes, BatchHeader]:
        position = self.positions[index]
        end = self.positions[index + 1] if index + 1 < len(self.positions) else self.size
        data = os.pread(self.fd, end - position, position)
        header = parse_header(data, 0, verify=True)
        if isinstance(header, str):
            raise CorruptLogError(self.path, position, header)
        if header.base_offset != self.offsets[index]:
            raise CorruptLogError(self.path, position, "batch offset changed on disk")
        return data, header

    def read_batch(self, index: int) -> LogBatch:
        """Batch ``index``, decoded, its CRC checked again."""
        data, header = self._checked(index)
        position = self.positions[index]
        try:
            records = decode_records(data, 0, header)
        except ValueError as exc:  # a valid CRC over records we cannot parse
            raise CorruptLogError(self.path, position, f"undecodable records: {exc}") from None
        return LogBatch(header.base_offset, header.epoch, header.timestamp_ms, records)
