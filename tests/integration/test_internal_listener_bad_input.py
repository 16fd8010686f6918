"""Hostile requests on a ZooKeeper-mode broker's inter-broker (gRPC) listener, with real
broker processes on a real ZooKeeper (issue 40): a stranger's UpdateMetadata,
LeaderAndIsr or StopReplica (an epoch of 2^31-1, another controller's id) is refused
and changes nothing, real updates keep flowing afterwards, through a controller
failover too; with mutual TLS and the ACL authorizer a certificate without ClusterAction
is refused. And DescribeConfigs of another broker's id is Kafka's INVALID_REQUEST."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from kazoo.exceptions import NoNodeError
from kio.index import load_request_schema

from migration.common.kafka_errors import ErrorCode
from migration.common.limits import INT32_MAX
from migration.kafka.authorizer import ACL_AUTHORIZER, ANONYMOUS
from migration.kafka.client import KafkaConnection
from migration.kafka.wire import build
from migration.local.cluster import INTERNAL_LISTENER, LocalCluster
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.proto import broker_pb2 as bpb
from migration.proto import broker_pb2_grpc
from migration.records.codes import BROKER_RESOURCE
from migration.zk.client import ZkClient
from tests.broker_harness import controller_of, create_topic, eventually, leaders, running_cluster
from tests.security_harness import NODE, SecuredCluster, principal
from tests.support import zk2kraft

pytestmark = pytest.mark.slow

BROKERS = [1, 2]
STALE = ErrorCode.STALE_CONTROLLER_EPOCH


@pytest.fixture(scope="module")
def cluster(
    zk_server: EmbeddedZooKeeper, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LocalCluster, ZkClient]]:
    with running_cluster(zk_server, tmp_path_factory.mktemp("internal"), BROKERS) as running:
        yield running


def _stub(cluster: LocalCluster, broker: int) -> broker_pb2_grpc.BrokerControlStub:
    channel = grpc.insecure_channel(f"127.0.0.1:{cluster.brokers[broker].internal_port}")
    return broker_pb2_grpc.BrokerControlStub(channel)


def _view(cluster: LocalCluster, broker: int) -> tuple[dict[str, Any], list[int]]:
    """What ``broker`` answers Metadata with: each topic's partitions, and the brokers."""
    m: Any = cluster.metadata(broker)
    topics = {t.name: leaders(cluster, broker, t.name) for t in m.topics}
    return topics, sorted(b.node_id for b in m.brokers)


def _led_everywhere(cluster: LocalCluster, topic: str, brokers: list[int]) -> bool:
    """Every broker of ``brokers`` lists ``topic`` with a live leader on each partition."""
    views = [leaders(cluster, b, topic) for b in brokers]
    return bool(views[0]) and all(
        v == views[0] and all(leader in brokers for leader, _ in v.values()) for v in views
    )


def _header(controller: int, epoch: int, kraft: bool = False) -> bpb.ControllerHeader:
    """A controller header as a stranger writes it: broker epoch -1 (any) passes the
    broker-epoch check, so only the controller check stands in the way."""
    return bpb.ControllerHeader(
        controller_id=controller, controller_epoch=epoch, broker_epoch=-1,
        is_kraft_controller=kraft,
    )  # fmt: skip


def _made(local: LocalCluster, topic: str, partitions: int, rf: int) -> None:
    """A topic created through the brokers, then led on every one of them."""
    create_topic(local, topic, partitions, rf)
    eventually(lambda: _led_everywhere(local, topic, BROKERS), what=f"{topic} led everywhere")


def _forged_full(header: bpb.ControllerHeader) -> bpb.UpdateMetadataRequest:
    """UpdateMetadata FULL with nothing in it: obeyed, it empties the broker's view."""
    return bpb.UpdateMetadataRequest(header=header, type=bpb.FULL)


def test_a_forged_full_update_metadata_changes_nothing(
    cluster: tuple[LocalCluster, ZkClient],
) -> None:
    local, zk = cluster
    _made(local, "kept", 2, 2)
    before = {b: _view(local, b) for b in BROKERS}
    controller, _ = controller_of(zk)
    forged = _header(controller, INT32_MAX)
    for b in BROKERS:
        answer = _stub(local, b).UpdateMetadata(_forged_full(forged), timeout=30)
        assert answer.error_code == STALE, answer
        assert _view(local, b) == before[b]
        log = local.brokers[b].log.read_text()
        assert "WARNING" in log and "refused UpdateMetadata from ipv4:127.0.0.1" in log
    # the real controller is still obeyed: a topic made now reaches every broker
    _made(local, "made-after-forgery", 3, 2)


def test_a_forged_stop_replica_or_leader_and_isr_is_refused(
    cluster: tuple[LocalCluster, ZkClient],
) -> None:
    local, zk = cluster
    _made(local, "held", 2, 2)
    controller, _ = controller_of(zk)
    forged = _header(controller, INT32_MAX)
    for b in BROKERS:
        stub = _stub(local, b)
        stop = bpb.StopReplicaRequest(
            header=forged,
            partitions=[bpb.PartitionState(topic_name="held", partition_index=p) for p in (0, 1)],
            delete_partitions=True,
        )
        assert stub.StopReplica(stop, timeout=30).error_code == STALE
        full = bpb.LeaderAndIsrRequest(header=forged, type=bpb.FULL)  # drops every replica
        assert stub.LeaderAndIsr(full, timeout=30).error_code == STALE
    _made(local, "made-after-stop", 2, 2)
    assert _led_everywhere(local, "held", BROKERS)


def test_a_request_naming_another_controller_is_refused(
    cluster: tuple[LocalCluster, ZkClient],
) -> None:
    local, zk = cluster
    _made(local, "named", 1, 2)
    before = {b: _view(local, b) for b in BROKERS}
    controller, epoch = controller_of(zk)
    impostor = max(BROKERS) + 100
    for header in (
        _header(impostor, epoch),
        _header(impostor, epoch + 1),
        # the controller's id and epoch, but as a KRaft controller: not what ZooKeeper says
        _header(controller, epoch, kraft=True),
    ):
        for b in BROKERS:
            answer = _stub(local, b).UpdateMetadata(_forged_full(header), timeout=30)
            assert answer.error_code == STALE, (header, answer)
            assert "is not the controller ZooKeeper names" in answer.error_message
            assert _view(local, b) == before[b]
    _made(local, "made-after-impostor", 1, 2)


def test_describe_configs_of_another_broker_is_an_invalid_request(
    cluster: tuple[LocalCluster, ZkClient],
) -> None:
    local, _ = cluster

    def described(broker: int, name: str) -> Any:
        request = build(
            load_request_schema(32, 4),
            {"resources": [{"resource_type": BROKER_RESOURCE, "resource_name": name}]},
        )
        with KafkaConnection("127.0.0.1", local.brokers[broker].port) as conn:
            return conn.request(request).results[0]

    other = described(1, "2")
    assert other.error_code == ErrorCode.INVALID_REQUEST and not other.configs
    assert "expected 1 or empty string, but received 2" in other.error_message
    assert described(1, "1").error_code == 0  # its own id
    assert described(1, "").error_code == 0  # the cluster-wide defaults
    assert described(2, "2").error_code == 0
    # the admin tool sends a broker's configs to that broker, as Kafka's admin client does
    out = zk2kraft(
        "admin", "--bootstrap-server", f"127.0.0.1:{local.brokers[1].port}", "describe-config",
        "--entity-type", "brokers", "--entity-name", "2", "--json",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr


def test_a_failover_reaches_brokers_that_were_sent_a_forged_epoch(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    """The new controller's epoch is far below the forged 2^31-1: it is obeyed because
    ZooKeeper names it, and the forgery was never applied."""
    with running_cluster(zk_server, tmp_path, [1, 2, 3]) as (local, zk):
        create_topic(local, "before", 3, 3)
        old, epoch = controller_of(zk)
        survivors = [b for b in (1, 2, 3) if b != old]
        eventually(lambda: _led_everywhere(local, "before", [1, 2, 3]), what="before led")
        forged = _header(old, INT32_MAX)
        for b in survivors:
            answer = _stub(local, b).UpdateMetadata(_forged_full(forged), timeout=30)
            assert answer.error_code == STALE
        local.kill(old)

        def new_controller() -> tuple[int, int] | None:
            try:
                found = controller_of(zk)
            except NoNodeError:  # not elected yet
                return None
            return found if found[0] != old else None

        _, new_epoch = eventually(new_controller, what="a new controller")
        assert new_epoch > epoch
        eventually(lambda: _led_everywhere(local, "before", survivors), what="leaders moved")
        create_topic(local, "after", 4, 2)
        eventually(lambda: _led_everywhere(local, "after", survivors), what="new topic led")


def test_with_mutual_tls_a_certificate_without_cluster_action_is_refused(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    """The inter-broker listener requires a client certificate; the brokers' own is a
    super user (as Kafka's operators list brokers in super.users), the tools' is not:
    even with the real controller's id and epoch, its requests are refused with
    CLUSTER_AUTHORIZATION_FAILED until an ACL allows it ClusterAction on the cluster."""
    secured = SecuredCluster(tmp_path / "security")
    props = {
        **secured.tls_properties(),
        "listener.security.protocol.map": f"PLAINTEXT:PLAINTEXT,{INTERNAL_LISTENER}:SSL",
        f"listener.name.{INTERNAL_LISTENER.lower()}.ssl.client.auth": "required",
        "authorizer.class.name": ACL_AUTHORIZER,
        # the plaintext client listener's users (this test, the admin tool) are anonymous
        "super.users": f"{principal(NODE)};{ANONYMOUS}",
    }
    with running_cluster(zk_server, tmp_path / "brokers", BROKERS, **props) as (local, zk):
        create_topic(local, "guarded", 2, 2)
        eventually(lambda: _led_everywhere(local, "guarded", BROKERS), what="guarded led")
        before = {b: _view(local, b) for b in BROKERS}
        controller, epoch = controller_of(zk)
        real = _header(controller, epoch)
        tool = secured.grpc_tls().grpc_channel_credentials()

        def stub(b: int) -> broker_pb2_grpc.BrokerControlStub:
            target = f"127.0.0.1:{local.brokers[b].internal_port}"
            return broker_pb2_grpc.BrokerControlStub(grpc.secure_channel(target, tool))

        harmless = bpb.StopReplicaRequest(
            header=real, partitions=[bpb.PartitionState(topic_name="no-such", partition_index=0)]
        )
        for b in BROKERS:
            answer = stub(b).UpdateMetadata(_forged_full(real), timeout=30)
            assert answer.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED, answer
            assert principal("tool") in answer.error_message
            assert stub(b).StopReplica(harmless, timeout=30).error_code == (
                ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            )
            assert _view(local, b) == before[b]
        create_topic(local, "guarded-after", 1, 2)  # the brokers' certificate is obeyed
        eventually(lambda: _led_everywhere(local, "guarded-after", BROKERS), what="new topic")

        allowed = zk2kraft(
            "admin", "--bootstrap-server", local.bootstrap, "create-acl",
            "--principal", principal("tool"), "--host", "*", "--operation", "cluster-action",
            "--resource-type", "cluster", "--resource-name", "kafka-cluster",
            "--resource-pattern-type", "literal", "--permission", "allow",
        )  # fmt: skip
        assert allowed.returncode == 0, allowed.stderr
        for b in BROKERS:  # once each broker has read the ACL
            eventually(
                lambda b=b: stub(b).StopReplica(harmless, timeout=30).error_code == 0,
                what=f"broker {b} allows the tool ClusterAction",
            )
            forged = _header(controller, INT32_MAX)
            answer = stub(b).UpdateMetadata(_forged_full(forged), timeout=30)
            assert answer.error_code == STALE  # allowed to ask, still not the controller
