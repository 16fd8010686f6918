"""What ``migration status`` shows of one controller's driver: the view the poll thread
replaces whole after each rung, and the DescribeMigration answer built from it (any
thread)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from migration.controller.config import ControllerConfig
from migration.driver import finalization
from migration.driver.controller_port import Inputs
from migration.driver.states import Phase, cluster_state
from migration.image.model import MetadataImage
from migration.proto import controller_pb2 as cpb
from migration.records import versions
from migration.zk.fence import ZkFence
from migration.zk.model.cluster import MigrationZnode


@dataclass(frozen=True)
class DriverView:
    """The poll's last inputs, phase and outcome, and what it knows of ZooKeeper."""

    phase: Phase = Phase.INACTIVE
    outcome: str = "starting"
    inputs: Inputs | None = None
    fence: ZkFence | None = None
    migration_znode: MigrationZnode | None = None
    zk_broker_ids: tuple[int, ...] | None = None  # /brokers/ids as last read (None: never)


def describe(
    view: DriverView, config: ControllerConfig, cluster_id: str, *, high_watermark: int, lag: int
) -> cpb.DescribeMigrationResponse:
    i = view.inputs
    image = i.image if i is not None else MetadataImage.EMPTY
    zk_brokers = finalization.zk_brokers(image)
    kraft_brokers = sorted(b for b, r in image.brokers.items() if not r.is_migrating_zk_broker)
    # 0 (Unknown): this controller has not replayed the bootstrap records yet (just
    # started, or never polled): its empty image says nothing of the cluster.
    replayed = versions.METADATA_VERSION in image.features
    state = cluster_state(image.zk_migration_state, view.phase, bool(zk_brokers)) if replayed else 0
    migration = view.fence.migration if view.fence is not None else view.migration_znode
    return cpb.DescribeMigrationResponse(
        node_id=config.node_id,
        active_controller=i.leader_id if i is not None and i.leader_id is not None else -1,
        is_active=bool(i and i.active),
        kraft_epoch=i.epoch if i is not None else -1,
        state_code=int(state),
        zk_migration_state_code=image.zk_migration_state if i is not None else -1,
        driver_phase=view.phase.value,
        outcome=view.outcome,
        zk_controller_epoch=view.fence.zk_controller_epoch if view.fence else -1,
        migration_znode_json=json.dumps(asdict(migration)) if migration else "",
        high_watermark=high_watermark,
        zk_write_behind_lag=lag,
        zk_brokers=zk_brokers,
        kraft_brokers=kraft_brokers,
        metadata_version=image.features.get(versions.METADATA_VERSION, 0),
        zk_migration_enabled=config.zk_migration_enabled,
        cluster_id=cluster_id,
    )
