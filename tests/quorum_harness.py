"""Real controller processes on loopback for tests and benchmarks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from migration.controller.client import ControllerClient, describe_quorum
from migration.log.batch import parse_header
from migration.ports import unused_port
from migration.proto import raft_pb2 as rpb
from migration.proto import raft_pb2_grpc


@dataclass
class Quorum:
    root: Path
    size: int = 3
    extra: dict[str, str] = field(default_factory=dict)
    first_id: int = 1
    cluster_id: str | None = "test-cluster"  # None: from `storage format` (meta.properties)
    ports: list[int] = field(default_factory=list)
    procs: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.ports = [unused_port() for _ in range(self.size)]
        voters = ",".join(f"{i}@127.0.0.1:{p}" for i, p in zip(self.ids, self.ports, strict=True))
        for i, port in zip(self.ids, self.ports, strict=True):
            props = {
                "node.id": str(i),
                "process.roles": "controller",
                "controller.quorum.voters": voters,
                "listeners": f"CONTROLLER://127.0.0.1:{port}",
                "metadata.log.dir": str(self.root / f"log{i}"),
                **({"cluster.id": self.cluster_id} if self.cluster_id else {}),
                **self.extra,
            }
            self.config(i).write_text("".join(f"{k}={v}\n" for k, v in props.items()))

    @property
    def ids(self) -> list[int]:
        return list(range(self.first_id, self.first_id + self.size))

    @property
    def voters(self) -> str:
        """controller.quorum.voters as brokers name it."""
        return ",".join(f"{i}@{self.endpoint(i)}" for i in self.ids)

    def config(self, node: int) -> Path:
        return self.root / f"controller{node}.properties"

    def endpoint(self, node: int) -> str:
        return f"127.0.0.1:{self.ports[node - self.first_id]}"

    @property
    def bootstrap(self) -> list[str]:
        return [self.endpoint(i) for i in self.ids]

    def start(self, node: int) -> None:
        log = open(self.root / f"controller{node}.out", "ab")  # noqa: SIM115
        self.procs[node] = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "migration.cli.main",
                "controller",
                "--config",
                str(self.config(node)),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )

    def start_all(self) -> Quorum:
        for i in self.ids:
            self.start(i)
        return self

    def kill(self, node: int, sig: int = signal.SIGKILL) -> int:
        proc = self.procs.pop(node)
        proc.send_signal(sig)
        return proc.wait(timeout=20)

    def stop_all(self) -> None:
        for node in list(self.procs):
            self.kill(node)

    def describe(
        self, via: list[str] | None = None, timeout_s: float = 20.0
    ) -> rpb.DescribeQuorumResponse:
        return describe_quorum(via or [self.endpoint(i) for i in self.procs], timeout_s=timeout_s)

    def wait_leader(self, not_in: tuple[int, ...] = (), timeout_s: float = 20.0) -> int:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                d = self.describe(timeout_s=2)
            except Exception:
                time.sleep(0.05)
                continue
            if d.leader_id >= 0 and d.leader_id not in not_in and d.leader_id in self.procs:
                return d.leader_id
            time.sleep(0.05)
        raise TimeoutError("no leader elected")

    def client(self, timeout_s: float = 30.0) -> ControllerClient:
        return ControllerClient([self.endpoint(i) for i in self.ids], timeout_s=timeout_s)

    def output(self, node: int) -> str:
        return (self.root / f"controller{node}.out").read_text(errors="replace")


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
                if d.leader_id not in self.quorum.procs:
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
