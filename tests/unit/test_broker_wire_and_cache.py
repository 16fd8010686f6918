"""Kafka's wire format through kio (every served API and version) and the broker's
metadata cache rules (controller epochs, leader epochs, full requests, deletions)."""

from __future__ import annotations

import threading

import pytest
from kio.index import load_request_schema

from migration.broker.zk_metadata_cache import MetadataCache
from migration.common.kafka_errors import ErrorCode
from migration.kafka.bounds import FrameError
from migration.kafka.wire import SUPPORTED, build, encode_response, parse_request, response
from migration.proto import broker_pb2 as bpb


@pytest.mark.parametrize(
    ("api_key", "version"),
    [(k, v) for k, (_, lo, hi) in sorted(SUPPORTED.items()) for v in range(lo, hi + 1)],
)
def test_every_served_version_builds_encodes_and_parses(api_key: int, version: int) -> None:
    schema = load_request_schema(api_key, version)
    from io import BytesIO

    from kio.serial import entity_writer

    out = BytesIO()
    header = schema.__header_schema__
    entity_writer(header)(
        out, header(request_api_key=api_key, request_api_version=version, correlation_id=5,
                    client_id="t")
    )  # fmt: skip
    entity_writer(schema)(out, build(schema, {}))
    request = parse_request(out.getvalue())
    assert (request.api_key, request.api_version, request.correlation_id) == (api_key, version, 5)
    frame = encode_response(api_key, version, 5, response(api_key, version, {}))
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4


def test_frames_that_cannot_be_served_are_refused_with_a_reason() -> None:
    with pytest.raises(FrameError, match="no header"):
        parse_request(b"\x00\x03")
    with pytest.raises(FrameError, match="Metadata version 42 is not served"):
        parse_request(b"\x00\x03\x00\x2a\x00\x00\x00\x01")
    with pytest.raises(FrameError, match="malformed Metadata v12"):
        parse_request(b"\x00\x03\x00\x0c\x00\x00\x00\x01\x00\x01x\x00\x05")


def _state(
    topic: str, pid: int, leader: int, epoch: int, replicas: list[int]
) -> bpb.PartitionState:
    return bpb.PartitionState(
        topic_name=topic, topic_id=bytes([1]) * 16, partition_index=pid, leader=leader,
        leader_epoch=epoch, isr=replicas, replicas=replicas,
    )  # fmt: skip


def _header(epoch: int, kraft: bool = False) -> bpb.ControllerHeader:
    return bpb.ControllerHeader(controller_id=1, controller_epoch=epoch, broker_epoch=-1,
                                is_kraft_controller=kraft)  # fmt: skip


def test_the_cache_refuses_an_older_controller_and_applies_a_newer_one() -> None:
    cache = MetadataCache(2)
    live = [bpb.LiveBroker(id=1), bpb.LiveBroker(id=2)]
    ok = cache.update_metadata(
        bpb.UpdateMetadataRequest(header=_header(5), live_brokers=live,
                                  partition_states=[_state("t", 0, 1, 0, [1, 2])])
    )  # fmt: skip
    assert ok.error_code == 0 and set(cache.brokers()) == {1, 2}
    stale = cache.update_metadata(bpb.UpdateMetadataRequest(header=_header(4)))
    assert stale.error_code == ErrorCode.STALE_CONTROLLER_EPOCH
    topics, ids = cache.topics()
    assert topics[ids["t"]].partitions[0].leader == 1
    gone = cache.update_metadata(
        bpb.UpdateMetadataRequest(header=_header(5), live_brokers=live,
                                  partition_states=[_state("t", 0, -2, 0, [1, 2])])
    )  # fmt: skip
    assert gone.error_code == 0 and "t" not in cache.topics()[1]


def test_a_full_update_keeps_the_topics_it_leaves_as_they_were() -> None:
    """A full UpdateMetadata (every migration's first, then each KRaft controller's) keeps
    the TopicImage objects of the topics it does not change, so what is kept per topic
    object (the all-topics answer's encoded entries) is not rebuilt for a million
    partitions; a changed topic, and only it, gets a new object, as a delta's does."""
    cache = MetadataCache(2)
    live = [bpb.LiveBroker(id=1), bpb.LiveBroker(id=2)]

    def update(kind: int, *states: bpb.PartitionState) -> dict[str, object]:
        request = bpb.UpdateMetadataRequest(
            header=_header(5), type=kind, live_brokers=live, partition_states=states
        )
        assert cache.update_metadata(request).error_code == 0
        topics, ids = cache.topics()
        return {name: topics[i] for name, i in ids.items()}

    u = _state("u", 0, 2, 0, [1, 2])
    u.topic_id = bytes([2]) * 16
    first = update(bpb.FULL, _state("t", 0, 1, 0, [1, 2]), _state("t", 1, 2, 0, [1, 2]), u)
    same = update(bpb.FULL, _state("t", 0, 1, 0, [1, 2]), _state("t", 1, 2, 0, [1, 2]), u)
    assert same["t"] is first["t"] and same["u"] is first["u"]
    moved = update(bpb.FULL, _state("t", 0, 1, 0, [1, 2]), _state("t", 1, 1, 1, [1, 2]), u)
    assert moved["t"] is not first["t"] and moved["u"] is first["u"]
    assert moved["t"].partitions[1].leader == 1  # type: ignore[attr-defined]
    unchanged = update(bpb.INCREMENTAL, _state("t", 1, 1, 1, [1, 2]))
    assert unchanged["t"] is moved["t"]
    gone = update(bpb.FULL, u)
    assert set(gone) == {"u"} and gone["u"] is first["u"]


def test_readers_are_not_held_by_a_request_being_applied() -> None:
    """While a controller's request holds the cache (a full LeaderAndIsr of a million
    partitions is applied for seconds), Metadata answers and forwarded writes waiting
    for their topic read the last published snapshot; a forwarded write's wait ends as
    soon as an UpdateMetadata showing its topic is published."""
    cache = MetadataCache(2)
    live = [bpb.LiveBroker(id=1), bpb.LiveBroker(id=2)]
    applying, release = threading.Event(), threading.Event()

    def hold() -> None:  # a request mid-apply, as a long LeaderAndIsr is
        with cache._lock:
            applying.set()
            release.wait(30)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    try:
        assert applying.wait(30)
        read: list[object] = []
        reader = threading.Thread(
            target=lambda: read.extend([cache.topics()[1], cache.wait(lambda: True, 30)])
        )
        reader.start()
        reader.join(10)  # a hang guard: held by the lock, it would wait for the release
        assert not reader.is_alive() and read == [{}, True]
        seen: list[bool] = []
        waiter = threading.Thread(
            target=lambda: seen.append(cache.wait(lambda: "t" in cache.topics()[1], 30))
        )
        waiter.start()
    finally:
        release.set()
        holder.join(30)
    cache.update_metadata(
        bpb.UpdateMetadataRequest(header=_header(5), live_brokers=live,
                                  partition_states=[_state("t", 0, 1, 0, [1, 2])])
    )  # fmt: skip
    waiter.join(30)
    assert seen == [True] and set(cache.brokers()) == {1, 2}


def test_leader_and_isr_needs_a_newer_leader_epoch_except_from_kraft() -> None:
    cache = MetadataCache(2)
    first = bpb.LeaderAndIsrRequest(
        header=_header(5), partition_states=[_state("t", 0, 1, 3, [1, 2])]
    )
    assert not cache.leader_and_isr(first).partition_errors
    again = cache.leader_and_isr(first)
    assert [e.error_code for e in again.partition_errors] == [ErrorCode.STALE_CONTROLLER_EPOCH]
    kraft = bpb.LeaderAndIsrRequest(header=_header(6, kraft=True),
                                    partition_states=[_state("t", 0, 2, 3, [1, 2])])  # fmt: skip
    assert not cache.leader_and_isr(kraft).partition_errors
    assert cache.led() == [("t", 0)]
    full = bpb.LeaderAndIsrRequest(header=_header(6), type=bpb.FULL,
                                   partition_states=[_state("u", 0, 2, 0, [2])])  # fmt: skip
    cache.leader_and_isr(full)
    assert set(cache.replicas) == {("u", 0)}  # the stray replica is dropped


def _leading_a_short_isr() -> tuple[MetadataCache, bpb.PartitionState]:
    """Broker 1's cache: it leads t-0 (leader epoch 3), ISR [1] of replicas [1, 2], both live."""
    cache = MetadataCache(1)
    live = [bpb.LiveBroker(id=1), bpb.LiveBroker(id=2)]
    cache.update_metadata(bpb.UpdateMetadataRequest(header=_header(5), live_brokers=live))
    short = _state("t", 0, 1, 3, [1, 2])
    short.isr[:] = [1]
    cache.leader_and_isr(bpb.LeaderAndIsrRequest(header=_header(5), partition_states=[short]))
    return cache, short


def test_an_isr_expansion_looks_only_at_what_live_brokers_are_missing_from() -> None:
    """The leader's short ISRs are kept by the replica missing from each, so an
    expansion never walks the partitions a broker in controlled shutdown (out of nearly
    every ISR, each step) is missing from; the index follows every change of state."""
    cache, short = _leading_a_short_isr()  # leads t-0, ISR [1] of [1, 2]
    three = _state("t", 1, 1, 3, [1, 2, 3])
    three.isr[:] = [1, 2]  # lacks broker 3, which is not live
    cache.leader_and_isr(bpb.LeaderAndIsrRequest(header=_header(5), partition_states=[three]))
    assert cache._lacking.by_missing == {2: {("t", 0)}, 3: {("t", 1)}}
    assert [(a.topic_name, a.partition_index) for a in cache.isr_to_expand()] == [("t", 0)]
    full = _state("t", 0, 1, 4, [1, 2])  # in sync again
    led_elsewhere = _state("t", 1, 2, 4, [1, 2, 3])
    led_elsewhere.isr[:] = [2]
    both = bpb.LeaderAndIsrRequest(header=_header(5), partition_states=[full, led_elsewhere])
    cache.leader_and_isr(both)
    assert cache._lacking.by_missing == {2: set(), 3: set()} and cache.isr_to_expand() == []
    short.leader_epoch = 5
    cache.leader_and_isr(bpb.LeaderAndIsrRequest(header=_header(5), partition_states=[short]))
    assert cache._lacking.by_missing[2] == {("t", 0)}
    stop = bpb.StopReplicaRequest(
        header=_header(5), partitions=[bpb.PartitionState(topic_name="t", partition_index=0)]
    )
    cache.stop_replica(stop)
    assert cache._lacking.by_missing[2] == set() and cache.isr_to_expand() == []


def test_a_leader_waits_for_the_leader_epoch_an_answer_promised() -> None:
    """An AlterPartition answer with a newer leader epoch is not taken (Kafka's leaders
    wait for its LeaderAndIsr), and the partition is not asked for again meanwhile:
    asked with the old epoch it could only be refused."""
    cache, short = _leading_a_short_isr()
    [asked] = cache.isr_to_expand()
    assert list(asked.isr) == [1, 2] and asked.leader_epoch == 3
    promised = _state("t", 0, 1, 4, [1, 2])
    cache.altered([promised])
    assert cache.replicas[("t", 0)].leader_epoch == 3  # not taken from the answer
    assert cache.isr_to_expand() == []  # nor asked again
    cache.leader_and_isr(bpb.LeaderAndIsrRequest(header=_header(5), partition_states=[short]))
    assert cache.isr_to_expand() == []  # an older state does not end the wait
    brought = _state("t", 0, 1, 4, [1, 2])
    brought.isr[:] = [1]
    cache.leader_and_isr(bpb.LeaderAndIsrRequest(header=_header(5), partition_states=[brought]))
    [again] = cache.isr_to_expand()
    assert again.leader_epoch == 4


def test_an_answer_keeping_the_leader_epoch_is_taken() -> None:
    cache, _ = _leading_a_short_isr()
    answer = _state("t", 0, 1, 3, [1, 2])
    answer.partition_epoch = 1
    cache.altered([answer])
    assert cache.replicas[("t", 0)].isr == (1, 2) and cache.isr_to_expand() == []


def test_an_isr_expansion_builds_a_steps_worth_in_order_past_the_refused() -> None:
    """A step's worth, the first in order: the entries of the rest (a third of a million
    at a million partitions, after each controller request) are not built; a refused
    ask is skipped and the step still full."""
    cache, _ = _leading_a_short_isr()
    states = []
    for pid in range(1, 6):
        s = _state("t", pid, 1, 3, [1, 2])
        s.isr[:] = [1]
        states.append(s)
    cache.leader_and_isr(bpb.LeaderAndIsrRequest(header=_header(5), partition_states=states))
    every = cache.isr_to_expand()
    assert [a.partition_index for a in every] == [0, 1, 2, 3, 4, 5]
    assert [a.partition_index for a in cache.isr_to_expand(2)] == [0, 1]
    refusal = bpb.PartitionError(
        topic_name="t", partition_index=1, error_code=ErrorCode.INELIGIBLE_REPLICA
    )
    cache.refused(every[1:2], [refusal])
    assert [a.partition_index for a in cache.isr_to_expand(2)] == [0, 2]


def test_a_refused_ask_is_not_made_again_until_the_state_or_the_live_brokers_change() -> None:
    """Broker 2 in controlled shutdown is live to a ZooKeeper-mode leader's cache (its
    UpdateMetadata names it) but ineligible to the controller: the same ask would be
    refused for as long as the shutdown lasts."""
    cache, _ = _leading_a_short_isr()
    [asked] = cache.isr_to_expand()
    refusal = bpb.PartitionError(
        topic_name="t", partition_index=0, error_code=ErrorCode.INELIGIBLE_REPLICA
    )
    cache.refused([asked], [refusal])
    assert cache.isr_to_expand() == []  # the same ask from the same state: not made
    alone = [bpb.LiveBroker(id=1)]  # broker 2 fenced at the shutdown's end
    cache.update_metadata(bpb.UpdateMetadataRequest(header=_header(5), live_brokers=alone))
    assert cache.isr_to_expand() == []  # nothing live to add
    back = [bpb.LiveBroker(id=1), bpb.LiveBroker(id=2)]
    cache.update_metadata(bpb.UpdateMetadataRequest(header=_header(5), live_brokers=back))
    [again] = cache.isr_to_expand()  # back from its restart: asked again
    assert list(again.isr) == [1, 2]
    cache.refused([again], [refusal])
    assert cache.isr_to_expand() == []
    moved = _state("t", 0, 1, 4, [1, 2])
    moved.isr[:] = [1]
    cache.leader_and_isr(bpb.LeaderAndIsrRequest(header=_header(5), partition_states=[moved]))
    [newer] = cache.isr_to_expand()  # a new state of the partition: asked again
    assert newer.leader_epoch == 4 and list(newer.isr) == [1, 2]


def test_a_refusal_a_new_registration_mends_is_asked_again() -> None:
    cache, _ = _leading_a_short_isr()
    [asked] = cache.isr_to_expand()
    stale = bpb.PartitionError(
        topic_name="t", partition_index=0, error_code=ErrorCode.STALE_BROKER_EPOCH
    )
    cache.refused([asked], [stale])
    assert cache.isr_to_expand() == [asked]


def test_a_broker_in_controlled_shutdown_is_live_but_not_asked_into_an_isr() -> None:
    """The controller marks it (the KRaft controller from its registration, the
    ZooKeeper controller from its own shutdown set); asked, it would be refused."""
    cache, _ = _leading_a_short_isr()
    shutting = [bpb.LiveBroker(id=1), bpb.LiveBroker(id=2, shutting_down=True)]
    cache.update_metadata(bpb.UpdateMetadataRequest(header=_header(5), live_brokers=shutting))
    assert set(cache.brokers()) == {1, 2} and cache.brokers()[2].in_controlled_shutdown
    assert cache.isr_to_expand() == []
    back = [bpb.LiveBroker(id=1), bpb.LiveBroker(id=2)]
    cache.update_metadata(bpb.UpdateMetadataRequest(header=_header(5), live_brokers=back))
    [asked] = cache.isr_to_expand()
    assert list(asked.isr) == [1, 2]


def test_a_leader_in_controlled_shutdown_asks_for_no_isr() -> None:
    cache, _ = _leading_a_short_isr()
    itself = [bpb.LiveBroker(id=1, shutting_down=True), bpb.LiveBroker(id=2)]
    cache.update_metadata(bpb.UpdateMetadataRequest(header=_header(5), live_brokers=itself))
    assert cache.isr_to_expand() == []
