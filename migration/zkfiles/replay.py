"""Transactions replayed onto a snapshot's znodes, as ZooKeeper restores itself.

A snapshot is fuzzy: ZooKeeper writes it while it keeps applying transactions, so it
may already hold some of those that follow its zxid. Restoring, ZooKeeper replays every
transaction after the snapshot's zxid and ignores the NodeExists / NoNode errors that
replaying one already in it causes (``FileTxnSnapLog.processTransaction``); this does
the same, so the result is the tree ZooKeeper itself restores:

* create: refused (ignored) when the znode exists or its parent does not;
* delete: the child is unlinked from its parent first, as ``DataTree.deleteNode`` does;
* setData: data and the version the transaction carries (set, not incremented);
* closeSession: the paths the transaction names (3.6+), then every ephemeral the
  session still owns; createSession / closeSession keep the open sessions;
* at the end, :meth:`Replay.drop_dead_sessions`: ephemerals of sessions that are not
  open are deleted, as ``ZooKeeperServer.loadData`` does once the database is loaded.
"""

from __future__ import annotations

from migration.zk.jute import is_session_owner
from migration.zkfiles.datatree import Children, owner_of, znode
from migration.zkfiles.snapfile import SnapshotContents
from migration.zkfiles.txnlog import Change, TxnType

_LIST_REMOVALS = 16  # children lists up to this long are edited in place, longer -> dict


class Replay:
    """Applies :class:`~migration.zkfiles.txnlog.Change` values to ``contents`` in place."""

    def __init__(self, contents: SnapshotContents) -> None:
        self.nodes = contents.nodes
        self.children = contents.children
        self.ephemerals = contents.ephemerals
        self.sessions = set(contents.sessions)

    def apply(self, changes: list[Change]) -> None:
        for change in changes:
            kind = change.kind
            if kind == TxnType.CREATE:
                self.create(change.path, change.data, change.value)
            elif kind == TxnType.DELETE:
                self.delete(change.path)
            elif kind == TxnType.SET_DATA:
                node = self.nodes.get(change.path)
                if node is not None:
                    self.nodes[change.path] = znode(change.data, change.value, owner_of(node))
            elif kind == TxnType.CREATE_SESSION:
                self.sessions.add(change.value)
            elif kind == TxnType.CLOSE_SESSION:
                self.close_session(change.value, change.paths)

    def create(self, path: bytes, data: bytes, owner: int) -> None:
        nodes = self.nodes
        parent = path[: path.rfind(b"/")]
        if parent not in nodes or path in nodes or not path:
            return  # NoNode / NodeExists: already in a fuzzy snapshot, or never there
        nodes[path] = znode(data, 0, owner)
        kids = self.children.get(parent)
        if kids is None:
            self.children[parent] = path
        elif isinstance(kids, bytes):
            self.children[parent] = [kids, path]
        elif isinstance(kids, list):
            kids.append(path)
        else:
            kids[path] = None
        if is_session_owner(owner):
            self.ephemerals.setdefault(owner, set()).add(path)

    def delete(self, path: bytes) -> None:
        parent = path[: path.rfind(b"/")]
        if parent not in self.nodes or not path:
            return
        kids = self.children.get(parent)
        if kids is not None:
            kept = _unlink(kids, path)
            if kept:
                self.children[parent] = kept
            else:
                del self.children[parent]
        node = self.nodes.pop(path, None)
        if node is None:
            return
        self.children.pop(path, None)  # a znode re-created later starts without children
        owner = owner_of(node)
        if is_session_owner(owner):
            self.ephemerals.get(owner, set()).discard(path)

    def close_session(self, session: int, paths: tuple[bytes, ...]) -> None:
        self.sessions.discard(session)
        owned = self.ephemerals.pop(session, set())
        for path in paths:
            self.delete(path)
        for path in owned.difference(paths):
            self.delete(path)

    def drop_dead_sessions(self) -> None:
        """Delete the ephemerals of sessions that are not open (``loadData``'s cleanup)."""
        for owner in [o for o in self.ephemerals if o not in self.sessions]:
            self.close_session(owner, ())


def _unlink(kids: Children, path: bytes) -> Children | None:
    """``kids`` without ``path``: None when none is left."""
    if isinstance(kids, bytes):
        return None if kids == path else kids
    if isinstance(kids, list):
        if len(kids) <= _LIST_REMOVALS:
            if path in kids:
                kids.remove(path)
            return kids
        kids = dict.fromkeys(kids)
    kids.pop(path, None)
    return kids
