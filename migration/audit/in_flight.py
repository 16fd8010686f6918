"""Changes in flight while ZooKeeper was read: what ZooKeeper may rightly hold for the
entities the log changed while the read ran.

ZooKeeper is read znode by znode, over seconds; the writer keeps writing behind KRaft
meanwhile, moving ``/migration`` from offset A (before the read) to B (after). Each
entity then shows its value at some publication between A and B, whole (an entity is
one znode). The audit compares with the image at B and accepts, for the entities the
publications in between touched, their value at any of those publications (absent
included): write-behind in progress, not drift.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from migration.audit.rows import ABSENT, Exporter, config_keys
from migration.bridge.plan import Scope, acl_path
from migration.image.model import MetadataImage
from migration.image.publishing import ImageChange

Key = tuple[str, str]


def scope_keys(scope: Scope, *images: MetadataImage) -> set[Key]:
    """The (kind, key) entities a change's scope covers, partitions resolved in
    ``images`` when the scope names a whole topic."""
    keys: set[Key] = set()
    for name in scope.topics or ():
        keys.add(("topic", name))
        keys.add(("topic_config", name))
        pids: set[int] = set(scope.partitions.get(name, ()))
        if name not in scope.partitions:
            for image in images:
                topic = image.topic(name)
                if topic is not None:
                    pids.update(topic.partitions)
        keys.update(("partition", f"{name}-{pid}") for pid in pids)
    for path in scope.configs or ():
        keys.update(config_keys(path))
    keys.update(("acl", acl_path(p).removeprefix("/")) for p in scope.acls or ())
    keys.update(("delegation_token", t) for t in scope.tokens or ())
    return keys


def in_flight_digests(
    changes: list[ImageChange], exporter_for: Callable[[MetadataImage], Exporter]
) -> Iterator[tuple[str, str, int]]:
    """(kind, key, digest) of every entity the ``changes`` touched, at each image
    before and after each change (ABSENT where the entity did not exist)."""
    seen: set[tuple[str, str, int]] = set()
    for change in changes:
        if change.delta is None:
            continue  # a snapshot load publishes no change inside a replay window
        keys = scope_keys(
            Scope.of_change(change.previous, change.delta), change.previous, change.image
        )
        for image in (change.previous, change.image):
            exporter = exporter_for(image)
            for kind, key in keys:
                fields = exporter.fields(kind, key)
                row = (kind, key, ABSENT if fields is None else exporter.hasher.digest(fields))
                if row not in seen:
                    seen.add(row)
                    yield row
