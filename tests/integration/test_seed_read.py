"""Seed a cluster into a real ZooKeeper, read it back: exactly what was seeded."""

from __future__ import annotations

import gc
import weakref
from dataclasses import replace
from typing import Any

import pytest
from kazoo.security import make_digest_acl

from migration.local import seed
from migration.zk import paths, reader
from migration.zk.client import ZkClient, ZkWriteError
from migration.zk.multiwrite import set_data
from migration.zk.reader import ZkReadError, read_snapshot
from migration.zk.tree_read import ZkSnapshot
from tests.support import EVERYTHING


def _comparable(snap: ZkSnapshot) -> ZkSnapshot:
    return replace(snap, znodes_read=0, chroot="")


@pytest.mark.parametrize(
    "spec",
    [
        seed.PROFILES["tiny"],
        seed.PROFILES["medium"],
        EVERYTHING,
        seed.ClusterSpec(brokers=3, topics=4, partitions=8, generated_broker_ids=True),
    ],
    ids=["tiny", "medium", "everything", "generated-ids"],
)
def test_read_returns_what_was_seeded(zk: ZkClient, spec: seed.ClusterSpec) -> None:
    expected = seed.generate(spec)
    written = seed.write(zk, expected)
    got = read_snapshot(zk)
    assert got.malformed == ()
    assert _comparable(got) == expected
    assert got.chroot == zk.chroot and written > got.znodes_read / 2


def test_a_topic_spanning_several_multis(zk: ZkClient) -> None:
    expected = seed.generate(seed.ClusterSpec(brokers=3, topics=1, partitions=10_000))
    seed.write(zk, expected)
    assert _comparable(read_snapshot(zk)) == expected


def test_a_read_leaves_no_cycle_behind(zk: ZkClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """The serving processes leave reference cycles to a daily walk of the heap
    (``common/gc_pause.py``): a read that left its crawl in a cycle would keep its whole
    tree that long, a tree's worth of memory for each read."""
    seed.write(zk, seed.generate(seed.PROFILES["tiny"]))
    crawls: list[weakref.ref[reader._Crawl]] = []

    class Watched(reader._Crawl):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            crawls.append(weakref.ref(self))

    monkeypatch.setattr(reader, "_Crawl", Watched)
    gc.collect()
    gc.disable()
    try:
        got = read_snapshot(zk)
        assert len(crawls) == 1 and crawls[0]() is None
    finally:
        gc.enable()
    assert got.topics


def test_ephemeral_brokers_vanish_with_the_seeding_session(zk_connect: str) -> None:
    expected = seed.generate(seed.PROFILES["tiny"])
    with ZkClient(zk_connect) as holder:
        holder.ensure_chroot()
        seed.write(holder, expected, ephemeral=True)
        with ZkClient(zk_connect) as reader:
            assert set(read_snapshot(reader).brokers) == set(expected.brokers)
    with ZkClient(zk_connect) as reader:
        after = read_snapshot(reader)
    assert after.brokers == {} and after.controller is None
    assert after.topics == expected.topics


def test_seeding_over_an_existing_cluster_is_refused(zk: ZkClient) -> None:
    snap = seed.generate(seed.PROFILES["tiny"])
    seed.write(zk, snap)
    with pytest.raises(ZkWriteError, match="/cluster/id: node already exists"):
        seed.write(zk, snap)


def test_malformed_znodes_are_collected_and_the_rest_is_read(zk: ZkClient) -> None:
    snap = seed.generate(seed.PROFILES["small"])
    seed.write(zk, snap)
    topic = sorted(snap.topics)[0]
    state_path = paths.partition_state(topic, 0)
    zk.multi_write(
        [
            set_data(state_path, b'{"version":1,"leader":"one"}'),
            set_data(paths.broker(1), b"not json"),
            set_data(paths.config_entity("brokers", "<default>"), b'{"version":1,"config":[]}'),
        ]
    )
    got = read_snapshot(zk)
    assert sorted(e.path for e in got.malformed) == sorted(
        [paths.broker(1), state_path, "/config/brokers/<default>"]
    )
    assert all(e.problem for e in got.malformed)
    assert len(got.topics) == len(snap.topics) and 1 not in got.brokers
    with pytest.raises(Exception, match="/brokers/ids/1"):
        got.raise_if_malformed()


def test_illegal_names_in_listings_are_malformed(zk: ZkClient) -> None:
    seed.write(zk, seed.generate(seed.PROFILES["tiny"]))
    zk.kazoo.create("/brokers/ids/not-a-number", b"{}")
    zk.kazoo.create("/brokers/topics/bad topic", b'{"version":1,"partitions":{"0":[1]}}')
    problems = {e.path: e.problem for e in read_snapshot(zk).malformed}
    assert "not an integer" in problems["/brokers/ids/not-a-number"]
    assert "has characters other than" in problems["/brokers/topics/bad topic"]


def test_an_unreadable_znode_is_a_read_error(zk: ZkClient) -> None:
    seed.write(zk, seed.generate(seed.PROFILES["tiny"]))
    acl = make_digest_acl("admin", "secret", all=True)
    zk.kazoo.set_acls(paths.FEATURE, [acl])
    with pytest.raises(ZkReadError, match="/feature: ZooKeeper refused the read"):
        read_snapshot(zk)


def test_an_empty_chroot_reads_as_no_cluster(zk: ZkClient) -> None:
    got = read_snapshot(zk)
    assert got.cluster_id is None and got.topics == {} and got.malformed == ()
