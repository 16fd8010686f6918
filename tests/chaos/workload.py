"""The chaos runs' client: admin changes of every kind Kafka's protocol carries, made
through the brokers with real Kafka clients the whole run, and a ledger of what was
acknowledged.

One thread, one operation at a time. Each change names one entity (a topic, a topic's
or a broker's config key, a user's quota, a SCRAM user, an ACL); an acknowledged change
makes the entity's expected state definite. A change refused with an error of
:data:`tests.chaos.history.NO_EFFECT` (decided from the request alone, before anything
is written) had no effect and changes nothing. Any other change that was not
acknowledged (an error, a timeout) may or may not have landed, now or later (a request
still queued somewhere), with no bound in time (see :mod:`tests.chaos.history`: a
broker's forwarding retries, bytes a partition holds, a stopped controller's queue, an
uncommitted append a later leader commits): so an unacknowledged value stays in
``Entity.landing`` for the rest of the run, and a later acknowledged write does not
rule it out (the history check orders them; the ledger only checks membership). A
topic, an ACL or a SCRAM user is then *retired* — never changed again, and checked
only against the two states it can be in: what to ask of it next depends on the state
it is in (create partitions to N, delete what exists). A config key or a
quota goes on being set and deleted (each set is valid from any state): its final
state is the last acknowledged value or one of the values that may still land
(``Entity.landing``), and the history check has unacknowledged writes followed by
acknowledged ones to reason about. :meth:`Ledger.missing` checks an image against the
ledger.

Every operation, and a read now and then (describe topics, configs, ACLs, quotas, SCRAM
users: what a broker's metadata view holds), is recorded in ``Ledger.history`` with its
invoke and complete times and result (:class:`tests.chaos.history.Op`), for the
linearizability check of :mod:`tests.chaos.history`.

Clients: confluent-kafka's AdminClient (librdkafka) for topics, partitions, configs,
ACLs and SCRAM; the project's Kafka-protocol client for client quotas, which
confluent-kafka's Python AdminClient does not offer.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from migration.image.model import MetadataImage
from migration.kafka.admin_client import KafkaAdminClient
from migration.proto import controller_pb2 as cpb
from migration.records import codes
from tests.chaos.history_models import (
    ABSENT,
    ERROR,
    NO_EFFECT,
    OK,
    READ,
    READ_AT_LEAST,
    READS,
    UNKNOWN,
    Op,
)
from tests.chaos.reads import NothingMatchedError, Reads, outcome, refused

TOPIC, BROKER = codes.TOPIC_RESOURCE, codes.BROKER_RESOURCE  # ConfigResource type codes
SCRAM_SHA_256 = 1
BROKER_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
REQUEST_S = 20.0  # librdkafka's own bound on one admin request (it may wait for a broker)
ACK_TIMEOUT_S = 60.0

Check = Callable[[MetadataImage], object]
"""What an image holds for one entity, comparable with the ledger's expectation."""


def topic_partitions(name: str) -> Check:
    def read(image: MetadataImage) -> object:
        topic = image.topic(name)
        return ABSENT if topic is None else len(topic.partitions)

    return read


def config_value(resource_type: int, name: str, key: str) -> Check:
    def read(image: MetadataImage) -> object:
        return image.config(resource_type, name).get(key, ABSENT)

    return read


def quota_value(user: str, key: str) -> Check:
    def read(image: MetadataImage) -> object:
        return image.quotas.get((("user", user),), {}).get(key, ABSENT)

    return read


def scram_iterations(user: str) -> Check:
    def read(image: MetadataImage) -> object:
        found = image.scram.get((user, SCRAM_SHA_256))
        return ABSENT if found is None else found.iterations

    return read


def acl_present(principal: str, topic: str) -> Check:
    def read(image: MetadataImage) -> object:
        return any(
            a.principal == principal and a.resource_name == topic for a in image.acls.values()
        )

    return read


@dataclass
class Entity:
    """One thing the workload changes: what it should be (``expected``, or any of
    ``landing``: values unacknowledged sets may still leave), or, retired, what it may be
    (``possible``). ``model``: its kind in :data:`tests.chaos.history.MODELS`;
    ``observe``: what a broker answers it holds now (raises when it cannot say)."""

    name: str
    read: Check
    expected: object
    possible: tuple[object, ...] = ()
    acked_at: str = ""  # the phase the last acknowledged change was made in
    model: str = "register"
    landing: tuple[object, ...] = ()
    observe: Callable[[], object] | None = None

    @property
    def retired(self) -> bool:
        return bool(self.possible)


@dataclass
class Ledger:
    entities: dict[str, Entity] = field(default_factory=dict)
    acked: int = 0
    unacked: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    history: list[Op] = field(default_factory=list)
    finals: dict[str, dict[str, Any]] = field(default_factory=dict)  # store: phases, final

    def missing(self, image: MetadataImage, phases: set[str] | None = None) -> list[str]:
        """Every entity whose state in ``image`` is not what was acknowledged (only the
        entities last acknowledged in ``phases``, when given), one line each."""
        out = []
        for e in self.entities.values():
            if phases is not None and e.acked_at not in phases:
                continue
            held = e.read(image)
            allowed = e.possible or (e.expected, *e.landing)
            if held not in allowed:
                out.append(f"{e.name}: holds {held!r}, acknowledged {allowed!r} ({e.acked_at})")
        return out


class Workload(threading.Thread):
    """Changes ``bootstrap``'s metadata until :meth:`stop`; ``phase()`` names the
    migration phase each acknowledgement is recorded under."""

    def __init__(self, bootstrap: str, seed: int, phase: Callable[[], str]) -> None:
        super().__init__(name="chaos-workload", daemon=True)
        self.rng = random.Random(seed)
        self.phase = phase
        self.ledger = Ledger()
        self.admin = AdminClient(
            {
                "bootstrap.servers": bootstrap,
                "request.timeout.ms": 30_000,
                "log_level": 2,
                "topic.metadata.refresh.interval.ms": 2000,
            }
        )
        self.reads = Reads(self.admin, bootstrap, self.rng, REQUEST_S)
        self.quota_client = KafkaAdminClient(bootstrap, timeout_s=30.0)
        self._done = threading.Event()
        self._n = 0
        self.errors: list[str] = []  # the last few refusals, for the run's report

    def stop(self) -> None:
        self._done.set()
        self.join(timeout=ACK_TIMEOUT_S * 3)

    def run(self) -> None:
        kinds: list[tuple[Callable[[], None], int]] = [
            (self._create_topic, 4), (self._create_partitions, 2), (self._delete_topic, 1),
            (self._topic_config, 3), (self._broker_config, 2), (self._quota, 2),
            (self._scram, 2), (self._delete_scram, 1), (self._create_acl, 2),
            (self._delete_acl, 1), (self._read, 4),
        ]  # fmt: skip
        actions, weights = zip(*kinds, strict=True)
        while not self._done.wait(0.05):
            self.rng.choices(actions, weights)[0]()

    # --- bookkeeping -------------------------------------------------------------------

    def _next(self, prefix: str) -> str:
        self._n += 1
        return f"chaos-{prefix}-{self._n}"

    def _live(self, prefix: str, alive: Callable[[Entity], bool]) -> Entity | None:
        choices = [
            e
            for e in self.ledger.entities.values()
            if e.name.startswith(prefix) and not e.retired and alive(e)
        ]
        return self.rng.choice(choices) if choices else None

    def _record(
        self, entity: Entity, f: str, value: object, began: float, result: str, error: str = ""
    ) -> None:
        done = None if result == UNKNOWN else time.monotonic()
        op = Op(
            len(self.ledger.history) + 1, entity.name, entity.model, f, value, result,
            began, done, error, stale=result != OK or f in READS, phase=self.phase(),
        )  # fmt: skip
        self.ledger.history.append(op)

    def _apply(
        self, kind: str, entity: Entity, op: tuple[str, object], after: object,
        call: Callable[[], Any],
    ) -> None:  # fmt: skip
        """Make one change (``op``: the history's operation and value); acknowledged:
        ``after`` is expected; otherwise it may land (see the module doc)."""
        before = entity.expected
        self.ledger.entities[entity.name] = entity
        began = time.monotonic()
        try:
            call()
        except Exception as exc:
            result, error = outcome(exc)
            self._record(entity, *op, began, result, error)
            if isinstance(exc, NothingMatchedError):  # answered, not a definite outcome
                name = f"{kind} (matched nothing)"
                self.ledger.by_kind[name] = self.ledger.by_kind.get(name, 0) + 1
            else:
                self.ledger.unacked += 1
                at = f"{self.phase()} +{time.monotonic() - began:.1f} s"
                self.errors = [*self.errors[-9:], f"{kind} {entity.name} ({at}): {exc!r}"]
            if result == ERROR and error in NO_EFFECT:  # refused before any write
                return
            if entity.model == "register":
                entity.landing = (*entity.landing, after)
            else:
                entity.possible = (before, after)
            return
        self._record(entity, *op, began, OK)
        self.ledger.acked += 1
        self.ledger.by_kind[kind] = self.ledger.by_kind.get(kind, 0) + 1
        entity.expected, entity.acked_at = after, self.phase()

    @staticmethod
    def _wait(futures: dict[Any, Any]) -> None:
        for f in futures.values():
            f.result(timeout=ACK_TIMEOUT_S)

    # --- reads: what a broker's view holds, recorded as observations ---------------------

    def _read(self) -> None:
        readable = [e for e in self.ledger.entities.values() if e.observe is not None]
        if not readable:
            return
        entity = self.rng.choice(readable)
        f = READ_AT_LEAST if entity.model == "topic" else READ
        began = time.monotonic()
        assert entity.observe is not None
        try:
            seen = entity.observe()
        except Exception as exc:
            self._record(entity, f, None, began, UNKNOWN, outcome(exc)[1])
            return
        self._record(entity, f, seen, began, OK)

    # --- the changes ---------------------------------------------------------------------
    # Topics named "kept" are never deleted (their configs are checked); "doomed" ones may
    # be: a deleted topic's config goes with it.

    def _create_topic(self) -> None:
        name = self._next(self.rng.choice(("kept", "kept", "doomed")))
        partitions = self.rng.randint(1, 4)
        replicas = self.rng.randint(2, 3)
        entity = Entity(
            f"topic:{name}", topic_partitions(name), ABSENT, model="topic",
            observe=self.reads.topic(name),
        )  # fmt: skip
        new = NewTopic(name, partitions, replicas)
        self._apply(
            "create-topic", entity, ("create", partitions), partitions,
            lambda: self._wait(self.admin.create_topics([new], request_timeout=REQUEST_S)),
        )  # fmt: skip

    def _topic(self, kind: str) -> tuple[Entity, str] | None:
        entity = self._live(f"topic:chaos-{kind}-", lambda e: e.expected != ABSENT)
        return None if entity is None else (entity, entity.name.removeprefix("topic:"))

    def _create_partitions(self) -> None:
        if (found := self._topic(self.rng.choice(("kept", "doomed")))) is None:
            return
        entity, name = found
        more = int(str(entity.expected)) + self.rng.randint(1, 2)
        self._apply(
            "create-partitions", entity, ("create-partitions", more), more,
            lambda: self._wait(self.admin.create_partitions(
                [NewPartitions(name, more)], request_timeout=REQUEST_S
            )),
        )  # fmt: skip

    def _delete_topic(self) -> None:
        if (found := self._topic("doomed")) is None:
            return
        entity, name = found
        self._apply(
            "delete-topic", entity, ("delete", None), ABSENT,
            lambda: self._wait(self.admin.delete_topics(
                [name], operation_timeout=REQUEST_S, request_timeout=REQUEST_S
            )),
        )  # fmt: skip

    def _config(self, kind: str, resource_type: ResourceType, name: str, key: str) -> None:
        """Set ``key`` to a new value, or (one time in five) delete it."""
        code = TOPIC if resource_type == ResourceType.TOPIC else BROKER
        entity_name = f"config:topic:{name}" if code == TOPIC else f"config:broker:{name}:{key}"
        entity = self.ledger.entities.get(entity_name) or Entity(
            entity_name, config_value(code, name, key), ABSENT,
            observe=self.reads.config(resource_type, name, key),
        )  # fmt: skip
        low = 60_000 if code == TOPIC else 10**6
        value = None if self.rng.random() < 0.2 else str(self.rng.randint(low, 10**9))
        resource = ConfigResource(resource_type, name)
        how = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
        resource.add_incremental_config(ConfigEntry(key, value, incremental_operation=how))
        self._apply(
            kind if value is not None else f"{kind} (delete)", entity,
            ("set", value) if value is not None else ("delete", None),
            value if value is not None else ABSENT,
            lambda: self._wait(self.admin.incremental_alter_configs(
                [resource], request_timeout=REQUEST_S
            )),
        )  # fmt: skip

    def _topic_config(self) -> None:
        if (found := self._topic("kept")) is None:
            return
        self._config("topic-config", ResourceType.TOPIC, found[1], "retention.ms")

    def _broker_config(self) -> None:
        broker, key = str(self.rng.randint(1, 3)), self.rng.choice(BROKER_KEYS)
        self._config("broker-config", ResourceType.BROKER, broker, key)

    def _quota(self) -> None:
        """Set a user's producer_byte_rate, or (one time in five) remove it."""
        user = self.rng.choice([f"chaos-quota-{i}" for i in range(8)])
        key = f"quota:{user}"
        entity = self.ledger.entities.get(key) or Entity(
            key, quota_value(user, "producer_byte_rate"), ABSENT,
            observe=self.reads.quota(user, "producer_byte_rate"),
        )  # fmt: skip
        remove = self.rng.random() < 0.2
        value = float(self.rng.randint(1024, 10**7))
        request = cpb.AlterClientQuotasRequest()
        entry = request.entries.add()
        entry.entity.add(entity_type="user", entity_name=user)
        entry.ops.add(key="producer_byte_rate", value=0.0 if remove else value, remove=remove)

        def alter() -> None:
            answer = self.quota_client.call("AlterClientQuotas", request)
            errors = [r for r in answer.results if r.error_code]
            if errors:
                raise refused(errors[0].error_code, errors[0].error_message)

        if remove:
            self._apply("client-quota (remove)", entity, ("delete", None), ABSENT, alter)
        else:
            self._apply("client-quota", entity, ("set", value), value, alter)

    def _scram(self) -> None:
        user = self._next("scram")
        iterations = 4096 + self.rng.randint(0, 4096)
        entity = Entity(
            f"scram:{user}", scram_iterations(user), ABSENT, model="credential",
            observe=self.reads.scram(user),
        )  # fmt: skip
        upsert = UserScramCredentialUpsertion(
            user,
            ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, iterations),
            b"chaos-password",
        )
        self._apply(
            "scram", entity, ("set", iterations), iterations,
            lambda: self._wait(self.admin.alter_user_scram_credentials(
                [upsert], request_timeout=REQUEST_S
            )),
        )  # fmt: skip

    def _delete_scram(self) -> None:
        entity = self._live("scram:", lambda e: e.expected != ABSENT)
        if entity is None:
            return
        gone = UserScramCredentialDeletion(
            entity.name.removeprefix("scram:"), ScramMechanism.SCRAM_SHA_256
        )
        self._apply(
            "scram (delete)", entity, ("delete", None), ABSENT,
            lambda: self._wait(self.admin.alter_user_scram_credentials(
                [gone], request_timeout=REQUEST_S
            )),
        )  # fmt: skip

    def _acl(self, principal: str, topic: str) -> AclBinding:
        return AclBinding(
            ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, principal, "*",
            AclOperation.READ, AclPermissionType.ALLOW,
        )  # fmt: skip

    def _acl_filter(self, principal: str, topic: str) -> AclBindingFilter:
        b = self._acl(principal, topic)
        return AclBindingFilter(
            b.restype, b.name, b.resource_pattern_type, b.principal, b.host,
            b.operation, b.permission_type,
        )  # fmt: skip

    def _create_acl(self) -> None:
        principal, topic = f"User:{self._next('acl')}", f"chaos-acl-topic-{self._n}"
        entity = Entity(
            f"acl:{principal}:{topic}", acl_present(principal, topic), False, model="acl",
            observe=self.reads.acl(self._acl_filter(principal, topic)),
        )  # fmt: skip
        binding = self._acl(principal, topic)
        self._apply(
            "create-acl", entity, ("create", None), True,
            lambda: self._wait(self.admin.create_acls([binding], request_timeout=REQUEST_S)),
        )  # fmt: skip

    def _delete_acl(self) -> None:
        entity = self._live("acl:", lambda e: e.expected is True)
        if entity is None:
            return
        _, user, principal_name, topic = entity.name.split(":")
        found = self._acl_filter(f"{user}:{principal_name}", topic)

        def delete() -> None:
            futures = self.admin.delete_acls([found], request_timeout=REQUEST_S)
            if not futures[found].result(timeout=ACK_TIMEOUT_S):
                raise NothingMatchedError

        self._apply("delete-acl", entity, ("delete", None), False, delete)
