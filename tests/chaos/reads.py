"""The chaos client's reads and the results it records (:mod:`.workload`, for the
history check of :mod:`.history`).

A read asks a broker what it holds of one entity now, in the form the ledger's image
checks use (a topic's partition count, a config value, a quota, a SCRAM credential's
iterations, whether an ACL exists; ``ABSENT``). A broker answers from its metadata view
(as Kafka's brokers do), so a read observes *some* state the entity was in before it
completed, not necessarily the latest: the history records reads as stale.

:func:`outcome` turns what an admin call raised into the history's result: ERROR with
Kafka's error name for a broker's answer; UNKNOWN for a timeout or a lost connection.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaException, TopicCollection
from confluent_kafka.admin import (
    AclBindingFilter,
    AdminClient,
    ConfigResource,
    ResourceType,
    ScramMechanism,
)
from kio.index import load_request_schema

from migration.common.kafka_errors import ErrorCode, KafkaError, error_name
from migration.kafka.client import KafkaConnection
from migration.kafka.wire import build
from migration.records.codes import DYNAMIC_BROKER_CONFIG, TOPIC_CONFIG
from tests.chaos.history_models import ABSENT, ERROR, UNKNOWN

Observe = Callable[[], object]
"""What a broker answers an entity holds now (raises when it cannot say)."""

DESCRIBE_CLIENT_QUOTAS = 48


class NothingMatchedError(Exception):
    """A DeleteAcls answered with no ACL deleted. Not a definite outcome: a ZooKeeper
    broker that serves it from its own view may not have seen the ACL yet (nothing was
    deleted), or the request was retried after its first attempt committed (the retry
    matched nothing: it was deleted), as with Kafka's non-idempotent admin requests."""


class Reads:
    """Readers of one entity each, through ``admin`` (librdkafka) or, for client quotas
    (which confluent-kafka's AdminClient does not describe), one of ``bootstrap``'s
    brokers over Kafka's protocol."""

    def __init__(
        self, admin: AdminClient, bootstrap: str, rng: random.Random, timeout_s: float
    ) -> None:
        self.admin = admin
        self.brokers = [b.rsplit(":", 1) for b in bootstrap.split(",")]
        self.rng = rng
        self.timeout_s = timeout_s

    def topic(self, name: str) -> Observe:
        def observe() -> object:
            futures = self.admin.describe_topics(
                TopicCollection([name]), request_timeout=self.timeout_s
            )
            try:
                return len(futures[name].result(timeout=self.timeout_s * 2).partitions)
            except KafkaException as exc:
                if code(exc) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    return ABSENT
                raise

        return observe

    def config(self, resource_type: ResourceType, name: str, key: str) -> Observe:
        """The key's own dynamic value for the resource (a default or a static value is
        not the resource's: ABSENT)."""
        topic = resource_type == ResourceType.TOPIC
        own = TOPIC_CONFIG if topic else DYNAMIC_BROKER_CONFIG  # Kafka's ConfigSource

        def observe() -> object:
            resource = ConfigResource(resource_type, name)
            futures = self.admin.describe_configs([resource], request_timeout=self.timeout_s)
            entry = futures[resource].result(timeout=self.timeout_s * 2).get(key)
            source = getattr(entry, "source", None)
            return entry.value if getattr(source, "value", source) == own else ABSENT

        return observe

    def quota(self, user: str, key: str) -> Observe:
        def observe() -> object:
            host, port = self.rng.choice(self.brokers)
            components = [{"entity_type": "user", "match_type": 0, "match": user}]
            request = build(
                load_request_schema(DESCRIBE_CLIENT_QUOTAS, 1),
                {"components": components, "strict": True},
            )
            with KafkaConnection(host, int(port), self.timeout_s) as conn:
                answer = conn.request(request)
            if answer.error_code:
                raise refused(int(answer.error_code), answer.error_message or "")
            values = [v.value for e in answer.entries or () for v in e.values if v.key == key]
            return values[0] if values else ABSENT

        return observe

    def scram(self, user: str) -> Observe:
        def observe() -> object:
            futures: Any = self.admin.describe_user_scram_credentials(
                [user], request_timeout=self.timeout_s
            )
            try:
                found = futures[user].result(timeout=self.timeout_s * 2).scram_credential_infos
            except KafkaException as exc:
                if code(exc) == ErrorCode.RESOURCE_NOT_FOUND:
                    return ABSENT
                raise
            sha = [c.iterations for c in found if c.mechanism == ScramMechanism.SCRAM_SHA_256]
            return sha[0] if sha else ABSENT

        return observe

    def acl(self, found: AclBindingFilter) -> Observe:
        def observe() -> object:
            future = self.admin.describe_acls(found, request_timeout=self.timeout_s)
            return bool(future.result(timeout=self.timeout_s * 2))

        return observe


# --- outcomes --------------------------------------------------------------------------


def refused(error_code: int, message: str) -> KafkaError:
    """A broker's refusal as the project's :class:`KafkaError`."""
    try:
        return KafkaError(ErrorCode(error_code), message)
    except ValueError:
        return KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"error {error_code}: {message}")


def code(exc: BaseException) -> int | None:
    """The Kafka error code ``exc`` carries (a broker's answer or librdkafka's own,
    negative, error), or None."""
    if isinstance(exc, KafkaException) and exc.args and hasattr(exc.args[0], "code"):
        found = exc.args[0].code()
        return int(found) if isinstance(found, int) else None
    if isinstance(exc, KafkaError):
        return int(exc.code)
    return None


def outcome(exc: BaseException) -> tuple[str, str]:
    """An operation's result from what it raised, and the error's name: ERROR for a
    broker's answer; UNKNOWN for librdkafka's own errors (negative: _TIMED_OUT,
    _TRANSPORT...), REQUEST_TIMED_OUT (a forwarded request goes on) and anything else
    (a future that timed out, a lost connection)."""
    if isinstance(exc, NothingMatchedError):
        return ERROR, "NOTHING_MATCHED"
    found = code(exc)
    if found is None:
        return UNKNOWN, type(exc).__name__
    if found <= 0 or found == ErrorCode.REQUEST_TIMED_OUT:
        named = exc.args[0].name() if isinstance(exc, KafkaException) else error_name(found)
        return UNKNOWN, str(named)
    return ERROR, error_name(found)
