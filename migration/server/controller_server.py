"""A controller process: the metadata log, the Raft node, the committed image and its
publishers, the quorum controller, one gRPC server (asyncio) for both services, and a
clean shutdown (graceful resignation first). Its metrics port also answers readiness (a
voter that knows its leader and is caught up: :mod:`.readiness`), liveness (the Raft
loop and the gRPC loop running) and the live migration page (:mod:`.migration_page`)."""

from __future__ import annotations

import logging
import time

import grpc

from migration.common import rpc
from migration.common.ports import bind_problem
from migration.common.rpc import CONTROLLER_SERVER_OPTIONS
from migration.controller.config import ControllerConfig
from migration.controller.quorum_controller import ControllerSettings, QuorumController
from migration.controller.service import ControllerServicer
from migration.controller.storage import StorageError, ensure_directory_id, read_storage
from migration.driver.controller_port import ControllerPort
from migration.driver.driver import MigrationDriver
from migration.observability.endpoint import MetricsEndpoint, MetricsServer
from migration.observability.health import Health, running
from migration.proto import controller_pb2 as cpb
from migration.proto import controller_pb2_grpc, raft_pb2_grpc
from migration.raft.aio_host import AioHost
from migration.raft.config import RaftConfig
from migration.raft.event_performance import EventPerformance
from migration.raft.runtime import RaftServicer
from migration.records import versions
from migration.server.controller_metrics import ControllerCollector
from migration.server.migration_page import JSON_PATH, PAGE_PATH, MigrationPage, advertised_metrics
from migration.server.node_metrics import LatestImage
from migration.server.page_sampler import PageSampler
from migration.server.raft_manager import RaftManager
from migration.server.readiness import controller_readiness

log = logging.getLogger(__name__)


class ListenerError(OSError):
    """The controller's listener cannot be opened; the message names the cause."""


def resolve_storage(config: ControllerConfig) -> tuple[str, int]:
    """The cluster id and bootstrap metadata.version: from ``meta.properties`` written by
    ``storage format``, or ``cluster.id`` in the config (checked against each other).
    StorageError when neither says, or they disagree."""
    storage = read_storage(config.log_dir)
    if storage is None:
        if not config.cluster_id:
            raise StorageError(
                f"{config.log_dir} is not formatted: run `zk2kraft storage format --config "
                "<controller.properties> --cluster-id <ZooKeeper's /cluster/id>` (or set "
                "cluster.id)"
            )
        return config.cluster_id, versions.LATEST
    if config.cluster_id and config.cluster_id != storage.cluster_id:
        raise StorageError(
            f"cluster.id={config.cluster_id} but {config.log_dir}/meta.properties says "
            f"{storage.cluster_id}"
        )
    if storage.node_id != config.node_id:
        raise StorageError(
            f"node.id={config.node_id} but {config.log_dir}/meta.properties says {storage.node_id}"
        )
    return storage.cluster_id, storage.metadata_version


class ControllerProcess:
    def __init__(self, config: ControllerConfig) -> None:
        """Open the storage, the metadata log and the Raft replica; wire the quorum
        controller, the migration driver and what observes the image; serve gRPC and,
        when configured, the metrics port. A failure closes what was opened and raises."""
        self.config = config
        self.cluster_id, bootstrap_version = resolve_storage(config)
        self.quorum = _raft_manager(config, self.cluster_id)
        self.loop, self.raft, self.committed = (
            self.quorum.loop,
            self.quorum.raft,
            self.quorum.committed,
        )
        self.controller = QuorumController(
            config.node_id,
            self.committed,
            _controller_settings(config, self.cluster_id, bootstrap_version),
        )
        self.raft.add_listener(self.controller)  # after the image: it reads the new one
        self.controller.raft = self.raft
        self.controller.post = self.loop.post  # a request's slices, one event each
        self.raft.own_appends_allowed = self.controller.quiet  # voter changes between batches
        self.loop.on_idle(self.controller.flush)
        self.driver = MigrationDriver(
            config, self.cluster_id, ControllerPort(self.loop, self.controller)
        )
        self.committed.register(self.driver)
        self.latest = LatestImage()
        self.committed.register(self.latest)
        self.metrics: MetricsServer | None = None
        self.metrics_endpoint = ""  # host:port others reach the metrics port at ("" none)
        self.sampler = PageSampler(
            config.node_id, self.describe, self.raft, self.loop, config.voters
        )
        self.host = AioHost()
        try:
            self.server = self.host.run(self._serve)
            if config.metrics is not None:
                self._serve_metrics(config.metrics)
        except BaseException:
            self.host.close()
            self.quorum.close()
            raise

    def _serve_metrics(self, metrics: MetricsEndpoint) -> None:
        """The metrics port: the controller's metrics, its health probes and the
        migration page (HTML and JSON)."""
        collector = ControllerCollector(self.controller, self.driver, self.latest, self.loop)
        self.metrics = MetricsServer(metrics, [collector])
        self.metrics.wire_health(self.readiness, self.liveness)
        self.metrics_endpoint = advertised_metrics(self.config, self.metrics.port)
        page = MigrationPage(
            self.sampler, self.describe, self.driver, self.latest, self.raft,
            scheme=metrics.scheme,
        )  # fmt: skip
        self.metrics.route(PAGE_PATH, page.html)
        self.metrics.route(JSON_PATH, page.json)

    def describe(self) -> cpb.DescribeMigrationResponse:
        """The driver's DescribeMigration answer, with this controller's page address."""
        answer = self.driver.status()
        answer.metrics_endpoint = self.metrics_endpoint
        return answer

    def report_audit(self, request: cpb.ReportAuditRequest) -> cpb.ReportAuditResponse:
        """ReportAudit: kept for the page (every controller keeps the last one)."""
        return self.sampler.report_audit(request, self.controller.active)

    def readiness(self) -> Health:
        """Whether this controller is ready (:func:`.readiness.controller_readiness`)."""
        return controller_readiness(
            self.raft, lambda: self.controller.active, self.latest.image.offset
        )

    def liveness(self) -> Health:
        """Whether its loops run: the Raft event loop (none of its events failed: a
        fault stops it) and gRPC's."""
        return running({"raft-loop": self.loop.fault is None, "grpc": self.host.loop.is_running()})

    async def _serve(self) -> grpc.aio.Server:
        # SO_REUSEPORT off: a second controller on the same port must fail, not share it.
        server = grpc.aio.server(options=[("grpc.so_reuseport", 0), *CONTROLLER_SERVER_OPTIONS])
        raft_pb2_grpc.add_RaftServicer_to_server(
            RaftServicer(self.loop, self.raft, self.quorum.transport), server
        )
        controller_pb2_grpc.add_ControllerServicer_to_server(
            ControllerServicer(
                self.loop, self.controller, migration=self.describe, audit=self.report_audit
            ),
            server,
        )
        host, port = self.config.listener.host, self.config.listener.port
        address = str(self.config.listener)
        problem = bind_problem(host, port)
        if problem is None:
            try:
                if rpc.add_port(server, address) == 0:
                    problem = bind_problem(host, port) or f"gRPC cannot listen on {address}"
            except RuntimeError:  # gRPC's "Failed to bind"
                problem = bind_problem(host, port) or f"gRPC cannot listen on {address}"
        if problem is not None:
            raise ListenerError(f"listeners: {problem}")
        return server

    def start(self) -> None:
        self.host.run(self.server.start)
        self.quorum.start()
        self.driver.start()
        if self.metrics is not None:  # the page's sampler; audits are kept without it
            self.sampler.start()
        log.info(
            "controller %d listening on %s:%d, log %s",
            self.config.node_id,
            self.config.listener.host,
            self.config.listener.port,
            self.config.log_dir,
        )

    def stop(self) -> None:
        """Resign (EndQuorumEpoch to the voters) if leading, stop serving, close the log."""
        self.sampler.stop()
        self.driver.stop()
        try:
            was_leader = self.loop.call(self._resign, timeout=5)
            if was_leader:
                time.sleep(0.2)  # let EndQuorumEpoch reach the voters
        except Exception:  # a wedged loop must not block shutdown
            log.exception("resignation failed")
        self.host.run(lambda: self.server.stop(grace=1))
        self.host.close()
        if self.metrics is not None:
            self.metrics.close()
        self.quorum.close()

    def _resign(self) -> bool:
        was_leader = self.raft.is_leader
        self.raft.resign()
        self.raft.tick()  # flush
        return was_leader


def _raft_manager(config: ControllerConfig, cluster_id: str) -> RaftManager:
    """The controller's Raft replica over its metadata log. KIP-853: this replica's
    directory id (assigned now if the directory has none, as Kafka does at startup) and
    whether it was formatted to join."""
    formatted = ensure_directory_id(config.log_dir)
    directory_id = "" if formatted is None else formatted.directory_id
    joining = formatted is not None and formatted.joining
    # A voter of a larger quorum cuts a corrupt log tail (loudly) and fetches the
    # records back from the leader; a lone voter has nowhere to get them: it refuses.
    return RaftManager(
        config.log_dir,
        RaftConfig(
            node_id=config.node_id,
            voters=frozenset(config.voters),
            cluster_id=cluster_id,
            directory_id=directory_id,
            joining=joining,
            election_timeout_ms=config.election_timeout_ms,
            fetch_timeout_ms=config.fetch_timeout_ms,
            election_backoff_max_ms=config.election_backoff_max_ms,
        ),
        config.voters,
        request_timeout_ms=config.request_timeout_ms,
        repair_corrupt_tail=len(config.voters) > 1,
        segment_bytes=config.segment_bytes,
        snapshot_bytes=config.snapshot_bytes,
        performance=EventPerformance(
            config.performance_sample_period_ms, config.performance_always_log_threshold_ms
        ),
    )


def _controller_settings(
    config: ControllerConfig, cluster_id: str, bootstrap_version: int
) -> ControllerSettings:
    """What the quorum controller takes of the controller's configuration."""
    return ControllerSettings(
        cluster_id=cluster_id,
        voters=config.voters,
        snapshot_bytes=config.snapshot_bytes,
        session_timeout_ms=config.session_timeout_ms,
        num_partitions=config.num_partitions,
        default_replication_factor=config.default_replication_factor,
        zk_migration_enabled=config.zk_migration_enabled,
        bootstrap_metadata_version=bootstrap_version,
    )
