"""TreeWatch on a real ZooKeeper: each kind of event ZooKeeper reports for a persistent
recursive watch names its path; what is outside the chroot is not named; a disconnection
(even one the session survives) or a closed session loses the watch, said as
WatchLostError, never as an empty set of changes."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator

import pytest
from kazoo.protocol.states import KazooState, WatchedEvent

from migration.zk.client import ZkClient
from migration.zk.tree_watch import TreeWatch, WatchLostError
from tests.broker_harness import eventually


@pytest.fixture
def watch(zk: ZkClient, zk_connect: str) -> Iterator[TreeWatch]:
    zk.ensure_path("/brokers/topics")
    zk.kazoo.create("/brokers/topics/old", b"{}")
    with TreeWatch(ZkClient(zk_connect)) as tree_watch:
        yield tree_watch


KINDS: dict[str, Callable[[ZkClient], None]] = {
    "created": lambda zk: zk.kazoo.create("/brokers/topics/new", b"{}"),
    "data changed": lambda zk: zk.kazoo.set("/brokers/topics/old", b"{ }"),
    "deleted": lambda zk: zk.kazoo.delete("/brokers/topics/old"),
    "created deep below": lambda zk: zk.kazoo.create(
        "/brokers/topics/old/partitions/0/state", b"{}", makepath=True
    ),
}
NAMED = {
    "created": {"/brokers/topics/new"},
    "data changed": {"/brokers/topics/old"},
    "deleted": {"/brokers/topics/old"},
    "created deep below": {
        "/brokers/topics/old/partitions",
        "/brokers/topics/old/partitions/0",
        "/brokers/topics/old/partitions/0/state",
    },
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_kind_of_event_names_its_path(zk: ZkClient, watch: TreeWatch, kind: str) -> None:
    assert watch.take() == (frozenset(), 0)
    KINDS[kind](zk)
    changed, events = watch.take()  # the barrier: no wait for the event is needed
    assert changed == NAMED[kind]
    assert events == len(NAMED[kind])
    assert watch.take() == (frozenset(), 0)  # taken once
    zk.kazoo.create("/brokers/topics/another", b"{}")
    watch.client.kazoo.sync("/")  # a barrier on the watch's session: the event is in
    watch.restart()  # what a read through the watch's session starts with: forgotten
    assert watch.take() == (frozenset(), 0)


def test_what_is_outside_the_chroot_is_not_named(
    zk: ZkClient, zk_connect: str, watch: TreeWatch
) -> None:
    hosts = zk_connect.partition("/")[0]
    with ZkClient(hosts) as outside:
        outside.kazoo.create(f"/outside-{id(watch)}", b"")
        assert watch.take() == (frozenset(), 0)


def test_a_one_shot_watch_of_the_same_session_still_fires(zk: ZkClient, watch: TreeWatch) -> None:
    fired: list[WatchedEvent] = []
    watch.client.kazoo.get("/brokers/topics/old", watch=fired.append)
    zk.kazoo.set("/brokers/topics/old", b"{ }")
    eventually(lambda: fired, 10, "the one-shot watch fired")
    assert fired[0].path == "/brokers/topics/old"
    assert watch.take()[0] == {"/brokers/topics/old"}


def test_a_disconnection_the_session_survives_loses_the_watch(watch: TreeWatch) -> None:
    kazoo = watch.client.kazoo
    session = kazoo.client_id
    states: list[KazooState] = []
    kazoo.add_listener(states.append)
    kazoo._connection._socket.shutdown(socket.SHUT_RDWR)
    eventually(lambda: KazooState.SUSPENDED in states and kazoo.connected, 30, "reconnected")
    assert kazoo.client_id == session
    with pytest.raises(WatchLostError, match=r"connection was suspended|reset its watchers"):
        watch.take()
    with pytest.raises(WatchLostError):
        watch.restart()


def test_a_closed_session_loses_the_watch(watch: TreeWatch) -> None:
    watch.client.kazoo.stop()
    with pytest.raises(WatchLostError):
        watch.take()
