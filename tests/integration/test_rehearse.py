"""``zk2kraft rehearse`` against a production-like ZooKeeper (a real embedded server, a tree
written byte for byte as Kafka 3.5 writes it): the real command in a child process
rehearses the whole migration of a cluster before step 3 (brokers registered without the
migration flag) restored from a backup (its /controller and registrations persistent),
leaves every production znode exactly as it was (data, version, mzxid) and writes both
reports, saying what step 3 will change; a tree with a preflight blocker stops at once,
exit 1, naming it, with nothing left running; SIGTERM during dual-write stops it, exit
130, the report saying how far it got, nothing left behind."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from migration.zk.client import ZkClient
from tests.kafka_written import Broker, jackson, kafka_35_tree, write
from tests.zk_files import dir_digest

BROKERS = tuple(Broker(i, rack=f"rack-{i}", migrating=True) for i in (1, 2, 3))
SECTIONS = ("source", "preflight", "enable_migration", "copy", "dual_write", "audit",
            "rollback_drill", "roll", "finalized", "estimate")  # fmt: skip
PHASES = ["read", "load", "preflight", "brokers", "controllers", "enable-migration", "copy",
          "dual-write", "audit", "rollback-drill", "second-migration", "roll-to-kraft",
          "finalize"]  # fmt: skip
KINDS = {"create_topic", "create_partitions", "topic_config", "broker_config", "client_quota",
         "scram_user", "create_acl", "delete_acl", "delete_topic"}  # fmt: skip


def snapshot(client: ZkClient, path: str = "/") -> dict[str, tuple[bytes, int, int]]:
    """Every znode under ``client``'s chroot: (data, version, mzxid)."""
    out = {}
    data, stat = client.kazoo.get(path)
    out[path] = (data, stat.version, stat.mzxid)
    for child in client.kazoo.get_children(path):
        out.update(snapshot(client, f"{path.rstrip('/')}/{child}"))
    return out


def rehearse(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "migration.cli.main", "rehearse", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def production(connect: str, brokers: Sequence[Broker] = BROKERS) -> ZkClient:
    client = ZkClient(connect)
    client.ensure_chroot()
    write(client, kafka_35_tree(brokers))  # the registrations: this session's ephemerals
    return client


def restored(connect: str, brokers: Sequence[Broker]) -> ZkClient:
    """Production as a backup restores it: every znode persistent, /controller and the
    brokers' registrations included."""
    client = ZkClient(connect)
    client.ensure_chroot()
    write(client, [replace(n, ephemeral=False) for n in kafka_35_tree(brokers)])
    return client


def rehearsal_processes() -> list[str]:
    """The command lines of running processes of a rehearsal's local cluster (its
    ZooKeeper, brokers and controllers run from its ``zk2kraft-rehearse-*`` directory)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            line = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "zk2kraft-rehearse-" in line:
            found.append(line)
    return found


@pytest.mark.timeout(900)
def test_a_rehearsal_runs_the_whole_migration_and_leaves_production_untouched(
    zk_server: Any, tmp_path: Path
) -> None:
    connect = f"{zk_server.connect_string}/prod-{uuid.uuid4().hex[:8]}"
    unflagged = tuple(Broker(i, rack=f"rack-{i}") for i in (1, 2, 3))  # before step 3
    with restored(connect, unflagged) as prod:
        before = snapshot(prod)
        done = rehearse(
            "--zk", connect, "--out", str(tmp_path / "out"), "--json", "--workload-seconds", "3",
            "--engine", "zk2kraft", timeout=880,
        )  # fmt: skip
        after = snapshot(prod)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert after == before
    report = json.loads(done.stdout)
    assert report == json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["version"] == 1 and report["ok"] is True and report["problems"] == []
    assert report["engine"]["name"] == "zk2kraft" and "--engine zk2kraft" in report["engine"]["why"]
    for section in SECTIONS:
        assert report[section], section
    assert [p["name"] for p in report["phases"]] == PHASES
    assert all(p["ok"] and p["finished"] for p in report["phases"])
    phases = {p["name"]: p for p in report["phases"]}
    assert phases["enable-migration"]["detail"].startswith("2 of 3 brokers")  # the last: copy
    starts = [p["started"] for p in report["phases"]]
    assert starts == sorted(starts)
    source = report["source"]
    assert source["kind"] == "zookeeper" and source["broker_ids"] == [1, 2, 3]
    assert source["name"] == connect and source["counts"]["partitions"] == 53
    assert report["preflight"]["blockers"] == []
    warnings = {(w["code"], w["path"]) for w in report["preflight"]["warnings"]}
    assert {("BROKER_MIGRATION_NOT_ENABLED", f"/brokers/ids/{b}") for b in (1, 2, 3)} <= warnings
    step3 = report["enable_migration"]
    assert step3["restart"] == [1, 2, 3] and step3["flagged"] == []
    assert [x["name"] for x in step3["settings"]] == [
        "zookeeper.metadata.migration.enable",
        "controller.quorum.voters",
        "controller.listener.names",
        "inter.broker.protocol.version",
    ]
    copy = report["copy"]
    assert copy["records"] > 53 and copy["records_by_type"]["PartitionRecord"] == 53
    assert copy["records_by_type"]["TopicRecord"] == 2
    dual = report["dual_write"]
    assert set(dual["by_kind"]) == KINDS and dual["errors"] == 0 and dual["lag"]
    assert dual["latency_ms"]
    restarts = report["restarts"]
    assert sorted({r["to"] for r in restarts}) == ["kraft", "migrating", "zookeeper"]
    assert len(restarts) == 12  # flag, rollback, flag again, KRaft: 4 rolls of 3 brokers
    assert report["audit"]["ok"] and report["audit"]["differences"] == 0
    drill = report["rollback_drill"]
    assert drill["ok"] and drill["from"] == "MigrationActive" and drill["findings"]
    assert report["roll"]["metadata_agreed"] and report["roll"]["offline_partitions"] == 0
    assert report["finalized"] == {**report["finalized"], "ok": True, "state": "KRaft"}
    commands = [c for step in report["runbook"] for c in step["commands"]]
    assert any(connect in c for c in commands) and any("1 2 3" in c for c in commands)
    assert not any("$ZK" in c for c in commands)
    page = (tmp_path / "out" / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") or page.lower().startswith("<!doctype html>")
    assert "<svg" in page and "What step 3 will change" in page
    assert not re.search(r"<script[^>]*\bsrc=|<link\b|url\(|https?://", page)
    assert rehearsal_processes() == []


@pytest.mark.timeout(120)
@pytest.mark.parametrize("source", ["zookeeper", "files"])
def test_a_preflight_blocker_stops_the_rehearsal_at_once_naming_it(
    zk_server: Any, tmp_path: Path, source: str
) -> None:
    """Live, and from ZooKeeper's files of a stopped cluster (its brokers' sessions
    closed: no registration left, a warning there, the assignments name the brokers)."""
    chroot = f"/blocked-{uuid.uuid4().hex[:8]}"
    connect = zk_server.connect_string + chroot
    data_dir = zk_server.servers[0].data_dir
    with production(connect) as prod:
        prod.kazoo.create(
            "/admin/reassign_partitions",
            jackson(
                {
                    "version": 1,
                    "partitions": [{"topic": "orders", "partition": 0, "replicas": [2, 3]}],
                }
            ),
            makepath=True,
        )
        if source == "zookeeper":
            before = snapshot(prod)
            done = rehearse("--zk", connect, "--out", str(tmp_path / "out"), timeout=110)
            assert snapshot(prod) == before
    if source == "files":  # the brokers' session closed: their registrations are gone
        files = dir_digest(data_dir)
        done = rehearse(
            "--zk-data-dir", str(data_dir), "--zk-chroot", chroot, "--out", str(tmp_path / "out"),
            timeout=110,
        )  # fmt: skip
        assert dir_digest(data_dir) == files
    assert done.returncode == 1, done.stdout + done.stderr
    assert "REASSIGNMENT_IN_PROGRESS" in done.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["ok"] is False
    assert [b["code"] for b in report["preflight"]["blockers"]] == ["REASSIGNMENT_IN_PROGRESS"]
    assert report["preflight"]["blockers"][0]["fix"]
    warnings = [w["code"] for w in report["preflight"]["warnings"]]
    assert ("NO_REGISTERED_BROKERS" in warnings) == (source == "files")
    assert report["source"]["kind"] == source and report["source"]["broker_ids"] == [1, 2, 3]
    assert [p["name"] for p in report["phases"]] == ["read", "load", "preflight"]
    assert [p["ok"] for p in report["phases"]] == [True, True, False]  # it found the blocker
    assert report["copy"] is None and report["finalized"] is None
    assert (tmp_path / "out" / "report.html").exists()
    assert rehearsal_processes() == []


@pytest.mark.timeout(300)
def test_sigterm_during_dual_write_stops_the_rehearsal_and_reports_how_far_it_got(
    zk_server: Any, tmp_path: Path
) -> None:
    """SIGTERM (as Ctrl-C) once dual-write started: exit 130, report.json written with the
    problem "interrupted", the phases reached (the one stopped not ok) and the sections
    after it null; no local process or directory left. One broker: the short way there."""
    connect = f"{zk_server.connect_string}/interrupted-{uuid.uuid4().hex[:8]}"
    temp, out = tmp_path / "tmp", tmp_path / "out"
    temp.mkdir()
    said: list[str] = []
    with production(connect, (Broker(1, rack="rack-1", migrating=True),)):
        child = subprocess.Popen(
            [sys.executable, "-m", "migration.cli.main", "rehearse", "--zk", connect,
             "--out", str(out), "--workload-seconds", "600", "--engine", "zk2kraft"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "TMPDIR": str(temp)},  # its zk2kraft-rehearse-* directory
        )  # fmt: skip
        try:
            assert child.stderr is not None
            for line in child.stderr:
                said.append(line)
                if line.strip() == "rehearse: == dual-write":
                    break
            child.send_signal(signal.SIGTERM)
            _, rest = child.communicate(timeout=240)
            said.append(rest)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
    assert child.returncode == 130, "".join(said)[-3000:]
    report = json.loads((out / "report.json").read_text())
    assert report["ok"] is False
    assert any(p.startswith("interrupted") for p in report["problems"]), report["problems"]
    reached = PHASES[: PHASES.index("dual-write") + 1]
    assert [p["name"] for p in report["phases"]] == reached
    assert [p["ok"] for p in report["phases"]] == [True] * (len(reached) - 1) + [False]
    assert all(p["finished"] for p in report["phases"])
    assert report["source"]["broker_ids"] == [1] and report["copy"]["records"] > 0
    assert [r["to"] for r in report["restarts"]] == ["migrating"]  # in the copy phase
    for section in ("dual_write", "audit", "rollback_drill", "roll", "finalized"):
        assert report[section] is None, section
    assert (out / "report.html").exists()
    assert rehearsal_processes() == []
    assert list(temp.glob("zk2kraft-rehearse-*")) == []
