"""The audit's exporters, its in-flight rule, the producer-id rule and the image at an
offset: no Spark, no ZooKeeper (the integration tests run those for real)."""

from __future__ import annotations

import base64
from dataclasses import replace
from pathlib import Path

import pytest

from migration.audit.in_flight import in_flight_digests
from migration.audit.job import _local_work_dir, producer_ids_difference
from migration.audit.options import AuditOptions
from migration.audit.rows import ABSENT, KINDS, Entity, Exporter, Hasher
from migration.audit.sides import ZkRead, epoch_bound, version_gated
from migration.bridge.mirror import ImageView, SnapshotView
from migration.bridge.translate import TranslateReport, translate
from migration.image.at_offset import ImageUnavailableError, image_at
from migration.image.loader import MetadataLoader
from migration.image.model import MetadataImage
from migration.image.snapshot_records import image_records
from migration.local import seed
from migration.log.metadata_log import FlushPolicy, MetadataLog
from migration.log.snapshots import SnapshotId
from migration.proto.metadata_pb2 import MetadataRecord
from migration.zk.model import passwords
from migration.zk.model.cluster import ProducerIdBlock
from migration.zk.tree_read import ZkSnapshot
from tests.support import EVERYTHING
from tests.unit.test_image import change_rec, partition_rec, topic_rec

SECRET = seed.SEED_PASSWORD_ENCODER_SECRET
EPOCH = 5


def copied(snap: ZkSnapshot) -> MetadataImage:
    loader = MetadataLoader()
    records = translate(snap, TranslateReport(), SECRET)
    loader.replay_all((i, 1, MetadataRecord.FromString(r)) for i, r in enumerate(records))
    return loader.image


def claimed(snap: ZkSnapshot) -> int:
    assert snap.controller_epoch is not None
    return snap.controller_epoch.value


def table(exporter: Exporter) -> dict[tuple[str, str], Entity]:
    return {(e.kind, e.key): e for e in exporter.entities()}


@pytest.fixture(scope="module")
def seeded() -> tuple[ZkSnapshot, MetadataImage]:
    snap = seed.generate(EVERYTHING)
    # Partition states as a ZooKeeper controller of the claimed epoch left them.
    return snap, copied(snap)


def sides(
    snap: ZkSnapshot, image: MetadataImage, hasher: Hasher | None = None
) -> tuple[Exporter, Exporter]:
    hasher = hasher or Hasher()
    epoch = claimed(snap)
    excluded = frozenset(snap.pending_deletions - image.topic_ids.keys())
    return (
        Exporter(SnapshotView(snap, SECRET), hasher, epoch, excluded),
        Exporter(ImageView(image, epoch, SECRET), hasher, epoch, excluded),
    )


def test_a_copy_and_its_source_export_the_same_entities_of_every_kind(
    seeded: tuple[ZkSnapshot, MetadataImage],
) -> None:
    snap, image = seeded
    zk, kraft = sides(snap, image)
    zk_rows, kraft_rows = table(zk), table(kraft)
    # A generated snapshot lists no parent znodes of user-client quotas (a read one does:
    # the integration tests compare those with a real ZooKeeper).
    parents = {k: e for k, e in kraft_rows.items() if k not in zk_rows}
    assert parents and all(
        kind == "client_quota" and not e.fields and key.startswith("users/")
        for (kind, key), e in parents.items()
    )
    assert zk_rows == {k: e for k, e in kraft_rows.items() if k not in parents}
    kinds = {kind for kind, _ in zk_rows}
    assert kinds == set(KINDS) - {"pending_deletion"}  # the copy skips them: excluded
    for kind, key in zk_rows:  # every entity is found again by its key, on both sides
        assert zk.fields(kind, key) == kraft.fields(kind, key) == zk_rows[kind, key].fields
    assert zk.fields("topic", sorted(snap.pending_deletions)[0]) is None


def test_secrets_are_only_keyed_hashes(seeded: tuple[ZkSnapshot, MetadataImage]) -> None:
    snap, image = seeded
    zk, _ = sides(snap, image)
    text = repr([e.fields for e in zk.entities()])
    secrets = [SECRET]
    for creds in snap.scram.values():
        for c in creds.values():
            secrets += [base64.b64encode(c.salt).decode(), c.salt.hex(), c.stored_key.hex()]
            secrets += [base64.b64encode(c.stored_key).decode(), c.server_key.hex()]
    for config in snap.broker_configs.values():
        for stored in config.values():
            if passwords.is_encoded(stored):
                secrets += [stored, passwords.decode(stored, SECRET)]
    assert len(secrets) > 10 and not [s for s in secrets if s in text]
    scram = next(e for e in zk.entities() if e.kind == "scram_credential")
    assert next(v for f, v in scram.fields if f.endswith(".credential")).startswith("hash:")
    # Same material, same key: equal; another audit's key: unrelated.
    again, _ = sides(snap, image, Hasher(b"k" * 32))
    other, _ = sides(snap, image, Hasher(b"j" * 32))
    mine = table(again)[scram.kind, scram.key].fields
    assert mine == table(sides(snap, image, Hasher(b"k" * 32))[0])[scram.kind, scram.key].fields
    assert mine != table(other)[scram.kind, scram.key].fields


def test_partition_states_may_not_name_a_controller_epoch_above_the_claim(
    seeded: tuple[ZkSnapshot, MetadataImage],
) -> None:
    snap, image = seeded
    name = sorted(t for t in snap.topics if t not in snap.pending_deletions)[0]
    topic = snap.topics[name]
    state = topic.partitions[0]
    assert state.state is not None
    epoch = claimed(snap)
    ahead = replace(state, state=state.state._replace(controller_epoch=epoch + 1))
    drifted = replace(
        snap,
        topics={**snap.topics, name: replace(topic, partitions={**topic.partitions, 0: ahead})},
    )
    zk, kraft = sides(drifted, image)
    assert dict(zk.fields("partition", f"{name}-0") or ())["controller_epoch"] == str(epoch + 1)
    assert dict(kraft.fields("partition", f"{name}-0") or ())["controller_epoch"] == f"<= {epoch}"


def test_changes_in_flight_allow_each_touched_entity_its_value_before_and_after() -> None:
    loader = MetadataLoader()
    changes = []
    loader.replay_all([(0, 1, topic_rec("a", 1)), (1, 1, partition_rec(1, 0, [1, 2]))])
    loader.hooks.append(changes.append)
    loader.replay_all([(2, 1, change_rec(1, 0, isr=[1]))])
    loader.replay_all([(3, 1, topic_rec("b", 2)), (4, 1, partition_rec(2, 0, [2]))])
    hasher = Hasher()

    def exporter_for(image: MetadataImage) -> Exporter:
        return Exporter(ImageView(image, EPOCH, None), hasher, EPOCH)

    found: dict[tuple[str, str], set[int]] = {}
    for kind, key, digest in in_flight_digests(changes, exporter_for):
        found.setdefault((kind, key), set()).add(digest)
    first, last = exporter_for(changes[0].previous), exporter_for(loader.image)
    isr_before = hasher.digest(first.fields("partition", "a-0") or ())
    isr_after = hasher.digest(last.fields("partition", "a-0") or ())
    assert found["partition", "a-0"] == {isr_before, isr_after}
    assert found["topic", "b"] == {ABSENT, hasher.digest(last.fields("topic", "b") or ())}
    # A partition's change leaves its topic znode as it was: one value, the current one.
    assert found["topic", "a"] == {hasher.digest(last.fields("topic", "a") or ())}


def test_zookeeper_must_hand_out_producer_ids_above_kraft_s() -> None:
    loader = MetadataLoader()
    r = MetadataRecord()
    r.producer_ids_record.next_producer_id = 5000
    loader.replay_all([(0, 1, r)])
    image = loader.image
    assert producer_ids_difference(ZkSnapshot(), MetadataImage.EMPTY) is None
    missing = producer_ids_difference(ZkSnapshot(), image)
    assert missing is not None and missing["difference"] == "only_in_kraft"
    for block, verdict in (
        ((4000, 4999), None),
        ((9000, 9999), None),
        ((3000, 3998), "value_differs"),
    ):
        found = producer_ids_difference(
            ZkSnapshot(producer_id_block=ProducerIdBlock(1, *block)), image
        )
        assert (found and found["difference"]) == verdict


def _log(tmp_path: Path) -> Path:
    """Offsets 0-1 (topic a), 2 (ISR change), 3-4 (topic b), each group one batch."""
    with MetadataLog(tmp_path, flush=FlushPolicy.never()) as log:
        log.append([topic_rec("a", 1), partition_rec(1, 0, [1, 2])], epoch=1)
        log.append([change_rec(1, 0, isr=[1])], epoch=1)
        log.append([topic_rec("b", 2), partition_rec(2, 0, [2])], epoch=2)
    return tmp_path


def test_the_image_at_an_offset_and_the_changes_since_another(tmp_path: Path) -> None:
    log_dir = _log(tmp_path)
    at = image_at(log_dir, 2, since=1)
    assert at.image.offset == 2 and set(at.image.topic_ids) == {"a"}
    assert at.log_end_offset == 5
    assert [c.image.offset for c in at.changes] == [2]
    whole = image_at(log_dir, None)
    assert whole.image.offset == 4 and set(whole.image.topic_ids) == {"a", "b"}
    with pytest.raises(ImageUnavailableError, match="before offset 9"):
        image_at(log_dir, 9)


def test_an_offset_a_snapshot_replaced_cannot_be_rebuilt(tmp_path: Path) -> None:
    log_dir = _log(tmp_path)
    full = image_at(log_dir, None).image
    with MetadataLog(log_dir, segment_bytes=1024) as log:
        log.write_snapshot(SnapshotId(5, 2), image_records(full))
    # Starting from the snapshot: offsets at or after its end are still there to rebuild.
    assert image_at(log_dir, 4).image.topic_ids == full.topic_ids
    (log_dir / "00000000000000000000.log").unlink()  # as retention deletes segments
    with MetadataLog(log_dir) as log:
        log.append([topic_rec("c", 3)], epoch=2)
    assert set(image_at(log_dir, 5).image.topic_ids) == {"a", "b", "c"}
    with pytest.raises(ImageUnavailableError, match="no snapshot ends at or before offset 2"):
        image_at(log_dir, 2)


def test_the_fast_digests_are_the_digests_of_the_fields(
    seeded: tuple[ZkSnapshot, MetadataImage],
) -> None:
    snap, image = seeded
    for exporter in sides(snap, image):
        fast = {(k, e): (d, n) for k, e, d, n in exporter.digests()}
        slow = {
            (e.kind, e.key): (exporter.hasher.digest(e.fields), len(e.fields))
            for e in exporter.entities()
        }
        assert fast == slow and len(fast) > 300
        assert any(kind == "partition" for kind, _ in fast)


def test_a_relative_work_dir_becomes_an_absolute_local_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    made = _local_work_dir(AuditOptions(zk="127.0.0.1:2181", work_dir="audit/work"))
    assert made == str(tmp_path / "audit" / "work") and Path(made).is_dir()
    assert _local_work_dir(AuditOptions(zk="127.0.0.1:2181", work_dir="s3a://b/w")) is None


def test_kafkas_rules_for_a_log_kafka_wrote(seeded: tuple[ZkSnapshot, MetadataImage]) -> None:
    snap, image = seeded
    # Partition states may carry Kafka's Raft epoch, from /migration, when Kafka wrote the log.
    read = ZkRead(snap, 10, None, kraft_epoch=claimed(snap) + 4)
    assert epoch_bound(read, "kafka") == claimed(snap) + 4
    assert epoch_bound(read, "zk2kraft") == claimed(snap)
    # SCRAM credentials and tokens are left out below the metadata.version that has them.
    levels = {8: {"scram_credential", "delegation_token"}, 13: {"delegation_token"}, 21: set()}
    for level, gated in levels.items():
        at = replace(image, features={**image.features, "metadata.version": level})
        assert version_gated(at) == gated
    zk, _ = sides(snap, image)
    user = next(e.key for e in zk.entities() if e.kind == "scram_credential")
    old = version_gated(replace(image, features={"metadata.version": 8}))
    gated_zk = Exporter(zk.view, zk.hasher, claimed(snap), zk.excluded, excluded_kinds=old)
    assert zk.fields("scram_credential", user) and gated_zk.fields("scram_credential", user) is None


def test_a_quota_entity_named_empty_is_the_default_as_kafka_3_4_wrote_it() -> None:
    loader = MetadataLoader()
    r = MetadataRecord()
    r.client_quota_record.entity.add(entity_type="user", entity_name="")
    r.client_quota_record.key, r.client_quota_record.value = "producer_byte_rate", 1024.0
    loader.replay_all([(0, 1, r)])
    assert loader.image.quotas == {(("user", None),): {"producer_byte_rate": 1024.0}}


def test_kafkas_empty_config_znodes_count_as_absent(
    seeded: tuple[ZkSnapshot, MetadataImage],
) -> None:
    snap, image = seeded
    zk, _ = sides(snap, image)
    empty = next(
        e.key for e in zk.entities() if e.kind == "client_quota" and not zk.fields(e.kind, e.key)
    )
    assert zk.fields("client_quota", empty) == ()
    kafka = Exporter(zk.view, zk.hasher, claimed(snap), zk.excluded, kafka_rules=True)
    assert kafka.fields("client_quota", empty) is None


def test_a_kafka_log_offers_the_changes_after_the_offset_as_in_flight(tmp_path: Path) -> None:
    from tests.kafka_log_dir import write_kafka_dir

    kd = write_kafka_dir(tmp_path / "kafka")
    at = image_at(kd.root, 18, kafka_ahead=True)  # /migration at the copy's end
    topic = at.image.topic("orders")
    assert topic is not None and topic.partitions[0].isr == (1, 2, 3)  # the image at 18
    assert [c.image.offset for c in at.changes if c.delta is not None][-1] == 23
    assert any(c.image.offset == 20 for c in at.changes)  # the ISR change Kafka wrote ahead
    assert image_at(kd.root, 18).changes == []  # only when asked
