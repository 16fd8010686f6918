"""The broker's inter-broker listener: the BrokerControl gRPC service. Thin: requests
from a controller go to the metadata cache; AlterPartition and ControlledShutdown are
answered by this broker only while it is the ZooKeeper controller (NOT_CONTROLLER
otherwise, so the sender looks the controller up again).

Who may call, as Kafka's brokers decide it, before anything is applied:

- With an authorizer (``authorizer.class.name``), the caller's principal (its TLS
  certificate's, ``User:ANONYMOUS`` without one) must be allowed ClusterAction on the
  cluster (a super user, or an ALLOW ACL on ``kafka-cluster``) for UpdateMetadata,
  LeaderAndIsr, StopReplica, AlterPartition and ControlledShutdown; refused with
  CLUSTER_AUTHORIZATION_FAILED. ACLs not read from ZooKeeper yet answer UNAVAILABLE
  (the sender retries) rather than refusing a principal an ACL may allow.
- UpdateMetadata, LeaderAndIsr and StopReplica must come from the controller ZooKeeper
  names, in its epoch (:mod:`~migration.broker.zk_controller_check`); refused with
  STALE_CONTROLLER_EPOCH, or UNAVAILABLE when ZooKeeper cannot say in time.

Each refusal is one WARNING naming the peer; the metadata cache is not touched.
MigrationCheck (read-only: ids and versions Metadata shows anyway) is answered to all.

UpdateMetadata is applied before it is answered. LeaderAndIsr and StopReplica are
answered once their header passed the checks above and the epoch checks
(:meth:`MetadataCache.stale`), then applied in the order they came on one thread of
their own: a full LeaderAndIsr of a million partitions takes seconds to apply, and the
controller's channel sends nothing more to this broker until it is answered (the
UpdateMetadata that shows a new topic to a forwarded write waiting here, too). A
partition such a request names with an older leader epoch is not taken, as before,
and counted in one INFO line here (the controller's channel ignored them before).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent import futures
from typing import TYPE_CHECKING, Any, TypeVar

import grpc

from migration.broker.zk_controller_check import (
    ControllerCheck,
    Refusal,
    UndecidedError,
    read_controller,
)
from migration.common import rpc
from migration.common.kafka_errors import ErrorCode, error_counts, error_name
from migration.common.rpc import BROKER_CONTROL_SERVER_OPTIONS
from migration.kafka.authorizer import CLUSTER, CLUSTER_ACTION, CLUSTER_NAME, Authorizer
from migration.kafka.principal import grpc_principal
from migration.proto import broker_pb2 as bpb
from migration.proto import broker_pb2_grpc

if TYPE_CHECKING:
    from migration.broker.zk_broker import ZkBroker
    from migration.zkcontroller.controller import ZkController

log = logging.getLogger(__name__)


# what a broker-to-controller request answers (refusals are built of the same type)
_Answer = TypeVar("_Answer", bpb.AlterPartitionResponse, bpb.ControlledShutdownResponse)


class BrokerControlServicer(broker_pb2_grpc.BrokerControlServicer):  # type: ignore[misc]
    """BrokerControl of one ZooKeeper-mode broker: every request but MigrationCheck passes
    :meth:`_refused` before it reaches the cache or the controller."""

    def __init__(self, broker: ZkBroker) -> None:
        self._broker = broker
        self._replica_requests = futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="replica-requests"
        )
        settings = broker.config.authorizer
        self._authorizer = Authorizer(settings) if settings is not None else None
        self._controller = ControllerCheck(
            lambda timeout_s: read_controller(broker.client, timeout_s), lambda: broker.owner
        )

    def _refused(
        self, method: str, context: Any, header: bpb.ControllerHeader | None = None
    ) -> Refusal | None:
        """None when the caller may make this request (see the module doc); else the
        refusal, logged. Aborts the call with UNAVAILABLE when it cannot be told yet."""
        try:
            refusal = self._unauthorized(context)
            if refusal is None and header is not None:
                refusal = self._controller.check(header)
        except UndecidedError as exc:
            log.info("%s from %s not answered: %s", method, context.peer(), exc)
            context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
            raise  # abort raises: what could not be checked is never applied
        if refusal is not None:
            log.warning(
                "broker %d refused %s from %s: %s: %s",
                self._broker.broker_id,
                method,
                context.peer(),
                refusal.code.name,
                refusal.message,
            )
        return refusal

    def _unauthorized(self, context: Any) -> Refusal | None:
        """Kafka's ClusterAction check of the caller (None: allowed, or no authorizer)."""
        if self._authorizer is None:
            return None
        who = grpc_principal(context)
        view = self._broker.entities.current()
        if self._authorizer.authorize(view.image.acls, who, CLUSTER_ACTION, CLUSTER, CLUSTER_NAME):
            return None
        if view.generation == 0:
            raise UndecidedError("the ACLs are not read from ZooKeeper yet")
        return Refusal(
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            f"{who.principal} (host {who.host}) may not ClusterAction on the cluster",
        )

    def UpdateMetadata(  # noqa: N802
        self, request: bpb.UpdateMetadataRequest, context: Any
    ) -> bpb.BrokerResponse:
        refusal = self._refused("UpdateMetadata", context, request.header)
        if refusal is not None:
            return bpb.BrokerResponse(error_code=refusal.code, error_message=refusal.message)
        answer = self._broker.cache.update_metadata(request)
        if (
            request.type == bpb.FULL
            and request.header.is_kraft_controller
            and not answer.error_code
        ):
            log.info(
                "broker %d: full metadata from KRaft controller %d applied (%d partitions)",
                self._broker.broker_id,
                request.header.controller_id,
                len(request.partition_states),
            )
        self._broker.check_isr()
        return answer

    def LeaderAndIsr(  # noqa: N802
        self, request: bpb.LeaderAndIsrRequest, context: Any
    ) -> bpb.BrokerResponse:
        refusal = self._refused("LeaderAndIsr", context, request.header)
        if refusal is not None:
            return bpb.BrokerResponse(error_code=refusal.code, error_message=refusal.message)
        return self._in_order("LeaderAndIsr", request, self._broker.cache.leader_and_isr)

    def StopReplica(  # noqa: N802
        self, request: bpb.StopReplicaRequest, context: Any
    ) -> bpb.BrokerResponse:
        refusal = self._refused("StopReplica", context, request.header)
        if refusal is not None:
            return bpb.BrokerResponse(error_code=refusal.code, error_message=refusal.message)
        return self._in_order("StopReplica", request, self._broker.cache.stop_replica)

    def _in_order(
        self,
        method: str,
        request: Any,
        apply: Callable[[Any], bpb.BrokerResponse],
    ) -> bpb.BrokerResponse:
        """Refused now if stale, else queued to be applied in order (the module doc)."""
        stale = self._broker.cache.stale(request.header)
        if stale is not None:
            return stale
        self._replica_requests.submit(self._apply, method, request, apply)
        return bpb.BrokerResponse()

    def _apply(self, method: str, request: Any, apply: Callable[[Any], bpb.BrokerResponse]) -> None:
        try:
            answer = apply(request)
        except Exception:
            log.exception("broker %d: %s could not be applied", self._broker.broker_id, method)
            return
        if answer.error_code:  # its epochs went stale while it waited its turn
            log.warning(
                "broker %d: %s from controller %d not applied: %s %s",
                self._broker.broker_id,
                method,
                request.header.controller_id,
                error_name(answer.error_code),
                answer.error_message,
            )
        elif answer.partition_errors:  # as the controller's channel ignores them: INFO
            log.info(
                "broker %d: %s from controller %d: %d partitions not taken (%s)",
                self._broker.broker_id,
                method,
                request.header.controller_id,
                len(answer.partition_errors),
                error_counts(e.error_code for e in answer.partition_errors),
            )
        if method == "LeaderAndIsr":
            self._broker.check_isr()

    def AlterPartition(  # noqa: N802
        self, request: bpb.AlterPartitionRequest, context: Any
    ) -> bpb.AlterPartitionResponse:
        return self._on_controller(
            "AlterPartition", context, bpb.AlterPartitionResponse,
            lambda controller: controller.alter_partition(request),
        )  # fmt: skip

    def ControlledShutdown(  # noqa: N802
        self, request: bpb.ControlledShutdownRequest, context: Any
    ) -> bpb.ControlledShutdownResponse:
        return self._on_controller(
            "ControlledShutdown", context, bpb.ControlledShutdownResponse,
            lambda controller: controller.controlled_shutdown(request),
        )  # fmt: skip

    def _on_controller(
        self,
        name: str,
        context: Any,
        reply: Callable[..., _Answer],
        call: Callable[[ZkController], _Answer],
    ) -> _Answer:
        """A broker-to-controller request: refused as any request of ``name`` is, or
        NOT_CONTROLLER unless this broker is the active ZooKeeper controller."""
        refusal = self._refused(name, context)
        if refusal is not None:
            return reply(error_code=refusal.code, error_message=refusal.message)
        controller = self._broker.controller
        if controller is None or not controller.active:
            return reply(
                error_code=ErrorCode.NOT_CONTROLLER,
                error_message=f"broker {self._broker.broker_id} is not the controller",
            )
        return call(controller)

    def MigrationCheck(  # noqa: N802
        self, request: bpb.MigrationCheckRequest, context: Any
    ) -> bpb.MigrationCheckResponse:
        """The design's check, asked by a KRaft controller before it migrates."""
        b = self._broker
        return bpb.MigrationCheckResponse(
            broker_id=b.broker_id,
            cluster_id=b.cluster_id,
            config_enabled=b.config.migration_enabled,
            metadata_version=b.metadata_version_max,
        )


def serve(broker: ZkBroker, host: str, port: int) -> tuple[grpc.Server, int]:
    """Start the BrokerControl service; returns the server and the port bound."""
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="control"),
        options=BROKER_CONTROL_SERVER_OPTIONS,
    )
    broker_pb2_grpc.add_BrokerControlServicer_to_server(BrokerControlServicer(broker), server)
    bound = rpc.add_port(server, f"{host or '0.0.0.0'}:{port}")
    if bound == 0:
        raise OSError(f"cannot listen on {host or '0.0.0.0'}:{port} (inter-broker listener)")
    server.start()
    return server, bound
