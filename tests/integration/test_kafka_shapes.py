"""Every shape Kafka 2.8-3.9 leaves in ZooKeeper, read as Kafka reads it.

Each row of :data:`SHAPES` starts from the tree three Kafka 3.5.2 brokers write
(:mod:`tests.kafka_written`, byte for byte, null data where Kafka leaves it), changes one
znode to a shape some Kafka version writes, and checks the reader, the preflight and
the copy (a dry run into a real log) against what Kafka does with it: what Kafka
accepts is never called malformed; what Kafka itself refuses is a named blocker with
its path. docs/kafka-shapes.md is the same table, checked against this one.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from migration.bridge.preflight import run_preflight
from migration.bridge.sync import compare
from migration.driver.copy import dry_run
from migration.image.log_check import check_log
from migration.log.metadata_log import MetadataLog
from migration.records.json_form import record_json
from migration.zk.client import ZkClient
from migration.zk.multiread import NodeData, ReadOp
from migration.zk.reader import read_snapshot
from migration.zk.tree_read import ZkSnapshot
from tests import kafka_written as kw
from tests.kafka_written import Broker, Znode, hash_map, jackson
from tests.support import zk2kraft

ROOT = Path(__file__).resolve().parents[2]
Records = dict[str, list[dict[str, Any]]]
Edit = Callable[[list[Znode]], list[Znode]]


def put(*nodes: Znode) -> Edit:
    """Replace the given znodes in place, or add them (missing parents first, with null
    data, as Kafka's createRecursive makes them)."""

    def edit(tree: list[Znode]) -> list[Znode]:
        given = {n.path: n for n in nodes}
        out = [given.pop(n.path, n) for n in tree]  # replaced in place
        have = {n.path for n in out}
        for node in given.values():
            parts = node.path.strip("/").split("/")
            for i in range(1, len(parts)):
                parent = "/" + "/".join(parts[:i])
                if parent not in have:
                    out.append(Znode(parent, None))
                    have.add(parent)
            out.append(node)
            have.add(node.path)
        return out

    return edit


def drop(path: str) -> Edit:
    def edit(tree: list[Znode]) -> list[Znode]:
        return [n for n in tree if n.path != path and not n.path.startswith(path + "/")]

    return edit


def registration(b: Broker, version: int = 5) -> Edit:
    return put(Znode(f"/brokers/ids/{b.broker_id}", kw.broker_znode(b, version), True))


@dataclass(frozen=True)
class Shape:
    id: str
    kafka: str
    znode: str
    shape: str
    outcome: str
    edit: Edit
    blockers: tuple[tuple[str, str], ...] = ()
    warnings: tuple[str, ...] = ()
    synced: bool = True  # the writer finds ZooKeeper equal to the copy (nothing to write)
    check: Callable[[ZkSnapshot, Records], bool] | None = field(default=None, repr=False)


def no_producer_ids(snap: ZkSnapshot, records: Records) -> bool:
    return snap.producer_id_block is None and "ProducerIdsRecord" not in records


def one(records: Records, kind: str) -> dict[str, Any]:
    (record,) = records[kind]
    return record


def partition(records: Records, topic: str, pid: int) -> dict[str, Any]:
    ids = {r["topic_id"]: r["name"] for r in records["TopicRecord"]}
    (found,) = [
        r
        for r in records["PartitionRecord"]
        if ids[r["topic_id"]] == topic and r["partition_id"] == pid
    ]
    return found


def quotas(records: Records) -> dict[tuple[tuple[tuple[str, str | None], ...], str], float]:
    return {
        (tuple((e["entity_type"], e["entity_name"]) for e in r["entity"]), r["key"]): r["value"]
        for r in records["ClientQuotaRecord"]
    }


def acls(records: Records) -> set[tuple[int, str, int, str, int, int]]:
    return {
        (
            r["resource_type"],
            r["resource_name"],
            r["pattern_type"],
            r["principal"],
            r["operation"],
            r["permission_type"],
        )
        for r in records["AccessControlEntryRecord"]
    }


ALICE_READ = {
    "principal": "User:alice",
    "permissionType": "Allow",
    "operation": "Read",
    "host": "*",
}
SCRAM_256 = (
    "salt=MWtzcXZ0NXA0Z2N5ZmN2eXQ0cmR1eHdnMQ==,stored_key=0t4Lk3XoEm0YyQeDJtAPU4rGhoPCrDWx"
    "nm2zQ9jE7pQ=,server_key=lY1j3pXoA0s5gK0t6xw3lX5Dz9hIu8y0y5n9lBt+B6M=,iterations=4096"
)


def token_v3(token_id: str) -> bytes:
    return jackson(
        hash_map(
            ("version", 3),
            ("owner", "User%3Aalice"),
            ("tokenRequester", "User%3Aalice"),
            ("renewers", ["User%3Abob"]),
            ("issueTimestamp", 1700000000000),
            ("expiryTimestamp", 1700086400000),
            ("maxTimestamp", 1700604800000),
            ("tokenId", token_id),
        )
    )


def token_v1(token_id: str) -> bytes:
    return jackson(
        hash_map(
            ("version", 1),
            ("owner", "User%3Acarol"),
            ("renewers", []),
            ("issueTimestamp", 1700000000000),
            ("expiryTimestamp", 1700086400000),
            ("maxTimestamp", 1700604800000),
            ("tokenId", token_id),
        )
    )


def _check_tokens(snap: ZkSnapshot, records: Records) -> bool:
    got = {
        r["token_id"]: (r["owner"], r["requester"], r["renewers"])
        for r in records["DelegationTokenRecord"]
    }
    return got == {
        "tok3": ("User:alice", "User:alice", ["User:bob"]),
        "tok1": ("User:carol", "User:carol", []),
    }


def _check_recovering(snap: ZkSnapshot, records: Records) -> bool:
    recovering, recovered = partition(records, "orders", 1), partition(records, "orders", 0)
    return recovering["leader_recovery_state"] == 1 and recovered["leader_recovery_state"] == 0


def _check_no_state(snap: ZkSnapshot, records: Records) -> bool:
    p = partition(records, "orders", 2)
    return (p["leader"], p["isr"], p["leader_epoch"]) == (p["replicas"][0], p["replicas"], 0)


def _check_ssl_only(snap: ZkSnapshot, records: Records) -> bool:
    (endpoint,) = snap.brokers[1].endpoints
    return (endpoint.listener, endpoint.security_protocol, endpoint.port) == ("SSL", "SSL", 9093)


SHAPES: tuple[Shape, ...] = (
    Shape(
        "producer-block-null",
        "2.8-3.9",
        "/latest_producer_id_block",
        "created with null data at start-up, never filled (no idempotent producer yet)",
        "no block: no ProducerIdsRecord; KRaft hands out the first block when asked",
        lambda tree: tree,
        check=no_producer_ids,
    ),
    Shape(
        "producer-block-empty",
        "other tools",
        "/latest_producer_id_block",
        "empty (zero-length) data",
        "same as null data",
        put(Znode("/latest_producer_id_block", b"")),
        check=no_producer_ids,
    ),
    Shape(
        "producer-block-absent",
        "before 0.11",
        "/latest_producer_id_block",
        "absent",
        "same as null data",
        drop("/latest_producer_id_block"),
        check=no_producer_ids,
    ),
    Shape(
        "producer-block",
        "2.8-3.9",
        "/latest_producer_id_block",
        '{"version":1,"broker":0,"block_start":"8000","block_end":"8999"}',
        "ProducerIdsRecord, next producer id 9000; ZooKeeper's next block starts there, so "
        "the sync leaves the znode (as Kafka's writer does) until KRaft hands out a block",
        put(
            Znode(
                "/latest_producer_id_block",
                b'{"version":1,"broker":0,"block_start":"8000","block_end":"8999"}',
            )
        ),
        check=lambda s, r: one(r, "ProducerIdsRecord")["next_producer_id"] == 9000,
    ),
    Shape(
        "seqid-used",
        "2.8-3.9",
        "/brokers/seqid",
        "empty data set twice (generated broker ids handed out: data version 2)",
        "accepted (generated ids are refused by broker id, not by this znode)",
        put(Znode("/brokers/seqid", b"")),
    ),
    Shape(
        "feature-absent",
        "before 2.7",
        "/feature",
        "absent",
        "accepted; metadata.version from the default",
        drop("/feature"),
    ),
    Shape(
        "feature-disabled",
        "2.7-3.9",
        "/feature",
        '{"features":{},"status":0,"version":2} (feature versioning disabled)',
        "accepted",
        put(Znode("/feature", jackson(hash_map(("version", 2), ("status", 0), ("features", {}))))),
    ),
    Shape(
        "feature-enabled",
        "2.7-3.9",
        "/feature",
        '{"features":{},"status":1,"version":2}',
        "accepted",
        lambda tree: tree,
    ),
    Shape(
        "broker-v1",
        "0.8",
        "/brokers/ids/<id>",
        "registration v1: host and port only",
        "blocker BROKER_NOT_MIGRATION_CAPABLE",
        put(
            Znode(
                "/brokers/ids/2",
                b'{"jmx_port":-1,"timestamp":"1700000000000","host":"b2","version":1,"port":9092}',
                True,
            )
        ),
        blockers=(("BROKER_NOT_MIGRATION_CAPABLE", "/brokers/ids/2"),),
    ),
    Shape(
        "broker-v2",
        "0.9",
        "/brokers/ids/<id>",
        "registration v2: endpoints, no protocol map",
        "blocker BROKER_NOT_MIGRATION_CAPABLE",
        put(
            Znode(
                "/brokers/ids/2",
                b'{"jmx_port":-1,"timestamp":"1700000000000",'
                b'"endpoints":["PLAINTEXT://b2:9092"],"host":"b2","version":2,"port":9092}',
                True,
            )
        ),
        blockers=(("BROKER_NOT_MIGRATION_CAPABLE", "/brokers/ids/2"),),
    ),
    Shape(
        "broker-v3",
        "0.10.0",
        "/brokers/ids/<id>",
        'registration v3: "rack":null',
        "blocker BROKER_NOT_MIGRATION_CAPABLE",
        put(
            Znode(
                "/brokers/ids/2",
                b'{"jmx_port":-1,"timestamp":"1700000000000",'
                b'"endpoints":["PLAINTEXT://b2:9092"],"rack":null,"host":"b2","version":3,'
                b'"port":9092}',
                True,
            )
        ),
        blockers=(("BROKER_NOT_MIGRATION_CAPABLE", "/brokers/ids/2"),),
    ),
    Shape(
        "broker-v4",
        "2.x",
        "/brokers/ids/<id>",
        "registration v4: no features key",
        "blocker BROKER_NOT_MIGRATION_CAPABLE",
        registration(Broker(2), version=4),
        blockers=(("BROKER_NOT_MIGRATION_CAPABLE", "/brokers/ids/2"),),
    ),
    Shape(
        "broker-v5-no-flag",
        "2.8-3.9",
        "/brokers/ids/<id>",
        'registration v5 with "features":{} (no migration flag shown: every broker before '
        "step 3, and Kafka 3.9's after it too)",
        "warning BROKER_MIGRATION_NOT_ENABLED (the flag is step 3's)",
        registration(Broker(2)),
        warnings=("BROKER_MIGRATION_NOT_ENABLED",),
    ),
    Shape(
        "broker-ssl-only",
        "2.8-3.9",
        "/brokers/ids/<id>",
        '"host":null,"port":-1 (no PLAINTEXT listener)',
        "accepted: endpoints from endpoints",
        registration(Broker(1, listeners=(("SSL", "SSL", 9093),), migrating=True)),
        check=_check_ssl_only,
    ),
    Shape(
        "broker-rack",
        "2.8-3.9",
        "/brokers/ids/<id>",
        '"rack":"r1"',
        "accepted",
        registration(Broker(1, rack="r1", migrating=True)),
        check=lambda s, r: s.brokers[1].rack == "r1",
    ),
    Shape(
        "broker-rack-null",
        "other tools",
        "/brokers/ids/<id>",
        '"rack":null',
        "accepted: no rack",
        put(
            Znode(
                "/brokers/ids/1",
                kw.broker_znode(Broker(1, migrating=True)).replace(
                    b'"features"', b'"rack":null,"features"'
                ),
                True,
            )
        ),
        check=lambda s, r: s.brokers[1].rack is None,
    ),
    Shape(
        "broker-jmx-port",
        "2.8-3.9",
        "/brokers/ids/<id>",
        '"jmx_port":9999 (JMX enabled)',
        "accepted",
        put(
            Znode(
                "/brokers/ids/1",
                kw.broker_znode(Broker(1, migrating=True)).replace(
                    b'"jmx_port":-1', b'"jmx_port":9999'
                ),
                True,
            )
        ),
        check=lambda s, r: s.brokers[1].jmx_port == 9999,
    ),
    Shape(
        "topic-v1",
        "before 2.4",
        "/brokers/topics/<t>",
        '{"version":1,"partitions":{...}} (no topic_id)',
        "blocker TOPIC_ID_MISSING",
        put(
            Znode(
                "/brokers/topics/orders",
                b'{"version":1,"partitions":{"2":[3,1],"1":[2,3],"0":[1,2]}}',
            )
        ),
        blockers=(("TOPIC_ID_MISSING", "/brokers/topics/orders"),),
    ),
    Shape(
        "topic-v2-no-id",
        "2.4-2.7",
        "/brokers/topics/<t>",
        "version 2, adding_/removing_replicas {}, no topic_id",
        "blocker TOPIC_ID_MISSING",
        put(
            Znode("/brokers/topics/orders", kw.topic_znode({0: [1, 2], 1: [2, 3], 2: [3, 1]}, None))
        ),
        blockers=(("TOPIC_ID_MISSING", "/brokers/topics/orders"),),
    ),
    Shape(
        "topic-id-trailing-bits",
        "2.8-3.9",
        "/brokers/topics/<t>",
        '"topic_id":"K16VvIw3TLmaYnQ6XjK4P2" (the last character has bits past the 128th)',
        "accepted as Kafka's Uuid.fromString reads it; copied as K16VvIw3TLmaYnQ6XjK4Pw",
        put(
            Znode(
                "/brokers/topics/orders",
                kw.topic_znode({0: [1, 2], 1: [2, 3], 2: [3, 1]}, "K16VvIw3TLmaYnQ6XjK4P2"),
            )
        ),
        check=lambda s, r: (
            {t["name"]: t["topic_id"] for t in r["TopicRecord"]}["orders"]
            == "K16VvIw3TLmaYnQ6XjK4Pw"
        ),
    ),
    Shape(
        "topic-reassigning",
        "2.4-3.9",
        "/brokers/topics/<t>",
        '"adding_replicas":{"0":[3]} (a reassignment in flight)',
        "blocker REASSIGNMENT_IN_PROGRESS",
        put(
            Znode(
                "/brokers/topics/orders",
                kw.topic_znode({0: [1, 2, 3], 1: [2, 3], 2: [3, 1]}, kw.APP_TOPIC_ID).replace(
                    b'"adding_replicas":{}', b'"adding_replicas":{"0":[3]}'
                ),
            )
        ),
        blockers=(("REASSIGNMENT_IN_PROGRESS", "/brokers/topics/orders"),),
    ),
    Shape(
        "reassign-znode",
        "2.8-3.9",
        "/admin/reassign_partitions",
        '{"version":1,"partitions":[...]} (legacy reassignment)',
        "blocker REASSIGNMENT_IN_PROGRESS",
        put(
            Znode(
                "/admin/reassign_partitions",
                b'{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[2,1]}]}',
            )
        ),
        blockers=(("REASSIGNMENT_IN_PROGRESS", "/admin/reassign_partitions"),),
    ),
    Shape(
        "state-recovering",
        "3.2-3.9",
        ".../partitions/<p>/state",
        '"leader_recovery_state":1 (only written when not RECOVERED)',
        "PartitionRecord with leader_recovery_state 1; absent means 0",
        put(
            Znode(
                "/brokers/topics/orders/partitions/1/state", kw.state_znode(2, [2], recovering=True)
            )
        ),
        check=_check_recovering,
    ),
    Shape(
        "state-missing",
        "2.8-3.9",
        ".../partitions/<p>/state",
        "absent (the controller has not written it yet)",
        "PartitionRecord: leader = first replica, ISR = replicas, epochs 0",
        drop("/brokers/topics/orders/partitions/2/state"),
        synced=False,  # the sync writes the state the copy assumed
        check=_check_no_state,
    ),
    Shape(
        "controller-v1",
        "2.8-3.3",
        "/controller",
        '{"version":1,"brokerid":1,"timestamp":"..."}',
        "accepted (a ZooKeeper controller)",
        put(Znode("/controller", b'{"version":1,"brokerid":1,"timestamp":"1700000000123"}', True)),
        check=lambda s, r: s.controller is not None and not s.controller.is_kraft,
    ),
    Shape(
        "controller-v2-no-epoch",
        "other tools",
        "/controller",
        '{"version":2,"brokerid":1,"timestamp":"..."} (no kraftControllerEpoch)',
        "accepted",
        put(Znode("/controller", b'{"version":2,"brokerid":1,"timestamp":"1700000000123"}', True)),
    ),
    Shape(
        "controller-kraft",
        "3.4-3.9 (migrating)",
        "/controller",
        '{"version":2,"brokerid":3000,"timestamp":"...","kraftControllerEpoch":5}, '
        "persistent, with /migration recording the copy",
        "warning MIGRATION_ALREADY_ACTIVE",
        put(
            Znode(
                "/controller",
                b'{"version":2,"brokerid":3000,"timestamp":"1700000000123",'
                b'"kraftControllerEpoch":5}',
            ),
            Znode(
                "/migration",
                b'{"version":0,"kraft_controller_id":3000,'
                b'"kraft_controller_epoch":5,"kraft_metadata_offset":61,'
                b'"kraft_metadata_epoch":5}',
            ),
        ),
        warnings=("MIGRATION_ALREADY_ACTIVE",),
        check=lambda s, r: s.controller is not None and s.controller.is_kraft,
    ),
    Shape(
        "controller-absent",
        "2.8-3.9",
        "/controller",
        "absent (between two elections)",
        "accepted",
        drop("/controller"),
    ),
    Shape(
        "controller-epoch-absent",
        "2.8-3.9",
        "/controller_epoch",
        "absent (no controller elected yet)",
        "accepted; the claim creates it (and the sync writes the states in its epoch)",
        drop("/controller_epoch"),
        synced=False,
    ),
    Shape(
        "acl-literal",
        "2.8-3.9",
        "/kafka-acl/<Type>/<name>",
        '{"version":1,"acls":[{"principal":..,"permissionType":..,"operation":..,"host":..}]}',
        "AccessControlEntryRecord per entry, pattern LITERAL",
        put(
            Znode("/kafka-acl/Topic/orders", jackson({"version": 1, "acls": [ALICE_READ]})),
            Znode(
                "/kafka-acl/Cluster/kafka-cluster",
                jackson({"version": 1, "acls": [{**ALICE_READ, "operation": "ClusterAction"}]}),
            ),
            Znode(
                "/kafka-acl/TransactionalId/tx-1",
                jackson(
                    {
                        "version": 1,
                        "acls": [
                            {
                                **ALICE_READ,
                                "operation": "Write",
                                "permissionType": "Deny",
                                "host": "10.0.0.1",
                            }
                        ],
                    }
                ),
            ),
            Znode(
                "/kafka-acl/DelegationToken/tok3",
                jackson({"version": 1, "acls": [{**ALICE_READ, "operation": "Describe"}]}),
            ),
            Znode(
                "/kafka-acl/User/User:bob",
                jackson({"version": 1, "acls": [{**ALICE_READ, "operation": "CreateTokens"}]}),
            ),
        ),
        check=lambda s, r: (
            acls(r)
            == {
                (2, "orders", 3, "User:alice", 3, 3),
                (4, "kafka-cluster", 3, "User:alice", 9, 3),
                (5, "tx-1", 3, "User:alice", 4, 2),
                (6, "tok3", 3, "User:alice", 8, 3),
                (7, "User:bob", 3, "User:alice", 13, 3),
            }
        ),
    ),
    Shape(
        "acl-prefixed",
        "2.8-3.9",
        "/kafka-acl-extended/prefixed/<Type>/<name>",
        "the same body, prefixed pattern",
        "AccessControlEntryRecord, pattern PREFIXED",
        put(
            Znode(
                "/kafka-acl-extended/prefixed/Group/app-",
                jackson({"version": 1, "acls": [ALICE_READ]}),
            )
        ),
        check=lambda s, r: acls(r) == {(3, "app-", 4, "User:alice", 3, 3)},
    ),
    Shape(
        "acl-changes",
        "2.8-3.9",
        "/kafka-acl-changes, /kafka-acl-extended-changes",
        'notifications: "Topic:orders" (literal) and version 1 JSON (extended)',
        "ignored (they carry no state)",
        put(
            Znode("/kafka-acl-changes/acl_changes_0000000000", b"Topic:orders"),
            Znode(
                "/kafka-acl-extended-changes/acl_changes_0000000000",
                jackson(
                    {
                        "version": 1,
                        "resourceType": "GROUP",
                        "name": "app-",
                        "patternType": "PREFIXED",
                    }
                ),
            ),
        ),
    ),
    Shape(
        "quota-sanitized",
        "2.8-3.9",
        "/config/users/<sanitized>",
        'URL-encoded principal user%2F1%40prod, quota "1048576.0"',
        "ClientQuotaRecord for user user/1@prod",
        put(
            Znode(
                "/config/users/user%2F1%40prod",
                kw.config_znode({"producer_byte_rate": "1048576.0"}),
            )
        ),
        check=lambda s, r: (
            quotas(r) == {((("user", "user/1@prod"),), "producer_byte_rate"): 1048576.0}
        ),
    ),
    Shape(
        "quota-defaults",
        "2.8-3.9",
        "/config/clients/<default>, /config/users/<default>/...",
        "<default> entities, user/clients nesting, null-data parents created on the way",
        "ClientQuotaRecords, <default> as a null name",
        put(
            Znode("/config/clients/<default>", kw.config_znode({"consumer_byte_rate": "2048"})),
            Znode(
                "/config/users/<default>/clients/<default>",
                kw.config_znode({"request_percentage": "50"}),
            ),
            Znode(
                "/config/users/alice/clients/app%201%2A",
                kw.config_znode({"producer_byte_rate": "100"}),
            ),
            Znode("/config/ips/<default>", kw.config_znode({"connection_creation_rate": "10"})),
        ),
        check=lambda s, r: (
            quotas(r)
            == {
                ((("client-id", None),), "consumer_byte_rate"): 2048.0,
                ((("user", None), ("client-id", None)), "request_percentage"): 50.0,
                ((("user", "alice"), ("client-id", "app 1*")), "producer_byte_rate"): 100.0,
                ((("ip", None),), "connection_creation_rate"): 10.0,
            }
        ),
    ),
    Shape(
        "scram-and-quota",
        "2.8-3.9",
        "/config/users/<user>",
        "SCRAM-SHA-256 credential and a quota in one znode",
        "UserScramCredentialRecord and ClientQuotaRecord",
        put(
            Znode(
                "/config/users/alice",
                kw.config_znode({"SCRAM-SHA-256": SCRAM_256, "consumer_byte_rate": "1024"}),
            )
        ),
        check=lambda s, r: (
            one(r, "UserScramCredentialRecord")["name"] == "alice"
            and len(r["ClientQuotaRecord"]) == 1
        ),
    ),
    Shape(
        "broker-configs",
        "2.8-3.9",
        "/config/brokers/<id>, /config/brokers/<default>",
        '{"version":1,"config":{...}}',
        'ConfigRecords (BROKER, "" for the default)',
        put(
            Znode("/config/brokers/<default>", kw.config_znode({"log.cleaner.threads": "2"})),
            Znode("/config/brokers/1", kw.config_znode({"log.retention.ms": "1000"})),
        ),
        check=lambda s, r: (
            {(c["resource_name"], c["name"]) for c in r["ConfigRecord"] if c["resource_type"] == 4}
            == {("", "log.cleaner.threads"), ("1", "log.retention.ms")}
        ),
    ),
    Shape(
        "tokens",
        "2.8-3.9",
        "/delegation_token/tokens/<id>",
        "version 1 (no tokenRequester) and version 3",
        "DelegationTokenRecords",
        put(
            Znode("/delegation_token/tokens/tok3", token_v3("tok3")),
            Znode("/delegation_token/tokens/tok1", token_v1("tok1")),
        ),
        check=_check_tokens,
    ),
    Shape(
        "migration-empty",
        "other tools",
        "/migration",
        "created with no data",
        "accepted: no migration recorded; the claim writes it",
        put(Znode("/migration", None)),
        check=lambda s, r: s.migration is not None and not s.migration.value.copy_done,
    ),
    Shape(
        "delete-pending",
        "2.8-3.9",
        "/admin/delete_topics/<t>",
        "null data (deletion requested, not finished)",
        "warning PENDING_TOPIC_DELETION; the topic is not copied",
        put(Znode("/admin/delete_topics/orders", None)),
        warnings=("PENDING_TOPIC_DELETION",),
        synced=False,  # the sync completes the deletion
        check=lambda s, r: {t["name"] for t in r["TopicRecord"]} == {"__consumer_offsets"},
    ),
    Shape(
        "notifications",
        "2.8-3.9",
        "/isr_change_notification, /log_dir_event_notification, /config/changes",
        "sequential notifications not yet processed",
        "ignored (they carry no state)",
        put(
            Znode(
                "/isr_change_notification/isr_change_0000000001",
                b'{"version":1,"partitions":[{"topic":"orders","partition":0}]}',
            ),
            Znode(
                "/log_dir_event_notification/log_dir_event_0000000000",
                b'{"version":1,"broker":1,"event":1}',
            ),
        ),
    ),
    Shape(
        "legacy-offsets",
        "before 0.9 clients",
        "/consumers/<g>/offsets/<t>/<p>",
        "an offset as text",
        "warning LEGACY_CONSUMER_OFFSETS (export-offsets saves them)",
        put(
            Znode("/consumers/old-app/offsets/orders/0", b"1234"),
            Znode("/consumers/old-app/ids", None),
            Znode("/consumers/old-app/owners", None),
        ),
        warnings=("LEGACY_CONSUMER_OFFSETS",),
    ),
)


def read_copy(zk: ZkClient, log_dir: Path) -> Records:
    dry_run(zk, log_dir)
    return read_records(log_dir)


@pytest.mark.parametrize("shape", SHAPES, ids=[s.id for s in SHAPES])
def test_shape(shape: Shape, zk: ZkClient, tmp_path: Path) -> None:
    kw.write(zk, shape.edit(kw.kafka_35_tree(kw.MIGRATING_BROKERS)))
    snap = read_snapshot(zk)
    assert snap.malformed == ()
    report = run_preflight(snap)
    assert {(f.code, f.path) for f in report.blockers} == set(shape.blockers)
    assert {f.code for f in report.warnings} - {"UNDER_REPLICATED_PARTITIONS"} == set(
        shape.warnings
    )
    if report.blockers:
        return
    records = read_copy(zk, tmp_path / "log")
    assert len(records["PartitionRecord"]) == sum(
        len(t.assignment.partitions)
        for n, t in snap.topics.items()
        if n not in snap.pending_deletions
    )
    if shape.check is not None:
        assert shape.check(snap, records), (snap, dict(records))
    # The writer's comparison: ZooKeeper as Kafka wrote it equals the copy of it.
    changes = compare(zk, check_log(tmp_path / "log").metadata, None, None).plan
    assert changes.in_sync() == shape.synced, changes.nonempty_changes()


def test_a_kafka_35_tree_is_ready_and_copies_completely(
    zk: ZkClient, zk_connect: str, tmp_path: Path
) -> None:
    """A Kafka 3.5.2 cluster before step 3: brokers registered without the migration
    flag (each a warning naming step 3's settings, not a blocker), an empty producer-id
    block; the dry run copies every topic, partition and config; the log and ZooKeeper
    are then in sync."""
    kw.write(zk, kw.kafka_35_tree())
    result = zk2kraft("preflight", "--zk", zk_connect, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["ready"] is True and report["blockers"] == []
    assert {(w["code"], w["path"]) for w in report["warnings"]} >= {
        ("BROKER_MIGRATION_NOT_ENABLED", f"/brokers/ids/{b}") for b in (1, 2, 3)
    }
    text = zk2kraft("preflight", "--zk", zk_connect).stdout
    assert "READY (0 blocker(s)" in text
    assert "zookeeper.metadata.migration.enable=true" in text
    assert "inter.broker.protocol.version=3.9" in text
    log_dir = tmp_path / "log"
    result = zk2kraft(
        "migrate", "--dry-run", "--zk", zk_connect, "--log-dir", str(log_dir), "--json"
    )
    assert result.returncode == 0, result.stderr
    records = read_records(log_dir)
    assert {r["name"]: r["topic_id"] for r in records["TopicRecord"]} == {
        "__consumer_offsets": kw.OFFSETS_TOPIC_ID,
        "orders": kw.APP_TOPIC_ID,
    }
    assert len(records["PartitionRecord"]) == 53
    assert {(r["resource_name"], r["name"]): r["value"] for r in records["ConfigRecord"]} == {
        ("__consumer_offsets", "compression.type"): "producer",
        ("__consumer_offsets", "cleanup.policy"): "compact",
        ("__consumer_offsets", "segment.bytes"): "104857600",
    }
    assert "ProducerIdsRecord" not in records
    result = zk2kraft("zk", "diff", "--zk", zk_connect, "--log-dir", str(log_dir), "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["in_sync"] is True


def read_records(log_dir: Path) -> Records:
    out: Records = defaultdict(list)
    with MetadataLog(log_dir, read_only=True) as log:
        for offset, epoch, record in log.records(0):
            obj = record_json(record, offset, epoch, show_secrets=False)
            out[obj["type"]].append(obj)
    return out


def test_null_and_empty_data_read_the_same(zk: ZkClient) -> None:
    """Kafka's null data (jute length -1) and kazoo's empty data are both no data."""
    kw.write(zk, [Znode("/null", None), Znode("/empty", b"")])
    null, empty = zk.multi_read([(ReadOp.GET_DATA, "/null"), (ReadOp.GET_DATA, "/empty")])
    assert isinstance(null, NodeData) and isinstance(empty, NodeData)
    assert null.data == empty.data == b""


def doc_row(shape: Shape) -> str:
    """The row of docs/kafka-shapes.md that states ``shape`` and names its test."""
    test = f"`test_kafka_shapes.py::test_shape[{shape.id}]`"
    cells = [f"`{shape.id}`", shape.kafka, f"`{shape.znode}`", shape.shape, shape.outcome, test]
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def test_the_docs_table_is_this_table() -> None:
    doc = (ROOT / "docs" / "kafka-shapes.md").read_text()
    rows = [line for line in doc.splitlines() if line.startswith("| `")]
    assert rows == [doc_row(s) for s in SHAPES]
