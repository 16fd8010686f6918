"""What the rehearsal takes from production's tree as copied: its cluster id, its brokers
and their racks, how many replicas each hosts, how big a heap its local ZooKeeper and
Kafka's JVMs need, whether the controllers' translation converts every znode, and the
preflight as the copy shows it. Pure functions of the copy; nothing is read or written
anywhere."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import replace

from migration.bridge.preflight import (
    BROKER_MIGRATION_SETTINGS,
    REGISTRATION_FINDINGS,
    PreflightReport,
    migration_flag_missing,
)
from migration.bridge.translate import CopyError, TranslateReport, translate
from migration.driver import next_steps
from migration.local.kafka_service import START_S
from migration.rehearse.report import EnableMigration, Setting
from migration.zk import paths
from migration.zk.model.brokers import parse_broker
from migration.zk.model.cluster import parse_cluster_id
from migration.zk.model.topics import parse_topic
from migration.zk.tree_copy import TreeCopy
from migration.zk.tree_read import ZkSnapshot


def cluster_id(tree: TreeCopy) -> str:
    raw = next((n.data for n in tree.nodes if n.path == paths.CLUSTER_ID), None)
    if raw is None:
        return ""
    try:
        return parse_cluster_id(paths.CLUSTER_ID, raw).id
    except ValueError:
        return ""


def broker_ids(tree: TreeCopy, snap: ZkSnapshot) -> list[int]:
    """Production's brokers: those registered, else those the assignments name."""
    if tree.registrations:
        return sorted(tree.registrations)
    named = {b for t in snap.topics.values() for r in t.assignment.partitions.values() for b in r}
    return sorted(named)


def replicas_by_broker(tree: TreeCopy) -> Counter[int]:
    """How many partition replicas the topics' assignments give each broker (a topic
    znode that does not parse is left out: the preflight names it)."""
    hosted: Counter[int] = Counter()
    for node in tree.nodes:
        parent, _, name = node.path.rpartition("/")
        if parent != paths.TOPICS:
            continue
        try:
            assignment = parse_topic(node.path, None if node.null else node.data, name)
        except ValueError:
            continue
        for replicas in assignment.partitions.values():
            hosted.update(replicas)
    return hosted


def enable_migration(tree: TreeCopy, snap: ZkSnapshot) -> EnableMigration:
    """Step 3 on production: every broker (:func:`broker_ids`) not registered with the
    migration flag now (a stopped cluster's: none is) is restarted with
    :data:`~migration.bridge.preflight.BROKER_MIGRATION_SETTINGS`."""
    flagged = tuple(
        b
        for b in broker_ids(tree, snap)
        if b in snap.brokers and not migration_flag_missing(snap.brokers[b])
    )
    return EnableMigration(
        runbook=next_steps.ENABLE.runbook,
        restart=tuple(b for b in broker_ids(tree, snap) if b not in flagged),
        flagged=flagged,
        settings=tuple(Setting(name, value) for name, value in BROKER_MIGRATION_SETTINGS),
    )


def racks(tree: TreeCopy) -> dict[int, dict[str, str]]:
    out = {}
    for bid, raw in tree.registrations.items():
        try:
            rack = parse_broker(paths.broker(bid), raw, bid).rack
        except ValueError:
            rack = None
        if rack:
            out[bid] = {"broker.rack": rack}
    return out


def zookeeper_heap_mb(tree: TreeCopy) -> int:
    """The local ZooKeeper's heap for the copy: ZooKeeper keeps every znode in memory
    (about a kilobyte each with its data and bookkeeping), room to collect beside it."""
    return max(512, min(8192, 512 + tree.znodes // 400 + 4 * (tree.bytes >> 20)))


def kafka_heap_mb(tree: TreeCopy) -> int:
    """Each of the Kafka engine's JVMs' heap: a ZooKeeper-mode broker caches the whole
    tree's metadata, its controller holds a context of every partition beside it, a KRaft
    controller the image and its deltas; 512 MiB ran out at 100,000 partitions (Kafka's
    ZooKeeper controller, ``OutOfMemoryError``), so 8 KiB a znode on top (2 GiB there;
    the serial collector grows a heap only as far as it is used)."""
    return max(512, min(6144, 512 + tree.znodes // 128))


def kafka_start_timeout_s(hosted: Mapping[int, int]) -> float:
    """How long each of the Kafka engine's node starts may take, given the partition
    logs each broker hosts (:func:`replicas_by_broker`): a start's usual
    :data:`START_S` and 50 ms for each partition log on the busiest broker. Kafka's
    start applies each topic's config overrides, finding the topic's logs among all the
    broker's logs each time: at 100,000 partitions a broker hosting 8,390 logs spent 21 s
    loading them and then ~60 s of CPU on the 5,000 topics' configs (its main thread in
    ``LogManager.logsByTopic``, by jstack), and started ~100 s after its launch."""
    return START_S + 0.05 * max(hosted.values(), default=0)


def translates(snap: ZkSnapshot, secret: str | None) -> tuple[int, str]:
    """The controllers' translation of the whole tree, in memory (what the copy will
    do): the records it makes and ``""``, or -1 and the problem (a CopyError naming the
    znode: an encrypted password config without production's password.encoder.secret,
    a znode that does not convert)."""
    try:
        return sum(1 for _ in translate(snap, TranslateReport(), secret)), ""
    except CopyError as exc:
        return -1, str(exc)


def as_rehearsed(found: PreflightReport, tree: TreeCopy) -> PreflightReport:
    """Production's preflight as the copy shows it; ZooKeeper's files taken while no
    broker was registered (a backup of a stopped cluster) do not block the rehearsal on
    that: it starts the brokers the partition assignments name, and those findings are
    kept as warnings (production's own preflight must see the brokers registered)."""
    if tree.registrations:
        return found
    moved = [f for f in found.blockers if f.code in REGISTRATION_FINDINGS]
    note = "the source holds no broker registration (stopped brokers?); rehearsed with "
    note += "the brokers the assignments name; on production: "
    return replace(
        found,
        blockers=tuple(f for f in found.blockers if f.code not in REGISTRATION_FINDINGS),
        warnings=(
            *found.warnings,
            *(replace(f, severity="warning", message=note + f.message) for f in moved),
        ),
    )
