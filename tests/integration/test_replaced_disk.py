"""A controller whose metadata disk is replaced rejoins only as Kafka allows (KIP-853):
real controller processes, a real SIGKILL, the directory really deleted and formatted
again with ``--no-initial-controllers``.

First the operator upgrades kraft.version to 1 (``features upgrade``: the voter set
pinned with directory ids; never automatic). The new disk is then another replica (same
node id, new directory.id): an observer. With only one old voter and the new disk up,
no leader can be elected -- the new disk's vote does not count. After ``quorum
remove-controller`` of the old directory and ``quorum add-controller`` of the new one
(each committed), the new disk is a voter and the quorum commits with it. A disk
replaced afterwards and formatted the default way is an observer too."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import grpc
import pytest

from migration.common.kafka_errors import ErrorCode
from migration.proto import raft_pb2 as rpb
from migration.proto import raft_pb2_grpc
from tests.quorum_harness import Quorum
from tests.support import zk2kraft

pytestmark = pytest.mark.timeout(240)

CLUSTER = "ReplacedDiskCluster0001"


def storage_format(q: Quorum, node: int, *options: str) -> dict[str, object]:
    done = zk2kraft(
        "storage", "format", "--config", str(q.config(node)), "--cluster-id", CLUSTER,
        "--json", *options,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report: dict[str, object] = json.loads(done.stdout)
    return report


def quorum_command(q: Quorum, *args: str) -> None:
    done = zk2kraft("quorum", *args, "--bootstrap-controller", ",".join(q.bootstrap))
    assert done.returncode == 0, done.stderr + done.stdout


def ask(q: Quorum, node: int) -> rpb.DescribeQuorumResponse | None:
    """DescribeQuorum answered by ``node`` itself or the leader it forwards to."""
    with grpc.insecure_channel(q.endpoint(node)) as channel:
        try:
            response: rpb.DescribeQuorumResponse = raft_pb2_grpc.RaftStub(channel).DescribeQuorum(
                rpb.DescribeQuorumRequest(), timeout=5
            )
        except grpc.RpcError:
            return None
    return response


def wait_for(what: str, check: object, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"hang guard: {what}"
        time.sleep(0.2)


def everywhere(q: Quorum, leader: int, voters: dict[int, str]) -> bool:
    """The leader's voter set is ``voters`` and every voter's log holds it (each has
    fetched past the high watermark the leader had when it was committed)."""
    d = ask(q, leader)
    if d is None or d.error_code != ErrorCode.NONE:
        return False
    held = {v.replica_id: v.replica_directory_id for v in d.current_voters}
    return held == voters and all(v.log_end_offset >= d.high_watermark for v in d.current_voters)


def test_a_replaced_disk_is_an_observer_until_removed_and_added(tmp_path: Path) -> None:
    q = Quorum(tmp_path, cluster_id=None)
    dirs = {n: str(storage_format(q, n)["directory_id"]) for n in q.ids}
    q.start_all()
    try:
        leader = q.wait_leader()
        # Never automatic: the operator's upgrade pins the set, once committed.
        upgrade = zk2kraft(
            "features", "upgrade", "--bootstrap-controller", ",".join(q.bootstrap),
            "--feature", "kraft.version=1",
        )  # fmt: skip
        assert upgrade.returncode == 0, upgrade.stderr + upgrade.stdout
        leader = q.wait_leader()
        wait_for("the voter set pinned everywhere", lambda: everywhere(q, leader, dirs))
        victim, other = [n for n in q.ids if n != leader]

        q.kill(victim)  # SIGKILL, then the disk is replaced
        shutil.rmtree(q.log_dir(victim))
        joined = storage_format(q, victim, "--no-initial-controllers")
        new_dir = str(joined["directory_id"])
        assert joined["joining"] is True and new_dir != dirs[victim]
        q.start(victim)

        def observed() -> bool:
            d = ask(q, leader)
            return d is not None and any(
                o.replica_id == victim and o.replica_directory_id == new_dir for o in d.observers
            )

        wait_for("the new disk fetching as an observer", observed)
        d = ask(q, leader)
        assert d is not None
        assert {(v.replica_id, v.replica_directory_id) for v in d.current_voters} == {
            (n, dirs[n]) for n in q.ids
        }

        # Only one old voter and the new disk: no leader, ever (its vote does not count).
        q.kill(leader)
        window_end = time.monotonic() + 8.0  # several election timeouts and backoffs
        while time.monotonic() < window_end:
            for node in (other, victim):
                d = ask(q, node)
                assert d is None or d.error_code != ErrorCode.NONE, f"{node} leads"
                assert d is None or d.leader_id in (-1, leader), d
            time.sleep(0.2)
        state = json.loads((q.log_dir(victim) / "quorum-state").read_text())
        assert state["votedId"] == -1  # the new disk never voted
        assert "never votes" in q.output(victim) or "is an observer" in q.output(victim)

        # The old voter back: a leader again; the operator replaces the voter.
        q.start(leader)
        q.wait_leader(timeout_s=60)
        quorum_command(
            q, "remove-controller", "--controller-id", str(victim),
            "--controller-directory-id", dirs[victim],
        )  # fmt: skip
        quorum_command(
            q, "add-controller", "--controller-id", str(victim),
            "--controller-directory-id", new_dir,
        )  # fmt: skip
        expected = {**dirs, victim: new_dir}
        wait_for("the new voter set everywhere", lambda: everywhere(q, q.wait_leader(), expected))
        described = zk2kraft(
            "quorum", "describe", "--json", "--bootstrap-controller", ",".join(q.bootstrap)
        )
        assert described.returncode == 0, described.stderr
        voters = {
            v["replica_id"]: v["directory_id"] for v in json.loads(described.stdout)["voters"]
        }
        assert voters == expected

        # The quorum commits with the new disk: with `other` gone, the leader needs it.
        # An admin write makes the commit whoever leads: a leader that kept its term
        # writes nothing of its own (CI saw no election, so no LeaderChange to commit).
        before = q.describe().high_watermark
        q.kill(other)
        after = q.wait_leader(not_in=(other,), timeout_s=60)
        written = zk2kraft(
            "admin", "--bootstrap-controller", ",".join(q.bootstrap), "alter-config",
            "--entity-type", "users", "--entity-name", "alice",
            "--add-config", "producer_byte_rate=1024",
        )  # fmt: skip
        assert written.returncode == 0, written.stderr + written.stdout
        wait_for(
            "a commit with the new disk",
            lambda: (d := ask(q, after)) is not None and d.high_watermark > before,
        )

        # `other`'s disk lost too, formatted the default way: it takes the set for static
        # until it fetches the log, and no voter counts it; then it is an observer.
        shutil.rmtree(q.log_dir(other))
        default_dir = str(storage_format(q, other)["directory_id"])
        q.start(other)

        def default_observed() -> bool:
            d = ask(q, after)
            return d is not None and any(
                o.replica_id == other and o.replica_directory_id == default_dir for o in d.observers
            )

        wait_for("the default-formatted disk fetching as an observer", default_observed)
        wait_for("it says so", lambda: "a replaced disk is an observer" in q.output(other))
        d = ask(q, after)
        assert d is not None
        assert {v.replica_id: v.replica_directory_id for v in d.current_voters} == expected
    finally:
        q.stop_all()
