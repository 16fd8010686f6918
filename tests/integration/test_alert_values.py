"""The alert thresholds of the chart's values reach the rendered PrometheusRule, each in
its own rule: rendered with defaults, the rules are the plain rule file's (with runbook
links); rendered with every value of `alerts:` changed, exactly the rules those values
tune differ, each holding its new value, and promtool still accepts them. An absent()
rule is left out for a component the release does not deploy. The audit CronJob gets
`--pushgateway` exactly when `audit.pushgateway` is set."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.tools import CHART, RULES, run

CHANGED = {
    "alerts.controllerJob": "kraft-controllers",
    "alerts.brokerJob": "kafka-brokers",
    "alerts.for.ControllerDown": "7m",
    "alerts.for.BrokersFenced": "45m",
    "alerts.for.ZkWriteBehindLagGrowing": "20m",
    "alerts.migrationStuckSeconds": "5400",
    "alerts.writeBehindLagGrowingRecords": "25000",
    "alerts.leaderChurn.elections": "9",
    "alerts.leaderChurn.window": "1h",
    "alerts.auditMaxAgeSeconds": "90000",
}
# What each changed rule must hold, in its expression or its `for:`.
EXPECTED = {
    "ZkMigrationStuck": ["phase_seconds > 5400)", "[5400s]"],
    "ZkWriteBehindLagGrowing": ["zkwritebehindlag > 25000)", "for=20m"],
    "ControllerLeaderChurn": ["[1h])) > 9"],
    "ZkAuditNotRun": ["> 90000"],
    "ControllerDown": ['job=~"kraft-controllers"', "for=7m"],
    "AllControllersDown": ['job=~"kraft-controllers"'],
    "ControllersAbsent": ['job=~"kraft-controllers"'],
    "BrokerDown": ['job=~"kafka-brokers"'],
    "BrokersAbsent": ['job=~"kafka-brokers"'],
    "BrokersFenced": ["for=45m"],
}


def rendered_rules(phase: str, **values: str) -> dict[str, Any]:
    sets = [f"--set={k}={v}" for k, v in values.items()]
    done = run("helm", "template", "kafka", str(CHART), f"--set=migration.phase={phase}",
               "--set=metrics.prometheusRule.enabled=true", *sets,
               "--show-only", "templates/prometheusrule.yaml")  # fmt: skip
    assert done.returncode == 0, done.stderr
    spec: dict[str, Any] = yaml.safe_load(done.stdout)["spec"]
    return spec


def by_alert(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["alert"]: r for group in doc["groups"] for r in group["rules"]}


def shown(rule: dict[str, Any]) -> str:
    return rule["expr"] + f"for={rule.get('for')}"


def test_default_values_render_the_plain_rule_file() -> None:
    plain = by_alert(yaml.safe_load(RULES.read_text()))
    rendered = by_alert(rendered_rules("migration"))
    assert rendered.keys() == plain.keys()
    for name, rule in rendered.items():
        assert shown(rule) == shown(plain[name]), name


def test_every_alert_value_lands_in_its_own_rule(tmp_path: Path) -> None:
    defaults = by_alert(rendered_rules("migration"))
    changed_doc = rendered_rules("migration", **CHANGED)
    changed = by_alert(changed_doc)
    differing = {name for name in defaults if shown(defaults[name]) != shown(changed[name])}
    assert differing == set(EXPECTED)
    for name, wanted in EXPECTED.items():
        for text in wanted:
            assert text in shown(changed[name]), (name, text, shown(changed[name]))
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(changed_doc))
    done = run("promtool", "check", "rules", str(path))
    assert done.returncode == 0, done.stdout + done.stderr


def test_absent_rules_only_for_what_the_release_deploys() -> None:
    before_controllers = by_alert(rendered_rules("zookeeper"))
    assert "ControllersAbsent" not in before_controllers and "BrokersAbsent" in before_controllers
    without_brokers = by_alert(rendered_rules("migration", **{"brokers.enabled": "false"}))
    assert "BrokersAbsent" not in without_brokers and "ControllersAbsent" in without_brokers


def audit_args(**values: str) -> list[str]:
    sets = [f"--set={k}={v}" for k, v in values.items()]
    done = run("helm", "template", "kafka", str(CHART), "--set=migration.phase=migration",
               "--set=audit.enabled=true", *sets,
               "--show-only", "templates/audit-cronjob.yaml")  # fmt: skip
    assert done.returncode == 0, done.stderr
    job = yaml.safe_load(done.stdout)["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = job["containers"]
    args: list[str] = container["args"]
    return args


def test_the_audit_pushes_its_result_only_when_a_pushgateway_is_set() -> None:
    assert "--pushgateway" not in audit_args()
    args = audit_args(**{"audit.pushgateway": "http://pushgateway.monitoring:9091"})
    at = args.index("--pushgateway")
    assert args[at + 1] == "http://pushgateway.monitoring:9091"
    refused = run("helm", "template", "kafka", str(CHART), "--set=audit.enabled=true",
                  "--set=audit.pushgateway=http://user:secret@pushgateway:9091")  # fmt: skip
    assert refused.returncode != 0 and "audit/pushgateway" in refused.stderr
