"""Golden cases from Kafka's formats, round trips, and malformed input per znode kind."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from migration.records import codes
from migration.zk.errors import ZnodeFormatError
from migration.zk.model import acls, brokers, cluster, configs, consumers, tokens, topics

# --- golden cases: the exact JSON Kafka writes (from the reference) -----------------


def test_cluster_id_golden() -> None:
    raw = b'{"version":"1","id":"Wq3K7mLHT9a4xUo0Zc1bYw"}'
    value = cluster.parse_cluster_id("/cluster/id", raw)
    assert value == cluster.ClusterId("Wq3K7mLHT9a4xUo0Zc1bYw")
    assert cluster.render_cluster_id(value) == raw


def test_kraft_controller_golden() -> None:
    raw = b'{"version":2,"brokerid":3000,"timestamp":"1700000000000","kraftControllerEpoch":5}'
    value = cluster.parse_controller("/controller", raw)
    assert value == cluster.ControllerZnode(3000, 1_700_000_000_000, 5)
    assert value.is_kraft
    assert cluster.render_controller(value) == raw


@pytest.mark.parametrize(
    "raw",
    [
        b'{"version":1,"brokerid":1,"timestamp":"1700000000000"}',
        b'{"version":1,"brokerid":1,"timestamp":"1700000000000","kraftControllerEpoch":-1}',
    ],
)
def test_zk_controller_has_no_kraft_epoch(raw: bytes) -> None:
    value = cluster.parse_controller("/controller", raw)
    assert value.kraft_controller_epoch is None and not value.is_kraft


def test_controller_epoch_is_plain_text() -> None:
    assert cluster.parse_controller_epoch("/controller_epoch", b"43") == 43
    assert cluster.render_controller_epoch(43) == b"43"


def test_broker_v5_golden() -> None:
    raw = (
        b'{"version":5,"host":"h","port":9092,"endpoints":["PLAINTEXT://h:9092","SSL://h:9093"],'
        b'"jmx_port":-1,"timestamp":"1700000000000","rack":"r1",'
        b'"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","SSL":"SSL"},'
        b'"features":{"metadata.version":{"min_version":1,"max_version":21}}}'
    )
    value = brokers.parse_broker("/brokers/ids/3", raw, 3)
    assert value.endpoints == (
        brokers.Endpoint("PLAINTEXT", "h", 9092, "PLAINTEXT"),
        brokers.Endpoint("SSL", "h", 9093, "SSL"),
    )
    assert value.rack == "r1"
    assert value.features == {"metadata.version": brokers.FeatureRange(1, 21)}
    assert json.loads(brokers.render_broker(value)) == json.loads(raw)


@pytest.mark.parametrize(
    ("raw", "endpoints", "rack"),
    [
        (
            b'{"version":1,"host":"h","port":9092,"jmx_port":-1,"timestamp":"1"}',
            [("PLAINTEXT", "h", 9092, "PLAINTEXT")],
            None,
        ),
        (
            b'{"version":2,"host":"h","port":9092,"jmx_port":-1,"timestamp":"1",'
            b'"endpoints":["SSL://h:9093"]}',
            [("SSL", "h", 9093, "SSL")],
            None,
        ),
        (
            b'{"version":3,"host":"h","port":9092,"jmx_port":-1,"timestamp":"1",'
            b'"endpoints":["PLAINTEXT://[::1]:9092"],"rack":null}',
            [("PLAINTEXT", "::1", 9092, "PLAINTEXT")],
            None,
        ),
        (
            b'{"version":4,"host":"h","port":9092,"jmx_port":-1,"timestamp":"1",'
            b'"endpoints":["INTERNAL://h:9094"],"rack":"r2",'
            b'"listener_security_protocol_map":{"INTERNAL":"SASL_SSL"}}',
            [("INTERNAL", "h", 9094, "SASL_SSL")],
            "r2",
        ),
    ],
)
def test_older_broker_versions(
    raw: bytes, endpoints: list[tuple[str, str, int, str]], rack: str | None
) -> None:
    value = brokers.parse_broker("/brokers/ids/1", raw, 1)
    assert [(e.listener, e.host, e.port, e.security_protocol) for e in value.endpoints] == endpoints
    assert value.rack == rack and value.features == {}
    assert brokers.parse_broker("/brokers/ids/1", brokers.render_broker(value), 1) == value


def test_topic_v3_golden() -> None:
    raw = (
        b'{"version":3,"partitions":{"0":[1,2,3],"1":[2,3,1]},"adding_replicas":{},'
        b'"removing_replicas":{},"topic_id":"K16VvIw3TLmaYnQ6XjK4PQ"}'
    )
    value = topics.parse_topic("/brokers/topics/t", raw, "t")
    assert value.partitions == {0: (1, 2, 3), 1: (2, 3, 1)}
    assert value.topic_id == "K16VvIw3TLmaYnQ6XjK4PQ"
    assert topics.render_topic(value) == raw


@pytest.mark.parametrize(
    ("raw", "version", "topic_id"),
    [
        (b'{"version":1,"partitions":{"0":[1]}}', 1, None),
        (
            b'{"version":2,"partitions":{"0":[1]},"topic_id":"K16VvIw3TLmaYnQ6XjK4PQ"}',
            2,
            "K16VvIw3TLmaYnQ6XjK4PQ",
        ),
        (
            b'{"version":3,"partitions":{"0":[1]},"adding_replicas":{},"removing_replicas":{}}',
            3,
            None,
        ),
    ],
)
def test_older_topic_versions(raw: bytes, version: int, topic_id: str | None) -> None:
    value = topics.parse_topic("/brokers/topics/t", raw, "t")
    assert (value.version, value.topic_id, value.partitions) == (version, topic_id, {0: (1,)})
    assert topics.parse_topic("/brokers/topics/t", topics.render_topic(value), "t") == value


def test_topic_under_reassignment() -> None:
    raw = (
        b'{"version":3,"partitions":{"0":[4,2,3,1]},"adding_replicas":{"0":[4]},'
        b'"removing_replicas":{"0":[1]},"topic_id":"K16VvIw3TLmaYnQ6XjK4PQ"}'
    )
    value = topics.parse_topic("/brokers/topics/t", raw, "t")
    assert value.adding == {0: (4,)} and value.removing == {0: (1,)}


def test_partition_state_golden() -> None:
    raw = b'{"controller_epoch":42,"leader":1,"version":1,"leader_epoch":6,"isr":[1,2]}'
    value = topics.parse_partition_state("/s", raw)
    assert value == topics.PartitionState(1, 6, 42, (1, 2))
    assert topics.render_partition_state(value) == raw


def test_partition_state_with_recovery_state() -> None:
    raw = (
        b'{"controller_epoch":42,"leader":1,"version":1,"leader_epoch":6,"isr":[1],'
        b'"leader_recovery_state":1}'
    )
    value = topics.parse_partition_state("/s", raw)
    assert value.leader_recovery_state == topics.RECOVERING
    assert topics.render_partition_state(value) == raw


def test_equal_id_lists_read_from_zookeeper_are_one_tuple() -> None:
    """A tree's read holds a million replica and ISR lists of a few thousand distinct
    values: equal lists, across topics and partitions, come back as one object."""
    first = topics.parse_topic("/brokers/topics/a", b'{"version":1,"partitions":{"0":[1,2]}}', "a")
    second = topics.parse_topic(
        "/brokers/topics/b", b'{"version":1,"partitions":{"0":[2,1],"1":[1,2]}}', "b"
    )
    assert first.partitions[0] is second.partitions[1]
    assert second.partitions[0] == (2, 1)
    raw = b'{"controller_epoch":4,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2]}'
    states = [topics.parse_partition_state(f"/s{i}", raw) for i in range(2)]
    assert states[0].isr is states[1].isr is first.partitions[0]


def test_quota_and_scram_in_one_user_znode() -> None:
    scram = "salt=c2FsdA==,stored_key=c3RvcmVk,server_key=c2VydmVy,iterations=4096"
    raw = json.dumps(
        {
            "version": 1,
            "config": {
                "producer_byte_rate": "1048576",
                "consumer_byte_rate": "2097152",
                "SCRAM-SHA-256": scram,
            },
        }
    ).encode()
    path = "/config/users/user%2F1%40prod"
    entity = configs.parse_entity_config(path, raw, "users", "user/1@prod")
    assert configs.quota_values(path, entity.config) == {
        "producer_byte_rate": 1048576.0,
        "consumer_byte_rate": 2097152.0,
    }
    creds = configs.scram_credentials(path, entity.config)
    assert creds[1] == configs.ScramCredential(1, b"salt", b"stored", b"server", 4096)
    assert configs.render_scram(creds[1]) == scram
    assert "salt" not in repr(creds[1]) and "c2FsdA" not in repr(creds[1])


@pytest.mark.parametrize(
    ("name", "sanitized"),
    [
        ("user/1@prod", "user%2F1%40prod"),
        ("client 1*app", "client%201%2Aapp"),
        ("plain-name_1.x", "plain-name_1.x"),
        ("tilde~", "tilde%7E"),
        ("ümlaut", "%C3%BCmlaut"),
    ],
)
def test_sanitize_like_kafka(name: str, sanitized: str) -> None:
    assert configs.sanitize(name) == sanitized
    assert configs.desanitize(sanitized) == name


def test_literal_and_prefixed_acls() -> None:
    raw = (
        b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",'
        b'"operation":"Read","host":"*"}]}'
    )
    literal = acls.parse_acls("/kafka-acl/Topic/foo", raw, "Topic", "foo", prefixed=False)
    assert literal == acls.ResourceAcls(
        2, "foo", codes.PATTERN_LITERAL, (acls.AclEntry("User:alice", "*", 3, 3),)
    )
    assert acls.render_acls(literal.entries) == raw
    prefixed = acls.parse_acls(
        "/kafka-acl-extended/prefixed/Group/g-", raw, "Group", "g-", prefixed=True
    )
    assert (prefixed.resource_type, prefixed.pattern_type) == (3, codes.PATTERN_PREFIXED)


def test_acl_change_notifications() -> None:
    assert acls.render_acl_change(2, "foo", codes.PATTERN_LITERAL) == b"TOPIC:foo"
    assert acls.render_acl_change(5, "tx", codes.PATTERN_LITERAL) == b"TRANSACTIONAL_ID:tx"
    assert json.loads(acls.render_acl_change(2, "bar-", codes.PATTERN_PREFIXED)) == {
        "version": 1,
        "resourceType": "TOPIC",
        "name": "bar-",
        "patternType": "PREFIXED",
    }
    assert (
        json.loads(acls.render_acl_change(5, "tx", codes.PATTERN_PREFIXED))["resourceType"]
        == "TRANSACTIONAL_ID"
    )


def test_acl_change_notifications_parse_back() -> None:
    for code, name, pattern in ((2, "foo", 3), (5, "tx", 4), (7, "User:x", 3)):
        raw = acls.render_acl_change(code, name, pattern)
        extended = pattern == codes.PATTERN_PREFIXED
        assert acls.parse_acl_change("/kafka-acl-changes/c", raw, extended) == (code, name, pattern)
    assert acls.parse_acl_change("/p", b"TRANSACTIONAL_ID:t", extended=False) == (5, "t", 3)
    assert tokens.parse_token_change("/delegation_token/token_changes/t", b"tok1") == "tok1"


@pytest.mark.parametrize(
    ("parse", "raw", "hint"),
    [
        (configs.parse_config_change, b'{"version":2,"entity_path":"nope/x"}', "<type>/<name>"),
        (configs.parse_config_change, b'{"version":2,"entity_path":"topics/"}', "<type>/<name>"),
        (configs.parse_config_change, b'{"version":3,"entity_path":"topics/x"}', "version"),
        (configs.parse_config_change, b"[" * 10_000, "nested more than"),
        (lambda p, r: acls.parse_acl_change(p, r, False), b"Topicfoo", "ResourceType:name"),
        (lambda p, r: acls.parse_acl_change(p, r, False), b"Planet:foo", "ResourceType:name"),
        (lambda p, r: acls.parse_acl_change(p, r, False), b"\xff", "not UTF-8"),
        (
            lambda p, r: acls.parse_acl_change(p, r, True),
            b'{"version":1,"resourceType":"TOPIC","name":"t","patternType":"MATCH"}',
            "patternType",
        ),
        (lambda p, r: acls.parse_acl_change(p, r, True), b"Topic:foo", "invalid JSON"),
        (tokens.parse_token_change, b"", "no data"),
        (tokens.parse_token_change, b"a/b", "znode name"),
    ],
)
def test_garbage_change_notifications_are_znode_format_errors(
    parse: Callable[[str, bytes], object], raw: bytes, hint: str
) -> None:
    with pytest.raises(ZnodeFormatError) as info:
        parse("/config/changes/config_change_0000000007", raw)
    assert info.value.path == "/config/changes/config_change_0000000007"
    assert hint in info.value.problem


def test_delegation_token_golden() -> None:
    raw = (
        b'{"version":3,"owner":"User%3Aalice","tokenRequester":"User%3Aalice",'
        b'"renewers":["User%3Abob"],"issueTimestamp":1700000000000,'
        b'"maxTimestamp":1700604800000,"expiryTimestamp":1700086400000,"tokenId":"tok1"}'
    )
    value = tokens.parse_token("/delegation_token/tokens/tok1", raw)
    assert (value.owner, value.requester, value.renewers) == (
        "User:alice",
        "User:alice",
        ("User:bob",),
    )
    assert tokens.render_token(value) == raw


def test_producer_id_block_golden() -> None:
    raw = b'{"version":1,"broker":-1,"block_start":"7000","block_end":"7999"}'
    value = cluster.parse_producer_id_block("/latest_producer_id_block", raw)
    assert value.next_producer_id == 8000
    assert cluster.render_producer_id_block(value) == raw


def test_feature_golden() -> None:
    raw = b'{"version":2,"status":1,"features":{"metadata.version":{"max_version_level":7}}}'
    value = cluster.parse_feature("/feature", raw)
    assert value.enabled and value.max_levels == {"metadata.version": 7}
    assert cluster.render_feature(value) == raw


def test_migration_golden() -> None:
    raw = (
        b'{"version":0,"kraft_controller_id":3000,"kraft_controller_epoch":5,'
        b'"kraft_metadata_offset":1234,"kraft_metadata_epoch":5}'
    )
    value = cluster.parse_migration("/migration", raw)
    assert value.copy_done
    assert cluster.render_migration(value) == raw


def test_isr_change_notification() -> None:
    assert topics.render_isr_change([("t", 0), ("u", 3)]) == (
        b'{"version":1,"partitions":[{"topic":"t","partition":0},{"topic":"u","partition":3}]}'
    )


def test_config_change_and_legacy_offset() -> None:
    assert configs.render_config_change("topics/foo") == b'{"version":2,"entity_path":"topics/foo"}'
    for entity in ("topics/foo", "users/u%3A1/clients/c", "brokers/<default>"):
        raw = configs.render_config_change(entity)
        assert configs.parse_config_change("/config/changes/config_change_1", raw) == entity
    version_1 = b'{"version":1,"entity_type":"topics","entity_name":"foo"}'
    assert configs.parse_config_change("/config/changes/c", version_1) == "topics/foo"
    off = consumers.parse_offset("/consumers/g/offsets/t/0", b"1234", "g", "t", 0)
    assert off.offset == 1234


# --- malformed input: one ZnodeFormatError naming the path, and nothing else ---------

Parser = Callable[[str, bytes], object]
PARSERS: dict[str, Parser] = {
    "cluster_id": cluster.parse_cluster_id,
    "controller": cluster.parse_controller,
    "controller_epoch": cluster.parse_controller_epoch,
    "feature": cluster.parse_feature,
    "producer_ids": cluster.parse_producer_id_block,
    "migration": cluster.parse_migration,
    "broker": lambda p, r: brokers.parse_broker(p, r, 1),
    "topic": lambda p, r: topics.parse_topic(p, r, "t"),
    "state": topics.parse_partition_state,
    "reassign": topics.parse_reassignment,
    "config": lambda p, r: configs.parse_entity_config(p, r, "topics", "t"),
    "acl": lambda p, r: acls.parse_acls(p, r, "Topic", "t", prefixed=False),
    "token": tokens.parse_token,
}

COMMON_CORRUPTIONS = [
    b"",
    b"\xff\xfe",
    b"{",
    b"[]",
    b"null",
    b'"text"',
    b"{}",
    b'{"version":99}',
    b'{"version":1,"x":' + b"[" * 10_000 + b"]" * 10_000 + b"}",  # never a RecursionError
    b'{"version":1,"x":"' + b"x" * (1 << 20) + b'"}',  # past jute.maxbuffer's default
]

MALFORMED: list[tuple[str, bytes, str]] = [
    ("cluster_id", b'{"version":1,"id":"abc"}', "version"),
    ("cluster_id", b'{"version":"1","id":"has space"}', "does not match"),
    ("controller", b'{"version":1,"timestamp":"1"}', "brokerid"),
    ("controller", b'{"version":1,"brokerid":"1","timestamp":"1"}', "brokerid"),
    ("controller_epoch", b"forty", "integer"),
    ("feature", b'{"version":2,"status":3,"features":{}}', "status"),
    (
        "feature",
        b'{"version":2,"status":1,"features":{"f":{"max_version_level":"x"}}}',
        "features.f",
    ),
    ("producer_ids", b'{"version":1,"broker":1,"block_start":"9","block_end":"1"}', "empty"),
    ("producer_ids", b'{"version":1,"broker":1,"block_start":"x","block_end":"1"}', "block_start"),
    ("migration", b'{"version":0,"kraft_controller_id":1}', "kraft_controller_epoch"),
    (
        "broker",
        b'{"version":5,"endpoints":["PLAINTEXT:/h:1"],"timestamp":"1",'
        b'"listener_security_protocol_map":{}}',
        "LISTENER://host:port",
    ),
    (
        "broker",
        b'{"version":4,"endpoints":["X://h:1"],"timestamp":"1",'
        b'"listener_security_protocol_map":{}}',
        "missing from listener_security",
    ),
    ("broker", b'{"version":2,"endpoints":["FOO://h:1"],"timestamp":"1"}', "security protocol"),
    (
        "broker",
        '{"version":2,"endpoints":["PLAINTEXT://h:\u00b2"],"timestamp":"1"}'.encode(),
        "LISTENER://host:port",
    ),
    ("broker", b'{"version":2,"endpoints":[],"timestamp":"1"}', "empty"),
    (
        "broker",
        b'{"version":5,"endpoints":["SSL://h:1"],"timestamp":"1","features":'
        b'{"metadata.version":{"min_version":9,"max_version":1}},'
        b'"listener_security_protocol_map":{"SSL":"SSL"}}',
        "min_version",
    ),
    ("topic", b'{"version":3,"partitions":{}}', "no partitions"),
    ("topic", b'{"version":3,"partitions":{"0":[1,1]}}', "twice"),
    ("topic", b'{"version":3,"partitions":{"0":[1],"2":[1]}}', "0..1"),
    ("topic", b'{"version":3,"partitions":{"a":[1]}}', "partition number"),
    # a digit int() does not read (superscript two): bad data, not a bare ValueError
    ("topic", '{"version":3,"partitions":{"\u00b2":[1]}}'.encode(), "partition number"),
    ("topic", b'{"version":3,"partitions":{"0":["1"]}}', "integers"),
    ("topic", b'{"version":3,"partitions":{"0":[1]},"topic_id":"short"}', "uuid"),
    ("topic", b'{"version":3,"partitions":{"0":[1]},"adding_replicas":{"5":[2]}}', "partition 5"),
    ("state", b'{"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1}', "isr"),
    (
        "state",
        b'{"version":1,"leader":-5,"leader_epoch":0,"controller_epoch":1,"isr":[]}',
        "leader",
    ),
    (
        "state",
        b'{"version":1,"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":[1],'
        b'"leader_recovery_state":7}',
        "leader_recovery_state",
    ),
    (
        "state",
        b'{"version":1,"leader":true,"leader_epoch":0,"controller_epoch":1,"isr":[1]}',
        "leader",
    ),
    ("reassign", b'{"version":1,"partitions":[{"topic":"t","partition":0}]}', "replicas"),
    ("config", b'{"version":1,"config":{"a":1}}', "config.a"),
    ("config", b'{"version":1,"config":[]}', "config"),
    (
        "acl",
        b'{"version":1,"acls":[{"principal":"alice","permissionType":"Allow",'
        b'"operation":"Read","host":"*"}]}',
        "Type:name",
    ),
    (
        "acl",
        b'{"version":1,"acls":[{"principal":"User:a","permissionType":"Maybe",'
        b'"operation":"Read","host":"*"}]}',
        "permissionType",
    ),
    (
        "acl",
        b'{"version":1,"acls":[{"principal":"User:a","permissionType":"Allow",'
        b'"operation":"Fly","host":"*"}]}',
        "operation",
    ),
    (
        "token",
        b'{"version":3,"owner":"alice","renewers":[],"issueTimestamp":1,'
        b'"maxTimestamp":1,"expiryTimestamp":1,"tokenId":"x"}',
        "Type:name",
    ),
    (
        "token",
        b'{"version":3,"owner":"User%3Aa","renewers":[],"issueTimestamp":1,'
        b'"maxTimestamp":1,"expiryTimestamp":1,"tokenId":"other"}',
        "znode name",
    ),
]


EMPTY_IS_ABSENT = {"producer_ids", "migration"}
"""Znodes Kafka (or other tools) create without data: no data means no value."""


@pytest.mark.parametrize(
    ("kind", "raw"),
    [
        (kind, raw)
        for raw in COMMON_CORRUPTIONS
        for kind in sorted(PARSERS)
        if raw or kind not in EMPTY_IS_ABSENT
    ],
)
def test_common_corruptions_name_the_path(kind: str, raw: bytes) -> None:
    path = f"/somewhere/{kind}"
    with pytest.raises(ZnodeFormatError) as info:
        PARSERS[kind](path, raw)
    assert info.value.path == path
    assert str(info.value).startswith(path + ": ")


def test_no_data_is_no_block_and_no_migration() -> None:
    assert cluster.parse_producer_id_block("/latest_producer_id_block", b"") is None
    assert cluster.parse_producer_id_block("/latest_producer_id_block", None) is None
    assert cluster.parse_migration("/migration", b"") == cluster.EMPTY_MIGRATION
    assert not cluster.parse_migration("/migration", None).copy_done


@pytest.mark.parametrize(("kind", "raw", "hint"), MALFORMED)
def test_specific_corruptions(kind: str, raw: bytes, hint: str) -> None:
    path = f"/somewhere/{kind}"
    with pytest.raises(ZnodeFormatError) as info:
        PARSERS[kind](path, raw)
    assert info.value.path == path
    assert hint in info.value.problem


@pytest.mark.parametrize(
    "text",
    [
        "salt=c2FsdA==,stored_key=c3RvcmVk,iterations=4096",
        "salt=!!!,stored_key=c3RvcmVk,server_key=c2VydmVy,iterations=4096",
        "salt=c2FsdA==,stored_key=c3RvcmVk,server_key=c2VydmVy,iterations=12",
        "salt=c2FsdA==,stored_key=c3RvcmVk,server_key=c2VydmVy,iterations=\u00b2",
        "garbage",
    ],
)
def test_malformed_scram_never_echoes_secrets(text: str) -> None:
    with pytest.raises(ZnodeFormatError) as info:
        configs.parse_scram("/config/users/u", "SCRAM-SHA-256", text)
    assert "c3RvcmVk" not in str(info.value) and "c2FsdA" not in str(info.value)


def test_malformed_quota_value() -> None:
    with pytest.raises(ZnodeFormatError, match="producer_byte_rate"):
        configs.quota_values("/config/users/u", {"producer_byte_rate": "fast"})


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "inf", "-1"])
def test_non_finite_or_negative_quota_values_are_malformed(value: str) -> None:
    """Kafka refuses them, and NaN or infinity would break every JSON the tools print."""
    with pytest.raises(ZnodeFormatError, match="must be finite and >= 0"):
        configs.quota_values("/config/users/u", {"producer_byte_rate": value})


def test_acl_change_resource_types_are_read_in_any_case() -> None:
    for text in (b"topic:t", b"Topic:t", b"TOPIC:t"):
        assert acls.parse_acl_change("/p", text, extended=False) == (2, "t", 3)
    assert acls.parse_acl_change("/p", b"transactionalId:x", extended=False)[0] == 5
