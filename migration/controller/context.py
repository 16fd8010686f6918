"""What a write handler sees and produces."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from migration.controller.registry import BrokerRegistry
from migration.image.delta import MetadataDelta
from migration.image.model import MetadataImage
from migration.log.batch import HEADER_SIZE, frame_record
from migration.proto.metadata_pb2 import MetadataRecord

MAX_RECORDS_PER_USER_OP = 10_000  # Kafka's bound on the records one user request writes
# The records one step of bulk work on the cluster's own behalf writes: a controlled
# shutdown's or an expired broker's leadership moves, a leader's AlterPartition ask. Each
# step is handled, encoded and replayed on the quorum's event loop at ~50-100 us a record
# on this code (measured in process at 100,000 partitions), so 2,000 keeps each of those
# events near 100 ms; 10,000 held the loop 0.4-0.6 s a step there, and 2-4 s at a million
# partitions with the other processes competing (docs/proof.md).
STEP_RECORDS = 2_000
# A step is handled a slice at a time, each slice its own event of the loop (what was
# queued meanwhile, a follower's fetch, a vote, goes between them), its answer given once
# the last slice's records commit (see controller.slices): at a million partitions, beside
# two other controllers and the brokers on two cores, a whole step's event held the loop
# up to 0.55 s (docs/proof.md).
SLICE_RECORDS = 500


def log_batches(groups: list[list[MetadataRecord]], max_bytes: int) -> list[list[bytes]]:
    """Framed records, whole groups per batch, each batch at most ``max_bytes`` and
    ``STEP_RECORDS`` records (a group larger than that gets a batch of its own): a batch
    is the smallest step in which the controllers replay what commits."""
    out: list[list[bytes]] = []
    current: list[bytes] = []
    size = HEADER_SIZE
    for group in groups:
        framed = [frame_record(r.SerializeToString()) for r in group]
        group_bytes = sum(len(f) for f in framed)
        if current and (
            size + group_bytes > max_bytes or len(current) + len(framed) > STEP_RECORDS
        ):
            out.append(current)
            current, size = [], HEADER_SIZE
        current.extend(framed)
        size += group_bytes
    if current:
        out.append(current)
    return out


class TooManyRecordsError(Exception):
    """A request would write more records than one user operation may (the controller
    answers POLICY_VIOLATION, and nothing of the request is written)."""


@dataclass
class WriteContext:
    """``image``: the pending image (committed + writes in flight). ``next_offset``: the
    offset the first record added here will get (Kafka uses a registration record's
    offset as the broker epoch). Handlers validate, ``add`` records, return the answer.
    ``max_records`` bounds a user request's records (None: the controller's own work,
    such as fencing expired brokers); handlers check ``room`` before building many."""

    image: MetadataImage
    next_offset: int
    registry: BrokerRegistry
    settings: Any
    max_records: int | None = MAX_RECORDS_PER_USER_OP
    records: list[MetadataRecord] = field(default_factory=list)

    @property
    def room(self) -> int:
        """How many more records this request may add."""
        if self.max_records is None:
            return 2**63
        return self.max_records - len(self.records)

    def add(self, **one: Any) -> MetadataRecord:
        """``add(topic_record=TopicRecord(...))``: one record in its envelope."""
        if self.room <= 0:
            raise TooManyRecordsError(
                f"the request writes more than {self.max_records} records, the most one "
                "request may write"
            )
        ((name, message),) = one.items()
        record = MetadataRecord(**{name: message})
        self.records.append(record)
        return record

    def current(self) -> MetadataImage:
        """The pending image with this request's own records so far applied: what a
        handler that writes in steps (fencing several brokers) must judge each step on."""
        if not self.records:
            return self.image
        delta = MetadataDelta(self.image)
        for i, record in enumerate(self.records):
            delta.replay(record, self.next_offset + i, 0)
        return delta.apply()

    @property
    def offset_of_next(self) -> int:
        return self.next_offset + len(self.records)


class ControllerView(Protocol):
    """What a reader may know of the controller answering it: its id and its cluster's."""

    @property
    def node_id(self) -> int: ...

    @property
    def cluster_id(self) -> str: ...
