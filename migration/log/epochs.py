"""EpochStarts: where each leader epoch begins in a log (Kafka's leader-epoch cache).

Raft asks one question of it: for a fetcher's last epoch, where does the largest epoch
not newer than it end in this log? If the answer is below the fetcher's offset (or the
epoch is older), the fetcher's log diverges there.
"""

from __future__ import annotations

from bisect import bisect_right


class EpochStarts:
    """(epoch, first offset) for each epoch the log holds, oldest first.

    A sentinel entry describes what lies before the log start: epoch 0 at offset 0 for
    a log that starts at 0, or a snapshot's epoch when the log starts where that
    snapshot ends. A log that starts elsewhere (segments deleted below an older
    snapshot) has no sentinel, and epochs older than its first batch are unknown.
    """

    __slots__ = ("_epochs", "_keep", "_offsets")

    def __init__(self) -> None:
        self._epochs: list[int] = []
        self._offsets: list[int] = []
        self._keep = 0  # 1 once a sentinel is in place: truncation never removes it

    @classmethod
    def before(cls, snapshot_epoch: int | None, start_offset: int) -> EpochStarts:
        starts = cls()
        if snapshot_epoch is not None:
            starts.note(snapshot_epoch, start_offset)
        elif start_offset == 0:
            starts.note(0, 0)
        starts._keep = len(starts._epochs)
        return starts

    def note(self, epoch: int, base_offset: int) -> None:
        """A batch of ``epoch`` was appended at ``base_offset`` (epochs never go back)."""
        if not self._epochs or epoch > self._epochs[-1]:
            self._epochs.append(epoch)
            self._offsets.append(base_offset)

    def truncate(self, offset: int) -> None:
        """Forget epochs that began at or after ``offset`` (the log was cut there);
        the sentinel stays."""
        while len(self._offsets) > self._keep and self._offsets[-1] >= offset:
            self._epochs.pop()
            self._offsets.pop()

    def end_offset_for(self, epoch: int, log_end: int) -> tuple[int, int] | None:
        i = bisect_right(self._epochs, epoch) - 1
        if i < 0:
            return None
        end = self._offsets[i + 1] if i + 1 < len(self._offsets) else log_end
        return self._epochs[i], end
