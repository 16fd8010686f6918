"""A local ZooKeeper-mode cluster of broker processes: what ``zk2kraft cluster start``,
the demo and the tests run. Each broker gets a ``server.properties`` in its own
directory (client listener PLAINTEXT, inter-broker listener INTERNAL) and runs as a
child process (:mod:`.child`), its output in ``broker-<id>.log``. The properties may
hold secrets (``password.encoder.secret``, SASL passwords): each file is 0600, rewrites
too (:func:`migration.common.files.write_private`)."""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from migration.broker.config import BrokerConfigError, load_broker_config
from migration.broker.modes import Mode, rewrite
from migration.common.files import write_private
from migration.common.ports import unused_port
from migration.common.properties import render_properties
from migration.kafka.client import ClientSecurity, KafkaConnection
from migration.local.child import ChildProcess

CLIENT_LISTENER, INTERNAL_LISTENER = "PLAINTEXT", "INTERNAL"
PROTOCOLS = {CLIENT_LISTENER: "PLAINTEXT", INTERNAL_LISTENER: "PLAINTEXT"}
STOP_MARGIN_S = 5.0  # beyond a broker's own stop budget, before it is killed


@dataclass(kw_only=True)
class BrokerChild(ChildProcess):
    command: str = "broker"
    broker_id: int
    port: int
    internal_port: int
    mode: Mode | None = None  # None: as the cluster's properties say
    metrics_port: int | None = None


@dataclass
class LocalCluster:
    zk_connect: str
    broker_ids: list[int]
    directory: Path
    base_port: int | None = None
    properties: dict[str, str] = field(default_factory=dict)  # extra, for every broker
    # extra for one broker (after ``properties``), e.g. the broker.rack it registers with
    broker_properties: dict[int, dict[str, str]] = field(default_factory=dict)
    metrics: bool = False  # a metrics endpoint per broker (metrics.port)
    brokers: dict[int, BrokerChild] = field(default_factory=dict)
    # A secured cluster: the client listener's name (its protocol comes from the
    # properties' listener.security.protocol.map) and how readiness checks log in.
    client_listener: str = CLIENT_LISTENER
    client_security: ClientSecurity | None = None

    def __post_init__(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        for i, b in enumerate(self.broker_ids):
            if self.base_port is not None:
                port, internal = self.base_port + 2 * i, self.base_port + 2 * i + 1
            else:
                port, internal = unused_port(), unused_port()
            home = self.directory / f"broker-{b}"
            self.brokers[b] = BrokerChild(
                broker_id=b,
                port=port,
                internal_port=internal,
                config=home / "server.properties",
                log=self.directory / f"broker-{b}.log",
                metrics_port=unused_port() if self.metrics else None,
            )
            self._write_config(self.brokers[b], home)

    def _write_config(self, child: BrokerChild, home: Path) -> None:
        home.mkdir(parents=True, exist_ok=True)
        props = {
            "broker.id": str(child.broker_id),
            "zookeeper.connect": self.zk_connect,
            "listeners": f"{self.client_listener}://127.0.0.1:{child.port},"
            f"{INTERNAL_LISTENER}://127.0.0.1:{child.internal_port}",
            "listener.security.protocol.map": ",".join(f"{k}:{v}" for k, v in PROTOCOLS.items()),
            "inter.broker.listener.name": INTERNAL_LISTENER,
            "log.dirs": str(home / "data"),
            **(
                {"metrics.port": str(child.metrics_port), "metrics.host": "127.0.0.1"}
                if child.metrics_port is not None
                else {}
            ),
            **self.properties,
            **self.broker_properties.get(child.broker_id, {}),
        }
        if child.mode is not None:
            props = rewrite(props, child.mode, zk_connect=self.zk_connect)
        write_private(child.config, render_properties(props))  # may hold secrets

    def set_mode(self, broker_id: int, mode: Mode) -> None:
        """Rewrite one broker's server.properties for ``mode`` (KRaft, or ZooKeeper mode
        migrating or not), as ``zk2kraft broker-mode`` does; takes effect on restart."""
        child = self.brokers[broker_id]
        child.mode = mode
        self._write_config(child, child.config.parent)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{b.port}" for b in self.brokers.values())

    def start(self, broker_id: int | None = None) -> None:
        for child in self.brokers.values():
            if broker_id is not None and child.broker_id != broker_id:
                continue
            if child.running:
                continue
            try:
                child.stop_s = load_broker_config(child.config).stop_budget_s() + STOP_MARGIN_S
            except BrokerConfigError:
                child.stop_s = STOP_MARGIN_S  # refused: the broker exits as it starts
            child.start()

    def reconfigure(self, **properties: str) -> None:
        """Change properties of every broker's server.properties (takes effect when
        each broker restarts: :meth:`restart`)."""
        self.properties.update(properties)
        for child in self.brokers.values():
            self._write_config(child, child.config.parent)

    def restart(self, broker_id: int) -> None:
        """:meth:`stop_one`, then start the broker again."""
        self.stop_one(broker_id)
        self.start(broker_id)

    def stop_one(self, broker_id: int) -> int | None:
        """Stop one broker (SIGTERM: a controlled shutdown); one still running after its
        own stop budget (:meth:`BrokerConfig.stop_budget_s`) is killed. Its exit code."""
        child = self.brokers[broker_id]
        child.signal(signal.SIGTERM)
        return child.finish()

    def signal(self, broker_id: int, sig: int) -> None:
        self.brokers[broker_id].signal(sig)

    def kill(self, broker_id: int) -> None:
        self.brokers[broker_id].kill()

    def wait_exit(self, broker_id: int, timeout_s: float = 60.0) -> int | None:
        return self.brokers[broker_id].wait(timeout_s)

    def running(self) -> list[int]:
        return [b for b, c in self.brokers.items() if c.running]

    def metadata(self, broker_id: int, timeout_s: float = 10.0) -> object:
        """Metadata (v12, every topic) as broker ``broker_id`` answers it."""
        with self.connect(broker_id, timeout_s) as conn:
            return conn.metadata()

    def connect(self, broker_id: int, timeout_s: float = 10.0) -> KafkaConnection:
        """A Kafka connection to broker ``broker_id`` (logged in as the cluster's client)."""
        port = self.brokers[broker_id].port
        return KafkaConnection("127.0.0.1", port, timeout_s, security=self.client_security)

    def wait_ready(self, timeout_s: float = 60.0, expected: list[int] | None = None) -> None:
        """Until every running broker answers Metadata listing the ``expected`` brokers
        (default: the running ones) and a controller; the request asks for no topic, so
        a round costs the same at any size. Each request may take the time left. Raises
        TimeoutError naming the log to read."""
        deadline = time.monotonic() + timeout_s
        want = sorted(expected if expected is not None else self.running())
        last = ""
        while time.monotonic() < deadline:
            try:
                ok = True
                for b in self.running():
                    with self.connect(b, max(1.0, deadline - time.monotonic())) as conn:
                        m = conn.cluster_metadata()
                    seen = sorted(x.node_id for x in m.brokers)
                    if seen != want or m.controller_id < 0:
                        ok, last = False, f"broker {b} sees {seen}, controller {m.controller_id}"
                        break
                if ok:
                    return
            except OSError as exc:
                last = str(exc)
            for b, child in self.brokers.items():
                if child.process is not None and child.process.poll() not in (None, 0, -9, 143):
                    raise RuntimeError(f"broker {b} exited; see {child.log}")
            time.sleep(0.2)
        raise TimeoutError(
            f"cluster not ready within {timeout_s:g}s ({last}); logs in {self.directory}"
        )

    def stop(self) -> None:
        """SIGTERM to every broker; one still running after its stop budget is killed."""
        for b in self.running():
            self.signal(b, signal.SIGTERM)
        for child in self.brokers.values():
            child.finish()
