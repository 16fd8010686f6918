"""The all-topics Metadata answer spliced from per-topic encodings is byte for byte what
kio encodes for the whole response, in every served version, across image changes."""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from migration.image.model import (
    BrokerImage,
    EndpointImage,
    MetadataImage,
    PartitionImage,
    TopicImage,
)
from migration.kafka import metadata_answer
from migration.kafka.metadata_answer import EveryTopic, live_brokers, topic_metadata
from migration.kafka.wire import SUPPORTED, encode_body, response

VERSIONS = range(SUPPORTED[3][1], SUPPORTED[3][2] + 1)


def _topic(name: str, partitions: int, leader_epoch: int = 0) -> TopicImage:
    tid = uuid.uuid5(uuid.NAMESPACE_DNS, name).bytes
    return TopicImage(
        name,
        tid,
        {
            i: PartitionImage(
                replicas=(1, 2, 3),
                isr=(1, 2),
                removing_replicas=(),
                adding_replicas=(),
                leader=1 + i % 3,
                leader_recovery_state=0,
                leader_epoch=leader_epoch,
                partition_epoch=i,
            )
            for i in range(partitions)
        },
    )


def _image(topics: list[TopicImage], fenced: frozenset[int] = frozenset()) -> MetadataImage:
    brokers = {
        b: BrokerImage(
            b,
            b"",
            1,
            (EndpointImage("PLAINTEXT", "127.0.0.1", 9090 + b, 0),),
            (),
            "r1" if b == 2 else None,
            b in fenced,
            False,
            True,
        )
        for b in (1, 2, 3)
    }
    return MetadataImage(
        brokers=brokers,
        topics={t.topic_id: t for t in topics},
        topic_ids={t.name: t.topic_id for t in topics},
    )


def _shell(image: MetadataImage) -> dict[str, object]:
    return {
        "brokers": [
            {"node_id": b, "host": "127.0.0.1", "port": 9090 + b, "rack": None}
            for b in sorted(live_brokers(image))
        ],
        "cluster_id": "MkU3OEVBNTcwNTJENDM2Qg",
        "controller_id": 3,
        "topics": [],
        "cluster_authorized_operations": metadata_answer.UNKNOWN_AUTHORIZED_OPERATIONS,
    }


def _whole(image: MetadataImage, version: int, names: list[str]) -> bytes:
    live = live_brokers(image)
    values = {**_shell(image), "topics": [topic_metadata(image, n, live) for n in names]}
    return encode_body(response(3, version, values)).body


@pytest.mark.parametrize("version", VERSIONS)
def test_the_spliced_answer_is_kios_encoding_of_the_whole(version: int) -> None:
    every = EveryTopic()
    topics = [_topic("__consumer_offsets", 3), _topic("a", 4), _topic("b", 1), _topic("c", 0)]
    image = _image(topics)
    names = sorted(image.topic_ids)

    def check(image: MetadataImage, names: list[str]) -> None:
        key = (version, *names)
        got = every.answer(key, image, version, _shell(image), names).body
        assert got == _whole(image, version, names)

    check(image, names)
    # a change to one topic: a new image sharing the other TopicImages
    changed = _image([*topics[:1], _topic("a", 4, leader_epoch=7), *topics[2:]])
    check(changed, names)
    check(changed, ["a", "c"])  # a narrower view (an authorizer's)
    check(_image(topics, fenced=frozenset({2})), names)  # leaders and offline replicas
    gone = _image(topics[1:])
    check(gone, sorted(gone.topic_ids))
    check(_image([]), [])


def test_an_unchanged_topic_is_not_encoded_again(monkeypatch: pytest.MonkeyPatch) -> None:
    every = EveryTopic()
    topics = [_topic(f"t{i}", 2) for i in range(5)]
    image = _image(topics)
    names = sorted(image.topic_ids)
    encoded: list[str] = []
    real = metadata_answer._entry

    def counting(topic: TopicImage, live: frozenset[int]) -> dict[str, object]:
        encoded.append(topic.name)
        return real(topic, live)

    monkeypatch.setattr(metadata_answer, "_entry", counting)
    every.answer(("k",), image, 12, _shell(image), names)
    assert sorted(encoded) == names
    encoded.clear()
    every.answer(("k",), image, 12, _shell(image), names)
    assert encoded == []  # the whole answer, kept for the image
    moved = dataclasses.replace(topics[3], partitions={0: topics[3].partitions[1]})
    next_image = _image([*topics[:3], moved, topics[4]])
    every.answer(("k",), next_image, 12, _shell(next_image), names)
    assert encoded == ["t3"]
    encoded.clear()
    fenced = _image([*topics[:3], moved, topics[4]], fenced=frozenset({1}))
    every.answer(("k",), fenced, 12, _shell(fenced), names)
    assert sorted(encoded) == names  # the live brokers decide every entry


def test_topic_entries_are_kept_for_the_versions_asked_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    every = EveryTopic()
    topics = [_topic("t", 2)]
    encoded: list[int] = []
    real = metadata_answer._entry

    def counting(topic: TopicImage, live: frozenset[int]) -> dict[str, object]:
        encoded.append(1)
        return real(topic, live)

    monkeypatch.setattr(metadata_answer, "_entry", counting)

    def ask(version: int) -> None:
        image = _image(topics)  # a new image each time, the same TopicImage
        every.answer((version,), image, version, _shell(image), ["t"])

    for version in (9, 10, 11, 12):  # one more than VERSIONS_KEPT: 9's entries go
        ask(version)
    assert len(encoded) == 4
    ask(12)
    ask(11)
    assert len(encoded) == 4  # kept
    ask(9)
    assert len(encoded) == 5  # dropped, encoded again
