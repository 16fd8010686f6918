"""``migration status --kafka`` against addresses that refuse connections: each part
that cannot be read names itself. The pure parts: tests/unit/test_kafka_status.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from migration.cli.kafka_status import answered
from migration.kafka.quorum_client import describe_kafka_quorum
from migration.operate.kafka_state import metadata_log_part, quorum_part


def test_unreachable_parts_name_themselves(tmp_path: Path) -> None:
    missing = metadata_log_part(tmp_path / "nowhere")
    assert missing["error"] and str(tmp_path / "nowhere") in missing["error"]
    assert "no --log-dir" in metadata_log_part(None)["error"]
    assert "no --bootstrap-controller" in quorum_part(None)["error"]
    with pytest.raises(ConnectionError, match=r"127\.0\.0\.1:1"):
        describe_kafka_quorum(["127.0.0.1:1"], timeout_s=1)
    down = {"error": "x"}
    assert not answered({"metadata_log": down, "zookeeper": down, "quorum": down})
    assert answered({"metadata_log": down, "zookeeper": {"error": None}, "quorum": down})
    json.dumps(quorum_part("127.0.0.1:1"))  # the report stays JSON
