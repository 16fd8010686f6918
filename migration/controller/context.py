"""What a write handler sees and produces."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from migration.controller.registry import BrokerRegistry
from migration.image.model import MetadataImage
from migration.proto.metadata_pb2 import MetadataRecord


@dataclass
class WriteContext:
    """``image``: the pending image (committed + writes in flight). ``next_offset``: the
    offset the first record added here will get (Kafka uses a registration record's
    offset as the broker epoch). Handlers validate, ``add`` records, return the answer."""

    image: MetadataImage
    next_offset: int
    registry: BrokerRegistry
    settings: Any
    records: list[MetadataRecord] = field(default_factory=list)

    def add(self, **one: Any) -> MetadataRecord:
        """``add(topic_record=TopicRecord(...))``: one record in its envelope."""
        ((name, message),) = one.items()
        record = MetadataRecord(**{name: message})
        self.records.append(record)
        return record

    @property
    def offset_of_next(self) -> int:
        return self.next_offset + len(self.records)


Handler = Callable[[WriteContext, Any], Any]
Reader = Callable[[MetadataImage, Any, Any], Any]
