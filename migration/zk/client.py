"""A small typed facade over kazoo: connect, pipelined multi-read, batched multi-write.

Threading: a :class:`ZkClient` may be used from several threads (kazoo serialises
requests on its connection thread); results of a pipelined call come back in request
order. Every synchronous call has an ``*_async`` twin returning kazoo's async result.
"""

from __future__ import annotations

import contextlib
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, Self, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, NodeExistsError, NoNodeError, SessionExpiredError
from kazoo.handlers.threading import KazooTimeoutError

from migration.common.text import PATH_LIMIT, shown
from migration.zk.jute import ERR_BAD_VERSION, ERR_NO_AUTH, ERR_NO_NODE, ERR_NODE_EXISTS
from migration.zk.multiread import MultiRead, ReadOp, ReadResult
from migration.zk.multiwrite import (
    DEFAULT_MULTI_BYTES,
    ERR_ROLLED_BACK,
    MultiWrite,
    Op,
    WriteError,
    WriteResult,
    batches,
)
from migration.zk.security import OPEN, TlsHandler, ZkSecurity

T_co = TypeVar("T_co", covariant=True)

DEFAULT_SESSION_TIMEOUT_S = 18.0  # Kafka's zookeeper.session.timeout.ms default
READ_BATCH = 1000
READ_DEPTH = 4


class Pending(Protocol[T_co]):
    """kazoo's async result (kazoo is untyped), as the ``*_async`` calls give it back:
    ``get`` waits for the answer, or raises what the call met (see
    :data:`CONNECTION_ERRORS`)."""

    def get(self, block: bool = True, timeout: float | None = None) -> T_co: ...


class ZkConnectError(RuntimeError):
    """The ZooKeeper ensemble could not be reached; names the connect string and, when
    it can tell, why (a refused TLS handshake, a SASL login)."""


CONNECTION_ERRORS: tuple[type[Exception], ...] = (
    ConnectionLoss,
    SessionExpiredError,
    KazooTimeoutError,
)
"""What a call on a connected client raises when ZooKeeper is out of reach (the
connection lost, the session expired, a wait timed out): no answer about the data."""


def _unreached_why(security: ZkSecurity, handler: object) -> str:
    """What a connect error adds: the last TLS handshake's failure (and, when ZooKeeper
    refused a client that presented no certificate, which setting gives it one)."""
    failure = handler.last_tls_error if isinstance(handler, TlsHandler) else None
    if failure is not None:
        why = f": the TLS handshake failed ({failure})"
        if security.tls is not None and not security.tls.certificate_chain and "alert" in failure:
            why += (
                "; ZooKeeper refused a client without a certificate (its ssl.clientAuth wants "
                "one): give zk2kraft one with zookeeper.ssl.keystore.location"
            )
        return why
    return " (is the SASL login accepted?)" if security.authenticated else ""


@dataclass(frozen=True, slots=True)
class ConnectString:
    """``host[:port][,host[:port]...][/chroot]``, as in Kafka's ``zookeeper.connect``; a
    host without a port uses ZooKeeper's 2181 (as the ZooKeeper client does)."""

    hosts: str
    chroot: str

    @classmethod
    def parse(cls, text: str) -> ConnectString:
        hosts, slash, chroot = text.partition("/")
        entries = [h.strip() for h in hosts.split(",")]
        if not hosts or not all(entries):
            raise ValueError(
                f"zookeeper.connect {shown(text)} is not host[:port][,host[:port]...][/chroot]"
            )
        with_ports = []
        for entry in entries:
            host, colon, port = entry.rpartition(":")
            if entry.endswith("]") or not colon:  # no port (an IPv6 host in brackets too)
                host, port = entry, str(DEFAULT_ZK_PORT)
            if not port.isdigit() or not 0 < int(port) < 65536 or not host:
                raise ValueError(
                    f"zookeeper.connect: {shown(entry)} is not host[:port] (port 1-65535)"
                )
            with_ports.append(f"{host}:{port}")
        chroot = ("/" + chroot.strip("/")) if slash and chroot.strip("/") else ""
        return cls(",".join(with_ports), chroot)

    def __str__(self) -> str:
        return self.hosts + self.chroot


ProgressFn = Callable[[int], None]
DEFAULT_ZK_PORT = 2181


class ZkClient:
    """A connected kazoo client with the calls zk2kraft needs.

    ``security``: how it authenticates (SASL DIGEST-MD5, digest, TLS) and the ACLs every
    znode it creates carries (:meth:`acl`, :meth:`acl_list`): its multis and kazoo's own
    creates alike.
    """

    def __init__(
        self,
        connect: str | ConnectString,
        *,
        timeout_s: float = 15.0,
        session_timeout_s: float = DEFAULT_SESSION_TIMEOUT_S,
        security: ZkSecurity = OPEN,
    ) -> None:
        self.connect_string = (
            connect if isinstance(connect, ConnectString) else (ConnectString.parse(connect))
        )
        self.security = security
        self.session_timeout_s = session_timeout_s
        self.kazoo = self._kazoo(str(self.connect_string), session_timeout_s)
        try:
            with warnings.catch_warnings():  # a missing chroot is reported by the callers
                warnings.filterwarnings("ignore", message="No chroot path exists")
                self.kazoo.start(timeout=timeout_s)
        except KazooTimeoutError:
            self.kazoo.stop()
            self.kazoo.close()
            raise ZkConnectError(
                f"could not connect to ZooKeeper at {self.connect_string} within {timeout_s:g}s"
                + _unreached_why(security, self.kazoo.handler)
            ) from None

    def _kazoo(
        self, hosts: str, session_timeout_s: float = DEFAULT_SESSION_TIMEOUT_S
    ) -> KazooClient:
        return KazooClient(
            hosts=hosts,
            timeout=session_timeout_s,
            connection_retry={"max_tries": -1, "delay": 0.1, "backoff": 1.5, "max_delay": 2.0},
            command_retry={"max_tries": 3, "delay": 0.1, "backoff": 2.0},
            **self.security.kazoo_options(),
        )

    def acl(self, path: str) -> bytes:
        """The jute ACL a create of ``path`` carries (inside the chroot)."""
        return self.security.acl_bytes(path)

    def acl_list(self, path: str) -> list[Any]:
        """The same ACL as kazoo's ACL objects, for kazoo's own create calls."""
        return self.security.acl_for(path)

    def ensure_path(self, path: str) -> None:
        """Create ``path`` and any missing parent, each with its own ACL."""
        parts = path.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            prefix = "/" + "/".join(parts[:i])
            if self.kazoo.exists(prefix) is None:
                with contextlib.suppress(NodeExistsError):
                    self.kazoo.create(prefix, b"", acl=self.acl_list(prefix))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.kazoo.stop()
        self.kazoo.close()

    @property
    def chroot(self) -> str:
        return self.connect_string.chroot

    def ensure_chroot(self) -> None:
        """Create the chroot path itself (kazoo cannot from inside the chroot)."""
        if not self.chroot:
            return
        outside = self._kazoo(self.connect_string.hosts)
        outside.start(timeout=15)
        try:
            outside.ensure_path(self.chroot, acl=self.security.acl_for("/"))
        finally:
            outside.stop()
            outside.close()

    # --- reads -----------------------------------------------------------------------

    def multi_read_async(self, ops: list[tuple[ReadOp, str]]) -> Pending[list[ReadResult]]:
        """Send one multiRead; the async result yields one ReadResult per op."""
        chroot = self.chroot
        request = MultiRead([(op, chroot + path) for op, path in ops] if chroot else ops)
        result: Pending[list[ReadResult]] = self.kazoo.handler.async_result()
        self.kazoo._call(request, result)  # kazoo's request API carries custom requests
        return result

    def iter_multi_read(
        self,
        ops: Sequence[tuple[ReadOp, str]],
        *,
        batch: int = READ_BATCH,
        depth: int = READ_DEPTH,
    ) -> Iterator[list[ReadResult]]:
        """Read ``ops`` in multiRead batches of ``batch`` ops, ``depth`` batches in flight,
        yielding each batch's results in order as soon as it arrives (so the caller
        decodes one batch while ZooKeeper answers the next).

        A missing znode is a ReadError in its slot; a lost connection raises kazoo's
        exception from the batch it hit.
        """
        inflight: deque[Pending[list[ReadResult]]] = deque()
        for start in range(0, len(ops), batch):
            inflight.append(self.multi_read_async(list(ops[start : start + batch])))
            if len(inflight) >= depth:
                yield inflight.popleft().get()
        while inflight:
            yield inflight.popleft().get()

    def multi_read(self, ops: Sequence[tuple[ReadOp, str]], **kw: int) -> list[ReadResult]:
        """:meth:`iter_multi_read`, gathered into one list."""
        return [r for chunk in self.iter_multi_read(ops, **kw) for r in chunk]

    def get(self, path: str) -> tuple[bytes, int]:
        """Data and stat version of one znode; null data (as Kafka creates its parents)
        reads as empty data, as in :meth:`multi_read`."""
        data, stat = self.kazoo.get(path)
        return data or b"", stat.version

    # --- writes ----------------------------------------------------------------------

    def repair_acls(self, paths: Iterable[str], depth: int = 256) -> int:
        """Set the ACL policy's ACL on each of ``paths`` (existing znodes), ``depth``
        requests in flight; a znode gone meanwhile is skipped. Nothing to do (0) unless
        ``zookeeper.set.acl`` is on. Returns how many were set."""
        if not self.security.set_acl:
            return 0
        done = 0
        inflight: deque[Pending[object]] = deque()

        def collect() -> int:
            try:
                inflight.popleft().get()
            except NoNodeError:
                return 0
            return 1

        for path in paths:
            inflight.append(self.kazoo.set_acls_async(path, self.acl_list(path)))
            if len(inflight) >= depth:
                done += collect()
        while inflight:
            done += collect()
        return done

    def multi_write_async(self, ops: list[Op]) -> Pending[list[WriteResult]]:
        """Send one write multi; the async result yields one WriteResult per op."""
        result: Pending[list[WriteResult]] = self.kazoo.handler.async_result()
        self.kazoo._call(MultiWrite(ops, self.chroot, self.acl), result)
        return result

    def multi_write(self, ops: list[Op]) -> list[WriteResult]:
        """One atomic multi; raises :class:`ZkWriteError` naming the failing op."""
        results = self.multi_write_async(ops).get()
        _raise_first_error(ops, results)
        return results

    def write_all(
        self,
        ops: Iterable[Op],
        *,
        max_bytes: int = DEFAULT_MULTI_BYTES,
        depth: int = 8,
        progress: ProgressFn | None = None,
    ) -> int:
        """Apply ``ops`` in order, as byte-bounded multis, ``depth`` multis in flight.

        Each multi is atomic, the whole stream is not: on the first failure the multis
        already sent after it fail too (their parents are missing) or apply, and
        :class:`ZkWriteError` names the first failing op. Returns the number of multis.
        """
        inflight: deque[tuple[Pending[list[WriteResult]], list[Op]]] = deque()
        sent = 0

        def collect() -> None:
            pending, chunk = inflight.popleft()
            _raise_first_error(chunk, pending.get())
            if progress is not None:
                progress(len(chunk))

        for chunk in batches(ops, max_bytes, self.chroot, acl=self.acl):
            inflight.append((self.multi_write_async(chunk), chunk))
            sent += 1
            if len(inflight) >= depth:
                collect()
        while inflight:
            collect()
        return sent


class ZkWriteError(RuntimeError):
    """A write multi failed: names the operation, its znode and ZooKeeper's error code."""

    def __init__(self, op: Op, code: int) -> None:
        reason = {
            ERR_NODE_EXISTS: "node already exists",
            ERR_NO_NODE: "no such node (or parent)",
            ERR_BAD_VERSION: "version mismatch (fenced)",
            ERR_NO_AUTH: NO_AUTH_REASON,
        }.get(code, f"error code {code}")
        super().__init__(
            f"{op.kind.name.lower()} {shown(op.path, PATH_LIMIT, bare=True)}: {reason}"
        )
        self.op = op
        self.code = code


NO_AUTH_REASON = (
    "NoAuth: ZooKeeper's ACL refuses this client (authenticate as the principal that "
    "created it: java.security.auth.login.config's Client section)"
)


def _raise_first_error(ops: list[Op], results: list[WriteResult]) -> None:
    for op, result in zip(ops, results, strict=False):
        if isinstance(result, WriteError) and result.code not in ERR_ROLLED_BACK:
            raise ZkWriteError(op, result.code)
