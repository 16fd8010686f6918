"""A Kafka controller's metadata log directory, laid out as Kafka 3.7-3.9 leaves it.

``metadata.log.dir`` holds ``meta.properties`` (version 1, with ``directory.id``) and
``bootstrap.checkpoint``; ``__cluster_metadata-0/`` holds the segment
``00000000000000000000.log`` with its (preallocated, ignored) ``.index`` and
``.timeindex``, ``leader-epoch-checkpoint``, ``partition.metadata`` and ``quorum-state``
(one line of JSON, ``data_version`` last). The records are spelled by Kafka's field
names (:class:`Struct`) at the versions Kafka writes them; batches are Kafka's record
batches (uncompressed, as the controller writes its log: no producer id, create time,
each metadata record with a null key and no headers).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migration.kafka_log.batch import KafkaRecordData, encode_batch
from migration.kafka_log.codec import Struct
from migration.kafka_log.mapping import BY_NAME
from migration.kafka_log.records import KafkaRecord, encode_control, encode_metadata
from migration.kafka_log.side_files import format_leader_epochs, partition_metadata_text
from migration.kafka_log.writer import snapshot_batches
from migration.proto.metadata_pb2 import FeatureLevelRecord, MetadataRecord
from migration.records.uuids import uuid_bytes

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
TOPIC_ID = uuid_bytes("K16VvIw3TLmaYnQ6XjK4PQ")
DIR_ID = uuid_bytes("b2ykbqbgTo2Fr6cYsahxqw")
BROKER_INCARNATION = uuid_bytes("3Jz5Qp0-SVa6GBlEGzhCFQ")
ACL_ID = uuid_bytes("xq6r9nNeTrmnIRm4tOtr6g")
BASE_MS = 1_795_000_000_000


def rec(name: str, version: int, **values: Any) -> KafkaRecord:
    return KafkaRecord(BY_NAME[name], version, Struct(values))


@dataclass
class Batch:
    epoch: int
    records: list[KafkaRecord]
    control: bool = False


@dataclass
class KafkaDir:
    root: Path  # metadata.log.dir
    batches: list[Batch] = field(default_factory=list)

    @property
    def partition_dir(self) -> Path:
        return self.root / "__cluster_metadata-0"

    @property
    def segment(self) -> Path:
        return self.partition_dir / "00000000000000000000.log"


def batch_bytes(base_offset: int, batch: Batch) -> bytes:
    data = []
    for i, r in enumerate(batch.records):
        if batch.control:
            key, value = encode_control(r)
            data.append(KafkaRecordData(i, 0, key, value))
        else:
            data.append(KafkaRecordData(i, 0, None, encode_metadata(r)))
    ms = BASE_MS + base_offset
    return encode_batch(base_offset, batch.epoch, data, base_timestamp=ms, control=batch.control)


def entity(kind: str, name: str | None) -> Struct:
    return Struct({"EntityType": kind, "EntityName": name})


def leader_change(leader: int, voters: Sequence[int]) -> KafkaRecord:
    return rec(
        "LeaderChangeMessage",
        0,
        Version=0,
        LeaderId=leader,
        Voters=[Struct({"VoterId": v}) for v in voters],
        GrantingVoters=[Struct({"VoterId": v}) for v in voters],
    )


def migration_batches() -> list[Batch]:
    """A combined KRaft controller's log after a ZooKeeper migration's copy and some
    dual-write: registrations, the copy in one transaction, changes, no-ops."""
    topic = "orders"
    copy = [
        rec("BeginTransactionRecord", 0, Name="zk-migration"),
        rec("TopicRecord", 0, Name=topic, TopicId=TOPIC_ID),
        *(
            rec(
                "PartitionRecord", 1, PartitionId=p, TopicId=TOPIC_ID, Replicas=[1, 2, 3],
                Isr=[1, 2, 3], RemovingReplicas=[], AddingReplicas=[], Leader=1 + p % 3,
                LeaderEpoch=4, PartitionEpoch=7, Directories=[DIR_ID, DIR_ID, DIR_ID],
            )
            for p in range(3)
        ),
        rec("ConfigRecord", 0, ResourceType=2, ResourceName=topic, Name="retention.ms",
            Value="86400000"),
        rec("ConfigRecord", 0, ResourceType=4, ResourceName="", Name="log.retention.hours",
            Value="72"),
        rec("ClientQuotaRecord", 0, Entity=[entity("user", "alice")], Key="producer_byte_rate",
            Value=1048576.0, Remove=False),
        rec("ClientQuotaRecord", 0, Entity=[entity("client-id", None)], Key="consumer_byte_rate",
            Value=2097152.0, Remove=False),
        rec("UserScramCredentialRecord", 0, Name="alice", Mechanism=2, Salt=b"s" * 16,
            StoredKey=b"k" * 64, ServerKey=b"v" * 64, Iterations=4096),
        rec("AccessControlEntryRecord", 0, Id=ACL_ID, ResourceType=2, ResourceName=topic,
            PatternType=3, Principal="User:alice", Host="*", Operation=3, PermissionType=3),
        rec("ProducerIdsRecord", 0, BrokerId=1, BrokerEpoch=-1, NextProducerId=5000),
        rec("EndTransactionRecord", 0),
    ]  # fmt: skip
    return [
        Batch(1, [leader_change(3000, [3000])], control=True),
        Batch(1, [rec("FeatureLevelRecord", 0, Name="metadata.version", FeatureLevel=21)]),
        Batch(1, [rec("ZkMigrationStateRecord", 0, ZkMigrationState=2)]),  # PRE_MIGRATION
        Batch(1, [rec(
            "RegisterControllerRecord", 0, ControllerId=3000, IncarnationId=BROKER_INCARNATION,
            ZkMigrationReady=True,
            EndPoints=[Struct({"Name": "CONTROLLER", "Host": "c1", "Port": 9093,
                               "SecurityProtocol": 0})],
            Features=[Struct({"Name": "metadata.version", "MinSupportedVersion": 1,
                              "MaxSupportedVersion": 21})],
        )]),
        Batch(1, [rec(
            "RegisterBrokerRecord", 3, BrokerId=1, IsMigratingZkBroker=True,
            IncarnationId=BROKER_INCARNATION, BrokerEpoch=7,
            EndPoints=[Struct({"Name": "PLAINTEXT", "Host": "b1", "Port": 9092,
                               "SecurityProtocol": 0})],
            Features=[], Rack=None, Fenced=False, InControlledShutdown=False, LogDirs=[DIR_ID],
        )]),
        Batch(1, copy),
        Batch(1, [rec("ZkMigrationStateRecord", 0, ZkMigrationState=1)]),  # MIGRATION
        Batch(2, [leader_change(3000, [3000])], control=True),
        Batch(2, [rec("PartitionChangeRecord", 1, PartitionId=0, TopicId=TOPIC_ID, Isr=[1, 2])]),
        Batch(2, [rec("BrokerRegistrationChangeRecord", 2, BrokerId=1, BrokerEpoch=7,
                      InControlledShutdown=1)]),
        Batch(2, [rec("NoOpRecord", 0)]),
        Batch(2, [rec("ClearElrRecord", 0, TopicName=topic)]),
    ]  # fmt: skip


def write_kafka_dir(root: Path, batches: Sequence[Batch] | None = None) -> KafkaDir:
    kd = KafkaDir(root, list(migration_batches() if batches is None else batches))
    kd.partition_dir.mkdir(parents=True)
    segment, epochs, offset = bytearray(), [], 0
    for b in kd.batches:
        if not epochs or epochs[-1][0] != b.epoch:
            epochs.append((b.epoch, offset))
        segment += batch_bytes(offset, b)
        offset += len(b.records)
    kd.segment.write_bytes(bytes(segment))
    for index in (".index", ".timeindex"):  # preallocated by Kafka; never read here
        kd.segment.with_suffix(index).write_bytes(b"\x00" * 1024)
    (kd.partition_dir / "leader-epoch-checkpoint").write_text(format_leader_epochs(epochs))
    (kd.partition_dir / "partition.metadata").write_text(partition_metadata_text())
    state = {
        "clusterId": "", "leaderId": 3000, "leaderEpoch": epochs[-1][0], "votedId": -1,
        "appliedOffset": 0, "currentVoters": [{"voterId": 3000}], "data_version": 0,
    }  # fmt: skip
    (kd.partition_dir / "quorum-state").write_text(json.dumps(state, separators=(",", ":")))
    (root / "meta.properties").write_text(
        "#\n#Thu Nov 26 10:00:00 UTC 2026\n"
        f"cluster.id={CLUSTER_ID}\ndirectory.id=b2ykbqbgTo2Fr6cYsahxqw\nnode.id=3000\nversion=1\n"
    )
    level = FeatureLevelRecord(name="metadata.version", feature_level=21)
    bootstrap = [MetadataRecord(feature_level_record=level)]
    chunks = snapshot_batches(bootstrap, 0, last_contained_timestamp=0, now_ms=BASE_MS)
    (root / "bootstrap.checkpoint").write_bytes(b"".join(chunks))
    return kd
