"""Real Apache Kafka servers run as child processes: KRaft controllers, combined and
broker nodes, ZooKeeper-mode brokers (the releases and tools:
:mod:`migration.local.kafka_release`).

A :class:`KafkaNode` is one server (``kafka.Kafka <server.properties>``) with a directory
of its own: ``server.properties``, the logging configuration, ``server.log`` (Kafka's
log4j output; ``kafka.logs.dir`` is that directory), ``stdout.log`` (the JVM's own output)
and ``data/`` (``log.dirs``; a KRaft node's ``__cluster_metadata-0`` is in it). Its ports
are chosen free (:func:`~migration.common.ports.unused_port`) when the node is built.
:meth:`KafkaNode.start` returns once the node's log says it started and its port
accepts connections; :meth:`KafkaNode.stop` sends SIGTERM to that process (by its own
handle, never by name) and SIGKILLs it after ``stop_s``. :class:`KafkaGroup` is the
context manager that stops every node it started, the last started first. How a node's
JVM is launched (:func:`launch`) and when it is ready (:func:`wait_started`) are one
rule each, shared with :mod:`migration.local.kafka_service` (a node run detached from
its own ``server.properties``, as a service manager runs it).

JVM settings suit a small shared machine (2 cores, several JVMs): a fixed small heap,
the serial collector, C1 only (``-XX:TieredStopAtLevel=1``: a node starts in about
2-3 s). Kafka's settings are the caller's (``extra``); the builders set only the ones a
node cannot start without.
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from migration.common.files import write_private
from migration.common.ports import unused_port
from migration.common.properties import render_properties
from migration.local.kafka_release import KafkaRelease

STOP_S = 30.0  # a SIGTERMed node exits by then (a combined node: about 2 s), else SIGKILL
# One broker: Kafka's internal topics with one replica.
_ONE_BROKER = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
}
_PROTOCOLS = "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
_STARTED = re.compile(r"\] Kafka Server started|\[KafkaServer id=\d+\] started")


def voters_text(voters: dict[int, int]) -> str:
    """``controller.quorum.voters`` for controllers on loopback: ``{node id: port}``."""
    return ",".join(f"{node}@127.0.0.1:{port}" for node, port in sorted(voters.items()))


SERVER_LOG = "server.log"  # Kafka's log4j output, in the node's directory
STDOUT_LOG = "stdout.log"  # the JVM's standard output and error, in the node's directory


def launch(
    release: KafkaRelease, config: Path, *, heap_mb: int, jvm_options: tuple[str, ...] = ()
) -> tuple[subprocess.Popen[bytes], int]:
    """Start ``kafka.Kafka <config>`` in the node's directory (``config.parent``), in a
    session of its own (a Ctrl-C at the caller's terminal does not reach it), stdin
    /dev/null, its output appended to :data:`STDOUT_LOG` and Kafka's log4j to
    :data:`SERVER_LOG` (``kafka.logs.dir`` is the directory; the logging configuration
    ``log4j.properties`` is written there). Returns the process and the size the server
    log had before it (where this start's lines begin: :func:`wait_started`)."""
    base_dir = config.parent
    log_config = release.log_config(base_dir / "log4j.properties", to_file=True)
    server_log = base_dir / SERVER_LOG
    offset = server_log.stat().st_size if server_log.exists() else 0
    cmd = release.java_command("kafka.Kafka", [str(config)], log_config=log_config,
                               logs_dir=base_dir, heap_mb=heap_mb,
                               jvm_options=jvm_options)  # fmt: skip
    with (base_dir / STDOUT_LOG).open("ab") as out:
        process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, cwd=base_dir,
                                   start_new_session=True)  # fmt: skip
    return process, offset


def wait_started(
    process: subprocess.Popen[bytes] | None, base_dir: Path, log_offset: int,
    address: tuple[str, int], *, timeout_s: float, name: str,
) -> None:  # fmt: skip
    """Block until the server log of ``base_dir`` says, past ``log_offset``, that Kafka
    started (:func:`log_says_started`) and ``address`` accepts a TCP connection.
    RuntimeError if ``process`` exits first (or is None), TimeoutError after
    ``timeout_s``: each message starts with ``name`` and carries :func:`log_tail`."""
    deadline = time.monotonic() + timeout_s
    while not (log_says_started(base_dir / SERVER_LOG, log_offset) and port_open(address)):
        if process is None or process.poll() is not None:
            code = process.returncode if process else None
            raise RuntimeError(f"{name} exited with {code}; see {base_dir}:\n{log_tail(base_dir)}")
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"{name} not ready after {timeout_s:g}s; see {base_dir}:\n{log_tail(base_dir)}"
            )
        time.sleep(0.1)


def log_says_started(log: Path, offset: int) -> bool:
    """Whether ``log`` past ``offset`` says ``Kafka Server started`` (KRaft) or
    ``[KafkaServer id=N] started`` (ZooKeeper mode)."""
    try:
        with log.open("rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
    except OSError:
        return False
    return _STARTED.search(text) is not None


def port_open(address: tuple[str, int]) -> bool:
    """Whether ``(host, port)`` accepts a TCP connection (within a second)."""
    try:
        with socket.create_connection(address, timeout=1.0):
            return True
    except OSError:
        return False


def log_tail(base_dir: Path, lines: int = 30) -> str:
    """The last ``lines`` of the server log and of the JVM's output in ``base_dir``."""
    parts = []
    for path in (base_dir / SERVER_LOG, base_dir / STDOUT_LOG):
        try:
            text = path.read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            continue
        parts.append(f"--- {path.name}\n" + "\n".join(text))
    return "\n".join(parts) or "(no log)"


@dataclass(kw_only=True)
class KafkaNode:
    """One Kafka server process and its directory ``base_dir`` (see the module doc).

    Build one with :meth:`kraft` or :meth:`zookeeper_broker`; ``properties`` is its
    ``server.properties`` (written at each :meth:`start`, so changes take effect at the
    next start). Not thread-safe.
    """

    release: KafkaRelease
    node_id: int
    base_dir: Path
    properties: dict[str, str]
    broker_port: int | None = None  # the PLAINTEXT listener (None: a controller only)
    controller_port: int | None = None  # the CONTROLLER listener (None: no controller role)
    heap_mb: int = 512
    stop_s: float = STOP_S
    jvm_options: tuple[str, ...] = ()  # more JVM options (a -javaagent:), at each start
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _log_offset: int = field(default=0, repr=False)

    @classmethod
    def kraft(
        cls,
        release: KafkaRelease,
        base_dir: Path,
        node_id: int = 1,
        *,
        roles: tuple[str, ...] = ("broker", "controller"),
        voters: dict[int, int] | None = None,
        controller_port: int | None = None,
        extra: dict[str, str] | None = None,
        heap_mb: int = 512,
    ) -> KafkaNode:
        """A KRaft node (``process.roles``: ``roles``). A node with the controller role
        gets a CONTROLLER listener (``controller_port``, else a free one) and, unless
        ``voters`` says otherwise, a quorum of itself; a broker-only node needs
        ``voters`` (``{controller id: port}``). ``extra`` is added last."""
        is_controller, is_broker = "controller" in roles, "broker" in roles
        cport = (controller_port or unused_port()) if is_controller else None
        bport = unused_port() if is_broker else None
        if voters is None:
            if cport is None:
                raise ValueError("a broker-only node needs the controllers' voters")
            voters = {node_id: cport}
        listeners = [f"PLAINTEXT://127.0.0.1:{bport}"] if bport else []
        listeners += [f"CONTROLLER://127.0.0.1:{cport}"] if cport else []
        props = {
            "process.roles": ",".join(roles),
            "node.id": str(node_id),
            "controller.quorum.voters": voters_text(voters),
            "controller.listener.names": "CONTROLLER",
            "listeners": ",".join(listeners),
            "listener.security.protocol.map": _PROTOCOLS,
            "log.dirs": str(base_dir / "data"),
        }
        if is_broker:
            props |= _ONE_BROKER | {
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{bport}",
                "inter.broker.listener.name": "PLAINTEXT",
            }
        props |= extra or {}
        return cls(
            release=release,
            node_id=node_id,
            base_dir=base_dir,
            properties=props,
            broker_port=bport,
            controller_port=cport,
            heap_mb=heap_mb,
        )

    @classmethod
    def zookeeper_broker(
        cls,
        release: KafkaRelease,
        base_dir: Path,
        broker_id: int,
        zk_connect: str,
        *,
        migration_voters: dict[int, int] | None = None,
        extra: dict[str, str] | None = None,
        heap_mb: int = 512,
    ) -> KafkaNode:
        """A ZooKeeper-mode broker (3.x) on ``zk_connect`` (chroot included).
        ``migration_voters`` (``{controller id: port}``): the broker runs with
        ``zookeeper.metadata.migration.enable=true`` towards those KRaft controllers,
        as a migration's first broker roll sets it. ``extra`` is added last."""
        if release.major >= 4:
            raise ValueError(f"Kafka {release.version} has no ZooKeeper mode")
        port = unused_port()
        props = _ONE_BROKER | {
            "broker.id": str(broker_id),
            "zookeeper.connect": zk_connect,
            "listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "listener.security.protocol.map": _PROTOCOLS,
            "log.dirs": str(base_dir / "data"),
        }
        if migration_voters is not None:
            props |= {
                "zookeeper.metadata.migration.enable": "true",
                "controller.quorum.voters": voters_text(migration_voters),
                "controller.listener.names": "CONTROLLER",
            }
        props |= extra or {}
        return cls(
            release=release,
            node_id=broker_id,
            base_dir=base_dir,
            properties=props,
            broker_port=port,
            heap_mb=heap_mb,
        )

    @property
    def config_path(self) -> Path:
        return self.base_dir / "server.properties"

    @property
    def log_path(self) -> Path:
        """Kafka's own log (log4j): what the node says it did."""
        return self.base_dir / SERVER_LOG

    @property
    def stdout_path(self) -> Path:
        """The JVM's standard output and error (crashes, JVM warnings)."""
        return self.base_dir / STDOUT_LOG

    @property
    def data_dir(self) -> Path:
        return Path(self.properties["log.dirs"].split(",")[0])

    @property
    def metadata_dir(self) -> Path:
        """A KRaft node's ``__cluster_metadata-0`` (``metadata.log.dir`` when set)."""
        root = self.properties.get("metadata.log.dir")
        return (Path(root) if root else self.data_dir) / "__cluster_metadata-0"

    @property
    def bootstrap(self) -> str:
        """``host:port`` of the broker listener (a controller: its controller listener)."""
        return f"127.0.0.1:{self._port}"

    @property
    def _port(self) -> int:
        port = self.broker_port or self.controller_port
        assert port is not None, "a node has a broker or a controller listener"
        return port

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def write_config(self) -> Path:
        """Write ``server.properties`` (and the directories it names)."""
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # 0600: the properties may hold secrets (sasl.jaas.config, password.encoder.secret)
        write_private(self.config_path, render_properties(self.properties, header="zk2kraft"))
        return self.config_path

    def format(self, cluster_id: str, *extra: str) -> str:
        """``kafka-storage format`` this KRaft node's directories for ``cluster_id``."""
        return self.release.format_storage(self.write_config(), cluster_id, *extra)

    def start(self, timeout_s: float = 60.0) -> Self:
        """Start ``kafka.Kafka`` and wait until it is ready (see :meth:`wait_ready`);
        a node that does not get ready is stopped and the error carries its log's tail."""
        if self.running:
            return self
        self.process, self._log_offset = launch(self.release, self.write_config(),
                                                heap_mb=self.heap_mb,
                                                jvm_options=self.jvm_options)  # fmt: skip
        try:
            self.wait_ready(timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def wait_ready(self, timeout_s: float = 60.0) -> None:
        """Block until this start's log says ``Kafka Server started`` (KRaft) or
        ``[KafkaServer id=N] started`` (ZooKeeper mode) and the listener accepts a
        connection; RuntimeError if the process exits first, TimeoutError after
        ``timeout_s`` (:func:`wait_started`)."""
        wait_started(self.process, self.base_dir, self._log_offset, ("127.0.0.1", self._port),
                     timeout_s=timeout_s, name=f"Kafka node {self.node_id}")  # fmt: skip

    def log_tail(self, lines: int = 30) -> str:
        """The last ``lines`` of Kafka's log and of the JVM's output."""
        return log_tail(self.base_dir, lines)

    def stop(self) -> int | None:
        """SIGTERM (Kafka's orderly shutdown), SIGKILL after ``stop_s``; the exit code
        (None: the node was not started)."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                return self.process.wait(self.stop_s)
            except subprocess.TimeoutExpired:
                pass
        return self.kill()

    def kill(self) -> int | None:
        """SIGKILL (a crash: nothing flushed); the exit code."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.kill()
        return self.process.wait()


@dataclass
class KafkaGroup:
    """The nodes started through :meth:`start`, all stopped when the group exits (or at
    :meth:`stop`): one after another, the last started first (brokers before the
    controllers they shut down through), each SIGKILLed after its ``stop_s``."""

    nodes: list[KafkaNode] = field(default_factory=list)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, node: KafkaNode, timeout_s: float = 60.0) -> KafkaNode:
        """Start ``node`` (ready on return) and own it."""
        self.nodes.append(node)
        node.start(timeout_s)
        return node

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.stop()
