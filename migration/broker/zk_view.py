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

Threading: watches fire on kazoo's threads and only set a flag; one worker thread
re-reads. :meth:`current` may be called from any thread (an immutable value swap).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from migration.driver.translate import translate_entities
from migration.image.delta import MetadataDelta
from migration.image.model import MetadataImage
from migration.proto.metadata_pb2 import MetadataRecord
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.reader import ENTITY_PARTS, read_snapshot

log = logging.getLogger(__name__)

WATCHED = (
    paths.CONFIG_CHANGES,
    paths.ACL_CHANGES,
    paths.ACL_EXTENDED_CHANGES,
    paths.TOKEN_CHANGES,
    paths.DELEGATION_TOKENS,
)


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
        self._worker = threading.Thread(target=self._run, name="zk-entity-watcher", daemon=True)

    def current(self) -> EntityView:
        return self._view

    def start(self) -> None:
        """Watches first, then one read: a change after a watch is set re-reads later,
        and the read covers everything before (the watches' first calls, which only
        report the current children, are not changes)."""
        for path in WATCHED:
            self._client.ensure_path(path)
            self._client.kazoo.ChildrenWatch(path, _skip_first(self._on_change), send_event=False)
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
                log.error("ignoring malformed znode: %s", problem)
            delta = MetadataDelta(MetadataImage.EMPTY)
            for offset, raw in enumerate(translate_entities(snap, self._secret)):
                record = MetadataRecord()
                record.ParseFromString(raw)
                delta.replay(record, offset, 0)
            self._view = EntityView(
                delta.apply(), dict(snap.znode_versions), self._view.generation + 1
            )
            return self._view

    def _on_change(self, children: list[str]) -> bool:
        self._wanted.set()
        return not self._stopped.is_set()  # False removes the watch

    def _run(self) -> None:
        while True:
            self._wanted.wait()
            if self._stopped.is_set():
                return
            self._wanted.clear()
            try:
                self.refresh()
            except Exception:  # ZooKeeper away: the next notification retries
                log.exception("could not re-read configs/ACLs/tokens from ZooKeeper")


def _skip_first(react: Callable[[list[str]], bool]) -> Callable[[list[str]], bool]:
    """``react``, except for the call a kazoo ChildrenWatch makes when it is set."""
    calls = 0

    def on_children(children: list[str]) -> bool:
        nonlocal calls
        calls += 1
        return True if calls == 1 else react(children)

    return on_children
