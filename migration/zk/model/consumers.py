"""Legacy ZooKeeper consumer groups (``/consumers/<group>``): registrations under
``ids/``, owners under ``owners/`` and offsets under ``offsets/<topic>/<partition>``.

These are not Kafka metadata: KRaft has no place for them, so they are lost when
ZooKeeper is retired unless exported first (``zk2kraft zk export-offsets``).
"""

from __future__ import annotations

from dataclasses import dataclass

from migration.zk.model.jsonfields import parse_int_text, render_json


@dataclass(frozen=True, slots=True)
class LegacyOffset:
    group: str
    topic: str
    partition: int
    offset: int


def parse_offset(
    path: str, raw: bytes | None, group: str, topic: str, partition: int
) -> LegacyOffset:
    return LegacyOffset(group, topic, partition, parse_int_text(path, raw))


def render_offset(offset: int) -> bytes:
    return str(offset).encode()


def render_consumer_registration(topics: dict[str, int], timestamp: int) -> bytes:
    return render_json(
        {
            "version": 1,
            "subscription": topics,
            "pattern": "static",
            "timestamp": str(timestamp),
        }
    )
