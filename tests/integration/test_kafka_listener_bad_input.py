"""Hostile bytes on a broker's Kafka listener: each bad connection gets an error answer
or is closed at once; the broker keeps serving everyone else and nothing in ZooKeeper
changes."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from kio.schema.api_versions.v0.response import ApiVersionsResponse
from kio.schema.metadata.v12.request import MetadataRequest
from kio.serial import entity_reader

from migration.kafka.client import KafkaConnection
from migration.local.cluster import LocalCluster
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.zk.client import ZkClient
from migration.zk.reader import read_snapshot
from tests.broker_harness import running_cluster

HEADER = struct.Struct(">hhi")


@pytest.fixture(scope="module")
def broker(
    zk_server: EmbeddedZooKeeper, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LocalCluster, ZkClient]]:
    with running_cluster(zk_server, tmp_path_factory.mktemp("hostile"), [1]) as running:
        yield running


def _frame(api_key: int, version: int, rest: bytes = b"") -> bytes:
    body = HEADER.pack(api_key, version, 7) + rest
    return struct.pack(">i", len(body)) + body


def _closed(conn: KafkaConnection) -> bool:
    conn.sock.settimeout(20)
    try:
        return conn.sock.recv(1) == b""
    except ConnectionResetError:
        return True


def _still_serving(cluster: LocalCluster) -> None:
    m = cluster.metadata(1)
    assert [b.node_id for b in m.brokers] == [1]  # type: ignore[attr-defined]


CASES = {
    "garbage": b"\x00\x00\x00\x0c" + bytes(range(200, 212)),
    "negative size": struct.pack(">i", -5),
    "oversized length": struct.pack(">i", 2**31 - 1) + b"x" * 64,
    "shorter than a header": struct.pack(">i", 3) + b"abc",
    "unknown api key": _frame(999, 0, b"\x00\x00"),
    "unsupported Metadata version": _frame(3, 99, b"\x00\x00"),
    "CreateTopics below what is served": _frame(19, 0, b"\x00\x00"),
    "malformed Metadata body": _frame(3, 12, b"\x00\x08zk2kraft\x00\xff\xff\xff\x7f"),
    "malformed CreateTopics body": _frame(19, 7, b"\x00\x04test\x00\x05\x01\x02"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_frame_closes_only_its_connection(
    broker: tuple[LocalCluster, ZkClient], case: str
) -> None:
    cluster, zk = broker
    before = read_snapshot(zk)
    with KafkaConnection("127.0.0.1", cluster.brokers[1].port) as bystander:
        with KafkaConnection("127.0.0.1", cluster.brokers[1].port) as conn:
            conn.send_raw(CASES[case])
            assert _closed(conn)
        answer = bystander.request(  # an open connection is unaffected
            MetadataRequest(
                topics=None, allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            )
        )  # fmt: skip
        assert answer.controller_id == 1
    _still_serving(cluster)
    assert read_snapshot(zk) == before


def test_a_truncated_frame_closes_when_the_client_gives_up(
    broker: tuple[LocalCluster, ZkClient],
) -> None:
    cluster, _ = broker
    with KafkaConnection("127.0.0.1", cluster.brokers[1].port) as conn:
        conn.send_raw(struct.pack(">i", 100) + b"\x00\x03\x00\x0c")
        conn.sock.shutdown(socket.SHUT_WR)
        assert _closed(conn)
    _still_serving(cluster)


def test_an_unsupported_api_versions_version_gets_kafkas_fallback_answer(
    broker: tuple[LocalCluster, ZkClient],
) -> None:
    cluster, _ = broker
    with KafkaConnection("127.0.0.1", cluster.brokers[1].port) as conn:
        conn.send_raw(_frame(18, 99, b"\x00\x00"))
        frame = conn.read_frame()
        assert struct.unpack(">i", frame[:4])[0] == 7  # correlation id, header v0
        answer, _ = entity_reader(ApiVersionsResponse)(frame, 4)
        assert answer.error_code == 35  # UNSUPPORTED_VERSION
        served = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
        assert served[18] == (0, 4) and served[3] == (0, 13)
        # the connection stays usable: the client retries at a version it is told
        retry = conn.request(
            MetadataRequest(
                topics=None, allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            )
        )  # fmt: skip
        assert retry.cluster_id


def test_many_bad_clients_at_once_leave_the_broker_serving(
    broker: tuple[LocalCluster, ZkClient], tmp_path: Path
) -> None:
    cluster, zk = broker
    before = read_snapshot(zk)
    conns = [KafkaConnection("127.0.0.1", cluster.brokers[1].port) for _ in range(20)]
    try:
        for i, conn in enumerate(conns):
            conn.send_raw(list(CASES.values())[i % len(CASES)])
        assert all(_closed(c) for c in conns)
    finally:
        for c in conns:
            c.close()
    _still_serving(cluster)
    assert read_snapshot(zk) == before
