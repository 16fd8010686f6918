"""``zk2kraft rehearse --engine kafka``: the rehearsal on Apache Kafka 3.9.2's own brokers
and controllers, driven as ``zk2kraft kafka migrate`` drives production. On a
production-like tree (written byte for byte as Kafka 3.5 writes it, three brokers with
racks, registered without the migration flag) it runs every phase to KRaft, reports the
engine, Kafka's own copy figures (from its controller's log) and every broker's restart,
and leaves production untouched and nothing running."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_rehearse import (
    PHASES,
    SECTIONS,
    rehearsal_processes,
    rehearse,
    restored,
    snapshot,
)
from tests.kafka_written import Broker

pytestmark = pytest.mark.long


@pytest.mark.timeout(1500)
def test_a_rehearsal_on_kafkas_own_processes_runs_to_kraft(zk_server: Any, tmp_path: Path) -> None:
    connect = f"{zk_server.connect_string}/prod-{uuid.uuid4().hex[:8]}"
    unflagged = tuple(Broker(i, rack=f"rack-{i}") for i in (1, 2, 3))  # before step 3
    out = tmp_path / "out"
    with restored(connect, unflagged) as prod:
        before = snapshot(prod)
        done = rehearse(
            "--zk", connect, "--out", str(out), "--json", "--workload-seconds", "3",
            "--engine", "kafka", timeout=1450,
        )  # fmt: skip
        after = snapshot(prod)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    assert after == before
    report = json.loads(done.stdout)
    assert report["ok"] is True and report["problems"] == []
    assert report["engine"]["name"] == "kafka" and report["engine"]["version"] == "3.9.2"
    for section in SECTIONS:
        assert report[section], section
    assert [p["name"] for p in report["phases"]] == PHASES
    assert all(p["ok"] and p["finished"] for p in report["phases"])
    copy = report["copy"]  # Kafka's own figures, from its controller's server.log
    assert copy["records"] > 53 and copy["copy_ms"] > 0 and copy["write_pause_ms"] > 0
    assert copy["records_by_type"]["PartitionRecord"] == 53
    assert copy["records_by_type"]["TopicRecord"] == 2
    dual = report["dual_write"]
    assert dual["changes"] > 0 and dual["errors"] == 0 and dual["lag"]
    restarts = report["restarts"]
    assert [(r["broker"], r["to"]) for r in restarts] == [
        *((b, "migrating") for b in (1, 2, 3)),
        *((b, "zookeeper") for b in (1, 2, 3)),  # the rollback drill from dual-write
        *((b, "migrating") for b in (1, 2, 3)),
        *((b, "kraft") for b in (1, 2, 3)),
    ]
    assert all(r["seconds"] > 0 for r in restarts)
    assert report["audit"]["ok"] and report["audit"]["differences"] == 0
    drill = report["rollback_drill"]
    assert drill["ok"] and drill["from"] == "MigrationActive"
    assert [f["code"] for f in drill["findings"]][-1] == "rollback-verify"
    roll = report["roll"]
    assert roll["brokers"] == [1, 2, 3] and roll["metadata_agreed"]
    assert report["finalized"] == {**report["finalized"], "ok": True, "state": "KRaft"}
    assert report["estimate"]
    assert "Apache Kafka 3.9.2" in (out / "report.html").read_text()
    assert rehearsal_processes() == []
