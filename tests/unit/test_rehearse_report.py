"""report.json's contract (a phase that found a problem is not ok, each problem named),
report.html's self-containment, and the estimate's honesty."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest

from migration.operate.plan import roll_seconds
from migration.pages import rehearsal as report_html
from migration.pages import svg
from migration.rehearse.estimate import (
    DOES_NOT_CARRY_OVER,
    Measurements,
    estimate,
    measurements_from,
)
from migration.rehearse.measure import drill_section, finalized_section, roll_section
from migration.rehearse.procedure import RollFigures
from migration.rehearse.procedure_back import Drill
from migration.rehearse.report import (
    Audit,
    Copy,
    DrillFinding,
    DualWrite,
    EnableMigration,
    Finalized,
    Finding,
    Machine,
    Preflight,
    Recorder,
    Report,
    Restart,
    Roll,
    RollbackDrill,
    RunbookStep,
    Setting,
    Source,
    to_json,
    write_reports,
)

EVIL = "<script>alert(1)</script>"
T0 = datetime(2026, 11, 27, 6, 0, 0, tzinfo=UTC)

SECTIONS = (
    "source",
    "preflight",
    "enable_migration",
    "phases",
    "copy",
    "dual_write",
    "restarts",
    "audit",
    "rollback_drill",
    "roll",
    "finalized",
    "estimate",
    "runbook",
)


def _full_report() -> Report:
    recorder = Recorder()
    with recorder.phase("read") as p:
        p.detail = "read production's tree"
    with recorder.phase("copy") as p:
        p.detail = f"topic {EVIL} copied"
    lag = tuple((i * 0.5, i % 7) for i in range(20))
    latency_ms = tuple((i * 0.5, 2.0 + i) for i in range(20))
    report = Report(
        started=recorder.started,
        finished=recorder.now(),
        machine=Machine.this_one(),
        problems=[f"preflight: topic {EVIL} has a name KRaft refuses"],
        source=Source(
            kind="zookeeper",
            name="zk1:2181,zk2:2181",
            chroot="/kafka",
            znodes=1234,
            bytes=567_890,
            read_s=0.42,
            cluster_id="MkU3OEVBNTcwNTJENDM2Qk",
            broker_ids=(1, 2, 3),
            counts={"topics": 10, "partitions": 300},
        ),
        preflight=Preflight(
            ok=False,
            blockers=(Finding("TOPIC_NAME", f"topic {EVIL}", "rename it", "/brokers/topics/x"),),
            warnings=(Finding("ACL_WILDCARD", "a wildcard ACL", "none needed"),),
        ),
        enable_migration=EnableMigration(
            runbook="runbooks/migration.md#3-enable-the-migration-on-the-brokers",
            restart=(1, 3),
            flagged=(2,),
            settings=(Setting("zookeeper.metadata.migration.enable", "true"), Setting(EVIL, "x")),
        ),
        phases=recorder.phases,
        copy=Copy(
            records=4321,
            records_by_type={"TopicRecord": 10, "PartitionRecord": 300, EVIL: 1},
            copy_ms=812.5,
            write_pause_ms=790.25,
            pause_started_s=1.0,
        ),
        dual_write=DualWrite(
            changes=200,
            by_kind={"create-topic": 50, "alter-config": 150},
            errors=0,
            max_lag=6,
            lag=lag,
            latency_ms=latency_ms,
        ),
        restarts=[Restart(b, "migrating", 1.5) for b in (1, 2, 3)]
        + [Restart(b, "kraft", 1.25) for b in (1, 2, 3)],
        audit=Audit(ok=True, seconds=30.5, exit_code=0, differences=0, summary="agreed"),
        rollback_drill=RollbackDrill(
            ok=True,
            seconds=4.0,
            from_state="MigrationActive",
            findings=(DrillFinding("write-behind-lag", True, "caught up"),),
            detail="back to ZooKeeper",
        ),
        roll=Roll(seconds=5.0, brokers=(1, 2, 3), offline_partitions=0, metadata_agreed=True),
        finalized=Finalized(ok=True, seconds=6.0, state="KRaft"),
        runbook=[
            RunbookStep(
                "runbooks/migration.md#1-preflight",
                "Preflight",
                ('zk2kraft preflight --zk "zk1:2181,zk2:2181/kafka"', f"echo {EVIL}"),
            )
        ],
    )
    report.estimate = estimate(measurements_from(report, controller_restarts_s=(2.0, 2.5, 3.0)))
    return report


def _bare_report() -> Report:
    return Report(
        started=T0,
        finished=T0 + timedelta(seconds=3),
        machine=Machine(cpus=2, platform="Linux", python="3.11.9"),
        problems=["error: production's ZooKeeper did not answer"],
    )


class _Page(HTMLParser):
    """Every tag with its attributes, and the text, of a parsed page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(page: str) -> _Page:
    parser = _Page()
    parser.feed(page)
    parser.close()
    return parser


def _assert_self_contained(page: str) -> _Page:
    parsed = _parse(page)
    names = [t for t, _ in parsed.tags]
    assert "link" not in names
    assert "script" not in names  # none at all: nothing to load, nothing to run
    for tag, attrs in parsed.tags:
        for key in ("src", "href", "xlink:href", "action", "data"):
            assert key not in attrs, (tag, attrs)
    assert "url(" not in page
    assert not re.search(r"https?://", page)
    assert "@import" not in page
    return parsed


def test_full_report_round_trips_through_json() -> None:
    report = _full_report()
    doc = to_json(report)
    assert json.loads(json.dumps(doc, allow_nan=False)) == doc
    assert doc["version"] == 1 and doc["ok"] is False
    assert list(doc)[:6] == ["version", "ok", "problems", "started", "finished", "machine"]
    assert all(doc[s] is not None for s in SECTIONS)
    assert doc["started"].endswith("Z")
    assert doc["rollback_drill"]["from"] == "MigrationActive"
    assert doc["preflight"]["blockers"][0] == {
        "code": "TOPIC_NAME",
        "message": f"topic {EVIL}",
        "fix": "rename it",
        "path": "/brokers/topics/x",
    }
    assert doc["source"]["broker_ids"] == [1, 2, 3]
    assert doc["enable_migration"]["restart"] == [1, 3] and doc["enable_migration"]["flagged"] == [
        2
    ]
    assert doc["enable_migration"]["settings"][0] == {
        "name": "zookeeper.metadata.migration.enable",
        "value": "true",
    }
    assert doc["dual_write"]["lag"][3] == [1.5, 3]
    assert doc["restarts"][3] == {"broker": 1, "to": "kraft", "seconds": 1.25}
    assert [p["name"] for p in doc["phases"]] == ["read", "copy"]
    assert all(p["ok"] and p["finished"] for p in doc["phases"])
    assert doc["runbook"][0]["commands"][1] == f"echo {EVIL}"
    assert doc["estimate"]["records"] == 4321
    assert doc["estimate"]["rolls"]["broker_restarts"] == 6


def test_sections_not_reached_are_null() -> None:
    doc = to_json(_bare_report())
    assert json.loads(json.dumps(doc, allow_nan=False)) == doc
    assert doc["ok"] is False and doc["problems"]
    for name in SECTIONS:
        expected: object = [] if name in ("phases", "restarts", "runbook") else None
        assert doc[name] == expected, name
    assert "Not reached" in report_html.render(_bare_report())


def test_a_clean_report_says_so() -> None:
    report = _bare_report()
    report.problems.clear()
    assert to_json(report)["ok"] is True
    assert "went through cleanly" in report_html.render(report)


def test_write_reports_writes_both_files(tmp_path: Path) -> None:
    out = tmp_path / "out" / "rehearsal"
    json_path, html_path = write_reports(_full_report(), out)
    assert (json_path, html_path) == (out / "report.json", out / "report.html")
    assert json.loads(json_path.read_text())["copy"]["records"] == 4321
    assert html_path.read_text().startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.json"]


def test_html_is_self_contained_and_escaped() -> None:
    page = report_html.render(_full_report())
    parsed = _assert_self_contained(page)
    assert [t for t, _ in parsed.tags].count("svg") == 4  # timeline, lag, latency, records
    assert EVIL not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    text = "".join(parsed.text)
    assert EVIL in text  # shown as text, not run
    assert "write pause" in text
    assert "Does not carry over" in text
    assert 'zk2kraft preflight --zk "zk1:2181,zk2:2181/kafka"' in text
    assert "TOPIC_NAME" in text and "rename it" in text
    assert "What step 3 will change" in text and "zookeeper.metadata.migration.enable" in text


def test_bare_html_is_self_contained() -> None:
    parsed = _assert_self_contained(report_html.render(_bare_report()))
    assert "svg" not in [t for t, _ in parsed.tags]  # nothing to chart


def test_a_phase_that_raises_is_recorded_failed() -> None:
    recorder = Recorder()
    with pytest.raises(KeyboardInterrupt), recorder.phase("audit"):
        raise KeyboardInterrupt
    with pytest.raises(RuntimeError), recorder.phase("roll") as p:
        p.detail = "rolled 2 of 3"
        raise RuntimeError("broker 3 did not register")
    with pytest.raises(RuntimeError), recorder.phase("finalize"):
        raise RuntimeError("controller 2 did not restart")
    audit, roll, finalize = recorder.phases
    assert not audit.ok and audit.detail == "KeyboardInterrupt"
    assert not roll.ok and roll.detail == "rolled 2 of 3"
    assert finalize.detail == "RuntimeError: controller 2 did not restart"
    assert all(p.finished is not None and p.finished >= p.started for p in recorder.phases)


def test_a_phase_that_finds_a_problem_is_recorded_failed() -> None:
    """report.json's phases: ``ok`` false when the step failed -- raised, or found a
    problem (:meth:`Recorder.fail`), the block itself going through."""
    recorder = Recorder()
    assert recorder.fail() is None  # outside of a phase: nothing to mark
    with recorder.phase("audit") as p:
        p.detail = "3 difference(s)"
        assert recorder.fail() is p
    with recorder.phase("rollback-drill"):
        pass
    audit, drill = recorder.phases
    assert not audit.ok and audit.detail == "3 difference(s)" and audit.finished is not None
    assert drill.ok  # the mark ends with its phase


def test_a_section_that_shows_a_problem_names_it() -> None:
    refused = Drill(findings=[DrillFinding("ZK_CONTROLLER_ELECTED", False, "no broker took it")])
    drill = drill_section(refused)
    assert not drill.section.ok and drill.section.findings == tuple(refused.findings)
    assert drill.problems == ("rollback drill: refused or failed: ZK_CONTROLLER_ELECTED",)
    rolled = RollFigures(restarts=[Restart(2, "kraft", 1.0), Restart(1, "kraft", 1.0)])
    assert roll_section(rolled).section.brokers == (2, 1) and not roll_section(rolled).problems
    rolled.agreed, rolled.offline = False, {"orders-0"}
    assert [p.split(":")[0] for p in roll_section(rolled).problems] == ["roll", "roll"]
    assert finalized_section("KRaft", 3.0).problems == ()
    assert finalized_section("MigrationFinished", 3.0).problems


def test_estimate_names_what_does_not_carry_over() -> None:
    m = Measurements(
        cpus=2,
        source_kind="files",
        znodes=100,
        read_s=0.1,
        brokers=6,
        controllers=3,
        records=1000,
        records_by_type={"TopicRecord": 10},
        copy_ms=500.0,
        write_pause_ms=450.0,
        broker_restarts_s=(1.0, 2.0, 3.0),
        controller_restarts_s=(4.0,),
    )
    e = estimate(m)
    assert json.loads(json.dumps(e, allow_nan=False)) == e
    assert e["records"] == 1000 and e["copy"]["records_per_s"] == 2000
    assert (
        e["rolls"]["formula"]
        == "2 rolling restarts x 6 brokers x T_broker + 3 controllers x T_controller"
    )
    assert e["rolls"]["local_seconds"] == roll_seconds(6, 2.0, 3, 4.0) == 36.0
    assert e["does_not_carry_over"] == list(DOES_NOT_CARRY_OVER)
    missing = " ".join(e["does_not_carry_over"])
    for named in ("CPU", "disk", "fsync", "log recovery", "metadata-only", "network latency"):
        assert named in missing, named
    assert "metadata only" in e["summary"] and "2 CPUs" in e["summary"]
    nothing = estimate(Measurements(2, "zookeeper", 0, 0.0, 0, 3, 0))
    assert nothing["copy"]["records_per_s"] is None and nothing["rolls"]["local_seconds"] is None


def test_a_long_series_is_thinned_keeping_its_peaks() -> None:
    points = [(i / 10, 1.0) for i in range(100_000)]
    points[54_321] = (5432.1, 99.0)
    thinned = svg.thin(points)
    assert len(thinned) <= svg.MAX_POINTS
    assert (5432.1, 99.0) in thinned
    assert thinned == sorted(thinned)
