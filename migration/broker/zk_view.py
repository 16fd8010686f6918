"""What a ZooKeeper-mode broker learns from ZooKeeper itself: dynamic topic and broker
configs, client quotas, SCRAM credentials, ACLs and delegation tokens, followed through
the change notifications Kafka uses (``/config/changes``, ``/kafka-acl-changes``,
``/kafka-acl-extended-changes``, ``/delegation_token/token_changes``) and the token list
(``/delegation_token/tokens``).

A notification only says *that* something changed: the view re-reads the entity parts
of the tree with the project's reader (configs, ACLs, tokens; no topics or partitions)
and rebuilds its image parts with the copy's own translation, so what a broker serves
is exactly what the migration would copy. Refreshes are coalesced: a burst of
notifications costs one re-read.

Each new notification is read once and parsed as Kafka's listeners parse it (the
model's ``parse_*_change``); one that cannot be parsed is logged at WARNING, naming its
znode and what is wrong, and skipped (it asks for no re-read). Notifications present
at start-up are not read: the first full read covers them. A malformed entity znode
is logged at ERROR once (again only if its problem changes) and left out of the view.

Threading: watches fire on kazoo's threads and only note what is new; one worker
thread reads the notifications and re-reads. :meth:`current` may be called from any
thread (an immutable value swap).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from migration.bridge.translate import translate_entities
from migration.image.delta import MetadataDelta
from migration.image.model import MetadataImage
from migration.proto.metadata_pb2 import MetadataRecord
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.errors import ZnodeFormatError
from migration.zk.model import acls, configs, tokens
from migration.zk.multiread import NodeData, ReadOp
from migration.zk.reader import ENTITY_PARTS, read_snapshot
from migration.zk.reported import ReportedZnodes

log = logging.getLogger(__name__)

NOTIFICATIONS: dict[str, Callable[[str, bytes | None], object]] = {
    paths.CONFIG_CHANGES: configs.parse_config_change,
    paths.ACL_CHANGES: partial(acls.parse_acl_change, extended=False),
    paths.ACL_EXTENDED_CHANGES: partial(acls.parse_acl_change, extended=True),
    paths.TOKEN_CHANGES: tokens.parse_token_change,
}
"""Each notification parent and the parser of its children's data."""
WATCHED = (*NOTIFICATIONS, paths.DELEGATION_TOKENS)


@dataclass(frozen=True)
class EntityView:
    """One read of the entity parts: the image parts and each znode's stat version."""

    image: MetadataImage = MetadataImage.EMPTY
    versions: dict[str, int] = field(default_factory=dict)
    generation: int = 0


class ZkEntityWatcher:
    def __init__(self, client: ZkClient, secret: str | None) -> None:
        self._client = client
        self._secret = secret
        self._view = EntityView()
        self._wanted = threading.Event()
        self._stopped = threading.Event()
        self._lock = threading.Lock()  # one re-read at a time
        self._noted = threading.Lock()  # guards the two below (kazoo's threads note)
        self._new: set[str] = set()  # notifications not read yet
        self._listed = False  # the token list changed
        self._bad = ReportedZnodes(log, logging.ERROR, "left out of this broker's view")
        self._worker = threading.Thread(target=self._run, name="zk-entity-watcher", daemon=True)

    def current(self) -> EntityView:
        return self._view

    def start(self) -> None:
        """Watches first, then one read: a change after a watch is set re-reads later,
        and the read covers everything before (the watches' first calls, which only
        report the current children, are not changes)."""
        for path in WATCHED:
            self._client.ensure_path(path)
        for root in NOTIFICATIONS:
            self._client.kazoo.ChildrenWatch(root, self._notifications(root), send_event=False)
        tokens_listed = _skip_first(self._on_token_list)
        self._client.kazoo.ChildrenWatch(paths.DELEGATION_TOKENS, tokens_listed, send_event=False)
        self.refresh()
        self._worker.start()

    def stop(self) -> None:
        self._stopped.set()
        self._wanted.set()

    def refresh(self) -> EntityView:
        """Re-read now (the caller's thread): an admin write calls this so its own answer
        and the next describe on this broker see what it wrote."""
        with self._lock:
            snap = read_snapshot(self._client, parts=ENTITY_PARTS)
            for problem in snap.malformed:
                self._bad.report(problem, problem.problem)
            self._bad.keep_only(problem.path for problem in snap.malformed)
            delta = MetadataDelta(MetadataImage.EMPTY)
            for offset, raw in enumerate(translate_entities(snap, self._secret)):
                record = MetadataRecord()
                record.ParseFromString(raw)
                delta.replay(record, offset, 0)
            self._view = EntityView(
                delta.apply(), dict(snap.znode_versions), self._view.generation + 1
            )
            return self._view

    def _on_token_list(self, children: list[str]) -> bool:
        with self._noted:
            self._listed = True
        self._wanted.set()
        return not self._stopped.is_set()  # False removes the watch

    def _notifications(self, root: str) -> Callable[[list[str]], bool]:
        """The ChildrenWatch of notification parent ``root``: notes the children that
        are new since its last call (none on its first: the start-up read covers them;
        deletions, i.e. purges, are no change)."""
        known: set[str] | None = None

        def on_children(children: list[str]) -> bool:
            nonlocal known
            now = set(children)
            if known is not None and now - known:
                with self._noted:
                    self._new.update(f"{root}/{child}" for child in now - known)
                self._wanted.set()
            known = now
            return not self._stopped.is_set()  # False removes the watch

        return on_children

    def _run(self) -> None:
        while True:
            self._wanted.wait()
            if self._stopped.is_set():
                return
            self._wanted.clear()
            try:
                if self._changed():
                    self.refresh()
            except Exception:  # ZooKeeper away: the next notification retries
                log.exception("could not re-read configs/ACLs/tokens from ZooKeeper")

    def _changed(self) -> bool:
        """Whether a re-read is due: the token list changed, or a new notification
        parses (or is gone before it was read: what it announced may be real). Garbage
        is logged at WARNING and skipped; each notification is read once."""
        with self._noted:
            new, self._new = sorted(self._new), set()
            due, self._listed = self._listed, False
        if not new:
            return due
        try:
            results = self._client.multi_read([(ReadOp.GET_DATA, path) for path in new])
        except Exception:
            return True  # unread: re-read everything (or fail the same way, logged)
        for path, result in zip(new, results, strict=True):
            if not isinstance(result, NodeData):
                due = True
                continue
            try:
                NOTIFICATIONS[path.rpartition("/")[0]](path, result.data)
            except ZnodeFormatError as exc:
                log.warning("ignoring the change notification %s: %s", path, exc.problem)
                continue
            due = True
        return due


def _skip_first(react: Callable[[list[str]], bool]) -> Callable[[list[str]], bool]:
    """``react``, except for the call a kazoo ChildrenWatch makes when it is set."""
    calls = 0

    def on_children(children: list[str]) -> bool:
        nonlocal calls
        calls += 1
        return True if calls == 1 else react(children)

    return on_children
