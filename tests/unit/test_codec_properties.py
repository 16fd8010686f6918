"""Property tests: for any value Kafka could store, parse(render(value)) == value."""

from __future__ import annotations

import base64

from hypothesis import given
from hypothesis import strategies as st

from migration.records import codes
from migration.zk.model import acls, brokers, cluster, configs, tokens, topics

ids = st.integers(min_value=0, max_value=2**31 - 1)
small = st.integers(min_value=0, max_value=10_000)
names = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=30
)
topic_names = st.from_regex(r"[a-zA-Z0-9._-]{1,40}", fullmatch=True).filter(
    lambda n: n not in (".", "..")
)
uuids = st.binary(min_size=16, max_size=16).map(
    lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
)
hosts = st.sampled_from(["h", "broker-1.kafka.svc", "10.0.0.1", "::1", "fe80::2"])
principals = st.builds(lambda t, n: f"{t}:{n}", st.sampled_from(["User", "Group"]), names)


@st.composite
def endpoints(draw: st.DrawFn) -> tuple[brokers.Endpoint, ...]:
    listeners = draw(
        st.lists(
            st.from_regex(r"[A-Z][A-Z_]{0,10}", fullmatch=True), min_size=1, max_size=4, unique=True
        )
    )
    return tuple(
        brokers.Endpoint(
            name,
            draw(hosts),
            draw(st.integers(1, 65535)),
            draw(st.sampled_from(brokers.SECURITY_PROTOCOLS)),
        )
        for name in listeners
    )


@given(endpoints(), ids, st.one_of(st.none(), names), small, small)
def test_broker_v5(
    eps: tuple[brokers.Endpoint, ...], bid: int, rack: str | None, lo: int, span: int
) -> None:
    value = brokers.BrokerRegistration(
        bid,
        eps,
        1_700_000_000_000,
        9999,
        rack,
        {"metadata.version": brokers.FeatureRange(lo, lo + span)},
        5,
    )
    assert brokers.parse_broker("/b", brokers.render_broker(value), bid) == value


@st.composite
def assignments(draw: st.DrawFn) -> topics.TopicAssignment:
    count = draw(st.integers(1, 20))
    parts = {
        p: tuple(draw(st.lists(ids, min_size=1, max_size=5, unique=True))) for p in range(count)
    }
    moving = draw(st.sets(st.integers(0, count - 1), max_size=3))
    adding = {p: parts[p][:1] for p in moving}
    removing = {p: parts[p][-1:] for p in moving}
    topic_id = draw(st.one_of(st.none(), uuids))
    return topics.TopicAssignment(draw(topic_names), parts, topic_id, adding, removing, 3)


@given(assignments())
def test_topic(value: topics.TopicAssignment) -> None:
    assert topics.parse_topic("/t", topics.render_topic(value), value.name) == value


@given(
    st.integers(-1, 2**31 - 1),
    small,
    small,
    st.lists(ids, max_size=5),
    st.sampled_from([topics.RECOVERED, topics.RECOVERING]),
)
def test_partition_state(leader: int, le: int, ce: int, isr: list[int], lrs: int) -> None:
    value = topics.PartitionState(leader, le, ce, tuple(isr), lrs)
    assert topics.parse_partition_state("/s", topics.render_partition_state(value)) == value


@given(st.dictionaries(st.from_regex(r"[a-z.]{1,20}", fullmatch=True), names, max_size=8))
def test_entity_config(config: dict[str, str]) -> None:
    raw = configs.render_entity_config(config)
    assert configs.parse_entity_config("/c", raw, "topics", "t").config == config


@given(names)
def test_sanitize_round_trip(name: str) -> None:
    sanitized = configs.sanitize(name)
    assert "/" not in sanitized and "*" not in sanitized
    assert configs.desanitize(sanitized) == name


@given(st.floats(min_value=0, max_value=1e15, allow_nan=False))
def test_quota_value_round_trip(value: float) -> None:
    rendered = configs.render_quota_value(value)
    assert configs.quota_values("/q", {"producer_byte_rate": rendered}) == {
        "producer_byte_rate": value
    }


@given(
    st.sampled_from([1, 2]),
    st.binary(min_size=1, max_size=64),
    st.binary(min_size=1, max_size=64),
    st.binary(min_size=1, max_size=64),
    st.integers(4096, 16384),
)
def test_scram(mech: int, salt: bytes, stored: bytes, server: bytes, iterations: int) -> None:
    cred = configs.ScramCredential(mech, salt, stored, server, iterations)
    name = "SCRAM-SHA-256" if mech == 1 else "SCRAM-SHA-512"
    assert configs.parse_scram("/u", name, configs.render_scram(cred)) == cred


@st.composite
def acl_entries(draw: st.DrawFn) -> acls.AclEntry:
    return acls.AclEntry(
        draw(principals),
        draw(st.sampled_from(["*", "10.0.0.1"])),
        draw(st.sampled_from(sorted(codes.OPERATION_NAMES))),
        draw(st.sampled_from(sorted(codes.PERMISSION_NAMES))),
    )


@given(
    st.lists(acl_entries(), max_size=6),
    st.sampled_from(sorted(codes.RESOURCE_TYPES)),
    st.booleans(),
)
def test_acls(entries: list[acls.AclEntry], rtype: str, prefixed: bool) -> None:
    value = acls.parse_acls("/a", acls.render_acls(tuple(entries)), rtype, "r", prefixed)
    assert value.entries == tuple(entries)
    assert value.resource_type == codes.RESOURCE_TYPES[rtype]


@given(
    st.from_regex(r"[A-Za-z0-9_-]{1,22}", fullmatch=True),
    principals,
    principals,
    st.lists(principals, max_size=3),
    small,
    small,
    small,
)
def test_delegation_token(
    token_id: str, owner: str, requester: str, renewers: list[str], a: int, b: int, c: int
) -> None:
    value = tokens.DelegationToken(token_id, owner, requester, tuple(renewers), a, b, c)
    path = f"/delegation_token/tokens/{token_id}"
    assert tokens.parse_token(path, tokens.render_token(value)) == value


@given(ids, small, st.one_of(st.none(), small))
def test_controller(bid: int, ts: int, epoch: int | None) -> None:
    value = cluster.ControllerZnode(bid, ts, epoch)
    assert cluster.parse_controller("/controller", cluster.render_controller(value)) == value


@given(ids, small, small, small)
def test_migration(cid: int, epoch: int, offset: int, mepoch: int) -> None:
    value = cluster.MigrationZnode(cid, epoch, offset, mepoch)
    assert cluster.parse_migration("/migration", cluster.render_migration(value)) == value


@given(
    st.booleans(),
    st.dictionaries(st.from_regex(r"[a-z.]{1,20}", fullmatch=True), small),
    st.sampled_from([1, 2]),
)
def test_feature(enabled: bool, levels: dict[str, int], version: int) -> None:
    value = cluster.FeatureZnode(enabled, levels, version)
    assert cluster.parse_feature("/feature", cluster.render_feature(value)) == value


def test_describe_configs_sources_are_kafkas_config_source_codes() -> None:
    # Kafka's DescribeConfigsResponse ConfigSource: DYNAMIC_TOPIC_CONFIG 1,
    # DYNAMIC_BROKER_CONFIG 2, DYNAMIC_DEFAULT_BROKER_CONFIG 3 (4 is STATIC_BROKER_CONFIG),
    # DEFAULT_CONFIG 5.
    from migration.records import codes

    sources = (
        codes.TOPIC_CONFIG,
        codes.DYNAMIC_BROKER_CONFIG,
        codes.DYNAMIC_DEFAULT_BROKER_CONFIG,
        codes.DEFAULT_CONFIG,
    )
    assert sources == (1, 2, 3, 5)
