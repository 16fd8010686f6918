"""Cluster-wide singletons: ``/cluster/id``, ``/controller``, ``/controller_epoch``,
``/feature``, ``/latest_producer_id_block`` and the migration's own ``/migration``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from migration.common.text import shown
from migration.zk.model.jsonfields import Fields, parse_int_text, render_json

_CLUSTER_ID = re.compile(r"[a-zA-Z0-9_-]{1,22}")

# --- /cluster/id -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClusterId:
    id: str


def parse_cluster_id(path: str, raw: bytes | None) -> ClusterId:
    f = Fields.load(path, raw)
    if f.text("version") != "1":
        f.fail(f'unsupported version {shown(f.obj["version"])} (expected the string "1")')
    cluster_id = f.text("id")
    if not _CLUSTER_ID.fullmatch(cluster_id):
        f.fail(f"cluster id {shown(cluster_id)} does not match [a-zA-Z0-9_-]{{1,22}}")
    return ClusterId(cluster_id)


def render_cluster_id(value: ClusterId) -> bytes:
    return render_json({"version": "1", "id": value.id})


# --- /controller and /controller_epoch ------------------------------------------------


@dataclass(frozen=True, slots=True)
class ControllerZnode:
    """Who controls the cluster: a ZooKeeper-mode broker (``kraft_controller_epoch`` is
    None) or, during a migration, a KRaft controller (the epoch is set)."""

    broker_id: int
    timestamp: int
    kraft_controller_epoch: int | None = None

    @property
    def is_kraft(self) -> bool:
        return self.kraft_controller_epoch is not None


def parse_controller(path: str, raw: bytes | None) -> ControllerZnode:
    f = Fields.load(path, raw)
    f.version(range(1, 3))
    epoch = f.opt_integer("kraftControllerEpoch", -1)
    return ControllerZnode(
        broker_id=f.integer("brokerid"),
        timestamp=f.int_or_text("timestamp"),
        kraft_controller_epoch=epoch if epoch >= 0 else None,
    )


def render_controller(value: ControllerZnode) -> bytes:
    obj: dict[str, object] = {
        "version": 2,
        "brokerid": value.broker_id,
        "timestamp": str(value.timestamp),
    }
    if value.kraft_controller_epoch is not None:
        obj["kraftControllerEpoch"] = value.kraft_controller_epoch
    return render_json(obj)


def parse_controller_epoch(path: str, raw: bytes | None) -> int:
    return parse_int_text(path, raw)


def render_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode()


# --- /feature --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FeatureZnode:
    """Finalized feature levels. ``enabled`` is Kafka's status 1 (0 = disabled)."""

    enabled: bool
    max_levels: dict[str, int] = field(default_factory=dict)
    version: int = 2


def parse_feature(path: str, raw: bytes | None) -> FeatureZnode:
    f = Fields.load(path, raw)
    version = f.version(range(1, 3))
    status = f.integer("status")
    if status not in (0, 1):
        f.fail(f"status must be 0 (disabled) or 1 (enabled), found {status}")
    levels: dict[str, int] = {}
    for name, body in f.opt_mapping("features").items():
        levels[name] = f.sub(f"features.{name}", body).integer("max_version_level")
    return FeatureZnode(enabled=status == 1, max_levels=levels, version=version)


def render_feature(value: FeatureZnode) -> bytes:
    features: dict[str, dict[str, int]] = {}
    for name, level in value.max_levels.items():
        entry = {"max_version_level": level}
        if value.version == 1:
            entry = {"min_version_level": 1, **entry}
        features[name] = entry
    return render_json(
        {"version": value.version, "status": 1 if value.enabled else 0, "features": features}
    )


# --- /latest_producer_id_block --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    """The last producer-id block handed out; the next starts at ``block_end + 1``."""

    broker: int
    block_start: int
    block_end: int

    @property
    def next_producer_id(self) -> int:
        return self.block_end + 1


def parse_producer_id_block(path: str, raw: bytes | None) -> ProducerIdBlock | None:
    """The block, or None while the znode is empty: Kafka creates it with null data at
    start-up and fills it when a broker first allocates producer ids (never, on a
    cluster whose clients use neither idempotence nor transactions)."""
    if not raw:
        return None
    f = Fields.load(path, raw)
    f.version(range(1, 2))
    block = ProducerIdBlock(
        broker=f.integer("broker"),
        block_start=f.int_or_text("block_start"),
        block_end=f.int_or_text("block_end"),
    )
    if block.block_start < 0 or block.block_end < block.block_start:
        f.fail(f"block [{block.block_start}, {block.block_end}] is empty or negative")
    return block


def render_producer_id_block(value: ProducerIdBlock) -> bytes:
    return render_json(
        {
            "version": 1,
            "broker": value.broker,
            "block_start": str(value.block_start),
            "block_end": str(value.block_end),
        }
    )


# --- /migration ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MigrationZnode:
    """The migration's fencing record. The znode's stat version is the fencing token;
    the initial copy is complete only once ``kraft_metadata_offset`` > 0."""

    kraft_controller_id: int
    kraft_controller_epoch: int
    kraft_metadata_offset: int
    kraft_metadata_epoch: int

    @property
    def copy_done(self) -> bool:
        return self.kraft_metadata_offset > 0


EMPTY_MIGRATION = MigrationZnode(-1, -1, -1, -1)
"""``/migration`` before any copy: every field -1."""


def parse_migration(path: str, raw: bytes | None) -> MigrationZnode:
    """The migration's record; a znode without data (Kafka never writes one; other tools
    create it so) records no migration: :data:`EMPTY_MIGRATION`."""
    if not raw:
        return EMPTY_MIGRATION
    f = Fields.load(path, raw)
    f.version(range(0, 1))
    return MigrationZnode(
        kraft_controller_id=f.integer("kraft_controller_id"),
        kraft_controller_epoch=f.integer("kraft_controller_epoch"),
        kraft_metadata_offset=f.integer("kraft_metadata_offset"),
        kraft_metadata_epoch=f.integer("kraft_metadata_epoch"),
    )


def render_migration(value: MigrationZnode) -> bytes:
    return render_json(
        {
            "version": 0,
            "kraft_controller_id": value.kraft_controller_id,
            "kraft_controller_epoch": value.kraft_controller_epoch,
            "kraft_metadata_offset": value.kraft_metadata_offset,
            "kraft_metadata_epoch": value.kraft_metadata_epoch,
        }
    )
