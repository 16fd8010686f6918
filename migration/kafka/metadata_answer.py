"""The all-topics Metadata answer, encoded a topic at a time and kept between images.

Clients ask for every topic again and again (librdkafka every few minutes, tools on
every start), and at a million partitions encoding the whole answer takes tens of
seconds. The answer is spliced: the response without topics (brokers, cluster id,
controller), then each topic's entry as encoded bytes. A topic's bytes are kept while
its :class:`TopicImage` is the same object (an image change builds new objects only for
the topics it touches) and the set of live brokers is the same (it decides leaders
shown and offline replicas): after a change, only the changed topics are encoded again.
Entries are kept for the :data:`VERSIONS_KEPT` versions asked last. On top, the
spliced answer itself is kept for the image and the set of topics the principal may
see (:data:`ENTRIES` of them).

The splice relies on Metadata's layout in every served version: the topics array is
followed only by fixed-width fields and, in flexible versions, an empty tagged-field
section; :func:`_layout` checks that of each schema, and the tests compare the spliced
bytes with kio's own encoding of the whole response for every version.

Threading: handlers run on several threads; every table is replaced whole, never
changed in place, so readers need no lock (two threads may encode the same topic once
each).
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from functools import cache
from typing import Any

from kio.index import load_response_schema
from kio.serial import entity_writer
from kio.serial.writers import write_compact_array_length, write_legacy_array_length

from migration.common.kafka_errors import ErrorCode
from migration.image.model import MetadataImage, TopicImage
from migration.kafka.bounds import schema_fields
from migration.kafka.wire import Encoded, build, encode_body, response

METADATA = 3
UNKNOWN_AUTHORIZED_OPERATIONS = -(2**31)
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
ENTRIES = 8  # whole answers kept for the current image (one per set of visible topics)
VERSIONS_KEPT = 3  # versions whose topic entries are kept (the clients' few; ~44 bytes each
# a partition: 44 MB a version at a million partitions)
_FIXED_WIDTH = {"int8": 1, "int16": 2, "error_code": 2, "int32": 4, "timedelta_i32": 4}


def live_brokers(image: MetadataImage) -> frozenset[int]:
    return frozenset(b for b, reg in image.brokers.items() if not reg.fenced)


def topic_metadata(image: MetadataImage, name: str, live: frozenset[int]) -> dict[str, Any]:
    """One topic's entry as plain values (UNKNOWN_TOPIC_OR_PARTITION if absent); a
    partition whose leader is not ``live`` shows leader -1, LEADER_NOT_AVAILABLE."""
    topic = image.topic(name)
    if topic is None:
        return {"name": name, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    return _entry(topic, live)


def _entry(topic: TopicImage, live: frozenset[int]) -> dict[str, Any]:
    partitions = []
    for pid in sorted(topic.partitions):
        p = topic.partitions[pid]
        partitions.append(
            {
                "error_code": 0 if p.leader in live else ErrorCode.LEADER_NOT_AVAILABLE,
                "partition_index": pid,
                "leader_id": p.leader if p.leader in live else -1,
                "leader_epoch": p.leader_epoch,
                "replica_nodes": p.replicas,
                "isr_nodes": p.isr,
                "offline_replicas": [r for r in p.replicas if r not in live],
            }
        )
    return {
        "error_code": 0,
        "name": topic.name,
        "topic_id": topic.topic_id,
        "is_internal": topic.name in INTERNAL_TOPICS,
        "partitions": partitions,
        "topic_authorized_operations": UNKNOWN_AUTHORIZED_OPERATIONS,
    }


@cache
def _layout(version: int) -> tuple[type, int]:
    """The topic entry's class and how many bytes follow the topics array."""
    cls = load_response_schema(METADATA, version)
    fields = schema_fields(cls)
    at = next(i for i, f in enumerate(fields) if f.name == "topics")
    after = 0
    for f in fields[at + 1 :]:
        width = _FIXED_WIDTH.get(f.kafka_type or "")
        if width is None or f.tag is not None:
            raise TypeError(f"Metadata v{version}: {f.name} after the topics cannot be spliced")
        after += width
    topic_cls = fields[at].entity
    assert topic_cls is not None
    return topic_cls, after + (1 if cls.__flexible__ else 0)


def _array_length(version: int, count: int) -> bytes:
    out = io.BytesIO()
    if load_response_schema(METADATA, version).__flexible__:
        write_compact_array_length(out, count)
    else:
        write_legacy_array_length(out, count)  # type: ignore[arg-type]
    return out.getvalue()


class EveryTopic:
    """The all-topics answers of one broker's listeners (see the module's contract)."""

    def __init__(self) -> None:
        self._answers: tuple[MetadataImage | None, dict[tuple[Any, ...], Encoded]] = (None, {})
        # version -> (live brokers, topic id -> (the TopicImage encoded, its bytes))
        self._topics: dict[int, tuple[frozenset[int], Mapping[bytes, tuple[TopicImage, bytes]]]]
        self._topics = {}

    def answer(
        self,
        key: tuple[Any, ...],
        image: MetadataImage,
        version: int,
        shell: dict[str, Any],
        names: list[str],
    ) -> Encoded:
        """The answer listing ``names`` (existing topics, in order) after ``shell``'s
        fields (brokers, cluster id, controller id); ``key`` names what, besides the
        image, decides it (the version, the listener, the controller, the visible topics)."""
        cached_image, answers = self._answers
        if cached_image is not image:
            answers = {}
        found = answers.get(key)
        if found is None:
            found = self._splice(image, version, shell, names)
            kept = list(answers.items())[-(ENTRIES - 1) :]
            self._answers = (image, dict([*kept, (key, found)]))
        return found

    def _splice(
        self, image: MetadataImage, version: int, shell: dict[str, Any], names: list[str]
    ) -> Encoded:
        topic_cls, after = _layout(version)
        empty = encode_body(response(METADATA, version, {**shell, "topics": []}))
        marker = _array_length(version, 0)
        cut = len(empty.body) - after - len(marker)
        assert empty.body[cut : cut + len(marker)] == marker, "Metadata's layout changed"
        parts = self._encoded_topics(image, version, topic_cls, names)
        body = b"".join(
            (
                empty.body[:cut],
                _array_length(version, len(parts)),
                *parts,
                empty.body[cut + len(marker) :],
            )
        )
        return Encoded(empty.schema, body)

    def _encoded_topics(
        self, image: MetadataImage, version: int, topic_cls: type, names: list[str]
    ) -> list[bytes]:
        live = live_brokers(image)
        kept_live, kept = self._topics.get(version, (live, {}))
        if kept_live != live:
            kept = {}
        write: Any = entity_writer(topic_cls)
        fresh: dict[bytes, tuple[TopicImage, bytes]] = {}
        parts = []
        for name in names:
            topic = image.topic(name)
            assert topic is not None
            entry = kept.get(topic.topic_id)
            if entry is None or entry[0] is not topic:
                out = io.BytesIO()
                write(out, build(topic_cls, _entry(topic, live)))
                entry = (topic, out.getvalue())
            fresh[topic.topic_id] = entry
            parts.append(entry[1])
        if len(names) < len(image.topics):
            fresh = {**kept, **fresh}  # a narrower view: keep the others' bytes
        others = [(v, kept) for v, kept in self._topics.items() if v != version]
        self._topics = dict([*others[-(VERSIONS_KEPT - 1) :], (version, (live, fresh))])
        return parts
