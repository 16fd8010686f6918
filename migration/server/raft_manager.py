"""One node's Raft assembly, shared by controllers and KRaft brokers (Kafka's
RaftManager): the metadata log in its directory, the event loop that owns it, the gRPC
transport to the voters, the committed image kept up with the log, and the Raft node
over them.

Contract: the committed image is the node's first Raft listener (the image is applied
before anyone else hears of a commit; others are added with ``raft.add_listener``).
:meth:`start` runs the loop; :meth:`close` stops the loop, then closes the transport, the
committed image and the log, in that order."""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path

from migration.image.committed import DEFAULT_SNAPSHOT_BYTES, CommittedMetadata
from migration.log.metadata_log import DEFAULT_SEGMENT_BYTES, FlushPolicy, MetadataLog
from migration.raft.config import Address, RaftConfig
from migration.raft.event_loop import EventLoop, monotonic_ms
from migration.raft.event_performance import EventPerformance
from migration.raft.node import RaftNode
from migration.raft.quorum_state_store import FileQuorumStateStore
from migration.raft.runtime import GrpcTransport
from migration.raft.voters import snapshot_control_records


class RaftManager:
    def __init__(
        self,
        log_dir: Path,
        config: RaftConfig,
        voters: Mapping[int, Address],
        *,
        request_timeout_ms: int,
        repair_corrupt_tail: bool,
        loop_name: str = "raft-loop",
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        snapshot_bytes: int = DEFAULT_SNAPSHOT_BYTES,
        performance: EventPerformance | None = None,
    ) -> None:
        # Raft decides when to flush (before acknowledging); the log never flushes alone.
        self.log = MetadataLog(
            log_dir,
            segment_bytes=segment_bytes,
            flush=FlushPolicy.never(),
            repair_corrupt_tail=repair_corrupt_tail,
        )
        self.loop = EventLoop(name=loop_name, performance=performance)
        others = {v: a for v, a in voters.items() if v != config.node_id}
        self.transport = GrpcTransport(self.loop, others, request_timeout_ms)
        self.committed = CommittedMetadata(self.log, snapshot_bytes)
        try:
            self.raft = RaftNode(
                config,
                self.log,
                FileQuorumStateStore(log_dir),
                self.transport,
                clock=monotonic_ms,
                rng=random.Random(),
                listeners=[self.committed],
                flusher=self.loop.flusher,
            )
        except BaseException:
            self.close()
            raise
        self.transport.node = self.raft
        history = self.raft.voter_history  # snapshots carry the voter set at their end
        self.committed.snapshot_control = lambda end: snapshot_control_records(history.at(end))

    def start(self) -> None:
        self.loop.start(self.raft)

    def close(self) -> None:
        self.loop.stop()
        self.transport.close()
        self.committed.close()
        self.log.close()
