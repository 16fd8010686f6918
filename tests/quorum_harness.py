"""Real controller processes on loopback for tests and benchmarks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from migration.controller.client import ControllerClient, describe_quorum
from migration.ports import unused_port
from migration.proto import raft_pb2 as rpb


@dataclass
class Quorum:
    root: Path
    size: int = 3
    extra: dict[str, str] = field(default_factory=dict)
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
                "cluster.id": "test-cluster",
                **self.extra,
            }
            self.config(i).write_text("".join(f"{k}={v}\n" for k, v in props.items()))

    @property
    def ids(self) -> list[int]:
        return list(range(1, self.size + 1))

    def config(self, node: int) -> Path:
        return self.root / f"controller{node}.properties"

    def endpoint(self, node: int) -> str:
        return f"127.0.0.1:{self.ports[node - 1]}"

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
