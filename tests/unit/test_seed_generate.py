"""The cluster generator: deterministic, sized as asked, in Kafka's shapes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from migration.local.seed import PROFILES, ClusterSpec, generate


def test_deterministic_for_a_seed() -> None:
    spec = PROFILES["small"]
    assert generate(spec) == generate(spec)
    assert generate(spec) != generate(replace(spec, seed=7))


@pytest.mark.parametrize("profile", ["tiny", "small", "medium"])
def test_sizes_match_the_spec(profile: str) -> None:
    spec = PROFILES[profile]
    snap = generate(spec)
    assert len(snap.brokers) == spec.brokers
    assert len(snap.topics) == spec.topics
    assert snap.partition_count == spec.partitions
    for topic in snap.topics.values():
        for pid, replicas in topic.assignment.partitions.items():
            assert len(replicas) == min(spec.replication_factor, spec.brokers)
            assert set(replicas) <= set(snap.brokers)
            state = topic.partitions[pid].state
            assert state is not None and set(state.isr) <= set(replicas)


def test_partition_counts_are_skewed() -> None:
    snap = generate(ClusterSpec(brokers=3, topics=100, partitions=5_000))
    counts = sorted(len(t.assignment.partitions) for t in snap.topics.values())
    assert counts[0] >= 1 and counts[-1] > 10 * counts[len(counts) // 2]


def test_offline_partitions_and_reassignment() -> None:
    snap = generate(
        ClusterSpec(brokers=5, topics=10, partitions=100, offline_partitions=4, reassignment=True)
    )
    offline = [
        p
        for t in snap.topics.values()
        for p in t.partitions.values()
        if p.state is not None and p.state.leader == -1
    ]
    assert len(offline) == 4
    assert len(snap.reassignment) == 1
    moving = snap.topics[snap.reassignment[0].topic].assignment
    assert moving.adding and moving.removing


def test_bad_specs_are_refused() -> None:
    with pytest.raises(ValueError):
        ClusterSpec(topics=10, partitions=5)
    with pytest.raises(ValueError):
        ClusterSpec(partitions=5, topics=5, offline_partitions=6)


def test_topics_stay_far_below_jute_maxbuffer() -> None:
    with pytest.raises(ValueError, match="10000 partitions per topic"):
        generate(ClusterSpec(topics=1, partitions=10_001))
    snap = generate(ClusterSpec(brokers=3, topics=3, partitions=30_000))
    assert {len(t.assignment.partitions) for t in snap.topics.values()} == {10_000}
