"""Copy a whole Kafka tree out of production's ZooKeeper and into an empty one.

:func:`read_tree` reads every znode under the source's chroot once, strictly read-only:
from a live ensemble (a :class:`~migration.zk.client.ZkClient`: multiRead requests only,
no watch, no write; the only thing ZooKeeper itself records is the client's session) or
from ZooKeeper's own files (an :class:`~migration.zkfiles.datatree.OfflineTree`, which
never writes under its directories; known here as a :class:`FileTree`). :func:`load_tree`
writes that copy into an *empty* tree (a rehearsal's embedded ZooKeeper) under its
client's chroot.

What is copied: every persistent znode below the chroot (the chroot znode itself is
not: :func:`load_tree` creates the target's chroot), its data byte for byte, parents
before children. Not copied: live state, which the target's own processes create anew
(:func:`is_live_state`): every ephemeral znode (a session owns it), and the znodes Kafka
keeps only while a process runs, whatever their owner -- ``/controller`` (a ZooKeeper
controller's ephemeral, or a KRaft controller's persistent claim), ``/brokers/ids/<id>``
and a legacy consumer's ``/consumers/<g>/ids/<id>`` and ``owners/<t>/<p>`` (persistent
ones come from a restored backup or a tool that wrote them). Those are listed in
:attr:`TreeCopy.skipped` with their subtrees left out; the brokers' registrations are
kept as data in :attr:`TreeCopy.registrations`. ``/controller_epoch`` is persistent data
and is copied: the partition states carry controller epochs up to it, so a controller
elected on the copy must count on from it (starting lower, its LeaderAndIsr requests
would be older than the states the brokers hold). Requests waiting for a controller
(``/admin/preferred_replica_election``, ``/admin/reassign_partitions``, the
notifications) are copied as well: the target's controller handles them as production's
would. Also not copied: ZooKeeper's own
``/zookeeper`` subtree when the chroot is the root; ACLs (the copy is written with open
ACLs: it is for a local rehearsal, whose clients are not production's); stats (versions,
zxids, times start afresh in the target: Kafka and the migration read the versions they
condition on, but ``/brokers/seqid``'s version, the next generated broker id, restarts at
0). Container and TTL znodes are copied as persistent ones (Kafka creates neither).
A znode larger than the load's multi budget is created alone; one larger than the
target's ``jute.maxbuffer`` (1 MiB by default) cannot be loaded (production may have
raised its own: the load then fails, naming the target).

Null data: ZooKeeper tells a znode created with null data (jute length -1, as Kafka
creates its parents: ``/brokers/ids``, ``.../partitions/<p>``) from one with empty
data. A live source keeps the difference (:attr:`CopiedNode.null`, from
:attr:`~migration.zk.multiread.NodeData.null`);
ZooKeeper's files read offline do not (the offline tree keeps both as ``b""``), so
there every empty znode is taken as null, as Kafka writes its empty znodes.

Consistency: as :mod:`migration.zk.reader`'s: ZooKeeper has no multi-znode snapshot
reads, so a tree changing during a live read may be copied part before, part after a
change; a znode that vanishes between its listing and its read is left out.

Errors: :class:`TreeCopyError` (and :class:`TargetNotEmptyError`) name the source or
target and, when one is concerned, the znode.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from kazoo.exceptions import KazooException
from kazoo.security import OPEN_ACL_UNSAFE

from migration.common.gc_pause import gc_paused
from migration.common.text import shown
from migration.observability.progress import NullProgress, Progress
from migration.zk import paths
from migration.zk.client import NO_AUTH_REASON, READ_BATCH, READ_DEPTH, ZkClient, ZkWriteError
from migration.zk.jute import ERR_NO_AUTH, is_session_owner
from migration.zk.multiread import ReadError, ReadOp, ReadResult, TreeReader
from migration.zk.multiwrite import (
    DEFAULT_MULTI_BYTES,
    REQUEST_OVERHEAD,
    MultiWrite,
    Op,
    batches,
    create,
    open_acl,
)

ZOOKEEPER_OWN = "/zookeeper"
WRITE_DEPTH = 8
FLUSH_OPS = 10_000  # ops cut into multis at a time while loading


class TreeCopyError(RuntimeError):
    """Reading or loading a tree failed. ``where`` names the source or target (a connect
    string without credentials, or ZooKeeper's files), ``path`` the znode concerned
    (``""`` when none is) and ``problem`` what went wrong; ``str()`` gives all three."""

    def __init__(self, where: str, problem: str, path: str = "") -> None:
        super().__init__(f"{where}: {path + ': ' if path else ''}{problem}")
        self.where = where
        self.problem = problem
        self.path = path

    def __reduce__(self) -> tuple[Any, tuple[str, str, str]]:
        return (type(self), (self.where, self.problem, self.path))


class TargetNotEmptyError(TreeCopyError):
    """:func:`load_tree` refuses a target whose chroot already holds znodes."""


@dataclass(frozen=True, slots=True)
class CopiedNode:
    """One persistent znode: ``path`` inside the chroot (``/brokers/topics/x``), its
    ``data`` byte for byte; ``null`` when ZooKeeper holds null data (``data`` is then
    ``b""``; see the module doc for what a source can tell)."""

    path: str
    data: bytes
    null: bool = False


@dataclass(frozen=True)
class TreeCopy:
    """What :func:`read_tree` read. ``nodes``: the persistent znodes below ``chroot``,
    parents before children (sorted by path; ``/`` itself excluded); ``registrations``:
    each ``/brokers/ids/<id>``'s data by broker id (ephemeral or not); ``skipped``: every
    live-state znode not copied (sorted; :func:`is_live_state`); ``znodes``/``bytes``:
    how many ``nodes`` and their data bytes; ``read_s``: how long the read took;
    ``source``: where it came from (no credentials)."""

    chroot: str
    nodes: tuple[CopiedNode, ...]
    registrations: dict[int, bytes]
    skipped: tuple[str, ...]
    znodes: int
    bytes: int
    read_s: float
    source: str = ""


# --- reading ---------------------------------------------------------------------------


@runtime_checkable
class FileTree(Protocol):
    """A tree read from ZooKeeper's own files
    (:class:`~migration.zkfiles.datatree.OfflineTree`): which files it came from, and
    how many znodes it holds (a read's total). Named by its members, not imported:
    :mod:`migration.zkfiles` sits above this package and imports it."""

    @property
    def source(self) -> str: ...

    @property
    def znode_count(self) -> int: ...


class _Done:
    """An already answered batch (a reader without a pipeline)."""

    def __init__(self, results: list[ReadResult]) -> None:
        self.results = results

    def get(self) -> list[ReadResult]:
        return self.results


def _sender(source: ZkClient | TreeReader) -> Callable[[list[tuple[ReadOp, str]]], Any]:
    """One batch sent: pipelined on a live client (an async result), answered at once by
    an offline tree. The chroot itself, ``/`` here, is asked as ``""`` (the readers add
    their chroot; at ZooKeeper's root, ``/``)."""
    root = "" if source.chroot else "/"

    def wire(ops: list[tuple[ReadOp, str]]) -> list[tuple[ReadOp, str]]:
        return [(op, root if path == "/" else path) for op, path in ops]

    if isinstance(source, ZkClient):
        return lambda ops: source.multi_read_async(wire(ops))
    return lambda ops: _Done(source.multi_read(wire(ops), batch=len(ops) or 1))


def source_name(source: ZkClient | TreeReader) -> str:
    """How errors and reports name ``source`` (its connect string, never credentials)."""
    if isinstance(source, ZkClient):
        return f"ZooKeeper {source.connect_string}"
    if isinstance(source, FileTree):
        chroot = f", chroot {source.chroot}" if source.chroot else ""
        return f"ZooKeeper files ({source.source}{chroot})"
    return f"ZooKeeper tree {shown(source)}"


def is_live_state(path: str, ephemeral_owner: int) -> bool:
    """Whether the znode at ``path`` (inside the chroot) is a running process's state,
    never copied (see the module doc): ephemeral, or ``/controller``,
    ``/brokers/ids/<id>``, ``/consumers/<g>/ids/<id>`` or ``/consumers/<g>/owners/<t>/<p>``
    whatever its owner."""
    if is_session_owner(ephemeral_owner) or path == paths.CONTROLLER:
        return True
    parts = path.split("/")[1:]
    if len(parts) == 3 and path.startswith(paths.BROKER_IDS + "/"):
        return parts[2].isdigit()
    if parts[0] != paths.CONSUMERS.strip("/"):
        return False
    return (len(parts) == 4 and parts[2] == "ids") or (len(parts) == 5 and parts[2] == "owners")


def _child(parent: str, name: str) -> str:
    return f"/{name}" if parent == "/" else f"{parent}/{name}"


def read_tree(source: ZkClient | TreeReader, progress: Progress | None = None) -> TreeCopy:
    """Read every znode below ``source``'s chroot once, read-only (see the module doc
    for what is copied, skipped and how null data fares). Reads are multiRead batches of
    :data:`~migration.zk.client.READ_BATCH`, :data:`~migration.zk.client.READ_DEPTH` in
    flight on a live source; a znode's children are listed only when its stat says it
    has some. Progress: one stage, ``read znodes``, advanced per znode read (its total
    the files' znode count offline, unknown live). Raises :class:`TreeCopyError` when
    the chroot does not exist or ZooKeeper refuses a read (NoAuth)."""
    progress = progress or NullProgress()
    where = source_name(source)
    send, depth = _sender(source), READ_DEPTH if isinstance(source, ZkClient) else 1
    empty_is_null = not isinstance(source, ZkClient)
    chroot = source.chroot
    total = source.znode_count if isinstance(source, FileTree) else 0
    started = time.perf_counter()
    progress.stage("read znodes", total)
    try:
        with gc_paused():
            nodes, registrations, skipped = _crawl(
                send, depth, chroot, where, progress, empty_is_null=empty_is_null
            )
    except KazooException as exc:
        raise TreeCopyError(where, f"the read failed ({type(exc).__name__}: {exc})") from exc
    progress.done()
    nodes.sort(key=lambda n: n.path)  # a parent's path sorts before its children's
    return TreeCopy(
        chroot=chroot,
        nodes=tuple(nodes),
        registrations=dict(sorted(registrations.items())),
        skipped=tuple(sorted(skipped)),
        znodes=len(nodes),
        bytes=sum(len(n.data) for n in nodes),
        read_s=time.perf_counter() - started,
        source=where,
    )


def _crawl(
    send: Callable[[list[tuple[ReadOp, str]]], Any],
    depth: int,
    chroot: str,
    where: str,
    progress: Progress,
    *,
    empty_is_null: bool,
) -> tuple[list[CopiedNode], dict[int, bytes], list[str]]:
    """Breadth first, streaming: a batch's answers schedule the next reads while
    ``depth`` batches are in flight. ``empty_is_null``: the source cannot tell null from
    empty data (ZooKeeper's files read offline), every empty znode is taken as null."""
    nodes: list[CopiedNode] = []
    registrations: dict[int, bytes] = {}
    skipped: list[str] = []
    pending: deque[tuple[ReadOp, str]] = deque([(ReadOp.GET_DATA, "/")])
    inflight: deque[tuple[Any, list[tuple[ReadOp, str]]]] = deque()
    own = () if chroot else (ZOOKEEPER_OWN,)  # ZooKeeper's own subtree, at its root only
    while pending or inflight:
        while pending and len(inflight) < depth:
            count = min(READ_BATCH, len(pending))
            chunk = [pending.popleft() for _ in range(count)]
            inflight.append((send(chunk), chunk))
        answer, chunk = inflight.popleft()
        results: list[ReadResult] = answer.get()
        for (_, path), result in zip(chunk, results, strict=True):
            if isinstance(result, ReadError):
                if result.no_node and path != "/":
                    continue  # gone between its listing and its read
                reason = NO_AUTH_REASON if result.code == ERR_NO_AUTH else f"code {result.code}"
                problem = (
                    f"the chroot {chroot or '/'} does not exist"
                    if result.no_node
                    else f"ZooKeeper refused the read ({reason})"
                )
                raise TreeCopyError(where, problem, "" if result.no_node else path)
            if isinstance(result, tuple):
                kids = (_child(path, name) for name in result)
                pending.extend((ReadOp.GET_DATA, kid) for kid in kids if kid not in own)
                continue
            if path != "/" and is_live_state(path, result.ephemeral_owner):
                skipped.append(path)
                name = path.rpartition("/")[2]
                if path == f"{paths.BROKER_IDS}/{name}" and name.isdigit():
                    registrations[int(name)] = result.data
                continue
            if path != "/":
                null = result.null or (empty_is_null and not result.data)
                nodes.append(CopiedNode(path, result.data, null))
            if result.num_children:
                pending.append((ReadOp.GET_CHILDREN, path))
        progress.advance(sum(1 for op, _ in chunk if op == ReadOp.GET_DATA))
    return nodes, registrations, skipped


# --- loading ---------------------------------------------------------------------------


def _ops(tree: TreeCopy) -> Iterator[Op]:
    for node in tree.nodes:
        yield create(node.path, None if node.null else node.data)


def load_tree(
    client: ZkClient,
    tree: TreeCopy,
    progress: Progress | None = None,
    *,
    max_bytes: int = DEFAULT_MULTI_BYTES,
) -> int:
    """Write ``tree``'s znodes into ``client``'s chroot, which must be empty (created if
    missing; with no chroot, ZooKeeper's own ``/zookeeper`` may be there), as persistent
    znodes with open ACLs, null data kept null: pipelined write multis of at most
    ``max_bytes`` (a znode too large for one is created alone), parents before
    children. Returns the number of znodes written. Raises :class:`TargetNotEmptyError`
    for a non-empty target and :class:`TreeCopyError` when a write fails (each multi is
    atomic, the load is not: the target then holds part of the tree)."""
    progress = progress or NullProgress()
    where = f"ZooKeeper {client.connect_string}"
    try:
        client.ensure_chroot()
        present = sorted(set(client.kazoo.get_children("/")) - {ZOOKEEPER_OWN.strip("/")})
    except KazooException as exc:
        raise TreeCopyError(where, f"cannot prepare the target ({type(exc).__name__})") from exc
    if present:
        shown = ", ".join("/" + name for name in present[:5])
        more = f" and {len(present) - 5} more" if len(present) > 5 else ""
        raise TargetNotEmptyError(
            where, f"the target is not empty (it holds {shown}{more}); load into an empty chroot"
        )
    progress.stage("load znodes", tree.znodes)
    try:
        _write(client, _ops(tree), max_bytes, progress)
    except ZkWriteError as exc:
        raise TreeCopyError(where, f"the write failed ({exc})", exc.op.path) from exc
    except KazooException as exc:
        raise TreeCopyError(where, f"the write failed ({type(exc).__name__}: {exc})") from exc
    progress.done()
    return tree.znodes


def _write(client: ZkClient, ops: Iterator[Op], max_bytes: int, progress: Progress) -> None:
    """Pipelined multis, ``WRITE_DEPTH`` in flight, in order on one session (so a
    parent's multi is applied before its children's); an op over the budget waits for
    those in flight and goes alone through kazoo."""
    chroot = client.chroot
    inflight: deque[tuple[Any, list[Op]]] = deque()

    def collect() -> None:
        answer, chunk = inflight.popleft()
        for op, result in zip(chunk, answer.get(), strict=False):
            code = getattr(result, "code", 0)
            if code not in (0, -2):
                raise ZkWriteError(op, code)
        progress.advance(len(chunk))

    def flush(chunk: Sequence[Op]) -> None:
        for part in batches(chunk, max_bytes, chroot, acl=open_acl):
            answer = client.kazoo.handler.async_result()
            client.kazoo._call(MultiWrite(part, chroot, open_acl), answer)
            inflight.append((answer, part))
            if len(inflight) >= WRITE_DEPTH:
                collect()

    run: list[Op] = []
    for op in ops:
        if REQUEST_OVERHEAD + op.size(chroot, open_acl) <= max_bytes:
            run.append(op)
            if len(run) >= FLUSH_OPS:
                flush(run)
                run = []
            continue
        flush(run)
        run = []
        while inflight:
            collect()
        client.kazoo.create(op.path, op.data or b"", acl=OPEN_ACL_UNSAFE)
        progress.advance(1)
    flush(run)
    while inflight:
        collect()
