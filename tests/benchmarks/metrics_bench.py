"""What a Prometheus scrape of a controller costs as the metadata grows: the first scrape
after a change counts the image (topics, partitions, offline partitions, brokers), later
scrapes of the same image reuse the counts. Measured in-process on images of 100,000 and
1,000,000 partitions, the same families the controller's collector yields; the baseline
beside it is the scrape of an empty image (the fixed cost of the exposition)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import Metric

from migration.image.model import BrokerImage, MetadataImage, PartitionImage, TopicImage
from migration.image.publishing import ImageChange, LoadManifest
from migration.observability.node_metrics import LatestImage, broker_families, image_families
from migration.records import versions

PARTITIONS_PER_TOPIC = 50


class ImageCollector:
    def __init__(self, latest: LatestImage) -> None:
        self.latest = latest

    def collect(self) -> Iterator[Metric]:
        image, counts = self.latest.counts()
        yield from image_families(image, counts)
        yield from broker_families(counts)


def synthetic_image(partitions: int, brokers: int = 30) -> MetadataImage:
    topics = {}
    for t in range(partitions // PARTITIONS_PER_TOPIC):
        tid = t.to_bytes(16, "big")
        parts = {
            p: PartitionImage(
                (p % brokers, (p + 1) % brokers, (p + 2) % brokers),
                (p % brokers, (p + 1) % brokers),
                (),
                (),
                -1 if p == 7 else p % brokers,
                0,
                3,
                5,
            )
            for p in range(PARTITIONS_PER_TOPIC)
        }
        topics[tid] = TopicImage(f"topic-{t}", tid, parts)
    return MetadataImage(
        features={versions.METADATA_VERSION: versions.LATEST},
        brokers={
            b: BrokerImage(b, b"", 1, (), (), None, False, False, True) for b in range(brokers)
        },
        topics=topics,
        topic_ids={t.name: tid for tid, t in topics.items()},
    )


def _scrape_seconds(registry: CollectorRegistry) -> float:
    start = time.perf_counter()
    generate_latest(registry)
    return time.perf_counter() - start


def measure(partitions: int, rounds: int = 5) -> dict[str, Any]:
    latest = LatestImage()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ImageCollector(latest))
    empty = statistics.median(_scrape_seconds(registry) for _ in range(rounds))
    image = synthetic_image(partitions)
    first, cached = [], []
    for i in range(rounds):
        fresh = MetadataImage(**{**image.__dict__, "offset": i})  # a new image: counted again
        latest.publish(ImageChange(image, fresh, None, LoadManifest(i, i, 1)))
        first.append(_scrape_seconds(registry))
        cached.append(_scrape_seconds(registry))
    return {
        "partitions": partitions,
        "empty_scrape_ms": round(empty * 1000, 3),
        "first_scrape_ms": round(statistics.median(first) * 1000, 1),
        "cached_scrape_ms": round(statistics.median(cached) * 1000, 3),
        "ns_per_partition": round(statistics.median(first) / partitions * 1e9),
        "first_over_cached": round(statistics.median(first) / statistics.median(cached), 1),
    }


def run() -> list[dict[str, Any]]:
    return [measure(n) for n in (100_000, 1_000_000)]


def report(results: list[dict[str, Any]]) -> None:
    print("metrics scrape of a controller's image (median of 5):")
    for r in results:
        print(
            f"  {r['partitions']:>9,} partitions: first scrape after a change "
            f"{r['first_scrape_ms']:>7.1f} ms ({r['ns_per_partition']} ns/partition), "
            f"same image again {r['cached_scrape_ms']:.3f} ms (x{r['first_over_cached']}), "
            f"empty image {r['empty_scrape_ms']:.3f} ms"
        )
