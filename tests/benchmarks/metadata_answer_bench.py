"""The all-topics Metadata answer a broker encodes (``make bench``, ``--only-metadata``),
in process on an image of N partitions (20 a topic, three brokers), against the
baseline measured beside it: the whole response built and encoded by kio at once (how
every answer after an image change was made before). Figures: every topic encoded (a
broker's first answer), after a change to one topic, after a roll's AlterPartition
step (10,000 partitions: 500 topics), and repeated with nothing changed."""

from __future__ import annotations

import dataclasses
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

from migration.image.model import (
    BrokerImage,
    EndpointImage,
    MetadataImage,
    PartitionImage,
    TopicImage,
)
from migration.kafka.metadata_answer import EveryTopic, live_brokers, topic_metadata
from migration.kafka.wire import encode_body, response

VERSION = 12
PER_TOPIC = 20
STEP_PARTITIONS = 10_000  # a broker's AlterPartition step


def _image(partitions: int) -> MetadataImage:
    topics = {}
    for t in range(max(1, partitions // PER_TOPIC)):
        tid = uuid.UUID(int=t + 1).bytes
        topics[tid] = TopicImage(
            f"bench-{t:07d}",
            tid,
            {
                i: PartitionImage((1, 2, 3), (1, 2, 3), (), (), 1 + (t + i) % 3, 0, 4, 9)
                for i in range(PER_TOPIC)
            },
        )
    brokers = {
        b: BrokerImage(
            b,
            b"",
            1,
            (EndpointImage("PLAINTEXT", "10.0.0.1", 9092, 0),),
            (),
            None,
            False,
            False,
            False,
        )
        for b in (1, 2, 3)
    }
    return MetadataImage(
        brokers=brokers, topics=topics, topic_ids={t.name: tid for tid, t in topics.items()}
    )


def _changed(image: MetadataImage, count: int) -> MetadataImage:
    """The next image: ``count`` topics with a new leader epoch, the rest shared."""
    topics = dict(image.topics)
    for tid in list(topics)[:count]:
        t = topics[tid]
        moved = {i: p._replace(leader_epoch=p.leader_epoch + 1) for i, p in t.partitions.items()}
        topics[tid] = dataclasses.replace(t, partitions=moved)
    return dataclasses.replace(image, topics=topics)


def _shell(image: MetadataImage) -> dict[str, Any]:
    return {
        "brokers": [{"node_id": b, "host": "10.0.0.1", "port": 9092} for b in image.brokers],
        "cluster_id": "MkU3OEVBNTcwNTJENDM2Qg",
        "controller_id": 1,
        "topics": [],
    }


def _timed(action: Callable[[MetadataImage], object], image: MetadataImage) -> float:
    t0 = time.perf_counter()
    action(image)
    return time.perf_counter() - t0


def run(partitions: int, rounds: int | None = None) -> dict[str, Any]:
    """The figures at ``partitions``; ``rounds`` of each (default: 3, one above 100,000:
    the whole encode takes about a minute at a million partitions)."""
    rounds = rounds or (3 if partitions <= 100_000 else 1)
    image = _image(partitions)
    names = sorted(image.topic_ids)
    live = live_brokers(image)

    def whole(image: MetadataImage) -> object:
        topics = [topic_metadata(image, n, live) for n in names]
        return encode_body(response(3, VERSION, {**_shell(image), "topics": topics}))

    every = EveryTopic()

    def spliced(image: MetadataImage) -> object:
        return every.answer(("bench",), image, VERSION, _shell(image), names)

    baseline = statistics.median(_timed(whole, image) for _ in range(rounds))
    cold = _timed(spliced, image)
    one, step = [], []
    current = image
    for _ in range(rounds):
        current = _changed(current, 1)
        one.append(_timed(spliced, current))
        current = _changed(current, STEP_PARTITIONS // PER_TOPIC)
        step.append(_timed(spliced, current))
    repeated = statistics.median(_timed(spliced, current) for _ in range(rounds))
    after_one, after_step = statistics.median(one), statistics.median(step)
    return {
        "partitions": partitions,
        "whole_encode_s": round(baseline, 4),
        "every_topic_s": round(cold, 4),
        "after_one_topic_s": round(after_one, 4),
        "after_step_s": round(after_step, 4),
        "repeated_s": round(repeated, 6),
        "after_one_over_whole": round(after_one / baseline, 4),
        "after_step_over_whole": round(after_step / baseline, 4),
    }


def report(results: list[dict[str, Any]]) -> None:
    for r in results:
        print(
            f"all-topics Metadata answer (v{VERSION}, in process), {r['partitions']:,} "
            f"partitions: whole response encoded (baseline) {r['whole_encode_s']:.3f} s; "
            f"spliced: every topic {r['every_topic_s']:.3f} s, after one topic changed "
            f"{r['after_one_topic_s']:.3f} s ({r['after_one_over_whole']:.3f}x), after "
            f"{STEP_PARTITIONS:,} partitions changed {r['after_step_s']:.3f} s "
            f"({r['after_step_over_whole']:.3f}x), unchanged {r['repeated_s']:.6f} s"
        )
