"""What a Prometheus scrape of a controller costs as the metadata grows: the first scrape
after a change counts the image (topics, partitions, offline partitions, brokers), later
scrapes of the same image reuse the counts. Measured in-process on images of 100,000 and
1,000,000 partitions, the same families the controller's collector yields; the baseline
beside it is the scrape of an empty image (the fixed cost of the exposition). And what
scraping costs the quorum: commit latency on three real controllers scraped ten times a
second, against the same quorum unscraped."""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import Metric

from migration.image.model import BrokerImage, MetadataImage, PartitionImage, TopicImage
from migration.image.publishing import ImageChange, LoadManifest
from migration.records import versions
from migration.server.node_metrics import LatestImage, broker_families, image_families
from tests.benchmarks.quorum_bench import _latencies, _with_brokers
from tests.quorum_harness import Quorum

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


def _scraper(quorum: Quorum, stop: threading.Event, interval_s: float, counts: list[int]) -> None:
    targets = [quorum.metrics_target(n) for n in quorum.ids]
    while not stop.wait(interval_s):
        for target in targets:
            with urllib.request.urlopen(f"http://{target}/metrics", timeout=10) as answer:
                answer.read()
            counts[0] += 1


def live(
    writes: int = 500, rounds: int = 3, intervals: tuple[float, ...] = (1.0, 0.1)
) -> list[dict[str, Any]]:
    """One-at-a-time CreateTopics on a real three-controller quorum with metrics
    endpoints, each endpoint scraped every ``interval`` seconds (Prometheus' fastest
    usual interval, and ten times that), against the same quorum unscraped, in the same
    run (interleaved rounds)."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        quorum = Quorum(Path(tmp) / "q", size=3, metrics=True).start_all()
        try:
            brokers = _with_brokers(quorum, 3)
            for interval in intervals:
                quiet: list[float] = []
                scraped: list[float] = []
                counts = [0]
                for r in range(rounds):
                    quiet.append(_latencies(quorum, f"q{interval}-{r}", writes, 1)["p50_ms"])
                    stop = threading.Event()
                    scraper = threading.Thread(
                        target=_scraper, args=(quorum, stop, interval, counts)
                    )
                    scraper.start()
                    scraped.append(_latencies(quorum, f"s{interval}-{r}", writes, 1)["p50_ms"])
                    stop.set()
                    scraper.join()
                out.append(
                    {
                        "interval_s": interval,
                        "scrapes": counts[0],
                        "quiet_p50_ms": round(statistics.median(quiet), 2),
                        "scraped_p50_ms": round(statistics.median(scraped), 2),
                        "scraped_over_quiet": round(
                            statistics.median(scraped) / statistics.median(quiet), 2
                        ),
                    }
                )
            for b in brokers:
                b.stop()
        finally:
            quorum.stop_all()
    return out


def run() -> dict[str, Any]:
    return {"images": [measure(n) for n in (100_000, 1_000_000)], "live": live()}


def report(results: dict[str, Any]) -> None:
    print("metrics scrape of a controller's image (median of 5):")
    for r in results["images"]:
        print(
            f"  {r['partitions']:>9,} partitions: first scrape after a change "
            f"{r['first_scrape_ms']:>7.1f} ms ({r['ns_per_partition']} ns/partition), "
            f"same image again {r['cached_scrape_ms']:.3f} ms (x{r['first_over_cached']}), "
            f"empty image {r['empty_scrape_ms']:.3f} ms"
        )
    for live in results["live"]:
        print(
            f"  commit latency while scraped: one-at-a-time CreateTopics p50 "
            f"{live['scraped_p50_ms']:.2f} ms with every controller scraped every "
            f"{live['interval_s']:g} s ({live['scrapes']:,} scrapes) vs "
            f"{live['quiet_p50_ms']:.2f} ms unscraped: ratio {live['scraped_over_quiet']}"
        )
