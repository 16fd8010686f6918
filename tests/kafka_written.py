"""ZooKeeper trees exactly as Apache Kafka (2.8-3.9, ZooKeeper mode) writes them.

Nothing here goes through the project's own renderers: every znode's bytes are spelled
out the way Kafka's serializers produce them, so the tests that read them check the
project against Kafka rather than against itself.

- Field order. Kafka serializes most znodes from a Scala mutable hash map; its order is
  the map's bucket order, which :func:`kafka_order` computes (Scala's ``HashTable``:
  Java string hashes, its hash improvement, buckets from the top, newest first in a
  bucket). It reproduces the registrations, topics and controllers of real clusters
  (broker v5: ``listener_security_protocol_map``, ``endpoints``, ``jmx_port``,
  ``features``, ``host``, ``timestamp``, ``port``, ``version``). Kafka's immutable maps
  (``/controller``, ``/cluster/id``, the producer-id block, ACL entries) keep the order
  they are written in; partition maps of more than four partitions use the order real
  clusters show (:data:`CONSUMER_OFFSETS_ORDER`).
- Null data. The persistent parents Kafka creates at start-up (``/brokers/ids``,
  ``/admin/delete_topics``, ``/latest_producer_id_block``, ...) and every
  ``.../partitions/<p>`` parent are created with *null* data (jute length -1), not
  empty data; :class:`Znode` keeps ``None`` for those.
- Escaping: Jackson's (``/`` is not escaped, non-ASCII is written as UTF-8).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from migration.zk.client import ZkClient
from migration.zk.multiwrite import CreateMode, Op, create

_MASK = 0xFFFFFFFF


def _java_hash(text: str) -> int:
    raw = text.encode("utf-16-be")  # Java hashes UTF-16 code units
    h = 0
    for i in range(0, len(raw), 2):
        h = (31 * h + (raw[i] << 8 | raw[i + 1])) & _MASK
    return h


def _improve(hcode: int, seed: int) -> int:
    i = (hcode * 0x9E3775CD) & _MASK
    i = int.from_bytes(i.to_bytes(4, "big")[::-1], "big")
    improved = (i * 0x9E3775CD) & _MASK
    rotation = seed % 32
    return ((improved >> rotation) | (improved << (32 - rotation))) & _MASK


def kafka_order(keys: Sequence[str]) -> list[str]:
    """``keys`` (in insertion order) as a Scala mutable ``HashMap`` of Kafka's iterates
    them: the order Jackson then writes them in."""
    size = 16
    while len(keys) > size * 3 // 4:
        size *= 2
    ones = size - 1
    shift = 32 - ones.bit_length()
    seed = bin(ones).count("1")
    bucket = {k: (_improve(_java_hash(k), seed) >> shift) & ones for k in keys}
    return [k for b in range(ones, -1, -1) for k in reversed(keys) if bucket[k] == b]


def hash_map(*items: tuple[str, object]) -> dict[str, object]:
    """A JSON object in Kafka's hash-map order (items given in Kafka's insertion order)."""
    values = dict(items)
    return {k: values[k] for k in kafka_order([k for k, _ in items])}


def jackson(obj: object) -> bytes:
    """Compact JSON as Kafka's Jackson writes it."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


# The partition order of a real 50-partition __consumer_offsets topic znode.
CONSUMER_OFFSETS_ORDER = tuple(
    str(p)
    for p in (
        30,
        39,
        45,
        2,
        5,
        48,
        33,
        27,
        12,
        8,
        15,
        42,
        36,
        21,
        18,
        24,
        35,
        41,
        7,
        17,
        1,
        44,
        23,
        38,
        47,
        4,
        26,
        11,
        32,
        14,
        20,
        29,
        46,
        34,
        28,
        6,
        40,
        49,
        9,
        43,
        0,
        22,
        16,
        37,
        19,
        3,
        10,
        31,
        25,
        13,
    )
)


@dataclass(frozen=True)
class Znode:
    path: str
    data: bytes | None  # None: created with null data, as Kafka does
    ephemeral: bool = False


@dataclass(frozen=True)
class Broker:
    broker_id: int
    host: str = "localhost"
    listeners: tuple[tuple[str, str, int], ...] = (("PLAINTEXT", "PLAINTEXT", 9092),)
    rack: str | None = None
    timestamp: int = 1_700_000_000_000
    migrating: bool = False  # zookeeper.metadata.migration.enable=true on Kafka 3.4+


def broker_znode(b: Broker, version: int = 5) -> bytes:
    """``/brokers/ids/<id>`` as Kafka writes it: v4 (2.x) or v5 (2.8+, ``features`` {}
    unless the broker has the migration flag). ``host``/``port`` are those of the first
    PLAINTEXT endpoint: null and -1 on a broker without one (SSL-only)."""
    endpoints = [f"{name}://{b.host}:{port}" for name, _, port in b.listeners]
    plain = [port for _, protocol, port in b.listeners if protocol == "PLAINTEXT"]
    items: list[tuple[str, object]] = [
        ("version", version),
        ("host", b.host if plain else None),
        ("port", plain[0] if plain else -1),
        ("endpoints", endpoints),
        ("jmx_port", -1),
        ("timestamp", str(b.timestamp)),
    ]
    if b.rack is not None:
        items.append(("rack", b.rack))
    items.append(("listener_security_protocol_map", {n: p for n, p, _ in b.listeners}))
    if version >= 5:
        mv = {"metadata.version": {"min_version": 1, "max_version": 11}}
        items.append(("features", mv if b.migrating else {}))
    return jackson(hash_map(*items))


def topic_znode(
    partitions: dict[int, list[int]], topic_id: str | None, order: Sequence[str] | None = None
) -> bytes:
    """``/brokers/topics/<t>``: v3 with a topic id (2.8+), v2 without (2.4-2.7)."""
    keys = list(order) if order else kafka_order([str(p) for p in partitions])
    assignment = {k: partitions[int(k)] for k in keys}
    items: list[tuple[str, object]] = [("version", 3 if topic_id else 2)]
    if topic_id:
        items.append(("topic_id", topic_id))
    items += [("partitions", assignment), ("adding_replicas", {}), ("removing_replicas", {})]
    return jackson(hash_map(*items))


def state_znode(
    leader: int,
    isr: list[int],
    leader_epoch: int = 0,
    controller_epoch: int = 1,
    recovering: bool = False,
) -> bytes:
    """``.../partitions/<p>/state``; ``leader_recovery_state`` only when not RECOVERED."""
    obj: dict[str, object] = {
        "controller_epoch": controller_epoch,
        "leader": leader,
        "version": 1,
        "leader_epoch": leader_epoch,
        "isr": isr,
    }
    if recovering:
        obj["leader_recovery_state"] = 1
    return jackson(obj)


def config_znode(config: dict[str, str]) -> bytes:
    return jackson({"version": 1, "config": config})


# Kafka's start-up parents (KafkaZkClient's persistent paths, config entity types),
# created by createRecursive with null data.
START_UP_PARENTS = (
    "/consumers",
    "/brokers/ids",
    "/brokers/topics",
    "/config/changes",
    "/admin/delete_topics",
    "/brokers/seqid",
    "/isr_change_notification",
    "/latest_producer_id_block",
    "/log_dir_event_notification",
    "/config/topics",
    "/config/clients",
    "/config/users",
    "/config/brokers",
    "/config/ips",
)

CLUSTER_ID = "Wq3K7mLHT9a4xUo0Zc1bYw"
OFFSETS_TOPIC_ID = "5Yu9oFhVRI6IUtNYNxoJ8w"
APP_TOPIC_ID = "RSZ--odYRlSOPGRgukKnAQ"


def _parents(paths: Iterable[str]) -> list[str]:
    out: list[str] = []
    for path in paths:
        parts = path.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            p = "/" + "/".join(parts[:i])
            if p not in out:
                out.append(p)
    return out


def topic_znodes(
    name: str,
    partitions: dict[int, list[int]],
    topic_id: str | None,
    config: dict[str, str],
    order: Sequence[str] | None = None,
    epoch: int = 1,
) -> list[Znode]:
    """A topic as Kafka's controller leaves it: the assignment, a null-data
    ``partitions`` parent and per-partition parents, each partition's state (first
    replica leads, all in sync), and its config znode (``{}`` when it has none)."""
    out = [
        Znode(f"/brokers/topics/{name}", topic_znode(partitions, topic_id, order)),
        Znode(f"/brokers/topics/{name}/partitions", None),
    ]
    for p, replicas in sorted(partitions.items()):
        out.append(Znode(f"/brokers/topics/{name}/partitions/{p}", None))
        out.append(
            Znode(
                f"/brokers/topics/{name}/partitions/{p}/state",
                state_znode(replicas[0], list(replicas), controller_epoch=epoch),
            )
        )
    out.append(Znode(f"/config/topics/{name}", config_znode(config)))
    return out


BROKERS = (Broker(1), Broker(2), Broker(3))
MIGRATING_BROKERS = tuple(Broker(b.broker_id, migrating=True) for b in BROKERS)


def kafka_35_tree(brokers: Sequence[Broker] = BROKERS) -> list[Znode]:
    """What three Kafka 3.5.2 brokers leave in ZooKeeper after start-up, the offsets
    topic's creation by the first consumer group and one application topic: an empty
    ``/latest_producer_id_block`` (no client used idempotence), ``/feature`` enabled with
    no finalized feature, ``/controller`` v2 with ``kraftControllerEpoch`` -1, broker
    registrations v5 with ``"features":{}`` (no migration flag)."""
    ids = [b.broker_id for b in brokers]
    nodes = [Znode(p, None) for p in _parents(START_UP_PARENTS)]
    nodes += [
        Znode("/cluster", None),
        Znode("/cluster/id", jackson({"version": "1", "id": CLUSTER_ID})),
        Znode("/controller_epoch", b"1"),
        Znode(
            "/controller",
            jackson(
                {
                    "version": 2,
                    "brokerid": ids[0],
                    "timestamp": "1700000000123",
                    "kraftControllerEpoch": -1,
                }
            ),
            ephemeral=True,
        ),
        Znode("/feature", jackson(hash_map(("version", 2), ("status", 1), ("features", {})))),
    ]
    nodes += [Znode(f"/brokers/ids/{b.broker_id}", broker_znode(b), True) for b in brokers]
    offsets = {p: [ids[(p + i) % len(ids)] for i in range(min(3, len(ids)))] for p in range(50)}
    nodes += topic_znodes(
        "__consumer_offsets",
        offsets,
        OFFSETS_TOPIC_ID,
        {"compression.type": "producer", "cleanup.policy": "compact", "segment.bytes": "104857600"},
        order=CONSUMER_OFFSETS_ORDER,
    )
    app = {p: [ids[(p + i) % len(ids)] for i in range(min(2, len(ids)))] for p in range(3)}
    nodes += topic_znodes("orders", app, APP_TOPIC_ID, {})
    nodes += [
        Znode(
            "/config/changes/config_change_0000000000",
            jackson({"version": 2, "entity_path": "topics/__consumer_offsets"}),
        ),
    ]
    return nodes


def write(zk: ZkClient, nodes: Iterable[Znode], batch: int = 200) -> None:
    """Create ``nodes`` (parents first) in one session: ephemerals belong to ``zk``'s."""
    ops: list[Op] = [
        create(n.path, n.data, CreateMode.EPHEMERAL if n.ephemeral else CreateMode.PERSISTENT)
        for n in nodes
    ]
    for start in range(0, len(ops), batch):
        zk.multi_write(ops[start : start + batch])
