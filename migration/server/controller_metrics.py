"""The metrics of a controller process: whether it is active, its committed image's
counts and migration state, the driver's phase, lag, ZooKeeper write times and errors,
and its Raft node. Registered in the process's registry; everything is read at scrape
time (see :mod:`.node_metrics` for the threading)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import Metric

from migration.controller.quorum_controller import QuorumController
from migration.driver.driver import MigrationDriver
from migration.driver.states import Phase
from migration.driver.stats import WRITE_ERRORS
from migration.observability import catalog as c
from migration.observability.exposition import counter_by, enum, gauge, summary
from migration.server.node_metrics import (
    LatestImage,
    broker_families,
    image_families,
    raft_families,
)

PHASES = [p.value for p in Phase]


class ControllerCollector:
    def __init__(
        self, controller: QuorumController, driver: MigrationDriver, latest: LatestImage
    ) -> None:
        self.controller = controller
        self.driver = driver
        self.latest = latest

    def collect(self) -> Iterator[Metric]:
        image, counts = self.latest.counts()
        status = self.driver.status()
        stats = self.driver.stats
        yield gauge(c.ACTIVE_CONTROLLER_COUNT, 1 if self.controller.active else 0)
        yield gauge(c.ZK_MIGRATION_STATE, image.zk_migration_state)
        yield gauge(c.MIGRATION_STATE, status.state_code)
        yield from image_families(image, counts)
        yield from broker_families(counts)
        yield gauge(c.ZK_WRITE_BEHIND_LAG, status.zk_write_behind_lag)
        yield gauge(c.MAX_WRITE_BEHIND, self.driver.config.max_write_behind_records)
        yield gauge(c.MIGRATION_ENABLED, 1 if self.driver.config.zk_migration_enabled else 0)
        yield summary(c.ZK_WRITE_SNAPSHOT_TIME, stats.snapshot_ms.summary())
        yield summary(c.ZK_WRITE_DELTA_TIME, stats.delta_ms.summary())
        yield counter_by(c.DUAL_WRITE_ERRORS, stats.write_errors(), WRITE_ERRORS)
        yield enum(c.DRIVER_PHASE, stats.phase.value, PHASES)
        yield gauge(c.DRIVER_PHASE_SECONDS, stats.phase_seconds())
        connected = self.driver.zk_connected()
        if connected is not None:
            yield gauge(c.ZK_CONNECTED, 1 if connected else 0)
        if self.controller.raft is not None:
            yield from raft_families(self.controller.raft)
