"""controller.properties parsing and validation; voters strings; the epoch cache. The
``zk2kraft controller`` command on a bad file, in a child process:
tests/integration/test_controller_config.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from migration.controller.config import ControllerConfigError, load_config, parse_config
from migration.log.epochs import EpochStarts
from migration.raft.config import Address, parse_voters

GOOD = {
    "node.id": "2",
    "process.roles": "controller",
    "controller.quorum.voters": "1@a:9093,2@b:9093,3@[::1]:9095",
    "listeners": "CONTROLLER://0.0.0.0:9093",
    "metadata.log.dir": "/var/lib/kraft",
    "cluster.id": "MkU3OEVBNTcwNTJENDM2Qg",
}


def test_a_good_config_with_kafka_defaults() -> None:
    config = parse_config(GOOD, "c.properties")
    assert config.node_id == 2
    assert config.voters[3] == Address("::1", 9095)
    assert (
        config.election_timeout_ms,
        config.fetch_timeout_ms,
        config.election_backoff_max_ms,
    ) == (
        1000,
        2000,
        1000,
    )
    assert config.listener == Address("0.0.0.0", 9093)
    assert (config.performance_sample_period_ms, config.performance_always_log_threshold_ms) == (
        60000,
        2000,
    )
    tuned = parse_config(
        {
            **GOOD,
            "controller.performance.sample.period.ms": "10000",
            "controller.performance.always.log.threshold.ms": "200",
        },
        "c.properties",
    )
    assert (tuned.performance_sample_period_ms, tuned.performance_always_log_threshold_ms) == (
        10000,
        200,
    )


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"node.id": "7"}, "not among controller.quorum.voters"),
        ({"process.roles": "broker,controller"}, "process.roles"),
        ({"controller.quorum.voters": "1@a"}, "is not id@host:port"),
        ({"controller.quorum.voters": "1@a:1,1@b:2"}, "listed twice"),
        ({"listeners": "PLAINTEXT://:9092"}, "exactly one listener"),
        ({"listeners": "CONTROLLER://:9999"}, "differs from this node's voter entry"),
        ({"metadata.log.dir": ""}, "metadata.log.dir"),
        ({"controller.quorum.election.timeout.ms": "soon"}, "is not an integer"),
        ({"controller.quorum.fetch.timeout.ms": "100"}, "should exceed half"),
        ({"node.id": "2147483648"}, "node.id=2147483648 is outside [0, 2147483647]"),
        ({"zookeeper.metadata.migration.enable": "true"}, "needs zookeeper.connect"),
        ({"zookeeper.metadata.migration.enable": "true"}, "needs inter.broker.listener.name"),
        ({"zookeeper.connect": "zk:notaport"}, "zookeeper.connect"),
        ({"zookeeper.metadata.migration.max.write.behind.records": "0"}, "max.write.behind"),
        ({"zookeeper.metadata.migration.enable": "yes"}, "is not true or false"),
        ({"num.partitions": "0"}, "num.partitions=0 is outside [1, 2147483647]"),
        ({"controller.quorum.election.timeout.ms": str(10**20)}, "outside [10, 2147483647]"),
        ({"controller.quorum.voters": "2147483648@a:9093"}, "node id '2147483648' is above"),
        ({"controller.quorum.voters": "2@b a d:9093"}, "is not a host name or IP address"),
        ({"controller.quorum.voters": "2@b:0"}, "out of range (1-65535)"),
        ({"listeners": "CONTROLLER://bad host!:9093"}, "is not a host name or IP address"),
        ({"listeners": "CONTROLLER://:99999"}, "no valid port (1-65535)"),
    ],
)
def test_each_problem_is_named(change: dict[str, str], needle: str) -> None:
    with pytest.raises(ControllerConfigError) as info:
        parse_config({**GOOD, **change}, "c.properties")
    assert any(needle in p for p in info.value.problems), info.value.problems


def test_all_problems_at_once_and_the_file_named(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_text("# comment\n! also\nnode.id: x\nprocess.roles = broker\n")
    with pytest.raises(ControllerConfigError) as info:
        load_config(path)
    assert info.value.source == str(path)
    assert len(info.value.problems) >= 4
    with pytest.raises(ControllerConfigError, match="cannot read"):
        load_config(tmp_path / "missing.properties")


def test_a_huge_value_is_named_not_echoed() -> None:
    with pytest.raises(ControllerConfigError) as info:
        parse_config({**GOOD, "controller.quorum.fetch.timeout.ms": "x" * 1_000_000}, "c")
    (problem,) = [p for p in info.value.problems if "is not an integer" in p]
    assert len(problem) < 200 and "1,000,000 characters" in problem


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"\xef\xbb\xbfnode.id=1\n", "byte-order mark"),
        (b"node.id=1\nlisteners=CONTROLLER://h\\u12:9093\n", "line 2: malformed \\uXXXX"),
    ],
)
def test_the_file_itself_is_named_when_it_is_not_text(
    tmp_path: Path, content: bytes, needle: str
) -> None:
    path = tmp_path / "c.properties"
    path.write_bytes(content)
    with pytest.raises(ControllerConfigError) as info:
        load_config(path)
    assert info.value.source == str(path) and needle in info.value.problems[0]


def test_voters_parse() -> None:
    assert parse_voters("1@localhost:9093") == {1: Address("localhost", 9093)}
    with pytest.raises(ValueError, match="out of range"):
        parse_voters("1@h:70000")


def test_epoch_starts_answer_the_divergence_question() -> None:
    starts = EpochStarts.before(None, 0)
    for epoch, base in ((1, 0), (1, 5), (3, 10), (4, 20)):
        starts.note(epoch, base)
    assert starts.end_offset_for(1, 30) == (1, 10)
    assert starts.end_offset_for(2, 30) == (1, 10)
    assert starts.end_offset_for(4, 30) == (4, 30)
    assert starts.end_offset_for(9, 30) == (4, 30)
    starts.truncate(10)
    assert starts.end_offset_for(4, 10) == (1, 10)
    after_snapshot = EpochStarts.before(5, 100)
    assert after_snapshot.end_offset_for(4, 100) is None  # older than the snapshot: fetch it
    assert after_snapshot.end_offset_for(5, 100) == (5, 100)
    after_snapshot.truncate(100)
    assert after_snapshot.end_offset_for(5, 100) == (5, 100)


def test_the_password_encoder_secret_is_read_but_never_shown() -> None:
    config = parse_config({**GOOD, "password.encoder.secret": "hunter2-encoder"}, "c")
    assert config.password_encoder_secret == "hunter2-encoder"
    assert "hunter2-encoder" not in repr(config)
