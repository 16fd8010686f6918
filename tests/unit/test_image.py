"""The image and its transaction-aware loader: Kafka's replay rules, and hypothesis
properties over generated record streams (log replay = in-memory apply, snapshot + tail
= full replay, an abort restores the image exactly, an open transaction is invisible)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from migration.image.delta import RecordApplyError
from migration.image.loader import MetadataLoader, TransactionError
from migration.image.model import MetadataImage
from migration.image.persistent import PersistentMap
from migration.image.publishing import ImageChange
from migration.image.snapshot_records import image_records
from migration.log.metadata_log import FlushPolicy, MetadataLog
from migration.log.snapshots import SnapshotId, read_snapshot
from migration.proto.metadata_pb2 import MetadataRecord

# --- record builders ---------------------------------------------------------------------


def tid(n: int) -> bytes:
    return n.to_bytes(16, "big")


def topic_rec(name: str, n: int) -> MetadataRecord:
    r = MetadataRecord()
    r.topic_record.name, r.topic_record.topic_id = name, tid(n)
    return r


def partition_rec(n: int, pid: int, replicas: list[int], leader: int = -2) -> MetadataRecord:
    r = MetadataRecord()
    p = r.partition_record
    p.topic_id, p.partition_id = tid(n), pid
    p.replicas.extend(replicas)
    p.isr.extend(replicas)
    p.leader = (replicas[0] if replicas else -1) if leader == -2 else leader
    return r


def change_rec(n: int, pid: int, **fields: object) -> MetadataRecord:
    r = MetadataRecord()
    c = r.partition_change_record
    c.topic_id, c.partition_id = tid(n), pid
    for key, value in fields.items():
        if isinstance(value, list):
            getattr(c, key).ids.extend(value)
        else:
            setattr(c, key, value)
    return r


def remove_topic_rec(n: int) -> MetadataRecord:
    r = MetadataRecord()
    r.remove_topic_record.topic_id = tid(n)
    return r


def config_rec(rtype: int, rname: str, name: str, value: str | None) -> MetadataRecord:
    r = MetadataRecord()
    c = r.config_record
    c.resource_type, c.resource_name, c.name = rtype, rname, name
    if value is not None:
        c.value = value
    return r


def quota_rec(user: str | None, key: str, value: float, remove: bool = False) -> MetadataRecord:
    r = MetadataRecord()
    e = r.client_quota_record.entity.add(entity_type="user")
    if user is not None:
        e.entity_name = user
    r.client_quota_record.key, r.client_quota_record.value = key, value
    r.client_quota_record.remove = remove
    return r


def acl_rec(n: int, principal: str) -> MetadataRecord:
    r = MetadataRecord()
    a = r.access_control_entry_record
    a.id, a.resource_type, a.resource_name, a.pattern_type = tid(n), 2, "t", 3
    a.principal, a.host, a.operation, a.permission_type = principal, "*", 3, 3
    return r


def remove_acl_rec(n: int) -> MetadataRecord:
    r = MetadataRecord()
    r.remove_access_control_entry_record.id = tid(n)
    return r


def scram_rec(user: str, mechanism: int) -> MetadataRecord:
    r = MetadataRecord()
    u = r.user_scram_credential_record
    u.name, u.mechanism, u.salt, u.stored_key, u.server_key, u.iterations = (
        user,
        mechanism,
        b"s",
        b"k",
        b"v",
        4096,
    )
    return r


def feature_rec(name: str, level: int) -> MetadataRecord:
    r = MetadataRecord()
    r.feature_level_record.name, r.feature_level_record.feature_level = name, level
    return r


def producer_ids_rec(next_id: int) -> MetadataRecord:
    r = MetadataRecord()
    r.producer_ids_record.broker_id, r.producer_ids_record.next_producer_id = 1, next_id
    return r


def broker_rec(broker_id: int, epoch: int) -> MetadataRecord:
    r = MetadataRecord()
    b = r.register_broker_record
    b.broker_id, b.broker_epoch, b.incarnation_id = broker_id, epoch, tid(broker_id)
    b.end_points.add(name="PLAINTEXT", host="h", port=9092, security_protocol=0)
    return r


def fence_rec(broker_id: int, epoch: int) -> MetadataRecord:
    r = MetadataRecord()
    r.fence_broker_record.id, r.fence_broker_record.epoch = broker_id, epoch
    return r


def begin() -> MetadataRecord:
    r = MetadataRecord()
    r.begin_transaction_record.name = "t"
    return r


def end() -> MetadataRecord:
    r = MetadataRecord()
    r.end_transaction_record.SetInParent()
    return r


def abort() -> MetadataRecord:
    r = MetadataRecord()
    r.abort_transaction_record.reason = "leader changed"
    return r


def replay(records: list[MetadataRecord], loader: MetadataLoader | None = None) -> MetadataLoader:
    loader = loader or MetadataLoader()
    start = loader.last_offset + 1
    loader.replay_all((start + i, 1, r) for i, r in enumerate(records))
    return loader


# --- Kafka's replay rules ----------------------------------------------------------------


def test_topics_partitions_and_partition_changes() -> None:
    loader = replay([topic_rec("orders", 1), partition_rec(1, 0, [1, 2, 3])])
    p = loader.image.topic("orders").partitions[0]  # type: ignore[union-attr]
    assert (p.leader, p.leader_epoch, p.partition_epoch, p.isr) == (1, 0, 0, (1, 2, 3))

    replay([change_rec(1, 0, isr=[1, 2])], loader)  # ISR shrink: partition epoch only
    p = loader.image.topic("orders").partitions[0]  # type: ignore[union-attr]
    assert (p.isr, p.leader_epoch, p.partition_epoch) == ((1, 2), 0, 1)

    replay([change_rec(1, 0, leader=2)], loader)  # new leader: both epochs
    p = loader.image.topic("orders").partitions[0]  # type: ignore[union-attr]
    assert (p.leader, p.leader_epoch, p.partition_epoch) == (2, 1, 2)


@pytest.mark.parametrize(
    ("records", "problem"),
    [
        ([topic_rec("a", 1), topic_rec("a", 2)], "already exists"),
        ([topic_rec("a", 1), topic_rec("b", 1)], "already in use"),
        ([partition_rec(9, 0, [1])], "unknown topic id"),
        ([topic_rec("a", 1), change_rec(1, 5, leader=1)], "unknown partition a-5"),
        ([topic_rec("a", 1), partition_rec(1, 0, [])], "no replicas"),
        ([remove_acl_rec(3)], "no ACL"),
        ([producer_ids_rec(5000), producer_ids_rec(4000)], "does not move past"),
        ([broker_rec(1, 10), fence_rec(1, 9)], "has epoch 10, not 9"),
        ([fence_rec(4, 1)], "not registered"),
    ],
)
def test_records_that_cannot_apply_name_offset_and_type(
    records: list[MetadataRecord], problem: str
) -> None:
    with pytest.raises(RecordApplyError, match=problem) as err:
        replay(records)
    assert err.value.offset == len(records) - 1
    assert err.value.record_type.endswith("Record")


def test_removing_a_topic_removes_its_partitions_and_configs() -> None:
    loader = replay(
        [
            topic_rec("a", 1),
            partition_rec(1, 0, [1]),
            config_rec(2, "a", "retention.ms", "1"),
            config_rec(4, "", "log.retention.ms", "2"),
        ]
    )
    replay([remove_topic_rec(1)], loader)
    image = loader.image
    assert image.topic("a") is None and not image.topics
    assert dict(image.configs) == {(4, ""): {"log.retention.ms": "2"}}
    replay([topic_rec("a", 2)], loader)  # the name can be used again
    assert image.topic("a") is None and loader.image.topic("a") is not None


def test_configs_quotas_scram_acls_features_brokers() -> None:
    loader = replay(
        [
            config_rec(2, "a", "x", "1"),
            config_rec(2, "a", "x", None),
            config_rec(2, "a", "y", "2"),
            quota_rec("alice", "producer_byte_rate", 1024.0),
            quota_rec(None, "consumer_byte_rate", 2048.0),
            quota_rec("alice", "producer_byte_rate", 0, remove=True),
            scram_rec("alice", 1),
            acl_rec(7, "User:alice"),
            acl_rec(8, "User:bob"),
            remove_acl_rec(7),
            feature_rec("metadata.version", 8),
            feature_rec("kraft.version", 1),
            feature_rec("kraft.version", 0),
            producer_ids_rec(8000),
            broker_rec(1, 10),
            fence_rec(1, 10),
        ]
    )
    image = loader.image
    assert dict(image.configs) == {(2, "a"): {"y": "2"}}
    assert dict(image.quotas) == {(("user", None),): {"consumer_byte_rate": 2048.0}}
    assert list(image.scram) == [("alice", 1)]
    assert "salt" not in repr(image.scram[("alice", 1)])
    assert [a.principal for a in image.acls.values()] == ["User:bob"]
    assert dict(image.features) == {"metadata.version": 8}
    assert image.producer_ids is not None and image.producer_ids.next_producer_id == 8000
    assert image.brokers[1].fenced


def test_images_share_what_did_not_change() -> None:
    loader = replay([topic_rec("a", 1), partition_rec(1, 0, [1]), config_rec(2, "a", "x", "1")])
    before = loader.image
    replay([topic_rec("b", 2)], loader)
    assert loader.image.configs is before.configs
    assert loader.image.topics[tid(1)] is before.topics[tid(1)]


def test_a_change_to_one_topic_of_thousands_shares_the_rest_of_the_topic_maps() -> None:
    """The topic maps are persistent: a write's image costs what it changed, and the
    image before it is untouched."""
    loader = replay(
        [r for n in range(3000) for r in (topic_rec(f"t{n}", n), partition_rec(n, 0, [1]))]
    )
    before = loader.image
    assert isinstance(before.topics, PersistentMap) and isinstance(before.topic_ids, PersistentMap)
    replay([change_rec(1234, 0, leader=1), topic_rec("new", 5000)], loader)
    after = loader.image
    old, new = before.topics[tid(1234)].partitions[0], after.topics[tid(1234)].partitions[0]
    assert new.leader_epoch == old.leader_epoch + 1 and "new" not in before.topic_ids
    assert list(after.topic_ids)[-1] == "new" and len(after.topic_ids) == 3001
    fresh = [a is not b for a, b in zip(before.topics._chunks, after.topics._chunks, strict=False)]
    assert sum(fresh) == 2  # the changed topic's chunk and the last, which "new" joined


def test_equal_replica_lists_are_one_tuple() -> None:
    """A million partitions on a few brokers: a few distinct lists, each held once."""
    loader = replay([topic_rec("t", 1), *(partition_rec(1, p, [1, 2, 3]) for p in range(3))])
    loader = replay([change_rec(1, 2, isr=[1, 2, 3])], loader)
    first, *others = loader.image.topics[tid(1)].partitions.values()
    for p in others:
        assert p.replicas is first.replicas and p.isr is first.isr
    assert first.isr is first.replicas  # the ISR equals the replicas: one tuple too


def test_a_large_topics_partitions_are_shared_too() -> None:
    loader = replay([topic_rec("big", 1), *(partition_rec(1, p, [1]) for p in range(1000))])
    before = loader.image.topics[tid(1)].partitions
    assert isinstance(before, PersistentMap)
    replay([change_rec(1, 700, leader=1)], loader)
    after = loader.image.topics[tid(1)].partitions
    assert isinstance(after, PersistentMap) and list(after) == list(range(1000))
    assert sum(a is not b for a, b in zip(before._chunks, after._chunks, strict=True)) == 1
    small = replay([topic_rec("small", 2), partition_rec(2, 0, [1])]).image.topics[tid(2)]
    assert type(small.partitions) is dict


# --- transactions ------------------------------------------------------------------------


def test_transaction_markers_out_of_order_are_errors() -> None:
    with pytest.raises(TransactionError, match="still open"):
        replay([begin(), begin()])
    with pytest.raises(TransactionError, match="no transaction is open"):
        replay([end()])
    with pytest.raises(TransactionError, match="no transaction is open"):
        replay([abort()])


def test_an_open_transaction_at_the_end_of_the_log_is_reported() -> None:
    loader = replay([topic_rec("pre", 9), begin(), topic_rec("a", 1)])
    assert loader.open_transaction is not None and loader.open_transaction.begin_offset == 1
    assert set(loader.image.topic_ids) == {"pre"}


def test_replay_is_idempotent_only_forward() -> None:
    loader = replay([topic_rec("a", 1)])
    with pytest.raises(RecordApplyError, match="already replayed"):
        loader.replay(topic_rec("b", 2), 0, 1)


# --- generated streams ---------------------------------------------------------------------


@dataclass
class Model:
    """What the generator expects the image to hold (topics -> partition count, configs)."""

    topics: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (id, partitions)
    configs: dict[tuple[int, str], dict[str, str]] = field(default_factory=dict)
    next_id: int = 1


@st.composite
def streams(draw: st.DrawFn, transactions: bool = True) -> tuple[list[MetadataRecord], Model]:
    """A valid record stream, with well-formed transactions (some aborted), and the
    model of what it leaves behind."""
    model, saved = Model(), None
    records: list[MetadataRecord] = []
    for _ in range(draw(st.integers(0, 60))):
        ops = ["topic", "config", "quota", "acl", "feature"]
        if model.topics:
            ops += ["change", "remove"]
        if transactions:
            ops.append("end" if saved is not None else "begin")
        op = draw(st.sampled_from(ops))
        if op == "topic":
            name = draw(st.sampled_from("abcdefgh"))
            if name in model.topics:
                continue
            n, model.next_id = model.next_id, model.next_id + 1
            parts = draw(st.integers(1, 4))
            records.append(topic_rec(name, n))
            records += [partition_rec(n, p, [1 + p % 3, 1 + (p + 1) % 3]) for p in range(parts)]
            model.topics[name] = (n, parts)
        elif op == "change":
            name = draw(st.sampled_from(sorted(model.topics)))
            n, parts = model.topics[name]
            records.append(change_rec(n, draw(st.integers(0, parts - 1)), isr=[1], leader=1))
        elif op == "remove":
            name = draw(st.sampled_from(sorted(model.topics)))
            records.append(remove_topic_rec(model.topics.pop(name)[0]))
            model.configs.pop((2, name), None)
        elif op == "config":
            rname = draw(st.sampled_from(sorted(model.topics) or [""]))
            rtype = 2 if rname else 4
            key = draw(st.sampled_from(["retention.ms", "cleanup.policy"]))
            value = draw(st.none() | st.sampled_from(["1", "2", "compact"]))
            records.append(config_rec(rtype, rname, key, value))
            entry = model.configs.setdefault((rtype, rname), {})
            if value is None:
                entry.pop(key, None)
            else:
                entry[key] = value
            if not entry:
                del model.configs[(rtype, rname)]
        elif op == "quota":
            records.append(
                quota_rec(
                    draw(st.sampled_from(["u1", "u2", None])),
                    "request_percentage",
                    draw(st.floats(0, 100)),
                )
            )
        elif op == "acl":
            records.append(
                acl_rec(draw(st.integers(1000, 1003)), draw(st.sampled_from(["User:a", "User:b"])))
            )
        elif op == "feature":
            records.append(feature_rec("metadata.version", draw(st.integers(1, 20))))
        elif op == "begin":
            records.append(begin())
            saved = copy.deepcopy(model)
        elif op == "end":
            if draw(st.booleans()):
                records.append(end())
            else:
                records.append(abort())
                model = saved  # type: ignore[assignment]
            saved = None
    if saved is not None:  # close what is open, one way or the other
        if draw(st.booleans()):
            records.append(end())
        else:
            records.append(abort())
            model = saved
    return records, model


def as_model(image: MetadataImage) -> Model:
    return Model(
        topics={
            t.name: (int.from_bytes(t.topic_id, "big"), len(t.partitions))
            for t in image.topics.values()
        },
        configs={k: dict(v) for k, v in image.configs.items()},
    )


SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SETTINGS
@given(stream=streams(), cuts=st.lists(st.integers(1, 200), max_size=8))
def test_replaying_the_log_gives_the_image_of_applying_the_records(
    tmp_path: Path, stream: tuple[list[MetadataRecord], Model], cuts: list[int]
) -> None:
    records, model = stream
    applied = replay(records)
    assert applied.open_transaction is None
    got = as_model(applied.image)
    assert (got.topics, got.configs) == (model.topics, model.configs)

    # The same records through the log on disk, cut into arbitrary batches.
    directory = tmp_path / f"log-{len(list(tmp_path.iterdir()))}"
    with MetadataLog(directory, flush=FlushPolicy.never()) as log:
        i = 0
        for cut in [*cuts, len(records)]:
            chunk = records[i : i + cut]
            if chunk:
                log.append(chunk, epoch=1)
            i += cut
        if i < len(records):
            log.append(records[i:], epoch=1)
    replayed = MetadataLoader()
    with MetadataLog(directory, read_only=True) as log:
        for batch in log.read():
            replayed.replay_batch(batch)
    assert replayed.image == applied.image
    assert replayed.image.offset == applied.image.offset


@SETTINGS
@given(stream=streams(), split=st.integers(0, 400))
def test_snapshot_plus_tail_equals_full_replay(
    tmp_path: Path, stream: tuple[list[MetadataRecord], Model], split: int
) -> None:
    records, _ = stream
    full = replay(records)
    # A snapshot is taken where no transaction is open: find the split point's image.
    split %= len(records) + 1
    head = replay(records[:split])
    while head.open_transaction is not None:
        split += 1
        head = replay(records[:split])
    directory = tmp_path / f"snap-{len(list(tmp_path.iterdir()))}"
    with MetadataLog(directory, flush=FlushPolicy.never()) as log:
        if split:
            log.append(records[:split], epoch=1)
        snap_id = SnapshotId(split, 1)
        path = log.write_snapshot(snap_id, image_records(head.image))
    restored = MetadataLoader.from_snapshot(read_snapshot(path), snap_id.end_offset, 1)
    assert restored.image == head.image
    replay(records[split:], restored)
    assert restored.image == full.image


@SETTINGS
@given(prefix=streams(), inside=streams(transactions=False))
def test_an_abort_restores_the_previous_image_exactly(
    prefix: tuple[list[MetadataRecord], Model], inside: tuple[list[MetadataRecord], Model]
) -> None:
    loader = replay(prefix[0])
    before = loader.image
    published: list[MetadataImage] = []
    loader.hooks.append(lambda change: published.append(change.image))
    try:
        replay([begin(), *inside[0], abort()], loader)
    except RecordApplyError:
        return  # records generated for an empty image may not apply on this one
    assert loader.image == before
    assert published == []
    assert loader.image.offset == loader.last_offset  # only the position moved


@SETTINGS
@given(prefix=streams(), inside=streams(transactions=False), batch=st.integers(1, 10))
def test_records_inside_an_open_transaction_are_never_visible(
    prefix: tuple[list[MetadataRecord], Model],
    inside: tuple[list[MetadataRecord], Model],
    batch: int,
) -> None:
    loader = replay(prefix[0])
    before = loader.image
    records = [begin(), *inside[0]]
    try:
        for i in range(0, len(records), batch):
            replay(records[i : i + batch], loader)
            assert loader.image is before  # nothing published, batch after batch
        replay([end()], loader)
    except RecordApplyError:
        return
    both = replay([*prefix[0], *inside[0]])
    assert loader.image == both.image


def test_a_transaction_a_batch_at_a_time_is_folded_and_published_whole_at_its_end() -> None:
    """Each batch inside a transaction is folded into an unpublished image (End then costs
    its own batch); End publishes once, a full-image change (no delta) holding every
    record, from the image before Begin."""
    loader = replay([topic_rec("before", 1), partition_rec(1, 0, [1])])
    before = loader.image
    changes: list[ImageChange] = []
    loader.hooks.append(changes.append)
    replay([begin(), topic_rec("a", 2), partition_rec(2, 0, [1])], loader)
    replay([partition_rec(2, 1, [2]), topic_rec("b", 3)], loader)
    replay([partition_rec(3, 0, [3]), partition_rec(1, 0, [1, 2])], loader)
    assert loader.image is before and not changes
    replay([end()], loader)
    (change,) = changes
    assert change.previous is before and change.delta is None
    assert change.image is loader.image
    assert change.manifest.first_offset == before.offset + 1  # from Begin on
    whole = replay([
        topic_rec("before", 1), partition_rec(1, 0, [1]), topic_rec("a", 2),
        partition_rec(2, 0, [1]), partition_rec(2, 1, [2]), topic_rec("b", 3),
        partition_rec(3, 0, [3]), partition_rec(1, 0, [1, 2]),
    ])  # fmt: skip
    assert replace(loader.image, offset=0, epoch=0) == replace(whole.image, offset=0, epoch=0)


def test_a_transaction_in_one_batch_still_publishes_its_delta() -> None:
    loader = replay([])
    changes: list[ImageChange] = []
    loader.hooks.append(changes.append)
    replay([begin(), topic_rec("a", 2), partition_rec(2, 0, [1]), end()], loader)
    (change,) = changes
    assert change.delta is not None and tid(2) in change.delta.topics
