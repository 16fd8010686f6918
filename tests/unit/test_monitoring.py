"""The alert rules and the dashboard, read: every metric a rule or a dashboard query reads
is one zk2kraft exports, every runbook_url is a page, and the metric table of
docs/metrics.md is the catalog's. promtool's checks (the rules load, every alert fires
on the series it should and not on others, the dashboard's queries parse):
tests/integration/test_monitoring.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from migration.observability import catalog
from tests.tools import DASHBOARD, ROOT, RULES

METRIC = re.compile(r"\b((?:kafka|zk2kraft)_[a-z0-9_]+)\b")
TARGET_HEALTH = re.compile(r"\bup\{job=~\"(?:controller|broker)\"\}")  # a target's `up`


def alert_rules() -> list[dict[str, Any]]:
    doc = yaml.safe_load(RULES.read_text())
    return [rule for group in doc["groups"] for rule in group["rules"]]


def dashboard_queries() -> list[tuple[str, str]]:
    """(panel title, query) with the `cluster` variable at its "All" value."""
    board = json.loads(DASHBOARD.read_text())
    return [
        (panel["title"], target["expr"].replace("$cluster", ".*"))
        for panel in board["panels"]
        for target in panel.get("targets", [])
    ]


def test_rules_read_only_exported_metrics_and_point_to_runbooks() -> None:
    exported = catalog.names()
    for rule in alert_rules():
        used = set(METRIC.findall(rule["expr"]))
        assert used <= exported, (rule["alert"], used - exported)
        assert used or TARGET_HEALTH.search(rule["expr"]), rule["alert"]  # or Prometheus' own
        page = ROOT / rule["annotations"]["runbook_url"]
        assert page.is_file(), (rule["alert"], page)
        assert rule["alert"] in (ROOT / "runbooks/alerts/README.md").read_text()
    pages = {p.name for p in (ROOT / "runbooks/alerts").glob("*.md")} - {"README.md"}
    linked = {Path(r["annotations"]["runbook_url"]).name for r in alert_rules()}
    assert pages == linked  # no page without an alert, no alert without a page


def test_dashboard_shows_what_the_migration_needs() -> None:
    board = json.loads(DASHBOARD.read_text())
    assert board["uid"] and board["title"]
    exprs = " ".join(expr for _, expr in dashboard_queries())
    for spec in (
        catalog.MIGRATION_STATE,
        catalog.ZK_MIGRATION_STATE,
        catalog.DRIVER_PHASE,
        catalog.ZK_WRITE_BEHIND_LAG,
        catalog.METADATA_TYPE,
        catalog.ACTIVE_CONTROLLER_COUNT,
        catalog.RAFT_HIGH_WATERMARK,
        catalog.RAFT_CURRENT_STATE,
    ):
        assert spec.name in exprs, spec.name
    timelines = [p for p in board["panels"] if p["type"] == "state-timeline"]
    assert any("migrationstate" in t["targets"][0]["expr"] for t in timelines)
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    # one cluster at a time: every metric a query reads is restricted to the chosen one
    for panel in board["panels"]:
        for target in panel.get("targets", []):
            for metric in METRIC.finditer(target["expr"]):
                assert target["expr"][metric.end() :].startswith('{cluster=~"$cluster"'), (
                    panel["title"],
                    metric.group(1),
                )


def test_the_metrics_page_documents_every_metric() -> None:
    assert catalog.markdown_table() in (ROOT / "docs/metrics.md").read_text()


@pytest.mark.parametrize("spec", catalog.ALL, ids=lambda s: s.name)
def test_metric_names_follow_the_jmx_exporter_rules(spec: catalog.Spec) -> None:
    assert re.fullmatch(r"[a-z][a-z0-9_]*", spec.name)
    if spec.mbean.startswith("kafka.controller:type=KafkaController,name="):
        assert (
            spec.name == "kafka_controller_kafkacontroller_" + spec.mbean.rsplit("=", 1)[1].lower()
        )
    if spec.mbean.startswith("kafka.controller:type=ControllerEventManager,name="):
        assert (
            spec.name
            == "kafka_controller_controllereventmanager_" + spec.mbean.rsplit("=", 1)[1].lower()
        )
    if spec.mbean.startswith("kafka.server:type=raft-metrics,name="):
        raft_name = spec.mbean.rsplit("=", 1)[1]
        assert spec.name == "kafka_server_raftmetrics_" + raft_name.replace("-", "_")
    if not spec.mbean:
        assert spec.name.startswith("zk2kraft_")
