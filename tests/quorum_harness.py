"""Real controller processes on loopback for tests and benchmarks."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from migration.controller.client import ControllerClient, describe_quorum
from migration.local.quorum import LocalQuorum
from migration.log.batch import parse_header
from migration.proto import controller_pb2 as cpb
from migration.proto import raft_pb2 as rpb
from migration.proto import raft_pb2_grpc


@dataclass
class Quorum(LocalQuorum):
    """A LocalQuorum with what tests ask of it (cluster id "test-cluster" by default)."""

    cluster_id: str | None = "test-cluster"

    def start_all(self) -> Quorum:
        super().start_all()
        return self

    def describe(
        self, via: list[str] | None = None, timeout_s: float = 20.0
    ) -> rpb.DescribeQuorumResponse:
        return describe_quorum(
            via or [self.endpoint(i) for i in self.running()], timeout_s=timeout_s
        )

    def wait_leader(self, not_in: tuple[int, ...] = (), timeout_s: float = 20.0) -> int:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                d = self.describe(timeout_s=2)
            except Exception:
                time.sleep(0.05)
                continue
            if d.leader_id >= 0 and d.leader_id not in not_in and d.leader_id in self.running():
                return d.leader_id
            time.sleep(0.05)
        raise TimeoutError("no leader elected")

    def client(self, timeout_s: float = 30.0) -> ControllerClient:
        return ControllerClient([self.endpoint(i) for i in self.ids], timeout_s=timeout_s)


@contextmanager
def lone_quorum(root: Path, **options: Any) -> Iterator[LocalQuorum]:
    """A one-controller LocalQuorum in ``root`` (``options``: LocalQuorum's, e.g.
    ``metrics=True``), serving with a leader when given; stopped after."""
    quorum = LocalQuorum(root, size=1, **options).start_all()
    try:
        client = ControllerClient(quorum.bootstrap, timeout_s=60)
        client.call("Metadata", cpb.MetadataRequest())  # serving, with a leader
        client.close()
        yield quorum
    finally:
        quorum.stop_all()


class Observer(threading.Thread):
    """A Raft observer over real gRPC, as a KRaft broker is one: it finds the leader
    (DescribeQuorum), long-polls Fetch as ``replica_id``, follows leader changes, and
    keeps its fetch position from the batch frames it receives (it stores nothing).
    Errors it cannot explain end up in ``problems`` for the test to assert on."""

    def __init__(self, quorum: Quorum, replica_id: int, max_wait_ms: int = 500) -> None:
        super().__init__(name=f"observer-{replica_id}", daemon=True)
        self.quorum = quorum
        self.replica_id = replica_id
        self.max_wait_ms = max_wait_ms
        self.fetches = 0
        self.problems: list[str] = []
        self._done = threading.Event()

    def stop(self) -> None:
        self._done.set()
        self.join(timeout=30)

    def run(self) -> None:
        leader = -1
        epoch = offset = last_epoch = 0
        stub: raft_pb2_grpc.RaftStub | None = None
        while not self._done.is_set():
            if leader < 0:
                try:
                    d = self.quorum.describe(timeout_s=5)
                except Exception:
                    time.sleep(0.1)
                    continue
                if d.leader_id not in self.quorum.running():
                    time.sleep(0.1)
                    continue
                leader, epoch = d.leader_id, d.leader_epoch
                me = next(v for v in d.current_voters if v.replica_id == leader)
                offset, last_epoch = me.log_end_offset, epoch
                stub = raft_pb2_grpc.RaftStub(grpc.insecure_channel(self.quorum.endpoint(leader)))
            assert stub is not None
            try:
                response = stub.Fetch(
                    rpb.FetchRequest(
                        cluster_id="test-cluster",
                        replica_id=self.replica_id,
                        current_leader_epoch=epoch,
                        fetch_offset=offset,
                        last_fetched_epoch=last_epoch,
                        max_wait_ms=self.max_wait_ms,
                    ),
                    timeout=self.max_wait_ms / 1000 + 10,
                )
            except grpc.RpcError:
                leader = -1  # the leader is gone: look for the next one
                continue
            if response.error_code != 0:
                leader = -1
                continue
            self.fetches += 1
            if response.HasField("diverging_epoch"):
                offset = response.diverging_epoch.end_offset
                last_epoch = response.diverging_epoch.epoch
            elif response.HasField("snapshot_id"):
                offset, last_epoch = response.snapshot_id.end_offset, response.snapshot_id.epoch
            else:
                pos = 0
                while pos < len(response.records):
                    header = parse_header(response.records, pos, verify=True)
                    if isinstance(header, str):
                        self.problems.append(f"bad frame from {leader}: {header}")
                        return
                    offset, last_epoch = header.next_offset, header.epoch
                    pos += header.size
