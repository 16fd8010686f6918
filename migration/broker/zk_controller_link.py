"""A ZooKeeper-mode broker's way to the ZooKeeper controller (Kafka's
BrokerToControllerChannelManager in ZooKeeper mode): a stub to the controller's
inter-broker listener, for AlterPartition and ControlledShutdown."""

from __future__ import annotations

import grpc

from migration.broker.zk_metadata_cache import MetadataCache
from migration.common import rpc
from migration.proto import broker_pb2_grpc
from migration.zk.model.cluster import ControllerZnode

_CHANNELS: dict[str, grpc.Channel] = {}  # one per controller endpoint, for the process


def controller_stub(
    owner: ControllerZnode | None, cache: MetadataCache, listener: str
) -> broker_pb2_grpc.BrokerControlStub | None:
    """A stub to the current ZooKeeper controller (``owner``)'s ``listener``, found in
    the metadata cache as Kafka's brokers find it (None: no ZooKeeper controller, or not
    yet known to this broker with such a listener). Nothing is read from ZooKeeper, so a
    ZooKeeper outage cannot hold a caller (a controlled shutdown) here."""
    if owner is None or owner.is_kraft:
        return None
    known = cache.brokers().get(owner.broker_id)
    endpoints = known.endpoints if known is not None else ()
    endpoint = next((e for e in endpoints if e.name == listener), None)
    if endpoint is None:
        return None
    target = f"{endpoint.host}:{endpoint.port}"
    if target not in _CHANNELS:
        _CHANNELS[target] = rpc.channel(target)
    return broker_pb2_grpc.BrokerControlStub(_CHANNELS[target])
