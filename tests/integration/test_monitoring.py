"""The alert rules and the dashboard, checked by promtool: the rules load, every alert
fires on the series it should and not on others (tests/prometheus/alerts_test.yaml), and
every dashboard query is valid PromQL over exported metrics. The rest:
tests/unit/test_monitoring.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from migration.observability import catalog
from tests.tools import ROOT, RULES, run
from tests.unit.test_monitoring import METRIC, alert_rules, dashboard_queries


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return run("promtool", *args)


def test_promtool_checks_the_rules() -> None:
    done = promtool("check", "rules", str(RULES))
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_alert_is_unit_tested_firing_and_not() -> None:
    tests = (ROOT / "tests/prometheus/alerts_test.yaml").read_text()
    for rule in alert_rules():
        assert f"alertname: {rule['alert']}" in tests, rule["alert"]
    done = promtool("test", "rules", str(ROOT / "tests/prometheus/alerts_test.yaml"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_dashboard_queries_are_valid_promql_over_exported_metrics(tmp_path: Path) -> None:
    queries = dashboard_queries()
    assert len(queries) >= 20
    exported = catalog.names()
    for title, expr in queries:
        used = set(METRIC.findall(expr))
        assert used and used <= exported, (title, used - exported)
    # promtool parses each query as a recording rule's expression
    rules = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [
                    {"record": f"dashboard:q{i}", "expr": e} for i, (_, e) in enumerate(queries)
                ],
            }
        ]
    }
    path = tmp_path / "dashboard-queries.yaml"
    path.write_text(yaml.safe_dump(rules))
    done = promtool("check", "rules", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
