"""Committed metadata changes for the ZooKeeper writer's tests, and the comparison of
what ZooKeeper holds with an image.

:class:`Timeline` replays records the way the controller's loader does and hands out
the :class:`ImageChange` values a publisher receives. :func:`zk_content` is the part of
an image ZooKeeper carries (no brokers, features or ACL ids; producer ids as the block
after them), and :func:`read_back` reads ZooKeeper with the project's reader and
translates it to records, as the migration's copy does: a writer is right when
``zk_content(read_back(zk)) == zk_content(image)``.
"""

from __future__ import annotations

import itertools
from dataclasses import astuple, replace
from typing import Any

from migration.bridge.mirror import PRODUCER_ID_BLOCK_SIZE
from migration.bridge.plan import Scope
from migration.bridge.sync import full_sync
from migration.bridge.translate import TranslateReport, translate
from migration.bridge.writer import ZkWriter
from migration.image.delta import MetadataDelta
from migration.image.model import MetadataImage
from migration.image.publishing import ImageChange, LoadManifest
from migration.proto.metadata_pb2 import MetadataRecord
from migration.records import codes
from migration.zk.client import ZkClient
from migration.zk.fence import ZkFence, claim
from migration.zk.multiwrite import Op
from migration.zk.reader import read_snapshot
from migration.zk.tree_read import ZkSnapshot

SECRET = "the-brokers-password-encoder-secret"
PASSWORD_CONFIG = "listener.name.ssl.ssl.key.password"


def rec(which: str, **fields: Any) -> MetadataRecord:
    """One record: ``rec("topic_record", name="t", topic_id=b"...")``."""
    return MetadataRecord(**{which: fields})


_ids = itertools.count(1)


def new_id() -> bytes:
    return next(_ids).to_bytes(16, "big")


class Timeline:
    """The committed log as a publisher sees it: each :meth:`commit` is one batch."""

    def __init__(self, image: MetadataImage = MetadataImage.EMPTY, epoch: int = 1) -> None:
        self.image = image
        self.offset = image.offset
        self.epoch = epoch

    def commit(self, *records: MetadataRecord) -> ImageChange:
        delta = MetadataDelta(self.image)
        first = self.offset + 1
        for r in records:
            self.offset += 1
            delta.replay(r, self.offset, self.epoch)
        image = replace(delta.apply(), offset=self.offset, epoch=self.epoch)
        change = ImageChange(self.image, image, delta, LoadManifest(first, self.offset, self.epoch))
        self.image = image
        return change

    # --- the records the tests use most ----------------------------------------------

    def create_topic(self, name: str, assignment: list[list[int]]) -> ImageChange:
        return self.commit(*topic_records(name, assignment))

    def create_topics(self, count: int, assignment: list[list[int]]) -> ImageChange:
        """``count`` topics ``t0000``... in one change (many multis' worth)."""
        return self.commit(
            *(r for i in range(count) for r in topic_records(f"t{i:04}", assignment))
        )

    def topic_id(self, name: str) -> bytes:
        found = self.image.topic_ids.get(name)
        assert found is not None, name
        return found


def topic_records(name: str, assignment: list[list[int]]) -> list[MetadataRecord]:
    tid = new_id()
    records = [rec("topic_record", name=name, topic_id=tid)]
    for pid, replicas in enumerate(assignment):
        records.append(
            rec(
                "partition_record",
                topic_id=tid,
                partition_id=pid,
                replicas=replicas,
                isr=replicas,
                leader=replicas[0],
            )
        )
    return records


def config(rtype: int, name: str, key: str, value: str | None) -> MetadataRecord:
    fields: dict[str, Any] = {"resource_type": rtype, "resource_name": name, "name": key}
    if value is not None:
        fields["value"] = value
    return rec("config_record", **fields)


def topic_config(topic: str, key: str, value: str | None) -> MetadataRecord:
    return config(codes.TOPIC_RESOURCE, topic, key, value)


def broker_config(broker: str, key: str, value: str | None) -> MetadataRecord:
    return config(codes.BROKER_RESOURCE, broker, key, value)


def quota(entity: dict[str, str | None], key: str, value: float | None) -> MetadataRecord:
    parts = [
        {"entity_type": t, **({"entity_name": n} if n is not None else {})}
        for t, n in entity.items()
    ]
    return rec(
        "client_quota_record",
        entity=parts,
        key=key,
        value=value or 0.0,
        remove=value is None,
    )


def scram(user: str, mechanism: int = 1, iterations: int = 4096) -> MetadataRecord:
    return rec(
        "user_scram_credential_record",
        name=user,
        mechanism=mechanism,
        salt=b"salt-" + user.encode(),
        stored_key=b"stored-" + user.encode(),
        server_key=b"server-" + user.encode(),
        iterations=iterations,
    )


def acl(
    acl_id: bytes,
    name: str,
    principal: str = "User:alice",
    *,
    resource_type: int = 2,
    pattern_type: int = codes.PATTERN_LITERAL,
    operation: int = 3,
    permission: int = 3,
) -> MetadataRecord:
    return rec(
        "access_control_entry_record",
        id=acl_id,
        resource_type=resource_type,
        resource_name=name,
        pattern_type=pattern_type,
        principal=principal,
        host="*",
        operation=operation,
        permission_type=permission,
    )


def token(token_id: str, owner: str = "User:alice") -> MetadataRecord:
    return rec(
        "delegation_token_record",
        token_id=token_id,
        owner=owner,
        requester=owner,
        renewers=["User:bob"],
        issue_timestamp=1_700_000_000_000,
        max_timestamp=1_700_604_800_000,
        expiration_timestamp=1_700_086_400_000,
    )


def synced_writer(zk: ZkClient, kraft_epoch: int = 5, **options: Any) -> tuple[ZkWriter, ZkFence]:
    """A writer that claimed ``zk`` for KRaft controller 3000 and synced the empty image
    into it (the persistent parents, ``/migration``): where every delta starts."""
    writer = ZkWriter(zk, secret=SECRET, **options)
    fence = full_sync(writer, claim(zk, 3000, kraft_epoch), MetadataImage.EMPTY).fence
    assert fence is not None
    return writer, fence


def planned_ops(writer: ZkWriter, fence: ZkFence, change: ImageChange) -> list[Op]:
    """The operations ``writer`` plans for ``change``."""
    assert change.delta is not None
    scope = Scope.of_change(change.previous, change.delta)
    return writer.plan(fence, change.previous, change.image, scope).ops


# --- comparing ZooKeeper with an image ------------------------------------------------


def image_of(snap: ZkSnapshot, secret: str | None = SECRET) -> MetadataImage:
    """The image the migration's copy makes of ``snap``."""
    delta = MetadataDelta(MetadataImage.EMPTY)
    for offset, raw in enumerate(translate(snap, TranslateReport(), secret)):
        r = MetadataRecord()
        r.ParseFromString(raw)
        delta.replay(r, offset, 1)
    return delta.apply()


def read_back(client: ZkClient, secret: str | None = SECRET) -> MetadataImage:
    snap = read_snapshot(client)
    assert snap.malformed == (), snap.malformed
    return image_of(snap, secret)


def zk_content(image: MetadataImage, *, read_from_zk: bool = False) -> dict[str, Any]:
    """What ZooKeeper carries of ``image``. An image read back from ZooKeeper has the
    producer-id block after the one written, hence ``read_from_zk``."""
    topics = {
        t.name: (
            t.topic_id,
            {
                pid: (
                    p.replicas,
                    p.isr,
                    p.adding_replicas,
                    p.removing_replicas,
                    p.leader,
                    p.leader_epoch,
                    p.leader_recovery_state,
                )
                for pid, p in t.partitions.items()
            },
        )
        for t in image.topics.values()
    }
    next_id = image.producer_ids.next_producer_id if image.producer_ids else None
    if next_id is not None and read_from_zk:
        next_id -= PRODUCER_ID_BLOCK_SIZE
    return {
        "topics": topics,
        "configs": {
            k: dict(v)
            for k, v in image.configs.items()
            if k[0] in (codes.TOPIC_RESOURCE, codes.BROKER_RESOURCE) and v
        },
        "quotas": {k: dict(v) for k, v in image.quotas.items()},
        "scram": dict(image.scram),
        "acls": sorted(astuple(a) for a in set(image.acls.values())),  # ids are not kept
        "tokens": dict(image.delegation_tokens),
        "next_producer_id": next_id,
    }


def assert_zk_holds(client: ZkClient, image: MetadataImage, secret: str | None = SECRET) -> None:
    got = zk_content(read_back(client, secret), read_from_zk=True)
    want = zk_content(image)
    for kind in want:
        assert got[kind] == want[kind], kind
