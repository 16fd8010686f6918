"""What a Raft node measures for Kafka's ``raft-metrics`` group (rendered as
``kafka_server_raftmetrics_*``): records appended by the leader and fetched by
followers and observers (rates), and the commit latency (a leader's batch appended until
the high watermark passes it).

Threading: the node records on its own thread; a metrics scrape reads from another
(the rate and latency objects lock themselves; ``_pending`` is the node's alone).
"""

from __future__ import annotations

from collections import deque

from migration.observability.samples import LatencyWindow, WindowedRate


class RaftMetrics:
    def __init__(self) -> None:
        self.append_records = WindowedRate()
        self.fetch_records = WindowedRate()
        self.commit_latency = LatencyWindow()
        self._pending: deque[tuple[int, float]] = deque()  # (last offset, appended at ms)

    def appended(self, last_offset: int, count: int, now_ms: float) -> None:
        """The leader appended ``count`` records ending at ``last_offset``."""
        self.append_records.record(count)
        self._pending.append((last_offset, now_ms))

    def fetched(self, count: int) -> None:
        if count > 0:
            self.fetch_records.record(count)

    def committed(self, high_watermark: int, now_ms: float) -> None:
        """The high watermark moved: every pending batch below it is committed."""
        while self._pending and self._pending[0][0] < high_watermark:
            _, appended_ms = self._pending.popleft()
            self.commit_latency.record(now_ms - appended_ms)

    def new_leadership(self) -> None:
        """Batches of an earlier term commit (or not) without this node measuring them."""
        self._pending.clear()
