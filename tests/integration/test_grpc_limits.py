"""gRPC's receive limits on a real controller process: a message over the controller's
limit is refused with RESOURCE_EXHAUSTED before it costs memory, whichever service it
names, a legitimate request near the limit still passes, and the controller goes on
serving."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from migration.common.kafka_errors import ErrorCode
from migration.common.rpc import CONTROLLER_RECEIVE_BYTES, MIB
from migration.controller.client import ControllerClient
from migration.local.quorum import LocalQuorum
from migration.proto import controller_pb2 as cpb
from migration.proto import raft_pb2 as rpb
from tests.quorum_harness import lone_quorum

HOSTILE_BYTES = 300 * MIB


@pytest.fixture(scope="module")
def quorum(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalQuorum]:
    with lone_quorum(tmp_path_factory.mktemp("quorum")) as quorum:
        yield quorum


def peak_rss(quorum: LocalQuorum) -> int:
    """The controller process's peak resident memory (VmHWM), in bytes."""
    status = Path(f"/proc/{quorum.children[quorum.ids[0]].pid}/status").read_text()
    line = next(x for x in status.splitlines() if x.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def send_raw(quorum: LocalQuorum, service: str, method: str, payload: bytes) -> grpc.RpcError:
    """``payload`` as the request of ``service``/``method``, from a channel that sends
    anything; the error it is refused with."""
    names = {"Controller": cpb, "Raft": rpb}
    full = names[service].DESCRIPTOR.services_by_name[service].full_name
    with grpc.insecure_channel(
        quorum.bootstrap[0], options=[("grpc.max_send_message_length", -1)]
    ) as channel:
        call = channel.unary_unary(f"/{full}/{method}")
        with pytest.raises(grpc.RpcError) as refused:
            call(payload, timeout=120)
    return refused.value


@pytest.mark.parametrize(("service", "method"), [("Controller", "CreateTopics"), ("Raft", "Fetch")])
def test_a_message_over_the_limit_is_refused(
    quorum: LocalQuorum, service: str, method: str
) -> None:
    error = send_raw(quorum, service, method, b"\x0a" * (CONTROLLER_RECEIVE_BYTES + 1))
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, error
    assert f"larger than max ({CONTROLLER_RECEIVE_BYTES + 1} vs. {CONTROLLER_RECEIVE_BYTES})" in (
        error.details() or ""
    )


def test_a_huge_message_costs_the_controller_nothing_and_it_goes_on(quorum: LocalQuorum) -> None:
    before = peak_rss(quorum)
    error = send_raw(quorum, "Controller", "CreateTopics", b"\x0a" * HOSTILE_BYTES)
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, error
    grown = peak_rss(quorum) - before
    assert grown < HOSTILE_BYTES // 8, f"peak RSS grew {grown:,} bytes"
    client = ControllerClient(quorum.bootstrap, timeout_s=60)
    try:
        assert client.call("Metadata", cpb.MetadataRequest()).error.error_code == ErrorCode.NONE
    finally:
        client.close()


def test_a_legitimate_request_near_the_limit_passes(quorum: LocalQuorum) -> None:
    """Topic names of Kafka's longest, as many as fit a MiB under the limit: answered
    (each unknown), and the answer, as large, comes back through the channel's limit."""
    names = [f"{i:08d}".ljust(249, "t") for i in range((CONTROLLER_RECEIVE_BYTES - MIB) // 252)]
    request = cpb.MetadataRequest(topics=names)
    assert CONTROLLER_RECEIVE_BYTES - 2 * MIB < request.ByteSize() < CONTROLLER_RECEIVE_BYTES
    client = ControllerClient(quorum.bootstrap, timeout_s=60)
    try:
        answer = client.call("Metadata", request)
    finally:
        client.close()
    assert len(answer.topics) == len(names)
    assert {t.error_code for t in answer.topics} == {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
