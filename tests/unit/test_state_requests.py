"""The encoded UpdateMetadata and LeaderAndIsr parse to exactly the messages built the
plain way, for every broker, whatever it holds."""

from __future__ import annotations

from migration.proto import broker_pb2 as bpb
from migration.zkcontroller.channel import rpc
from migration.zkcontroller.state_requests import StateRequests


def _states() -> list[bpb.PartitionState]:
    out = []
    for i in range(300):  # lengths past one varint byte: names up to 200 characters
        replicas = [1, 2, 3] if i % 3 == 0 else [1 + i % 3, 1 + (i + 1) % 3]
        out.append(
            bpb.PartitionState(
                topic_name="t" * (1 + i % 200), topic_id=bytes(range(16)), partition_index=i,
                controller_epoch=7, leader=replicas[0], leader_epoch=i, isr=replicas,
                partition_epoch=i * 1000, replicas=replicas, offline_replicas=[3] if i % 5 else [],
            )
        )  # fmt: skip
    return out


def _header(broker: int) -> bpb.ControllerHeader:
    return bpb.ControllerHeader(controller_id=3000, controller_epoch=9, broker_epoch=broker * 10)


def test_encoded_requests_parse_to_the_plain_messages() -> None:
    states = _states()
    live = [bpb.LiveBroker(id=b, endpoints=[bpb.Endpoint(listener="I", host="h", port=b)])
            for b in (1, 2, 3)]  # fmt: skip
    requests = StateRequests(iter(states), live, bpb.FULL, holders=(1, 2, 3, 4))
    assert requests.count == len(states) and requests.holders == (1, 2, 3, 4)
    for b in (1, 2):
        want = bpb.UpdateMetadataRequest(
            header=_header(b), type=bpb.FULL, live_brokers=live, partition_states=states
        )
        got = requests.update_metadata(_header(b))
        assert got.method == "UpdateMetadata" and got.request == want
    for b in (1, 2, 3):
        mine = [s for s in states if b in s.replicas]
        want_lai = bpb.LeaderAndIsrRequest(header=_header(b), type=bpb.FULL, partition_states=mine)
        assert requests.holds_any(b)
        assert requests.leader_and_isr(b, _header(b), bpb.FULL).request == want_lai
    assert not requests.holds_any(4)
    # every broker's UpdateMetadata is its header before the one encoding of the states
    assert requests.update_metadata(_header(1)).parts[-1] is got.parts[-1]
    empty = requests.leader_and_isr(4, _header(4), bpb.FULL).request
    assert empty == bpb.LeaderAndIsrRequest(header=_header(4), type=bpb.FULL)


def test_a_broker_holding_every_partition_shares_one_encoding() -> None:
    states = [s for s in _states() if len(s.replicas) == 3]
    requests = StateRequests(states, [], bpb.INCREMENTAL, holders=(1, 2))
    first = requests.leader_and_isr(1, _header(1), bpb.INCREMENTAL)
    second = requests.leader_and_isr(2, _header(2), bpb.INCREMENTAL)
    assert first.parts[1] is second.parts[1]
    assert second.request.partition_states[:] == states
    requests.release()
    assert first.request.header == _header(1)  # the built requests outlive the release


def test_a_plain_request_is_one_encoded_part() -> None:
    request = bpb.StopReplicaRequest(header=_header(1), delete_partitions=True)
    sent = rpc("StopReplica", request)
    assert sent.parts == (request.SerializeToString(),) and sent.request == request
