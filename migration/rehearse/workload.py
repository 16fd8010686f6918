"""A synthetic admin workload of every kind of metadata change, sent through the brokers'
Kafka listener (:class:`~migration.kafka.admin_client.KafkaAdminClient`) while the
controllers dual-write, and the write-behind lag sampled beside it.

Contracts:

- :class:`AdminWorkload` runs in a thread of its own from :meth:`~AdminWorkload.start`
  to :meth:`~AdminWorkload.stop`, round after round; each round makes one change of
  every kind in :data:`KINDS`, in that order (a topic created, its partitions added,
  a topic config and a cluster-wide broker config set, a client quota, a SCRAM user, an
  ACL created then deleted, the topic deleted), at most :attr:`rate` changes a second.
  Every change is timed; an answer with an error code (or an exception: a broker that
  does not answer) counts as an error, named in :attr:`problems` (at most
  :data:`MAX_PROBLEMS`), never raised. ``stop`` lets the round in progress finish, so
  the workload never leaves half a round (a topic created and not deleted) behind.
- Every name it creates starts with :data:`PREFIX`; nothing else is changed, except the
  cluster-wide ``log.cleaner.backoff.ms`` default it sets.
- :class:`LagSampler` reads the write-behind lag every ``interval_s`` (``read_lag``:
  :func:`zk2kraft_lag` for zk2kraft's controllers, or the real-Kafka engine's reader;
  None when not known then, not sampled) and keeps (``clock()``, write-behind lag) in
  :attr:`LagSampler.samples` -- the same clock as
  the workload's latency samples, (``clock()``, ms) in :attr:`AdminWorkload.latency_ms`.
  Each list is the one record of its series (the report takes them as they are).
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from migration.driver.describe import describe_migration, status_json
from migration.kafka.admin_client import KafkaAdminClient
from migration.proto import controller_pb2 as cpb

PREFIX = "rehearse-"
KINDS = (
    "create_topic",
    "create_partitions",
    "topic_config",
    "broker_config",
    "client_quota",
    "scram_user",
    "create_acl",
    "delete_acl",
    "delete_topic",
)
MAX_PROBLEMS = 20
STOP_ON_ERROR_S = 5.0  # the workload's and sampler's stop when the rehearsal is stopped
TOPIC, BROKER = 2, 4  # Kafka's config resource types
ACL_TOPIC, LITERAL, READ, ALLOW = 2, 3, 3, 3  # Kafka's ACL codes
SCRAM_SHA_256 = 1
Clock = Callable[[], float]


def _errors(answer: Any) -> list[str]:
    """The error codes an admin answer carries (a request error, or one per item)."""
    out = []
    if answer.HasField("error") and answer.error.error_code:
        out.append(f"{answer.error.error_code} {answer.error.error_message}")
    for item in getattr(answer, "results", ()) or getattr(answer, "topics", ()):
        if item.error_code:
            out.append(f"{item.error_code} {item.error_message}")
    return out


Requests = dict[str, tuple[str, Any]]
"""Admin requests by kind (a key of :data:`KINDS`): the admin client's method, the request."""


def _topic_requests(topic: str, n: int, replication_factor: int) -> Requests:
    """Round ``n``'s topic changes: ``topic`` created with one partition, grown to two,
    its ``retention.ms`` set, and deleted."""
    return {
        "create_topic": (
            "CreateTopics",
            cpb.CreateTopicsRequest(
                topics=[
                    cpb.CreatableTopic(
                        name=topic,
                        num_partitions=1,
                        replication_factor=replication_factor,
                    )
                ]
            ),
        ),
        "create_partitions": (
            "CreatePartitions",
            cpb.CreatePartitionsRequest(topics=[cpb.CreatePartitionsTopic(name=topic, count=2)]),
        ),
        "topic_config": (
            "IncrementalAlterConfigs",
            cpb.IncrementalAlterConfigsRequest(
                resources=[
                    cpb.AlterConfigsResource(
                        resource_type=TOPIC,
                        resource_name=topic,
                        configs=[
                            cpb.AlterableConfig(name="retention.ms", value=str(3_600_000 + n))
                        ],
                    )
                ]
            ),
        ),
        "delete_topic": ("DeleteTopics", cpb.DeleteTopicsRequest(topic_names=[topic])),
    }


def _settings_requests(user: str, n: int) -> Requests:
    """Round ``n``'s cluster-wide broker config, ``user``'s client quota and its SCRAM
    credential (a fresh random salt)."""
    salt = os.urandom(16)
    return {
        "broker_config": (
            "IncrementalAlterConfigs",
            cpb.IncrementalAlterConfigsRequest(
                resources=[
                    cpb.AlterConfigsResource(
                        resource_type=BROKER,
                        resource_name="",
                        configs=[
                            cpb.AlterableConfig(
                                name="log.cleaner.backoff.ms", value=str(15_000 + n)
                            )
                        ],
                    )
                ]
            ),
        ),
        "client_quota": (
            "AlterClientQuotas",
            cpb.AlterClientQuotasRequest(
                entries=[
                    cpb.QuotaEntry(
                        entity=[cpb.QuotaEntity(entity_type="user", entity_name=user)],
                        ops=[cpb.QuotaOp(key="producer_byte_rate", value=1_048_576.0 + n)],
                    )
                ]
            ),
        ),
        "scram_user": (
            "AlterUserScramCredentials",
            cpb.AlterUserScramCredentialsRequest(
                upsertions=[
                    cpb.ScramUpsertion(
                        name=user,
                        mechanism=SCRAM_SHA_256,
                        iterations=4096,
                        salt=salt,
                        salted_password=hashlib.pbkdf2_hmac(
                            "sha256", f"{user}-secret".encode(), salt, 4096
                        ),
                    )
                ]
            ),
        ),
    }


def _acl_requests(topic: str, user: str) -> Requests:
    """An ACL letting ``user`` read ``topic``, created, then deleted by a filter naming it."""
    binding = cpb.AclBinding(
        resource_type=ACL_TOPIC,
        resource_name=topic,
        pattern_type=LITERAL,
        principal=f"User:{user}",
        host="*",
        operation=READ,
        permission_type=ALLOW,
    )
    return {
        "create_acl": ("CreateAcls", cpb.CreateAclsRequest(creations=[binding])),
        "delete_acl": (
            "DeleteAcls",
            cpb.DeleteAclsRequest(
                filters=[
                    cpb.AclFilter(
                        resource_type=ACL_TOPIC,
                        resource_name=topic,
                        pattern_type=LITERAL,
                        principal=binding.principal,
                        host="*",
                        operation=READ,
                        permission_type=ALLOW,
                    )
                ]
            ),
        ),
    }


class AdminWorkload:
    """Metadata changes of every kind through ``bootstrap`` (see the module's contract)."""

    def __init__(
        self,
        bootstrap: str,
        replication_factor: int,
        clock: Clock,
        *,
        rate: float = 20.0,
    ) -> None:
        self.client = KafkaAdminClient(bootstrap, timeout_s=30.0)
        self.replication_factor = replication_factor
        self.clock = clock
        self.rate = rate
        self.by_kind: Counter[str] = Counter()
        self.errors = 0
        self.problems: list[str] = []
        self.latency_ms: list[tuple[float, float]] = []
        self.rounds = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rehearse-workload", daemon=True)

    @property
    def changes(self) -> int:
        return sum(self.by_kind.values())

    def start(self) -> AdminWorkload:
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 120.0) -> None:
        """Finish the round in progress and stop (waits at most ``timeout_s``; a round
        still running then ends on its own, its thread a daemon)."""
        self._stop.set()
        self._thread.join(timeout_s)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self.one_round(self.rounds)
                self.rounds += 1
        finally:
            self.client.close()

    def one_round(self, n: int) -> None:
        """One change of every kind, in :data:`KINDS` order."""
        topic, user = f"{PREFIX}topic-{n}", f"{PREFIX}user-{n}"
        requests = {
            **_topic_requests(topic, n, self.replication_factor),
            **_settings_requests(user, n),
            **_acl_requests(topic, user),
        }
        for kind in KINDS:
            method, request = requests[kind]
            self._send(kind, method, request)

    def _send(self, kind: str, method: str, request: Any) -> None:
        began = time.monotonic()
        at = self.clock()
        try:
            problems = _errors(self.client.call(method, request))
        except Exception as exc:  # a broker that does not answer, a timeout: counted
            problems = [f"{type(exc).__name__}: {exc}"]
        ms = (time.monotonic() - began) * 1000
        self.by_kind[kind] += 1
        self.latency_ms.append((at, ms))
        if problems:
            self.errors += 1
            if len(self.problems) < MAX_PROBLEMS:
                self.problems.append(f"{kind} ({method}): {'; '.join(problems)}")
        pause = 1.0 / self.rate - (time.monotonic() - began)
        if pause > 0:
            time.sleep(pause)


def zk2kraft_lag(bootstrap: list[str]) -> Callable[[], int | None]:
    """The lag as zk2kraft's controllers at ``bootstrap`` report it (``migration status``);
    None while none answers as the active controller."""

    def read() -> int | None:
        try:
            report = status_json(describe_migration(bootstrap))
        except ConnectionError:
            return None
        return int(report["zk_write_behind_lag"]) if report["active_controller"] >= 0 else None

    return read


class LagSampler:
    """The write-behind lag, sampled with ``read_lag`` in a thread of its own."""

    def __init__(
        self,
        read_lag: Callable[[], int | None],
        clock: Clock,
        *,
        interval_s: float = 0.25,
    ) -> None:
        self.read_lag = read_lag
        self.clock = clock
        self.interval_s = interval_s
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rehearse-lag", daemon=True)

    @property
    def max_lag(self) -> int:
        return max((lag for _, lag in self.samples), default=0)

    def start(self) -> LagSampler:
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 30.0) -> None:
        self._stop.set()
        self._thread.join(timeout_s)

    def _run(self) -> None:
        while not self._stop.is_set():
            lag = self.read_lag()
            if lag is not None:
                self.samples.append((self.clock(), lag))
            self._stop.wait(self.interval_s)


def under_load(
    bootstrap: str,
    replication_factor: int,
    read_lag: Callable[[], int | None],
    *,
    seconds: float,
    clock: Clock,
    caught_up: Callable[[], object],
    interval_s: float = 0.25,
) -> tuple[AdminWorkload, LagSampler]:
    """The workload for ``seconds`` (at least one round of every kind), the lag sampled
    beside it (every ``interval_s``) until ``caught_up`` returns (ZooKeeper holds every
    change); both finished.
    On an exception (Ctrl-C included) the workload and the sampler are only stopped,
    within :data:`STOP_ON_ERROR_S` each, and the exception propagates: nothing waits for
    ``caught_up`` then (the cluster it watches may be going away)."""
    sampler = LagSampler(read_lag, clock, interval_s=interval_s)
    load = AdminWorkload(bootstrap, replication_factor, clock)
    sampler.start()
    load.start()
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline or load.rounds < 1:
            time.sleep(0.1)
        load.stop()
        caught_up()
    except BaseException:
        load.stop(STOP_ON_ERROR_S)
        sampler.stop(STOP_ON_ERROR_S)
        raise
    sampler.stop()
    return load, sampler
