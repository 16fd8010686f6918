"""The writer under ZooKeeper faults in the middle of a change: a dropped connection, an
expired session, a restarted server, an ensemble leader killed, a server gone past the
reconnect timeout. The end state is right, and ``/migration`` never claims more than
landed."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from migration.bridge.sync import full_sync
from migration.bridge.writer import ZkUnavailableError, ZkWriter
from migration.local.zookeeper import EmbeddedZooKeeper, drop_connection, expire_session
from migration.zk.client import ZkClient
from migration.zk.fence import ZkFence, read_migration, recover
from tests.broker_harness import zk_answering
from tests.zk_timeline import Timeline, assert_zk_holds, read_back, synced_writer, zk_content


@pytest.fixture(scope="module")
def own_zk() -> Iterator[EmbeddedZooKeeper]:
    """A server of this module's own: these tests kill it."""
    with EmbeddedZooKeeper() as server:
        yield server


@pytest.fixture
def zk(own_zk: EmbeddedZooKeeper, zk_connect: str) -> Iterator[ZkClient]:
    chroot = zk_connect.split("/", 1)[1]
    with ZkClient(f"{own_zk.connect_string}/{chroot}", session_timeout_s=10) as client:
        client.ensure_chroot()
        yield client


def writer_with_fault(
    zk: ZkClient, fault: Callable[[], None], after_multis: int = 2, **options: float
) -> tuple[ZkWriter, ZkFence, list[int]]:
    """A synced writer of small multis that runs ``fault`` once ``after_multis`` of the
    next change's multis have landed (more are in flight by then)."""
    landed: list[int] = []

    def progress(ops: int) -> None:
        landed.append(ops)
        if len(landed) == after_multis:
            fault()

    writer, fence = synced_writer(zk, max_multi_bytes=4096, **options)
    writer.progress = progress
    return writer, fence, landed


class HangThen:
    """SIGSTOP server ``myid`` (the writer's multis sent from then on get no answer, so
    some are in flight however fast the earlier ones were answered), and once the client
    has given the connection up -- or, with ``after_s``, that long after the hang -- run
    ``then`` (SIGKILL it, start it again, or cut the connection and let it go on).
    ``wait`` joins that."""

    def __init__(
        self,
        ensemble: EmbeddedZooKeeper,
        myid: int,
        client: ZkClient,
        then: Callable[[], None],
        after_s: float | None = None,
    ) -> None:
        self.ensemble, self.myid, self.client, self.then = ensemble, myid, client, then
        self.after_s = after_s
        self.thread = threading.Thread(target=self._finish)

    def __call__(self) -> None:
        self.process().send_signal(signal.SIGSTOP)
        self.thread.start()

    def process(self) -> subprocess.Popen[bytes]:
        process = self.ensemble.servers[self.myid - 1].process
        assert process is not None
        return process

    def _finish(self) -> None:
        if self.after_s is not None:
            time.sleep(self.after_s)
        else:
            deadline = time.monotonic() + 30
            while self.client.kazoo.connected and time.monotonic() < deadline:
                time.sleep(0.05)
        self.then()

    def wait(self) -> None:
        if self.thread.ident is not None:  # started
            self.thread.join(timeout=60)


@pytest.mark.parametrize("fault", ["drop_connection", "expire_session", "restart_zookeeper"])
def test_a_fault_mid_change_ends_with_everything_written(
    zk: ZkClient, own_zk: EmbeddedZooKeeper, fault: str
) -> None:
    def cut_and_resume() -> None:
        drop_connection(zk)
        dropped.process().send_signal(signal.SIGCONT)

    # The server hangs first, so multis are in flight when the connection is cut (CI saw
    # every one answered before a plain cut, so nothing resumed).
    dropped = HangThen(own_zk, 1, zk, then=cut_and_resume, after_s=0.5)
    actions: dict[str, Callable[[], None]] = {
        "drop_connection": dropped,
        "expire_session": lambda: expire_session(zk),
        "restart_zookeeper": HangThen(own_zk, 1, zk, then=lambda: own_zk.restart(1)),
    }
    writer, fence, landed = writer_with_fault(zk, actions[fault])
    t = Timeline()
    change = t.create_topics(30, [[1, 2, 3]] * 40)
    fence = writer.write_change(fence, change)
    for action in actions.values():
        if isinstance(action, HangThen):
            action.wait()
    assert len(landed) > writer.depth and writer.resumes >= 1  # hit with multis in flight
    assert fence.offset == t.offset
    found = read_migration(zk)
    assert found is not None and found[1] == fence.migration_version
    assert found[0].kraft_metadata_offset == t.offset
    assert_zk_holds(zk, t.image)
    # and the writer goes on with the next change
    fence = writer.write_change(fence, t.commit())
    assert fence.offset == t.offset


def test_zookeeper_gone_past_the_timeout_leaves_migration_at_what_landed(
    zk: ZkClient, own_zk: EmbeddedZooKeeper
) -> None:
    def gone() -> None:
        """ZooKeeper dies; the writer's next multis wait in kazoo's queue."""
        own_zk.kill(1)
        while zk.kazoo.connected:
            time.sleep(0.01)

    writer, fence, landed = writer_with_fault(zk, gone, reconnect_timeout_s=2.0)
    t = Timeline()
    change = t.create_topics(30, [[1, 2, 3]] * 40)
    with pytest.raises(ZkUnavailableError, match="unreachable"):
        writer.write_change(fence, change)
    own_zk.restart(1)
    zk_answering(zk)
    now = recover(zk, fence)  # what landed: some multis, not the change
    assert now.offset == fence.offset < t.offset
    assert now.migration_version - fence.migration_version >= len(landed)
    assert zk_content(read_back(zk), read_from_zk=True) != zk_content(t.image)
    # The full sync finishes the job.
    repaired = full_sync(writer, now, t.image).fence
    assert repaired is not None and repaired.offset == t.offset
    assert_zk_holds(zk, t.image)


def test_the_ensemble_leader_killed_mid_change(zk_connect: str) -> None:
    """Three ZooKeeper servers; the leader hangs with multis in flight, then is SIGKILLed.
    The writer's client moves to a survivor, learns what landed, and finishes."""
    chroot = zk_connect.split("/", 1)[1]
    with (
        EmbeddedZooKeeper(nodes=3) as ensemble,
        ZkClient(f"{ensemble.connect_string}/{chroot}", session_timeout_s=10) as zk,
    ):
        zk.ensure_chroot()
        leader = next(s for s in ensemble.servers if s.mode() == "leader")
        killed = HangThen(ensemble, leader.myid, zk, then=lambda: ensemble.kill(leader.myid))
        writer, fence, landed = writer_with_fault(zk, killed)
        t = Timeline()
        fence = writer.write_change(fence, t.create_topics(30, [[1, 2, 3]] * 40))
        killed.wait()
        assert len(landed) > writer.depth and writer.resumes >= 1
        assert fence.offset == t.offset == recover(zk, fence).offset
        assert_zk_holds(zk, t.image)
