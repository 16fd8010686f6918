"""What the driver asks other processes before it claims ZooKeeper: each voter's
migration flag (DescribeMigration) and each ZooKeeper broker's MigrationCheck. Answers
or the reason there is none; the decisions are :mod:`.readiness`'s."""

from __future__ import annotations

from collections.abc import Mapping

import grpc

from migration.common import rpc
from migration.driver.broker_rpcs import zk_broker_targets
from migration.image.model import MetadataImage
from migration.proto import broker_pb2 as bpb
from migration.proto import broker_pb2_grpc, controller_pb2_grpc
from migration.proto import controller_pb2 as cpb
from migration.raft.config import Address

PEER_TIMEOUT_S = 2.0


def voter_answers(
    voters: Mapping[int, Address], node_id: int, enabled: bool
) -> dict[int, bool | str]:
    """Each voter's zookeeper.metadata.migration.enable (``node_id``'s own is
    ``enabled``), or why it did not answer."""
    out: dict[int, bool | str] = {}
    for voter, address in sorted(voters.items()):
        if voter == node_id:
            out[voter] = enabled
            continue
        try:
            with rpc.channel(str(address), []) as channel:
                answer = controller_pb2_grpc.ControllerStub(channel).DescribeMigration(
                    cpb.DescribeMigrationRequest(), timeout=PEER_TIMEOUT_S
                )
        except grpc.RpcError as exc:
            out[voter] = f"at {address} did not answer ({exc.code().name})"
            continue
        out[voter] = answer.zk_migration_enabled
    return out


def migration_checks(
    image: MetadataImage, brokers: set[int], listener: str, controller_id: int
) -> dict[int, bpb.MigrationCheckResponse | str]:
    """MigrationCheck from each of ``brokers`` registered (unfenced, migrating) in
    ``image``, at its ``listener``; or why it did not answer."""
    targets = zk_broker_targets(image, listener)
    out: dict[int, bpb.MigrationCheckResponse | str] = {}
    for b in sorted(brokers & set(targets)):
        try:
            with rpc.channel(targets[b]) as channel:
                out[b] = broker_pb2_grpc.BrokerControlStub(channel).MigrationCheck(
                    bpb.MigrationCheckRequest(controller_id=controller_id),
                    timeout=PEER_TIMEOUT_S,
                )
        except grpc.RpcError as exc:
            out[b] = f"unreachable at {targets[b]}: {exc.code().name}"
    return out
