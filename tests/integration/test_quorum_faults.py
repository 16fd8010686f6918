"""Real controller processes under hostile input and faults: strangers' Raft RPCs,
held fetches, oversized requests, values Kafka refuses, taken ports and foreign hosts,
an invariant violation that must halt the process, and a corrupt log tail."""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest

from migration.common.kafka_errors import ErrorCode
from migration.common.ports import unused_port
from migration.controller.client import BrokerSession
from migration.log.metadata_log import MetadataLog
from migration.proto import controller_pb2 as cpb
from migration.proto import raft_pb2 as rpb
from migration.proto import raft_pb2_grpc
from migration.raft.faults import FATAL_EXIT_CODE
from tests.quorum_harness import Observer, Quorum
from tests.support import zk2kraft

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def quorum(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Quorum]:
    q = Quorum(tmp_path_factory.mktemp("faults")).start_all()
    q.wait_leader()
    brokers = [BrokerSession(q.client(), b).start() for b in (1, 2, 3)]
    for b in brokers:
        b.wait_unfenced()
    try:
        yield q
    finally:
        for b in brokers:
            b.stop()
        q.stop_all()


def raft_stub(q: Quorum, node: int) -> raft_pb2_grpc.RaftStub:
    return raft_pb2_grpc.RaftStub(grpc.insecure_channel(q.endpoint(node)))


def admin(q: Quorum, *args: str) -> subprocess.CompletedProcess[str]:
    return zk2kraft("admin", "--bootstrap-controller", ",".join(q.bootstrap), *args)


def no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr + result.stdout, result.stderr


# --- strangers on the Raft port -----------------------------------------------------------------


def test_a_strangers_end_quorum_epoch_cannot_disable_the_quorum(quorum: Quorum) -> None:
    before = quorum.describe()
    for node in quorum.ids:
        answer = raft_stub(quorum, node).EndQuorumEpoch(
            rpb.EndQuorumEpochRequest(
                cluster_id="test-cluster", leader_id=77, leader_epoch=2**31 - 1
            ),
            timeout=10,
        )
        assert answer.error_code == ErrorCode.INCONSISTENT_VOTER_SET
        vote = raft_stub(quorum, node).Vote(
            rpb.VoteRequest(
                cluster_id="test-cluster", candidate_id=77, candidate_epoch=before.leader_epoch + 1
            ),
            timeout=10,
        )
        assert vote.error_code == ErrorCode.INCONSISTENT_VOTER_SET and not vote.vote_granted
    after = quorum.describe()
    assert (after.leader_id, after.leader_epoch) == (before.leader_id, before.leader_epoch)
    assert admin(quorum, "create-topic", "after-stranger", "--partitions", "1",
                 "--replication-factor", "1").returncode == 0  # fmt: skip


def test_held_fetches_from_a_stranger_are_released_and_the_controller_still_answers(
    quorum: Quorum,
) -> None:
    """100 fetches at the leader's log end asking to be held for 2**31-1 ms: each is held
    (nothing new to send), released after the leader's own limit, and the controller
    keeps answering meanwhile. Uncapped, they would outlive the 30 s deadline."""
    d = quorum.describe()
    stub = raft_stub(quorum, d.leader_id)
    leader_end = next(v for v in d.current_voters if v.replica_id == d.leader_id).log_end_offset
    fetch = rpb.FetchRequest(
        cluster_id="test-cluster",
        replica_id=4242,
        current_leader_epoch=d.leader_epoch,
        fetch_offset=leader_end,
        last_fetched_epoch=d.leader_epoch,
        max_wait_ms=2**31 - 1,
    )
    with ThreadPoolExecutor(max_workers=100) as pool:
        held = [pool.submit(stub.Fetch, fetch, timeout=30) for _ in range(100)]
        assert admin(quorum, "list-topics").returncode == 0  # answered while they wait
        answers = [f.result() for f in held]
    assert all(
        a.error_code == ErrorCode.NONE and not a.HasField("diverging_epoch") for a in answers
    )
    assert quorum.describe().leader_id == d.leader_id


def test_twenty_idle_observers_do_not_stop_elections_or_admin_writes(tmp_path: Path) -> None:
    """Observers (the KRaft brokers to come) each hold a fetch at the leader all the time;
    the servers are asyncio, so those cost no thread: votes, BeginQuorumEpoch and admin
    writes still get through, through a failover too."""
    q = Quorum(tmp_path).start_all()
    observers = [Observer(q, 1000 + i) for i in range(20)]
    try:
        first = q.wait_leader()
        brokers = [BrokerSession(q.client(), b).start() for b in (1, 2, 3)]
        for b in brokers:
            b.wait_unfenced()
        for o in observers:
            o.start()
        deadline = time.monotonic() + 60  # a hang guard
        while len(q.describe().observers) < len(observers):
            assert time.monotonic() < deadline, "the observers never fetched"
            time.sleep(0.1)
        for i in range(5):
            assert admin(q, "create-topic", f"o{i}", "--partitions", "3",
                         "--replication-factor", "3").returncode == 0  # fmt: skip
        q.kill(first)
        second = q.wait_leader(not_in=(first,))
        for i in range(5, 10):
            result = admin(q, "create-topic", f"o{i}", "--partitions", "3",
                           "--replication-factor", "2")  # fmt: skip
            assert result.returncode == 0, result.stderr
        fetched = {o.replica_id: o.fetches for o in observers}
        deadline = time.monotonic() + 60
        while not all(o.fetches > fetched[o.replica_id] for o in observers):
            assert time.monotonic() < deadline, "observers did not follow the new leader"
            time.sleep(0.1)
        assert q.describe().leader_id == second
        for b in brokers:
            b.stop()
    finally:
        for o in observers:
            o.stop()
        q.stop_all()
    assert not [p for o in observers for p in o.problems]


# --- requests Kafka refuses -------------------------------------------------------------------


def test_a_request_over_ten_thousand_records_is_a_policy_violation(quorum: Quorum) -> None:
    result = admin(quorum, "create-topic", "huge", "--partitions", "2147483647",
                   "--replication-factor", "1")  # fmt: skip
    assert result.returncode == 1
    assert "POLICY_VIOLATION (44)" in result.stderr and "10000" in result.stderr
    no_traceback(result)
    ok = admin(quorum, "create-topic", "big-but-fine", "--partitions", "5000",
               "--replication-factor", "1")  # fmt: skip
    assert ok.returncode == 0, ok.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1.5", "0", "1e40"])
def test_quota_values_kafka_refuses(quorum: Quorum, value: str) -> None:
    result = admin(quorum, "alter-config", "--entity-type", "users", "--entity-name", "alice",
                   "--add-config", f"producer_byte_rate={value}")  # fmt: skip
    assert result.returncode == 2 and "producer_byte_rate" in result.stderr
    no_traceback(result)
    # and the controller refuses them too, whatever a client sends
    entry = cpb.QuotaEntry()
    entry.entity.add(entity_type="user", entity_name="alice")
    entry.ops.add(key="producer_byte_rate", value=float(value))
    answer = quorum.client().call(
        "AlterClientQuotas", cpb.AlterClientQuotasRequest(entries=[entry])
    )
    assert answer.results[0].error_code == ErrorCode.INVALID_REQUEST


def test_a_fractional_rate_quota_is_fine(quorum: Quorum) -> None:
    result = admin(quorum, "alter-config", "--entity-type", "users", "--entity-name", "bob",
                   "--add-config", "request_percentage=12.5")  # fmt: skip
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("config", "why"),
    [
        ("retention.ms=9223372036854775808", "at most 9223372036854775807"),
        ("segment.bytes=2147483648", "at most 2147483647"),
    ],
)
def test_topic_configs_beyond_their_kafka_type_are_refused(
    quorum: Quorum, config: str, why: str
) -> None:
    result = admin(quorum, "create-topic", "typed", "--partitions", "1", "--replication-factor",
                   "1", "--config", config)  # fmt: skip
    assert result.returncode == 1 and "INVALID_CONFIG" in result.stderr and why in result.stderr


def test_a_huge_value_is_not_echoed_back(quorum: Quorum) -> None:
    result = admin(quorum, "create-topic", "echo", "--partitions", "1", "--replication-factor",
                   "1", "--config", "retention.ms=" + "9" * 100_000)  # fmt: skip
    assert result.returncode == 1 and "INVALID_CONFIG" in result.stderr
    assert len(result.stderr) < 1000


@pytest.mark.parametrize(
    ("content", "args", "why"),
    [
        (b"", [], "the file is empty"),
        (b"\x00\xff\xfe\x80binary", [], "not UTF-8 text"),
        (b"secret", ["--iterations", "1000000000"], "outside [4096, 16384]"),
    ],
    ids=["empty", "binary", "iterations"],
)
def test_scram_passwords_and_iterations_are_checked_before_hashing(
    quorum: Quorum, tmp_path: Path, content: bytes, args: list[str], why: str
) -> None:
    password = tmp_path / "password"
    password.write_bytes(content)
    result = admin(
        quorum, "alter-scram", "--user", "carol", "--password-file", str(password), *args
    )
    assert result.returncode == 2 and why in result.stderr, result.stderr
    assert "secret" not in result.stderr
    no_traceback(result)


# --- listeners -----------------------------------------------------------------------------------


def _config_copy(q: Quorum, tmp_path: Path, **changes: str) -> Path:
    lines = q.config(1).read_text().splitlines()
    props = dict(line.split("=", 1) for line in lines)
    props["metadata.log.dir"] = str(tmp_path / "other-log")
    props.update(changes)
    path = tmp_path / "other.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def test_a_second_controller_on_a_taken_port_is_refused(quorum: Quorum, tmp_path: Path) -> None:
    result = zk2kraft("controller", "--config", str(_config_copy(quorum, tmp_path)))
    port = quorum.ports[0]
    assert result.returncode == 2
    assert f"listeners: port {port} on 127.0.0.1 is in use" in result.stderr
    no_traceback(result)


@pytest.mark.parametrize(
    ("host", "why"),
    [("no-such-host.invalid", "does not resolve"), ("192.0.2.7", "not an address of this machine")],
)
def test_a_listener_host_that_is_not_this_machine_is_refused(
    quorum: Quorum, tmp_path: Path, host: str, why: str
) -> None:
    port = unused_port()
    path = _config_copy(
        quorum,
        tmp_path,
        listeners=f"CONTROLLER://{host}:{port}",
        **{"controller.quorum.voters": f"1@{host}:{port}", "node.id": "1"},
    )
    result = zk2kraft("controller", "--config", str(path))
    assert result.returncode == 2 and why in result.stderr, result.stderr
    no_traceback(result)


# --- faults stop the process ---------------------------------------------------------------------


def test_a_broken_invariant_halts_the_controller_with_its_reason(tmp_path: Path) -> None:
    """Another voter claiming leadership of the leader's own epoch: two leaders in one
    epoch. The leader must stop, saying why, not log and carry on."""
    q = Quorum(tmp_path).start_all()
    try:
        leader = q.wait_leader()
        epoch = q.describe().leader_epoch
        other = next(i for i in q.ids if i != leader)
        with contextlib.suppress(grpc.RpcError):  # the process may be gone before it answers
            raft_stub(q, leader).BeginQuorumEpoch(
                rpb.BeginQuorumEpochRequest(
                    cluster_id="test-cluster", leader_id=other, leader_epoch=epoch
                ),
                timeout=10,
            )
        assert q.children[leader].wait(30) == FATAL_EXIT_CODE
        output = q.output(leader)
        assert output.count("halting: ") == 1 and f"two leaders in epoch {epoch}" in output
    finally:
        q.stop_all()


def test_a_corrupt_tail_is_cut_loudly_and_fetched_back_from_the_quorum(tmp_path: Path) -> None:
    q = Quorum(tmp_path).start_all()
    try:
        leader = q.wait_leader()
        client = q.client()
        brokers = [BrokerSession(client, b).start() for b in (1, 2)]
        for b in brokers:
            b.wait_unfenced()
        for i in range(5):
            request = cpb.CreateTopicsRequest()
            request.topics.add(name=f"c{i}", num_partitions=2, replication_factor=1)
            assert client.call("CreateTopics", request).topics[0].error_code == 0
        follower = next(i for i in q.ids if i != leader)
        q.kill(follower)
        log_dir = tmp_path / f"log{follower}"
        with MetadataLog(log_dir, read_only=True) as log:
            segment = log.segment_paths[-1]
        data = bytearray(segment.read_bytes())
        data[-3] ^= 0x01  # inside the last batch: a whole batch with a bad CRC
        segment.write_bytes(bytes(data))
        alone = tmp_path / "alone"  # a lone voter has nowhere to fetch from: refuses
        shutil.copytree(log_dir, alone)
        lone = _config_copy(
            q,
            tmp_path,
            **{
                "node.id": str(follower),
                "metadata.log.dir": str(alone),
                "controller.quorum.voters": f"{follower}@{q.endpoint(follower)}",
                "listeners": f"CONTROLLER://{q.endpoint(follower)}",
            },
        )
        refused = zk2kraft("controller", "--config", str(lone))
        assert refused.returncode == 2 and segment.name in refused.stderr, refused.stderr
        assert "CRC32C mismatch" in refused.stderr
        no_traceback(refused)

        q.start(follower)
        request = cpb.CreateTopicsRequest()
        request.topics.add(name="after-repair", num_partitions=1, replication_factor=1)
        assert client.call("CreateTopics", request).topics[0].error_code == 0
        leader_end = q.describe().high_watermark
        deadline = time.monotonic() + 60  # a hang guard
        while True:
            d = q.describe()
            me = next(v for v in d.current_voters if v.replica_id == follower)
            if me.log_end_offset >= leader_end and "CORRUPT at byte" in q.output(follower):
                break
            assert time.monotonic() < deadline, f"the follower did not catch up: {d}"
            time.sleep(0.1)
        assert segment.name in q.output(follower)
        with MetadataLog(log_dir, read_only=True) as repaired:  # whole again, from the leader
            assert not repaired.problems and repaired.torn_tail is None
        for b in brokers:
            b.stop()
    finally:
        q.stop_all()


def test_a_follower_more_than_four_mib_behind_catches_up(tmp_path: Path) -> None:
    """A follower ~9 MiB behind catches up in Fetch answers of up to fetch_max_bytes;
    no answer is refused for its size (over gRPC's 4 MiB default, a follower would
    refuse it and never catch up: a large copy lost its leader so)."""
    q = Quorum(tmp_path).start_all()
    try:
        leader = q.wait_leader()
        session = BrokerSession(q.client(), 1).start()
        session.wait_unfenced()
        lagging = next(n for n in q.ids if n != leader)
        q.children[lagging].signal(signal.SIGSTOP)
        client = q.client(timeout_s=60)
        for i in range(24):  # ~9 MiB of partition records while it sleeps
            answer = client.call(
                "CreateTopics",
                cpb.CreateTopicsRequest(
                    topics=[cpb.CreatableTopic(name=f"big-{i}", num_partitions=9000,
                                               replication_factor=1)]
                ),
            )  # fmt: skip
            assert answer.topics[0].error_code == 0
        q.children[lagging].signal(signal.SIGCONT)
        deadline = time.monotonic() + 60
        while True:
            voters = {v.replica_id: v.log_end_offset for v in q.describe().current_voters}
            if voters[lagging] == voters[leader]:
                break
            assert time.monotonic() < deadline, f"follower stuck: {voters}"
            time.sleep(0.2)
        session.stop()
    finally:
        q.stop_all()
