"""Batch frames read from a file one at a time: segments, snapshots, bootstrap.checkpoint.

Memory is bounded by the format, never by the file. Reads go through a window of
:data:`WINDOW_BYTES` (a segment of small batches costs a read per window, not two per
batch), grown to one frame when a frame is larger; a frame is at most
:data:`~migration.log.batch.MAX_BATCH_BYTES`, and a length field claiming more -- or
more than the file has left -- is judged from the header alone
(:func:`~migration.log.batch.frame_size`) before anything is read. The look past bad
bytes that tells a torn write from damage (:meth:`FrameFile.is_torn_tail`) streams the
rest of the file a window at a time. A 2 GB sparse file is never held whole.

The size is the file's when the reader is made (a live log read by ``log dump`` may
grow meanwhile: what came later is not read); a file cut shorter under the reader ends
where its bytes end.
"""

from __future__ import annotations

import errno
import os
import struct

from migration.log.batch import (
    CRC_FROM,
    HEADER_SIZE,
    LENGTH,
    MAGIC,
    BatchHeader,
    check_batch,
    frame_size,
    parse_header,
)

WINDOW_BYTES = 1 << 20
_MARKER_BYTES = 6  # the magic byte and the high five bytes of a base offset


class FrameFile:
    """The frames of the open regular file ``fd`` (not closed here). Not thread-safe."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.size = os.fstat(fd).st_size
        self._start = 0
        self._window = memoryview(b"")

    def _at(self, pos: int, n: int) -> int:
        """Where ``pos`` is in the window, which holds ``n`` bytes from it (fewer at the
        end of the file) once this returns."""
        offset = pos - self._start
        if offset < 0 or offset + n > len(self._window):
            want = max(0, min(max(n, WINDOW_BYTES), self.size - pos))
            self._window = memoryview(b"")  # the old window is let go before the new is read
            self._start, offset = pos, 0
            self._window = memoryview(_pread_all(self.fd, want, pos))
            if len(self._window) < want:  # the file was cut shorter under the reader
                self.size = pos + len(self._window)
        return offset

    def _frame(self, pos: int) -> memoryview | str:
        """The bytes of the frame at ``pos``, or why there is none there
        (:func:`~migration.log.batch.frame_size`); nothing past the header is read
        for a length the format or the file cannot hold."""
        while True:
            offset = self._at(pos, HEADER_SIZE)
            size = frame_size(self._window, offset, self.size - pos)
            if isinstance(size, str):
                return size
            offset = self._at(pos, size)
            if offset + size <= len(self._window):
                return self._window[offset : offset + size]
            # The file was cut shorter under the reader (``size`` went down): judge again.

    def _reaches_end(self) -> bool:
        return self._start + len(self._window) >= self.size

    # Each batch is judged in place in the window first: a batch wholly in it is judged
    # as the file would judge it, and so is anything when the window reaches the end of
    # the file; otherwise (what was judged may cross the window's end) the frame is read
    # whole, or refused from its header, and judged again.

    def header(self, pos: int) -> tuple[memoryview, BatchHeader] | str:
        """The frame at ``pos`` and its header, CRC checked
        (:func:`~migration.log.batch.parse_header`), or why not."""
        offset = self._at(pos, HEADER_SIZE)  # before the window is read: it may move
        buf = self._window
        header = parse_header(buf, offset, verify=True)
        if isinstance(header, str) and not self._reaches_end():
            data = self._frame(pos)
            if isinstance(data, str):
                return data
            buf, offset, header = data, 0, parse_header(data, 0, verify=True)
        return header if isinstance(header, str) else (buf[offset : offset + header.size], header)

    def check(self, pos: int) -> BatchHeader | str:
        """The header of the batch at ``pos`` if it is whole: CRC right and records
        that decode (:func:`~migration.log.batch.check_batch`); else why not."""
        offset = self._at(pos, HEADER_SIZE)  # before the window is read: it may move
        header = check_batch(self._window, offset)
        if isinstance(header, str) and not self._reaches_end():
            data = self._frame(pos)
            header = data if isinstance(data, str) else check_batch(data, 0)
        return header

    def is_torn_tail(self, pos: int, next_offset: int) -> bool:
        """Whether the invalid bytes from ``pos`` (the end of the last segment) look
        like a write a crash cut short, rather than damage to data once written whole.

        Torn: zero fill, a header cut short, or a batch whose length runs past the end
        of the file -- unless a whole batch at or after ``next_offset`` follows
        somewhere (bytes after the bad ones were once written whole: corruption).
        """
        after, zeros = self._look_past(pos, next_offset)
        if after:
            return False
        left = self.size - pos
        if left < HEADER_SIZE or zeros:
            return True
        offset = self._at(pos, 4)
        length: int = LENGTH.unpack_from(self._window, offset)[0]
        return 4 + length > left

    def _look_past(self, pos: int, next_offset: int) -> tuple[bool, bool]:
        """(a whole batch at or after ``next_offset`` starts after ``pos``, every byte
        from ``pos`` is zero), the rest of the file streamed a window at a time.

        A batch's magic byte and the high bytes of its base offset sit at a fixed place
        in its frame; each window is searched for them (C speed) and each candidate
        verified. Consecutive windows overlap by a marker less one byte, so a marker
        across their border is found once. The magic byte is not zero, so no marker
        starts in zeros: a window of zeros is not searched, and a sparse file's holes
        are skipped unread."""
        markers = [
            struct.pack(">Bq", MAGIC, base)[:_MARKER_BYTES]
            for base in (next_offset, next_offset + (1 << 24))
        ]
        first = pos + 1 + CRC_FROM  # where the marker of a batch after ``pos`` can be
        zeros = True
        start = _next_data(self.fd, pos, self.size)
        while start < self.size:
            chunk = _pread_all(
                self.fd, min(WINDOW_BYTES + _MARKER_BYTES - 1, self.size - start), start
            )
            if not chunk:
                break
            if chunk != bytes(len(chunk)):
                zeros = False
                for marker in markers:
                    found = chunk.find(marker, max(0, first - start))
                    while found != -1:
                        header = self.header(start + found - CRC_FROM)
                        if not isinstance(header, str) and header[1].base_offset >= next_offset:
                            return True, False
                        found = chunk.find(marker, found + 1)
            start = _next_data(self.fd, start + WINDOW_BYTES, self.size)
        return False, zeros


def _next_data(fd: int, pos: int, size: int) -> int:
    """The first position at or after ``pos`` that is not in a hole of a sparse file
    (``size`` when only holes follow); ``pos`` where the file system cannot tell."""
    if pos >= size:
        return size
    try:
        return min(os.lseek(fd, pos, os.SEEK_DATA), size)
    except OSError as exc:
        return size if exc.errno == errno.ENXIO else pos


def _pread_all(fd: int, n: int, pos: int) -> bytes:
    """``n`` bytes at ``pos``, fewer only at the end of the file."""
    data = os.pread(fd, n, pos)
    if len(data) == n or not data:
        return data
    parts = [data]
    got = len(data)
    while got < n:
        more = os.pread(fd, n - got, pos + got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)
