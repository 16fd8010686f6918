"""Which configs a topic or a broker may be given, and what values they take: Kafka's
rules, so that what a migrated cluster holds passes and what Kafka refuses is refused.

- Topics: Kafka's whole topic-config list, each value checked against its type; an
  unknown name is refused.
- Brokers (dynamic configs, per broker or the cluster default): unknown and custom
  keys are accepted as Kafka does (plugins read them), and so is any
  ``listener.name.<listener>.*``; a known *static* config (set in server.properties,
  read once at start) is refused; known dynamic ones are checked against their type.
- Deleting a config is never refused for its name.

Both kinds derive from one table, :data:`RULES`: a row a config, a topic config and its
dynamic broker synonym on one row, so that the two are checked alike.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from migration.common.limits import INT32_MAX, INT64_MAX
from migration.common.text import shown
from migration.records.codes import TOPIC_RESOURCE

Check = Callable[[str], str | None]


def _long(minimum: int, maximum: int = INT64_MAX) -> Check:
    """Kafka's LONG (or, with ``maximum=INT32_MAX``, INT) config type, at least ``minimum``."""

    def check(value: str) -> str | None:
        try:
            number = int(value)
        except ValueError:
            return "is not a whole number"
        if number < minimum:
            return f"must be at least {minimum}"
        if number > maximum:
            return f"must be at most {maximum} ({'an int' if maximum == INT32_MAX else 'a long'})"
        return None

    return check


def _int(minimum: int, maximum: int = INT32_MAX) -> Check:
    return _long(minimum, maximum)


def _one_of(*choices: str) -> Check:
    return lambda v: None if v in choices else f"must be one of {', '.join(choices)}"


def _boolean(value: str) -> str | None:
    return None if value in ("true", "false") else "must be true or false"


def _ratio(value: str) -> str | None:
    try:
        ok = 0 <= float(value) <= 1
    except ValueError:
        ok = False
    return None if ok else "must be a number between 0 and 1"


def _cleanup_policy(value: str) -> str | None:
    parts = {p.strip() for p in value.split(",")}
    return None if parts and parts <= {"delete", "compact"} else "must be delete, compact or both"


_THROTTLED = re.compile(r"\*|\d+:\d+(,\d+:\d+)*|")


def _throttled_replicas(value: str) -> str | None:
    """``partition:broker,...`` or ``*`` (empty: none)."""
    return None if _THROTTLED.fullmatch(value.replace(" ", "")) else "must be * or p:b,p:b,..."


def _anything(value: str) -> str | None:
    return None


_TIMESTAMP_TYPE = _one_of("CreateTime", "LogAppendTime")


_COMPRESSION = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
_LONG_MAX = str(INT64_MAX)  # Long.MAX_VALUE, where Kafka's default is it


@dataclass(frozen=True, slots=True)
class ConfigRule:
    """One of Kafka's configs: its name as a topic config and Kafka's default there
    (what DescribeConfigs reports, source DEFAULT_CONFIG, for a topic that does not set
    it), its name as a dynamic broker config (Kafka's synonym: a topic's ``retention.ms``
    is a broker's ``log.retention.ms``), and the values it takes. A None name: not a
    config of that kind."""

    topic: str | None
    default: str | None
    broker: str | None
    check: Check


RULES = tuple(
    ConfigRule(*row)
    for row in (
        # topic config, its default, dynamic broker config, the values it takes
        ("cleanup.policy", "delete", "log.cleanup.policy", _cleanup_policy),
        ("compression.type", "producer", "compression.type", _one_of(*_COMPRESSION)),
        ("compression.gzip.level", "-1", None, _int(-1, 9)),
        ("compression.lz4.level", "9", None, _int(1, 17)),
        ("compression.zstd.level", "3", None, _int(-131072, 22)),
        ("delete.retention.ms", "86400000", "log.cleaner.delete.retention.ms", _long(0)),
        ("file.delete.delay.ms", "60000", "log.segment.delete.delay.ms", _long(0)),
        ("flush.messages", _LONG_MAX, "log.flush.interval.messages", _long(1)),
        ("flush.ms", _LONG_MAX, "log.flush.interval.ms", _long(0)),
        ("follower.replication.throttled.replicas", "", None, _throttled_replicas),
        ("index.interval.bytes", "4096", "log.index.interval.bytes", _int(0)),
        ("leader.replication.throttled.replicas", "", None, _throttled_replicas),
        ("local.retention.bytes", "-2", None, _long(-2)),
        ("local.retention.ms", "-2", None, _long(-2)),
        ("max.compaction.lag.ms", _LONG_MAX, "log.cleaner.max.compaction.lag.ms", _long(1)),
        ("max.message.bytes", "1048588", "message.max.bytes", _int(0)),
        ("message.downconversion.enable", "true", None, _boolean),
        # deprecated; migrated clusters still carry it
        ("message.format.version", "3.0-IV1", None, _anything),
        ("message.timestamp.after.max.ms", _LONG_MAX, None, _long(0)),
        ("message.timestamp.before.max.ms", _LONG_MAX, None, _long(0)),
        ("message.timestamp.difference.max.ms", _LONG_MAX, None, _long(0)),
        ("message.timestamp.type", "CreateTime", "log.message.timestamp.type", _TIMESTAMP_TYPE),
        ("min.cleanable.dirty.ratio", "0.5", "log.cleaner.min.cleanable.ratio", _ratio),
        ("min.compaction.lag.ms", "0", "log.cleaner.min.compaction.lag.ms", _long(0)),
        ("min.insync.replicas", "1", "min.insync.replicas", _int(1)),
        ("preallocate", "false", "log.preallocate", _boolean),
        ("remote.log.copy.disable", "false", None, _boolean),
        ("remote.log.delete.on.disable", "false", None, _boolean),
        ("remote.storage.enable", "false", None, _boolean),
        ("retention.bytes", "-1", "log.retention.bytes", _long(-1)),
        ("retention.ms", "604800000", "log.retention.ms", _long(-1)),
        ("segment.bytes", "1073741824", "log.segment.bytes", _int(14)),
        ("segment.index.bytes", "10485760", "log.index.size.max.bytes", _int(4)),
        ("segment.jitter.ms", "0", None, _long(0)),
        ("segment.ms", "604800000", "log.roll.ms", _long(1)),
        ("unclean.leader.election.enable", "false", "unclean.leader.election.enable", _boolean),
        # dynamic broker configs that no topic config stands for
        (None, None, "background.threads", _int(1)),
        (None, None, "follower.replication.throttled.rate", _long(0)),
        (None, None, "leader.replication.throttled.rate", _long(0)),
        (None, None, "log.cleaner.backoff.ms", _long(0)),
        (None, None, "log.cleaner.dedupe.buffer.size", _long(0)),
        (None, None, "log.cleaner.io.buffer.size", _int(0)),
        (None, None, "log.cleaner.io.max.bytes.per.second", _anything),  # a double
        (None, None, "log.cleaner.threads", _int(0)),
        (None, None, "max.connection.creation.rate", _int(0)),
        (None, None, "max.connections", _int(0)),
        (None, None, "max.connections.per.ip", _int(0)),
        (None, None, "max.connections.per.ip.overrides", _anything),
        (None, None, "num.io.threads", _int(1)),
        (None, None, "num.network.threads", _int(1)),
        (None, None, "num.recovery.threads.per.data.dir", _int(1)),
        (None, None, "num.replica.fetchers", _int(1)),
        (None, None, "producer.id.expiration.ms", _int(1)),
        (None, None, "replica.alter.log.dirs.io.max.bytes.per.second", _long(0)),
    )
)

TOPIC_CONFIGS: dict[str, Check] = {r.topic: r.check for r in RULES if r.topic is not None}
TOPIC_DEFAULTS: dict[str, str] = {
    r.topic: r.default for r in RULES if r.topic is not None and r.default is not None
}
DYNAMIC_BROKER_CONFIGS: dict[str, Check] = {
    r.broker: r.check for r in sorted(RULES, key=lambda r: r.broker or "") if r.broker is not None
}
assert set(TOPIC_DEFAULTS) == set(TOPIC_CONFIGS), "every topic config has its default"

# Known broker configs that are read once at start (server.properties), never dynamic.
STATIC_BROKER_CONFIGS = frozenset(
    {
        "authorizer.class.name",
        "auto.create.topics.enable",
        "auto.leader.rebalance.enable",
        "broker.id",
        "broker.id.generation.enable",
        "broker.rack",
        "control.plane.listener.name",
        "controller.listener.names",
        "controller.quorum.voters",
        "default.replication.factor",
        "delete.topic.enable",
        "group.initial.rebalance.delay.ms",
        "inter.broker.listener.name",
        "inter.broker.protocol.version",
        "zookeeper.metadata.migration.enable",
        "log.dir",
        "log.dirs",
        "metadata.log.dir",
        "node.id",
        "num.partitions",
        "offsets.topic.num.partitions",
        "offsets.topic.replication.factor",
        "password.encoder.secret",
        "process.roles",
        "reserved.broker.max.id",
        "transaction.state.log.min.isr",
        "transaction.state.log.replication.factor",
        "zookeeper.connect",
        "zookeeper.session.timeout.ms",
        "zookeeper.set.acl",
    }
)


def validate_config(resource_type: int, name: str, value: str | None) -> str | None:
    """Why setting ``name`` to ``value`` is refused (``value`` None: a deletion, never
    refused), or None."""
    if value is None:
        return None
    if resource_type == TOPIC_RESOURCE:
        check = TOPIC_CONFIGS.get(name)
        if check is None:
            return f"unknown topic config {shown(name)}"
        return check(value)
    if name in STATIC_BROKER_CONFIGS:
        return f"{name} is a static broker config (server.properties); it cannot be set dynamically"
    check = DYNAMIC_BROKER_CONFIGS.get(name)
    return None if check is None else check(value)  # custom and listener.name.* keys pass
