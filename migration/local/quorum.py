"""A local quorum of controller processes on loopback: what the demo, the tests and the
benchmarks run. Each controller gets a ``controller<id>.properties`` and a metadata log
directory under ``root`` and runs as a child process (:mod:`.child`), its output in
``controller<id>.out``. The properties may hold secrets (the migration's
``password.encoder.secret``): each file is 0600, rewrites too
(:func:`migration.common.files.write_private`)."""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from pathlib import Path

from migration.common.files import write_private
from migration.common.ports import unused_port
from migration.common.properties import read_properties, render_properties
from migration.local.child import ChildProcess

STOP_WAIT_S = 20.0  # a signalled controller exits by then


@dataclass
class LocalQuorum:
    root: Path
    size: int = 3
    extra: dict[str, str] = field(default_factory=dict)  # more properties, for every node
    first_id: int = 1
    cluster_id: str | None = "local-cluster"  # None: from `storage format` (meta.properties)
    metrics: bool = False  # a metrics endpoint per controller (metrics.port)
    ports: list[int] = field(default_factory=list)
    metrics_ports: list[int] = field(default_factory=list)
    children: dict[int, ChildProcess] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.ports = [unused_port() for _ in range(self.size)]
        if self.metrics:
            self.metrics_ports = [unused_port() for _ in range(self.size)]
        for i, port in zip(self.ids, self.ports, strict=True):
            props = {
                "node.id": str(i),
                "process.roles": "controller",
                "controller.quorum.voters": self.voters,
                "listeners": f"CONTROLLER://127.0.0.1:{port}",
                "metadata.log.dir": str(self.log_dir(i)),
                **({"cluster.id": self.cluster_id} if self.cluster_id else {}),
                **self._metrics_properties(i),
                **self.extra,
            }
            write_private(self.config(i), render_properties(props))  # extra may hold secrets
            self.children[i] = ChildProcess(
                command="controller", config=self.config(i), log=self._output(i)
            )

    def _metrics_properties(self, node: int) -> dict[str, str]:
        if not self.metrics:
            return {}
        port = self.metrics_ports[node - self.first_id]
        return {"metrics.port": str(port), "metrics.host": "127.0.0.1"}

    def metrics_target(self, node: int) -> str:
        """``host:port`` of one controller's metrics endpoint (``metrics=True``)."""
        return f"127.0.0.1:{self.metrics_ports[node - self.first_id]}"

    @property
    def ids(self) -> list[int]:
        return list(range(self.first_id, self.first_id + self.size))

    @property
    def voters(self) -> str:
        """``controller.quorum.voters`` for this quorum (brokers name it too)."""
        return ",".join(f"{i}@{self.endpoint(i)}" for i in self.ids)

    def config(self, node: int) -> Path:
        return self.root / f"controller{node}.properties"

    def log_dir(self, node: int) -> Path:
        return self.root / f"log{node}"

    def endpoint(self, node: int) -> str:
        return f"127.0.0.1:{self.ports[node - self.first_id]}"

    @property
    def bootstrap(self) -> list[str]:
        return [self.endpoint(i) for i in self.ids]

    def start(self, node: int) -> None:
        """Start one controller (nothing if it is running)."""
        self.children[node].start()

    def start_all(self) -> LocalQuorum:
        for i in self.ids:
            self.start(i)
        return self

    def reconfigure(self, node: int, **changes: str | None) -> None:
        """Set (a value) or remove (None) properties of one controller's config; takes
        effect when it restarts (:meth:`restart`)."""
        props = read_properties(self.config(node))
        for key, value in changes.items():
            if value is None:
                props.pop(key, None)
            else:
                props[key] = value
        write_private(self.config(node), render_properties(props))

    def restart(self, node: int) -> None:
        """Stop one controller the graceful way (SIGTERM: it resigns) and start it again."""
        self.kill(node, signal.SIGTERM)
        self.start(node)

    def kill(self, node: int, sig: int = signal.SIGKILL) -> int:
        """Signal one controller and wait for its exit (TimeoutError past STOP_WAIT_S);
        its exit code. The child is then forgotten: :meth:`start` runs a new one."""
        child = self.children[node]
        child.signal(sig)
        code = child.wait(STOP_WAIT_S)
        if code is None:
            raise TimeoutError(f"controller {node} still runs {STOP_WAIT_S:g} s after {sig}")
        child.process = None
        return code

    def running(self) -> list[int]:
        """The controllers whose process runs."""
        return [node for node, child in self.children.items() if child.running]

    def stop_all(self, sig: int = signal.SIGKILL) -> None:
        for node, child in self.children.items():
            if child.running:
                self.kill(node, sig)

    def _output(self, node: int) -> Path:
        return self.root / f"controller{node}.out"

    def output(self, node: int) -> str:
        return self._output(node).read_text(errors="replace")


def controller_migration_properties(
    zk_connect: str, inter_broker_listener: str, secret: str | None
) -> dict[str, str]:
    """What a controller adds to take part in a ZooKeeper-to-KRaft migration."""
    props = {
        "zookeeper.connect": zk_connect,
        "zookeeper.metadata.migration.enable": "true",
        "inter.broker.listener.name": inter_broker_listener,
    }
    if secret:
        props["password.encoder.secret"] = secret
    return props


def broker_migration_properties(
    quorum: LocalQuorum, protocol_map: dict[str, str]
) -> dict[str, str]:
    """What a ZooKeeper-mode broker adds (then restarts) to be migrated by ``quorum``:
    the flag, the voters, and the controller listener in its protocol map."""
    listeners = {**protocol_map, "CONTROLLER": "PLAINTEXT"}
    return {
        "zookeeper.metadata.migration.enable": "true",
        "controller.quorum.voters": quorum.voters,
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": ",".join(f"{k}:{v}" for k, v in listeners.items()),
    }
