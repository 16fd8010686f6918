"""A real ZooKeeper server (standalone, or an ensemble of 3) started as child processes.

Used by the test fixtures, the demo and ``zk2kraft zk start``. The server is Apache
ZooKeeper itself: Debian's ``zookeeper`` package (``/usr/share/java/zookeeper.jar``), or
the ZooKeeper jars the pyspark wheel carries, or a classpath in ``ZK2KRAFT_ZK_CLASSPATH``.

Each server gets free loopback ports, a data directory under ``base_dir``, the admin
server off, four-letter words on, and its output captured in ``<base_dir>/zk<N>.log``.
``start()`` returns once every server answers ``ruok`` and reports a serving mode.

``sasl_users`` (name -> password): the servers require every client to log in with SASL
DIGEST-MD5 as one of those users (a server JAAS file, ``enforce.auth.schemes=sasl``), as a
secured Kafka ensemble does; :func:`client_jaas` writes the matching client file.
``tls`` (a PEM key store, a PEM trust store): each server also listens for TLS clients on a
``secureClientPort`` (Netty), :attr:`secure_connect_string`; ``tls_client_auth`` is
ZooKeeper's ``ssl.clientAuth`` there (``none``, ``want``, or ``need``: a client without a
certificate the trust store signs is refused).

Durability: ``force_sync=False`` (the default here) tells ZooKeeper not to fsync its
transaction log, which is right for tests and demos and wrong for production.

``extra_config`` (zoo.cfg keys, replacing the defaults of the same name: ``snapCount``,
``preAllocSize``, ``dataLogDir`` -- the same for every server, so one server only) and
``jvm_properties`` (``-D`` system properties, e.g. ``zookeeper.snapshot.compression.method``)
shape the servers' files for the tests that read ZooKeeper's data directory offline.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from kazoo.client import KazooClient, KazooState

from migration.common.files import write_private
from migration.common.ports import unused_port
from migration.zk.client import ZkClient
from migration.zk.security import DIGEST_MODULE

DEBIAN_JAR = Path("/usr/share/java/zookeeper.jar")
DEBIAN_LOGGER = Path("/usr/share/java/slf4j-simple.jar")
DEBIAN_NETTY_CODEC = Path("/usr/share/java/netty-codec.jar")


class ZooKeeperUnavailableError(RuntimeError):
    """No Java or no ZooKeeper jars on this machine (``make deps`` installs them)."""


def zookeeper_classpath() -> str:
    """Where the ZooKeeper server classes come from, in order of preference."""
    if env := os.environ.get("ZK2KRAFT_ZK_CLASSPATH"):
        return env
    if DEBIAN_JAR.exists():
        # The jar's manifest misses Netty's codec, which the TLS (Netty) server needs.
        extra = [p for p in (DEBIAN_LOGGER, DEBIAN_NETTY_CODEC) if p.exists()]
        parts = [str(DEBIAN_JAR), *map(str, extra)]
        return ":".join(parts)
    with contextlib.suppress(ImportError):
        import pyspark  # noqa: PLC0415 - optional, only for its bundled jars

        jars = Path(pyspark.__file__).parent / "jars"
        if any(jars.glob("zookeeper-3.*.jar")):
            return f"{jars}/*"
    raise ZooKeeperUnavailableError(
        "no ZooKeeper jars found: install Debian's 'zookeeper' package (make deps), "
        "install pyspark, or set ZK2KRAFT_ZK_CLASSPATH"
    )


def java_binary() -> str:
    java_home = os.environ.get("JAVA_HOME")
    candidate = Path(java_home, "bin", "java") if java_home else None
    if candidate and candidate.exists():
        return str(candidate)
    found = shutil.which("java")
    if not found:
        raise ZooKeeperUnavailableError("no 'java' on PATH (make deps installs a JRE)")
    return found


def four_letter_word(port: int, word: str, timeout_s: float = 2.0) -> str:
    """Send a four-letter command (``ruok``, ``srvr``, ``mntr``) and return the reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as s:
        s.sendall(word.encode())
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


@dataclass
class ServerProcess:
    """One ZooKeeper server of the ensemble; ``myid`` is 1-based."""

    myid: int
    client_port: int
    peer_port: int
    election_port: int
    data_dir: Path
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    secure_port: int | None = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def mode(self) -> str | None:
        """``standalone``, ``leader`` or ``follower``, or None while not serving."""
        try:
            reply = four_letter_word(self.client_port, "srvr")
        except OSError:
            return None
        for line in reply.splitlines():
            if line.startswith("Mode:"):
                return line.split(":", 1)[1].strip()
        return None


@dataclass
class EmbeddedZooKeeper:
    """Start ``nodes`` (1 or 3) real ZooKeeper servers on loopback; stop them cleanly.

    Not thread-safe; use as a context manager or call ``start``/``stop``.
    """

    nodes: int = 1
    base_dir: Path | None = None
    force_sync: bool = False
    heap_mb: int = 512
    sasl_users: dict[str, str] | None = field(default=None, repr=False)
    tls: tuple[Path, Path] | None = None
    tls_client_auth: str = "none"
    extra_config: dict[str, str] = field(default_factory=dict)
    jvm_properties: dict[str, str] = field(default_factory=dict)
    servers: list[ServerProcess] = field(default_factory=list)
    _owned_dir: tempfile.TemporaryDirectory[str] | None = None

    def __post_init__(self) -> None:
        if self.nodes not in (1, 3, 5):
            raise ValueError(f"an ensemble has 1, 3 or 5 servers, not {self.nodes}")
        if self.tls_client_auth not in ("none", "want", "need"):
            raise ValueError(f"ssl.clientAuth is none, want or need, not {self.tls_client_auth!r}")

    @property
    def connect_string(self) -> str:
        return ",".join(f"127.0.0.1:{s.client_port}" for s in self.servers)

    @property
    def secure_connect_string(self) -> str:
        """The TLS ports (``tls``)."""
        return ",".join(f"127.0.0.1:{s.secure_port}" for s in self.servers)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, timeout_s: float = 60.0) -> Self:
        java, classpath = java_binary(), zookeeper_classpath()
        if self.base_dir is None:
            self._owned_dir = tempfile.TemporaryDirectory(prefix="zk2kraft-zk-")
            self.base_dir = Path(self._owned_dir.name)
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.base_dir = self.base_dir.resolve()  # the servers run in their data dirs
        self.servers = [
            ServerProcess(
                myid=i,
                client_port=unused_port(),
                peer_port=unused_port(),
                election_port=unused_port(),
                data_dir=self.base_dir / f"zk{i}",
                log_path=self.base_dir / f"zk{i}.log",
                secure_port=unused_port() if self.tls else None,
            )
            for i in range(1, self.nodes + 1)
        ]
        try:
            for server in self.servers:
                self._launch(server, java, classpath)
            self.wait_serving(timeout_s)
        except BaseException:  # a server that never served is not left running
            self.stop()
            raise
        return self

    def _config(self, server: ServerProcess) -> str:
        lines = [
            "tickTime=500",
            "initLimit=20",
            "syncLimit=10",
            "minSessionTimeout=1000",
            "maxSessionTimeout=60000",
            f"dataDir={server.data_dir}",
            f"clientPort={server.client_port}",
            "clientPortAddress=127.0.0.1",
            "maxClientCnxns=0",
            "admin.enableServer=false",
            "4lw.commands.whitelist=*",
            f"forceSync={'yes' if self.force_sync else 'no'}",
            "autopurge.snapRetainCount=3",
            "autopurge.purgeInterval=1",
        ]
        if self.tls:
            keystore, truststore = self.tls
            lines += [
                f"secureClientPort={server.secure_port}",
                "secureClientPortAddress=127.0.0.1",
                "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
                f"ssl.keyStore.location={keystore}",
                "ssl.keyStore.type=PEM",
                f"ssl.trustStore.location={truststore}",
                "ssl.trustStore.type=PEM",
                f"ssl.clientAuth={self.tls_client_auth}",
            ]
        if self.sasl_users:
            lines += [
                "authProvider.sasl=org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
                "enforce.auth.enabled=true",
                "enforce.auth.schemes=sasl",
            ]
        if self.nodes > 1:
            lines += [
                f"server.{s.myid}=127.0.0.1:{s.peer_port}:{s.election_port}" for s in self.servers
            ]
        lines = [line for line in lines if line.split("=", 1)[0] not in self.extra_config]
        lines += [f"{key}={value}" for key, value in self.extra_config.items()]
        return "\n".join(lines) + "\n"

    def _launch(self, server: ServerProcess, java: str, classpath: str) -> None:
        server.data_dir.mkdir(parents=True, exist_ok=True)
        (server.data_dir / "myid").write_text(f"{server.myid}\n")
        cfg = server.data_dir / "zoo.cfg"
        cfg.write_text(self._config(server))
        cmd = [
            java,
            f"-Xmx{self.heap_mb}m",
            "-Dzookeeper.admin.enableServer=false",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            *self._jaas_options(server),
            *(f"-D{key}={value}" for key, value in self.jvm_properties.items()),
            "-cp",
            classpath,
            "org.apache.zookeeper.server.quorum.QuorumPeerMain",
            str(cfg),
        ]
        log = server.log_path.open("ab")
        server.process = subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=server.data_dir,
            start_new_session=True,
        )
        log.close()

    def _jaas_options(self, server: ServerProcess) -> list[str]:
        if not self.sasl_users:
            return []
        users = "".join(f'\n  user_{u}="{p}"' for u, p in self.sasl_users.items())
        jaas = write_private(
            server.data_dir / "server-jaas.conf",
            f"Server {{\n  {DIGEST_MODULE} required{users};\n}};\n",
        )
        return [f"-Djava.security.auth.login.config={jaas}"]

    def wait_serving(self, timeout_s: float = 60.0) -> None:
        """Block until every running server answers and is standalone/leader/follower."""
        deadline = time.monotonic() + timeout_s
        while True:
            pending = [s for s in self.servers if s.process is not None and s.mode() is None]
            if not pending:
                return
            for s in pending:
                if not s.running and s.process is not None:
                    raise RuntimeError(
                        f"ZooKeeper server {s.myid} exited with {s.process.returncode}; "
                        f"see {s.log_path}:\n{self.log_tail(s)}"
                    )
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"ZooKeeper server(s) {[s.myid for s in pending]} not serving after "
                    f"{timeout_s:g}s; see {self.base_dir}"
                )
            time.sleep(0.1)

    @staticmethod
    def log_tail(server: ServerProcess, lines: int = 20) -> str:
        try:
            return "\n".join(server.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def kill(self, myid: int) -> None:
        """SIGKILL one server (a crash: nothing is flushed)."""
        server = self.servers[myid - 1]
        if server.process is not None and server.running:
            server.process.send_signal(signal.SIGKILL)
            server.process.wait()
        server.process = None

    def restart(self, myid: int, timeout_s: float = 60.0) -> None:
        server = self.servers[myid - 1]
        self.kill(myid)
        self._launch(server, java_binary(), zookeeper_classpath())
        self.wait_serving(timeout_s)

    def stop(self) -> None:
        """SIGTERM every server, SIGKILL what has not exited after 10 s; remove owned dirs."""
        for s in self.servers:
            if s.process is not None and s.running:
                s.process.terminate()
        for s in self.servers:
            if s.process is None:
                continue
            try:
                s.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                s.process.kill()
                s.process.wait()
        if self._owned_dir is not None:
            self._owned_dir.cleanup()
            self._owned_dir = None
            self.base_dir = None


def client_jaas(path: Path, username: str, password: str) -> Path:
    """Write a client JAAS file (section ``Client``, DIGEST-MD5) readable by its owner
    only: what ``java.security.auth.login.config`` names for the ZooKeeper clients."""
    return write_private(
        path,
        f'Client {{\n  {DIGEST_MODULE} required\n  username="{username}"\n'
        f'  password="{password}";\n}};\n',
    )


def expire_session(client: ZkClient, timeout_s: float = 10.0) -> None:
    """Expire ``client``'s session the way kazoo's harness does: open a second
    connection on the same session id and close it, then wait until ``client`` sees the
    loss (its ephemeral znodes are gone by then)."""
    lost = threading.Event()

    def listener(state: str) -> None:
        if state == KazooState.LOST:
            lost.set()

    client.kazoo.add_listener(listener)
    session_id, password = client.kazoo.client_id
    twin = KazooClient(
        hosts=client.connect_string.hosts,
        client_id=(session_id, password),
        **client.security.kazoo_options(),
    )
    twin.start(timeout=timeout_s)
    twin.stop()
    twin.close()
    if not lost.wait(timeout_s):
        raise TimeoutError("the client did not notice its session expiring")
    client.kazoo.remove_listener(listener)


def drop_connection(client: ZkClient) -> None:
    """Cut ``client``'s TCP connection; kazoo reconnects and the session survives."""
    sock = client.kazoo._connection._socket
    if sock is not None:
        sock.shutdown(socket.SHUT_RDWR)
