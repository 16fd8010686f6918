"""gRPC's receive limits (migration.common.rpc) against the largest legitimate messages, built
by the project's own code: a full UpdateMetadata at 1,000,000 partitions, Raft's fetch
answers and snapshot chunks, a CreateTopics the controller accepts."""

from __future__ import annotations

from migration.common.limits import MAX_BATCH_BYTES
from migration.common.rpc import (
    BROKER_CONTROL_RECEIVE_BYTES,
    CONTROLLER_RECEIVE_BYTES,
    MIB,
    RESPONSE_RECEIVE_BYTES,
)
from migration.controller.context import MAX_RECORDS_PER_USER_OP
from migration.proto import broker_pb2 as bpb
from migration.proto import controller_pb2 as cpb
from migration.raft import log_fetch
from migration.raft.config import RaftConfig
from migration.zkcontroller.state_requests import StateRequests

SAMPLE = 20_000  # partitions built; the size is linear in them
MILLION = 1_000_000


def full_update_metadata_bytes(partitions: int, name_length: int, brokers: int = 30) -> int:
    """The bytes of a full UpdateMetadata for ``partitions`` (20 a topic, replication
    factor 3), as the controllers build it."""
    live = [
        bpb.LiveBroker(
            id=b,
            endpoints=[bpb.Endpoint(listener="INTERNAL", host=f"broker-{b}.kafka", port=9093)],
            rack="rack-1",
        )
        for b in range(brokers)
    ]
    states = (
        bpb.PartitionState(
            topic_name=f"{p // 20:08d}".ljust(name_length, "t"),
            topic_id=bytes(16),
            partition_index=p % 20,
            controller_epoch=1_000,
            leader=p % brokers,
            leader_epoch=100_000,
            partition_epoch=100_000,
            isr=[p % brokers, (p + 1) % brokers, (p + 2) % brokers],
            replicas=[p % brokers, (p + 1) % brokers, (p + 2) % brokers],
        )
        for p in range(partitions)
    )
    requests = StateRequests(states, live, bpb.FULL)
    header = bpb.ControllerHeader(controller_id=3000, controller_epoch=1_000, broker_epoch=1 << 40)
    return sum(len(part) for part in requests.update_metadata(header).parts)


def test_a_full_update_metadata_at_a_million_partitions_passes_a_broker() -> None:
    """Even with topic names of 200 characters on average (Kafka allows 249)."""
    per_partition = full_update_metadata_bytes(SAMPLE, 200) / SAMPLE
    assert per_partition * MILLION < BROKER_CONTROL_RECEIVE_BYTES


def test_every_raft_answer_passes_a_channel() -> None:
    """A Fetch answer: up to fetch_max_bytes, but always one whole batch (at most
    MAX_BATCH_BYTES, its 4-byte length field on top); snapshot chunks."""
    config = RaftConfig(node_id=1, voters=frozenset({1}))
    biggest = max(
        config.fetch_max_bytes,
        config.snapshot_chunk_bytes,
        log_fetch.FETCH_MAX_BYTES,
        log_fetch.SNAPSHOT_CHUNK_BYTES,
        MAX_BATCH_BYTES + 4,
    )
    # A Fetch answer's fields besides its records are a few dozen bytes: half a MiB is
    # room to spare.
    assert biggest + MIB // 2 < RESPONSE_RECEIVE_BYTES


def test_a_create_topics_the_controller_accepts_passes_it() -> None:
    """As many records as one request may make (each topic: its record, one partition,
    two configs of 1 KiB), with names of Kafka's longest."""
    topics = MAX_RECORDS_PER_USER_OP // 4
    request = cpb.CreateTopicsRequest(
        topics=[
            cpb.CreatableTopic(
                name=f"{i:08d}".ljust(249, "t"),
                num_partitions=1,
                replication_factor=3,
                configs={"cleanup.policy": "x" * 1024, "retention.ms": "9" * 1024},
            )
            for i in range(topics)
        ]
    )
    assert request.ByteSize() * 3 < CONTROLLER_RECEIVE_BYTES
