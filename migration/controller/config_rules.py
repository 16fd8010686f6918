"""Which configs a topic or a broker may be given, and what values they take: Kafka's
rules, so that what a migrated cluster holds passes and what Kafka refuses is refused.

- Topics: Kafka's whole topic-config list, each value checked against its type; an
  unknown name is refused.
- Brokers (dynamic configs, per broker or the cluster default): unknown and custom
  keys are accepted as Kafka does (plugins read them), and so is any
  ``listener.name.<listener>.*``; a known *static* config (set in server.properties,
  read once at start) is refused; known dynamic ones are checked against their type.
- Deleting a config is never refused for its name.
"""

from __future__ import annotations

import re
from collections.abc import Callable

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


_COMPRESSION = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

TOPIC_CONFIGS: dict[str, Check] = {
    "cleanup.policy": _cleanup_policy,
    "compression.type": _one_of(*_COMPRESSION),
    "compression.gzip.level": _int(-1, 9),
    "compression.lz4.level": _int(1, 17),
    "compression.zstd.level": _int(-131072, 22),
    "delete.retention.ms": _long(0),
    "file.delete.delay.ms": _long(0),
    "flush.messages": _long(1),
    "flush.ms": _long(0),
    "follower.replication.throttled.replicas": _throttled_replicas,
    "index.interval.bytes": _int(0),
    "leader.replication.throttled.replicas": _throttled_replicas,
    "local.retention.bytes": _long(-2),
    "local.retention.ms": _long(-2),
    "max.compaction.lag.ms": _long(1),
    "max.message.bytes": _int(0),
    "message.downconversion.enable": _boolean,
    "message.format.version": _anything,  # deprecated; migrated clusters still carry it
    "message.timestamp.after.max.ms": _long(0),
    "message.timestamp.before.max.ms": _long(0),
    "message.timestamp.difference.max.ms": _long(0),
    "message.timestamp.type": _one_of("CreateTime", "LogAppendTime"),
    "min.cleanable.dirty.ratio": _ratio,
    "min.compaction.lag.ms": _long(0),
    "min.insync.replicas": _int(1),
    "preallocate": _boolean,
    "remote.log.copy.disable": _boolean,
    "remote.log.delete.on.disable": _boolean,
    "remote.storage.enable": _boolean,
    "retention.bytes": _long(-1),
    "retention.ms": _long(-1),
    "segment.bytes": _int(14),
    "segment.index.bytes": _int(4),
    "segment.jitter.ms": _long(0),
    "segment.ms": _long(1),
    "unclean.leader.election.enable": _boolean,
}

# Kafka's defaults for the topic configs above (what DescribeConfigs reports, source
# DEFAULT_CONFIG, for a topic that does not set one). Long.MAX_VALUE where Kafka has it.
_LONG_MAX = str(INT64_MAX)
TOPIC_DEFAULTS: dict[str, str] = {
    "cleanup.policy": "delete", "compression.type": "producer", "compression.gzip.level": "-1",
    "compression.lz4.level": "9", "compression.zstd.level": "3",
    "delete.retention.ms": "86400000", "file.delete.delay.ms": "60000",
    "flush.messages": _LONG_MAX, "flush.ms": _LONG_MAX,
    "follower.replication.throttled.replicas": "", "index.interval.bytes": "4096",
    "leader.replication.throttled.replicas": "", "local.retention.bytes": "-2",
    "local.retention.ms": "-2", "max.compaction.lag.ms": _LONG_MAX,
    "max.message.bytes": "1048588", "message.downconversion.enable": "true",
    "message.format.version": "3.0-IV1", "message.timestamp.after.max.ms": _LONG_MAX,
    "message.timestamp.before.max.ms": _LONG_MAX,
    "message.timestamp.difference.max.ms": _LONG_MAX, "message.timestamp.type": "CreateTime",
    "min.cleanable.dirty.ratio": "0.5", "min.compaction.lag.ms": "0",
    "min.insync.replicas": "1", "preallocate": "false", "remote.log.copy.disable": "false",
    "remote.log.delete.on.disable": "false", "remote.storage.enable": "false",
    "retention.bytes": "-1", "retention.ms": "604800000", "segment.bytes": "1073741824",
    "segment.index.bytes": "10485760", "segment.jitter.ms": "0", "segment.ms": "604800000",
    "unclean.leader.election.enable": "false",
}  # fmt: skip
assert set(TOPIC_DEFAULTS) == set(TOPIC_CONFIGS), "every topic config has its default"

DYNAMIC_BROKER_CONFIGS: dict[str, Check] = {
    "background.threads": _int(1),
    "compression.type": _one_of(*_COMPRESSION),
    "follower.replication.throttled.rate": _long(0),
    "leader.replication.throttled.rate": _long(0),
    "log.cleaner.backoff.ms": _long(0),
    "log.cleaner.dedupe.buffer.size": _long(0),
    "log.cleaner.delete.retention.ms": _long(0),
    "log.cleaner.io.buffer.size": _int(0),
    "log.cleaner.io.max.bytes.per.second": _anything,  # a double
    "log.cleaner.max.compaction.lag.ms": _long(1),
    "log.cleaner.min.cleanable.ratio": _ratio,
    "log.cleaner.min.compaction.lag.ms": _long(0),
    "log.cleaner.threads": _int(0),
    "log.cleanup.policy": _cleanup_policy,
    "log.flush.interval.messages": _long(1),
    "log.flush.interval.ms": _long(0),
    "log.index.interval.bytes": _int(0),
    "log.index.size.max.bytes": _int(4),
    "log.message.timestamp.type": _one_of("CreateTime", "LogAppendTime"),
    "log.preallocate": _boolean,
    "log.retention.bytes": _long(-1),
    "log.retention.ms": _long(-1),
    "log.roll.ms": _long(1),
    "log.segment.bytes": _int(14),
    "log.segment.delete.delay.ms": _long(0),
    "max.connection.creation.rate": _int(0),
    "max.connections": _int(0),
    "max.connections.per.ip": _int(0),
    "max.connections.per.ip.overrides": _anything,
    "message.max.bytes": _int(0),
    "min.insync.replicas": _int(1),
    "num.io.threads": _int(1),
    "num.network.threads": _int(1),
    "num.recovery.threads.per.data.dir": _int(1),
    "num.replica.fetchers": _int(1),
    "producer.id.expiration.ms": _int(1),
    "replica.alter.log.dirs.io.max.bytes.per.second": _long(0),
    "unclean.leader.election.enable": _boolean,
}

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
