"""``migration status --kafka``'s pure parts: the znodes as Kafka writes them turned
into the report, and Kafka's DescribeQuorum answers (kio's own classes, v1 and v2) turned
into the project's message. A part that cannot be reached naming itself:
tests/integration/test_kafka_status.py."""

from __future__ import annotations

import uuid

import pytest
from kio.schema.describe_quorum.v1 import response as v1
from kio.schema.describe_quorum.v2 import response as v2
from kio.schema.errors import ErrorCode as KioError

from migration.cli.kafka_status import print_kafka_status
from migration.cli.main import main
from migration.common.kafka_errors import ErrorCode, KafkaError
from migration.kafka.quorum_client import as_quorum_response
from migration.operate.kafka_state import broker_json, controller_json, migration_json, state_fields
from migration.records.uuids import uuid_text
from migration.zk.model.brokers import parse_broker
from migration.zk.model.cluster import parse_controller, parse_migration

KAFKA_MIGRATION = b'{"version":0,"kraft_metadata_offset":2047,"kraft_controller_id":3000,"kraft_metadata_epoch":5,"kraft_controller_epoch":5}'  # noqa: E501
KRAFT_CONTROLLER = (
    b'{"version":2,"brokerid":3000,"timestamp":"1732800000000","kraftControllerEpoch":5}'
)
ZK_CONTROLLER = b'{"version":2,"brokerid":1,"timestamp":"1732800000000"}'


def _registration(features: str) -> bytes:
    return (
        '{"features":' + features + ',"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        '"endpoints":["PLAINTEXT://127.0.0.1:9092"],"jmx_port":-1,"port":9092,'
        '"host":"127.0.0.1","version":5,"timestamp":"1732800000000"}'
    ).encode()


def test_state_names_are_kafkas() -> None:
    assert state_fields(1) == {"zk_migration_state": "MIGRATION", "zk_migration_state_code": 1}
    assert state_fields(3)["zk_migration_state"] == "POST_MIGRATION"
    assert state_fields(4)["zk_migration_state"] == "ZK"
    assert state_fields(None) == {"zk_migration_state": None, "zk_migration_state_code": None}


def test_znodes_as_kafka_writes_them() -> None:
    assert migration_json(parse_migration("/migration", KAFKA_MIGRATION), 7) == {
        "kraft_controller_id": 3000, "kraft_controller_epoch": 5,
        "kraft_metadata_offset": 2047, "kraft_metadata_epoch": 5,
        "copy_done": True, "zk_version": 7,
    }  # fmt: skip
    kraft = controller_json(parse_controller("/controller", KRAFT_CONTROLLER))
    assert kraft["is_kraft"] and kraft["broker_id"] == 3000 and kraft["kraft_controller_epoch"] == 5
    zk = controller_json(parse_controller("/controller", ZK_CONTROLLER))
    assert not zk["is_kraft"] and zk["kraft_controller_epoch"] is None


def test_the_migration_flag_is_the_metadata_version_feature() -> None:
    flagged = parse_broker(
        "/brokers/ids/1",
        _registration('{"metadata.version":{"min_version":1,"max_version":21}}'),
        1,
    )
    plain = parse_broker("/brokers/ids/2", _registration("{}"), 2)
    assert broker_json(flagged) == {
        "broker_id": 1, "migration_flag": True, "registration_version": 5,
        "endpoints": ["PLAINTEXT://127.0.0.1:9092"], "kraft_registration": None,
    }  # fmt: skip
    assert broker_json(plain)["migration_flag"] is False


def _replica(mod: object, replica_id: int, end: int, **kw: object) -> object:
    return mod.ReplicaState(replica_id=replica_id, log_end_offset=end, **kw)  # type: ignore[attr-defined]


def _answer(mod: object, partition_error: KioError, replicas: list[object]) -> object:
    extra = {"error_message": None} if mod is v2 else {}  # v2 on
    partition = mod.PartitionData(  # type: ignore[attr-defined]
        partition_index=0, error_code=partition_error, leader_id=3001, leader_epoch=9,
        high_watermark=120, current_voters=tuple(replicas), observers=(), **extra,
    )  # fmt: skip
    topic = mod.TopicData(topic_name="__cluster_metadata", partitions=(partition,))  # type: ignore[attr-defined]
    top = {"error_message": None, "nodes": ()} if mod is v2 else {}
    return mod.DescribeQuorumResponse(error_code=KioError.none, topics=(topic,), **top)  # type: ignore[attr-defined]


def test_describe_quorum_answers_of_both_versions() -> None:
    directory = uuid.uuid4()
    answer = as_quorum_response(
        _answer(v2, KioError.none, [
            _replica(v2, 3001, 120, replica_directory_id=directory),
            _replica(v2, 3002, 100, replica_directory_id=uuid.UUID(int=0),
                     last_fetch_timestamp=5, last_caught_up_timestamp=4),
        ])
    )  # fmt: skip
    assert (answer.leader_id, answer.leader_epoch, answer.high_watermark) == (3001, 9, 120)
    assert [v.replica_directory_id for v in answer.current_voters] == [
        uuid_text(directory.bytes), "",
    ]  # fmt: skip
    assert answer.current_voters[1].last_fetch_timestamp == 5
    older = as_quorum_response(_answer(v1, KioError.none, [_replica(v1, 3001, 120)]))
    assert older.current_voters[0].replica_directory_id == ""
    assert older.current_voters[0].last_fetch_timestamp == -1


def test_a_controller_not_leading_is_refused() -> None:
    with pytest.raises(KafkaError) as refused:
        as_quorum_response(_answer(v2, KioError.not_leader_or_follower, []))
    assert refused.value.code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_kafka_status_options_are_checked(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migration", "status", "--kafka"]) == 2
    assert "--kafka needs --zk" in capsys.readouterr().err
    assert main(["migration", "status", "--kafka", "--zk", "h:1", "--wait-for", "KRaft"]) == 2
    assert main(["migration", "status", "--bootstrap-controller", "h:1", "--log-dir", "d"]) == 2
    assert "--log-dir goes with --kafka" in capsys.readouterr().err
    assert main(["migration", "status"]) == 2
    assert "--bootstrap-controller is required" in capsys.readouterr().err


def test_the_text_form_names_each_part(capsys: pytest.CaptureFixture[str]) -> None:
    flagged = broker_json(parse_broker("/brokers/ids/1", _registration("{}"), 1))
    flagged["kraft_registration"] = {"broker_id": 1, "is_migrating_zk_broker": True}
    print_kafka_status({
        **state_fields(1),
        "zk_write_behind_lag": 0,
        "metadata_log": {"log_dir": "/m", "error": None, "offset": 81, "epoch": 3,
                         "log_end_offset": 82, "metadata_version": 21},
        "zookeeper": {
            "error": None, "controller_epoch": 4, "problems": [], "brokers": [flagged],
            "migration_znode": migration_json(parse_migration("/migration", KAFKA_MIGRATION), 7),
            "controller_znode": controller_json(parse_controller("/controller", KRAFT_CONTROLLER)),
        },
        "quorum": {"error": "no controller answered DescribeQuorum as the leader: c1:9093: x"},
    })  # fmt: skip
    out = capsys.readouterr().out
    assert "ZkMigrationState:    MIGRATION (1)" in out
    assert "offset 2047 (epoch 5), controller 3000 with kraftControllerEpoch 5" in out
    assert "KRaft controller 3000 (kraftControllerEpoch 5)" in out
    assert "/brokers/ids:        1 (migrating (KRaft registration))" in out
    assert "Quorum:              no controller answered" in out
