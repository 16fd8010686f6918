"""The metrics of a controller process: whether it is active, its committed image's
counts and migration state, the driver's phase, lag, ZooKeeper write times and errors,
its event queue (Kafka's ControllerEventManager timers), the last record it applied,
leader churn, metadata errors, timed-out heartbeats, and its Raft node. Registered in
the process's registry; everything is read at scrape time (see :mod:`.node_metrics`
for the threading)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import Metric

from migration.controller.quorum_controller import QuorumController
from migration.driver.driver import MigrationDriver
from migration.driver.states import Phase
from migration.driver.stats import WRITE_ERRORS
from migration.observability import catalog as c
from migration.observability.exposition import counter_by, enum, gauge, summary
from migration.raft.event_loop import EventLoop
from migration.server.node_metrics import (
    LatestImage,
    broker_families,
    image_families,
    raft_families,
)

PHASES = [p.value for p in Phase]


class ControllerCollector:
    def __init__(
        self,
        controller: QuorumController,
        driver: MigrationDriver,
        latest: LatestImage,
        loop: EventLoop,
    ) -> None:
        self.controller = controller
        self.driver = driver
        self.latest = latest
        self.loop = loop

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
        yield from self._controller_families()
        if self.controller.raft is not None:
            yield from raft_families(self.controller.raft)

    def _controller_families(self) -> Iterator[Metric]:
        committed = self.controller.committed_metadata
        yield summary(c.EVENT_QUEUE_TIME, self.loop.queue_time.summary())
        yield summary(c.EVENT_QUEUE_PROCESSING_TIME, self.loop.processing_time.summary())
        yield gauge(c.LAST_APPLIED_RECORD_OFFSET, committed.last_offset)
        yield gauge(c.LAST_APPLIED_RECORD_TIMESTAMP, committed.last_applied_timestamp_ms)
        yield gauge(c.LAST_APPLIED_RECORD_LAG_MS, committed.last_applied_lag_ms)
        yield gauge(c.NEW_ACTIVE_CONTROLLERS, self.controller.new_active_controllers.value)
        yield gauge(c.METADATA_ERRORS, committed.metadata_errors.value)
        yield gauge(c.TIMED_OUT_BROKER_HEARTBEATS, self.controller.timed_out_heartbeats.value)
