"""A persistent recursive watch on a whole Kafka tree (ZooKeeper 3.6+), on a session of
its own: what changed below the chroot since the watch was set.

The migration reads and translates the tree *before* it claims ``/controller`` (while
ZooKeeper's controller still serves), so the write pause does not grow with the tree;
this watch, set before that read, names every znode created, deleted or changed since,
and after the claim only those are read again (:mod:`migration.bridge.catch_up`).

Contract:

- :meth:`TreeWatch.take` returns, and forgets, every path (inside the chroot) ZooKeeper
  reported since the watch was set or last taken from, up to a barrier: ``sync`` and a
  read on the watch's own session after the caller's last write elsewhere. ZooKeeper
  delivers a session's notifications in zxid order, before the answer to any later
  request on it, so every change committed before the barrier is named (a change after
  it may be too, or be left for the next take: reading a path again is harmless). A
  read through :attr:`TreeWatch.client` after a take sees at least what the barrier saw.
- The watch is lost with its connection: ZooKeeper keeps watches per connection, and
  kazoo re-registers only the watches it knows of, so after a disconnection (even one
  the session survives) changes may go unreported. Then :meth:`changed` raises
  :class:`WatchLostError` and the caller starts over; nothing is ever guessed.
- Events are recorded on kazoo's reader thread as they are read (never through its
  callback queue), so the barrier needs no second queue to drain.

kazoo (2.11) has no ``addWatch``: :class:`AddWatch` is the request (opcode 106, mode
PERSISTENT_RECURSIVE), and the events reach :class:`_Recorder`, which kazoo's reader
consults for every data event through ``client._data_watchers.pop(path)``.
"""

from __future__ import annotations

import struct
import threading
from collections import defaultdict
from collections.abc import Callable
from typing import Any, ClassVar

from kazoo.exceptions import UnimplementedError
from kazoo.protocol.states import KazooState

from migration.zk.client import ZkClient

ADD_WATCH = 106
PERSISTENT_RECURSIVE = 1
_INT = struct.Struct(">i")


class WatchLostError(RuntimeError):
    """The watch's connection dropped (or its session ended) while it was set: changes
    may have gone unreported."""


class WatchUnsupportedError(RuntimeError):
    """The ensemble predates persistent watches (ZooKeeper 3.6)."""


class AddWatch:
    """kazoo request object for ZooKeeper's ``addWatch`` (3.6+); ``path`` carries the
    chroot (kazoo does not rewrite custom requests)."""

    type: ClassVar[int] = ADD_WATCH

    __slots__ = ("mode", "path")

    def __init__(self, path: str, mode: int = PERSISTENT_RECURSIVE) -> None:
        self.path = path
        self.mode = mode

    def serialize(self) -> bytes:
        raw = self.path.encode("utf-8")
        return _INT.pack(len(raw)) + raw + _INT.pack(self.mode)

    @classmethod
    def deserialize(cls, buf: bytes | bytearray | memoryview, offset: int) -> bool:
        return True  # the answer is its header's error code alone


class _Recorder(defaultdict[str, set[Any]]):
    """kazoo's data-watcher table, which also records every path below ``root`` that an
    event names (kazoo's reader pops the table for each CREATED, CHANGED and DELETED
    event: a one-shot watcher is still popped and fired as before)."""

    def __init__(self, root: str, on_path: Callable[[str], None]) -> None:
        super().__init__(set)
        self.root = root
        self.on_path = on_path

    def pop(self, path: str, *default: Any) -> Any:
        if path == self.root or path.startswith(self.root.rstrip("/") + "/"):
            self.on_path(path)
        return super().pop(path, *default)


class TreeWatch:
    """A persistent recursive watch on ``client``'s chroot (the module doc). Owns
    ``client``, a session for it alone: :meth:`close` closes both."""

    def __init__(self, client: ZkClient) -> None:
        self.client = client
        self._lock = threading.Lock()
        self._paths: set[str] = set()
        self._events = 0
        self._lost: str | None = None
        kazoo = client.kazoo
        root = client.chroot or "/"
        strip = len(client.chroot)
        self._recorder = _Recorder(root, lambda path: self._record(path[strip:] or "/"))
        for path, watchers in kazoo._data_watchers.items():
            self._recorder[path] = watchers
        kazoo._data_watchers = self._recorder
        kazoo.add_listener(self._on_state)
        answer = kazoo.handler.async_result()
        kazoo._call(AddWatch(root), answer)  # kazoo's request API carries custom requests
        try:
            answer.get(timeout=client.session_timeout_s)
        except UnimplementedError:
            client.close()
            raise WatchUnsupportedError(
                f"ZooKeeper {client.connect_string} does not offer persistent recursive "
                "watches (addWatch, ZooKeeper 3.6 and later): the copy reads the tree under "
                "one; upgrade the ensemble first (Kafka 3.9 ships ZooKeeper 3.8's client)"
            ) from None

    def _record(self, path: str) -> None:
        with self._lock:
            self._paths.add(path)
            self._events += 1

    def _on_state(self, state: KazooState) -> None:
        if state != KazooState.CONNECTED and self._lost is None:
            self._lost = f"the watch's ZooKeeper connection was {state.lower()}"

    def restart(self) -> None:
        """Forget the changes recorded so far: the caller reads the tree through
        :attr:`client` next, on the watch's own session, so every change its read may
        miss is recorded after this. Raises :class:`WatchLostError`."""
        self._check()
        with self._lock:
            self._paths.clear()
            self._events = 0

    def _check(self) -> None:
        if self.client.kazoo._data_watchers is not self._recorder and self._lost is None:
            self._lost = "kazoo reset its watchers (a disconnection)"
        if self._lost is not None:
            raise WatchLostError(self._lost)

    def take(self) -> tuple[frozenset[str], int]:
        """The paths changed since the watch was set or last taken from, and how many
        events named them, up to a barrier taken now (the module doc); they are not
        returned again. Raises :class:`WatchLostError`."""
        kazoo = self.client.kazoo
        try:
            kazoo.sync("/")
            kazoo.exists("/")
        except Exception as exc:  # any failure of the barrier loses the watch
            raise WatchLostError(f"the watch's barrier failed ({type(exc).__name__})") from exc
        self._check()
        with self._lock:
            taken = frozenset(self._paths), self._events
            self._paths, self._events = set(), 0
            return taken

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> TreeWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
