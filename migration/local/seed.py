"""Build realistic Kafka clusters in ZooKeeper, in exactly Kafka's formats.

:func:`generate` turns a :class:`ClusterSpec` into the :class:`ZkSnapshot` a reader should
later see (deterministic for a given ``seed``); :func:`write` renders it into ZooKeeper as
byte-bounded, pipelined multis. From a handful of znodes up to a million partitions.
Development only: ``zk seed``, the demo, the tests and the benchmarks use it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import random
from dataclasses import dataclass, field, replace

from migration.observability.progress import NullProgress, Progress
from migration.records.codes import (
    OPERATIONS,
    PATTERN_LITERAL,
    PATTERN_PREFIXED,
    PERMISSIONS,
    RESOURCE_TYPES,
)
from migration.records.versions import METADATA_VERSION
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.model import passwords
from migration.zk.model.acls import AclEntry, ResourceAcls
from migration.zk.model.brokers import (
    RESERVED_BROKER_MAX_ID,
    BrokerRegistration,
    Endpoint,
    FeatureRange,
)
from migration.zk.model.cluster import (
    ClusterId,
    ControllerZnode,
    FeatureZnode,
    ProducerIdBlock,
)
from migration.zk.model.configs import QuotaEntity, ScramCredential
from migration.zk.model.consumers import LegacyOffset
from migration.zk.model.tokens import DelegationToken
from migration.zk.model.topics import PartitionState, ReassignmentTarget, TopicAssignment
from migration.zk.multiwrite import set_data
from migration.zk.render import render_snapshot
from migration.zk.tree import missing_parents
from migration.zk.tree_read import (
    PartitionSnapshot,
    TopicSnapshot,
    Versioned,
    ZkSnapshot,
    canonical,
)

CURRENT_METADATA_VERSION = 19  # what the seeded brokers support at most (3.7-IV4)
TIMESTAMP = 1_700_000_000_000
TOPIC_PREFIXES = (
    "orders",
    "payments",
    "clickstream",
    "audit",
    "inventory",
    "metrics.app",
    "logs_raw",
    "user-events",
    "sessions",
    "billing",
)


SEED_PASSWORD_ENCODER_SECRET = "zk2kraft-seeded-encoder-secret"


@dataclass(frozen=True)
class ClusterSpec:
    """What to seed. Counts are totals; partitions are spread over topics with a skew."""

    brokers: int = 3
    topics: int = 10
    partitions: int = 50
    replication_factor: int = 3
    offline_partitions: int = 0
    isr_shrunk_permille: int = 50
    topic_config_permille: int = 300
    quota_entities: int = 6
    scram_users: int = 3
    acl_resources: int = 6
    delegation_tokens: int = 2
    pending_deletions: int = 0
    reassignment: bool = False
    legacy_consumer_groups: int = 0
    legacy_brokers: int = 0
    generated_broker_ids: bool = False
    seed: int = 42
    # The brokers' password.encoder.secret (dynamic password configs are encrypted with
    # it in ZooKeeper): a demo value, documented, never a real cluster's.
    password_encoder_secret: str = field(default=SEED_PASSWORD_ENCODER_SECRET, repr=False)

    def __post_init__(self) -> None:
        if self.brokers < 1 or self.topics < 0 or self.partitions < self.topics:
            raise ValueError("need >= 1 broker and at least one partition per topic")
        if self.offline_partitions > self.partitions:
            raise ValueError("more offline partitions than partitions")
        if self.pending_deletions > self.topics:
            raise ValueError("more pending deletions than topics")


PROFILES: dict[str, ClusterSpec] = {
    "tiny": ClusterSpec(
        brokers=3,
        topics=3,
        partitions=6,
        quota_entities=2,
        scram_users=1,
        acl_resources=2,
        delegation_tokens=1,
    ),
    "small": ClusterSpec(brokers=3, topics=20, partitions=200),
    "medium": ClusterSpec(
        brokers=6,
        topics=500,
        partitions=10_000,
        quota_entities=40,
        scram_users=20,
        acl_resources=60,
        delegation_tokens=10,
        legacy_consumer_groups=2,
        pending_deletions=2,
    ),
    "large": ClusterSpec(
        brokers=12,
        topics=5_000,
        partitions=100_000,
        quota_entities=200,
        scram_users=100,
        acl_resources=500,
        delegation_tokens=50,
    ),
}


def _uuid(rng: random.Random) -> str:
    return base64.urlsafe_b64encode(rng.randbytes(16)).rstrip(b"=").decode()


MAX_PARTITIONS_PER_TOPIC = 10_000
"""Keeps every topic znode far below jute.maxbuffer (1 MiB), as real clusters must."""


def _skewed_counts(rng: random.Random, topics: int, partitions: int) -> list[int]:
    """``topics`` partition counts summing to ``partitions``, each in 1..10,000, skewed."""
    if topics == 0:
        return []
    if partitions > topics * MAX_PARTITIONS_PER_TOPIC:
        raise ValueError(f"more than {MAX_PARTITIONS_PER_TOPIC} partitions per topic")
    weights = [1.0 / (i + 1) ** 0.9 for i in range(topics)]
    rng.shuffle(weights)
    spare = partitions - topics
    total = sum(weights)
    counts = [min(1 + int(spare * w / total), MAX_PARTITIONS_PER_TOPIC) for w in weights]
    left = partitions - sum(counts)
    while left > 0:  # hand out the remainder to topics below the cap
        for i in range(topics):
            if left and counts[i] < MAX_PARTITIONS_PER_TOPIC:
                counts[i] += 1
                left -= 1
    return counts


def _scram(rng: random.Random, mechanism: int) -> ScramCredential:
    """A real SCRAM credential for a random password (RFC 5802 derivation)."""
    digest = "sha256" if mechanism == 1 else "sha512"
    salt, iterations = rng.randbytes(16), 4096
    salted = hashlib.pbkdf2_hmac(digest, rng.randbytes(12).hex().encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    stored = hashlib.new(digest, client_key).digest()
    server = hmac.new(salted, b"Server Key", digest).digest()
    return ScramCredential(mechanism, salt, stored, server, iterations)


def _brokers(spec: ClusterSpec) -> dict[int, BrokerRegistration]:
    base = RESERVED_BROKER_MAX_ID + 1 if spec.generated_broker_ids else 1
    out = {}
    for i in range(spec.brokers):
        bid = base + i
        host = f"broker-{bid}.kafka.svc"
        legacy = i >= spec.brokers - spec.legacy_brokers
        out[bid] = BrokerRegistration(
            broker_id=bid,
            endpoints=(
                Endpoint("PLAINTEXT", host, 9092, "PLAINTEXT"),
                Endpoint("SSL", host, 9093, "SSL"),
            ),
            timestamp=TIMESTAMP + bid,
            jmx_port=9999,
            rack=f"rack-{i % 3}",
            features={}
            if legacy
            else {METADATA_VERSION: FeatureRange(1, CURRENT_METADATA_VERSION)},
            version=4 if legacy else 5,
        )
    return out


CONTROLLER_EPOCH = 7


def generate(spec: ClusterSpec) -> ZkSnapshot:
    """The cluster ``spec`` describes, as the snapshot a reader will see once written."""
    rng = random.Random(spec.seed)
    brokers = _brokers(spec)
    ids = sorted(brokers)
    topics = _topics(spec, rng, ids)
    names = list(topics)
    reassignment = _start_reassignment(topics, ids) if spec.reassignment else ()
    topic_configs = _topic_configs(spec, rng, names)
    broker_configs = _broker_configs(rng, ids[0], spec.password_encoder_secret)
    quotas = _quotas(spec)
    scram = _scram_users(spec, rng)
    acls = _acls(spec, names)
    tokens = _tokens(spec, rng)
    offsets = tuple(
        LegacyOffset(f"legacy-group-{g}", names[(g + k) % len(names)], p, 1000 * (g + 1) + p)
        for g in range(spec.legacy_consumer_groups)
        if names
        for k in range(2)
        for p in range(2)
    )
    cluster_id = ClusterId(_uuid(rng))
    return canonical(
        ZkSnapshot(
            cluster_id=cluster_id,
            controller=ControllerZnode(ids[0], TIMESTAMP),
            controller_epoch=Versioned(CONTROLLER_EPOCH, 0),
            feature=FeatureZnode(True, {METADATA_VERSION: CURRENT_METADATA_VERSION}),
            producer_id_block=ProducerIdBlock(ids[0], 7000, 7999),
            brokers=brokers,
            broker_seqid_version=spec.brokers if spec.generated_broker_ids else 0,
            topics=topics,
            pending_deletions=frozenset(rng.sample(names, spec.pending_deletions)),
            reassignment=reassignment,
            topic_configs=topic_configs,
            broker_configs=broker_configs,
            quotas=quotas,
            scram=scram,
            acls=acls,
            delegation_tokens=tokens,
            legacy_offsets=offsets,
        )
    )


def _topics(spec: ClusterSpec, rng: random.Random, ids: list[int]) -> dict[str, TopicSnapshot]:
    """Topics with skewed partition counts, rack-spread replicas, some ISR shrinkage and
    ``spec.offline_partitions`` leaderless partitions."""
    rf = min(spec.replication_factor, len(ids))
    topics: dict[str, TopicSnapshot] = {}
    offline_left = spec.offline_partitions
    for t, count in enumerate(_skewed_counts(rng, spec.topics, spec.partitions)):
        name = f"{TOPIC_PREFIXES[t % len(TOPIC_PREFIXES)]}-{t:05d}"
        start = rng.randrange(len(ids))
        assignment: dict[int, tuple[int, ...]] = {}
        states: dict[int, PartitionSnapshot] = {}
        for p in range(count):
            replicas = tuple(ids[(start + p + j) % len(ids)] for j in range(rf))
            assignment[p] = replicas
            isr = replicas
            if rng.randrange(1000) < spec.isr_shrunk_permille and len(replicas) > 1:
                isr = replicas[:-1]
            leader = replicas[0]
            if offline_left > 0 and (p == 0 or rng.randrange(4) == 0):
                offline_left -= 1
                leader, isr = -1, replicas[-1:]
            state = PartitionState(leader, rng.randrange(20), CONTROLLER_EPOCH, isr)
            states[p] = PartitionSnapshot(state, 0)
        topics[name] = TopicSnapshot(TopicAssignment(name, assignment, _uuid(rng)), states)
    return topics


def _start_reassignment(
    topics: dict[str, TopicSnapshot], ids: list[int]
) -> tuple[ReassignmentTarget, ...]:
    """Move the first topic's partition 0 one broker along, as Kafka records a
    reassignment in flight (full replica set, adding and removing replicas)."""
    if not topics:
        return ()
    name = next(iter(topics))
    old = topics[name].assignment
    current = old.partitions[0]
    spare = [b for b in ids if b not in current]
    if not spare:
        return ()
    target = (*current[1:], spare[0])
    moving = replace(
        old,
        partitions={**old.partitions, 0: tuple(dict.fromkeys((*target, *current)))},
        adding={0: tuple(b for b in target if b not in current)},
        removing={0: tuple(b for b in current if b not in target)},
    )
    topics[name] = replace(topics[name], assignment=moving)
    return (ReassignmentTarget(name, 0, target),)


def _topic_configs(
    spec: ClusterSpec, rng: random.Random, names: list[str]
) -> dict[str, dict[str, str]]:
    """Every topic has its config znode (Kafka creates it with the topic), most empty."""
    out: dict[str, dict[str, str]] = {}
    for name in names:
        out[name] = {}
        if rng.randrange(1000) < spec.topic_config_permille:
            out[name] = {
                "retention.ms": str(rng.choice((3_600_000, 86_400_000, 604_800_000))),
                "cleanup.policy": rng.choice(("delete", "compact", "compact,delete")),
                "min.insync.replicas": "2",
            }
    return out


def _broker_configs(
    rng: random.Random, first_broker: int, secret: str
) -> dict[str | None, dict[str, str]]:
    password = base64.b64encode(rng.randbytes(24)).decode()
    return {
        None: {"log.retention.hours": "168", "num.io.threads": "16"},
        str(first_broker): {
            "log.cleaner.threads": "2",
            # Password configs are stored encrypted with password.encoder.secret.
            "listener.name.ssl.ssl.key.password": passwords.encode(
                password, secret, salt=rng.randbytes(passwords.SALT_BYTES), iv=rng.randbytes(16)
            ),
        },
    }


def _quotas(spec: ClusterSpec) -> dict[QuotaEntity, dict[str, float]]:
    """User, client-id, user+client-id and ip quotas, a few of them ``<default>``, with
    names that need sanitizing; an IP's only key is ``connection_creation_rate`` (Kafka
    refuses any other for an IP, and its migration's sync back to ZooKeeper fails on
    one)."""
    quotas: dict[QuotaEntity, dict[str, float]] = {}
    for i in range(spec.quota_entities):
        kind = ("user", "client-id", "user+client", "ip")[i % 4]
        default = i < 4 and i % 2 == 1
        user = None if default else f"user/{i}@prod"
        client = None if default else f"client {i}*app"
        entity: QuotaEntity = {
            "user": (("user", user),),
            "client-id": (("client-id", client),),
            "user+client": (("user", user), ("client-id", client)),
            "ip": (("ip", None if default else f"10.1.{i // 256}.{i % 256}"),),
        }[kind]
        if kind == "ip":  # the one key Kafka takes for an IP (kafka-configs --entity-type ips)
            quotas[entity] = {"connection_creation_rate": float(10 + i)}
            continue
        quotas[entity] = {
            "producer_byte_rate": float(1_048_576 * (1 + i % 4)),
            "consumer_byte_rate": 2_097_152.0,
        }
        if kind == "user":
            quotas[entity]["request_percentage"] = 50.0
    return quotas


def _scram_users(spec: ClusterSpec, rng: random.Random) -> dict[str, dict[int, ScramCredential]]:
    """SCRAM users; some share a znode with a user quota, some have both mechanisms."""
    return {
        (f"user/{i * 4}@prod" if i % 2 == 0 else f"svc-{i}"): (
            {1: _scram(rng, 1)} | ({2: _scram(rng, 2)} if i % 3 == 0 else {})
        )
        for i in range(spec.scram_users)
    }


def _acls(spec: ClusterSpec, names: list[str]) -> tuple[ResourceAcls, ...]:
    """Literal and prefixed ACLs over every resource type, allow and deny."""
    type_names = list(RESOURCE_TYPES)
    by_resource: dict[tuple[int, int, str], ResourceAcls] = {}
    for i in range(spec.acl_resources):
        prefixed = i % 3 == 2
        rtype = type_names[i % len(type_names)]
        if rtype == "Cluster":
            rname = "kafka-cluster"
        elif prefixed:
            rname = f"{TOPIC_PREFIXES[i % len(TOPIC_PREFIXES)]}-"
        elif rtype == "Topic" and names:
            rname = names[i % len(names)]
        else:
            rname = f"{rtype.lower()}-{i}"
        entries = tuple(
            AclEntry(
                f"User:app-{i}-{j}",
                "*" if j == 0 else f"10.0.0.{j}",
                OPERATIONS[("Read", "Write", "Describe", "All")[(i + j) % 4]],
                PERMISSIONS["Deny" if j == 2 else "Allow"],
            )
            for j in range(1 + i % 3)
        )
        pattern = PATTERN_PREFIXED if prefixed else PATTERN_LITERAL
        resource = ResourceAcls(RESOURCE_TYPES[rtype], rname, pattern, entries)
        by_resource[(pattern, resource.resource_type, rname)] = resource
    return tuple(by_resource.values())


def _tokens(spec: ClusterSpec, rng: random.Random) -> dict[str, DelegationToken]:
    tokens = {}
    for i in range(spec.delegation_tokens):
        token_id = _uuid(rng)
        owner = f"User:svc-{i}"
        renewers = ("User:admin",) if i % 2 else ()
        tokens[token_id] = DelegationToken(
            token_id,
            owner,
            owner,
            renewers,
            TIMESTAMP,
            TIMESTAMP + 604_800_000,
            TIMESTAMP + 86_400_000,
        )
    return tokens


def ensure_parents(client: ZkClient) -> None:
    """Create the persistent parents a Kafka broker creates at start-up, if missing."""
    client.ensure_chroot()
    missing = missing_parents(client)
    if missing:
        client.multi_write(missing)


def without_registrations(snap: ZkSnapshot) -> ZkSnapshot:
    """``snap`` for real broker processes to join: no ``/brokers/ids`` and no
    ``/controller`` (the brokers register and elect one); ``/controller_epoch`` stays, so
    the controller they elect starts above every epoch in the partition states."""
    return replace(snap, brokers={}, controller=None)


def write(
    client: ZkClient, snap: ZkSnapshot, *, ephemeral: bool = False, progress: Progress | None = None
) -> int:
    """Write ``snap`` into an empty Kafka tree; returns the number of znodes created.

    Refuses (ZkWriteError: node already exists) to write over an existing cluster.
    With ``ephemeral`` the brokers' registrations live as long as ``client``'s session.
    """
    progress = progress or NullProgress()
    ensure_parents(client)
    ops = list(render_snapshot(snap, ephemeral=ephemeral))
    if snap.broker_seqid_version:
        # The broker-id sequence: its data version counts the ids handed out.
        ops += [set_data(paths.BROKER_SEQID, b"")] * snap.broker_seqid_version
    progress.stage("write znodes", len(ops))
    client.write_all(ops, progress=progress.advance)
    progress.done()
    return len(ops)
