"""The Helm chart, checked by real tools: `helm lint --strict`; `helm template` for each
migration phase, every object validated against Kubernetes' schemas offline (strict: an
unknown field is an error), the PrometheusRule's rules by promtool; and the phases
compared, so a values change rolls exactly the pods whose configuration changed."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from migration.cli.main import build_parser
from tests.tools import CHART, DASHBOARD, RULES, run

PHASES = ["zookeeper", "controllers", "migration", "kraft-brokers", "kraft"]
K8S_VERSION = "1.31.0"
MONITORING = {
    "metrics.serviceMonitor.enabled": "true",
    "metrics.prometheusRule.enabled": "true",
    "metrics.dashboard.enabled": "true",
    "audit.enabled": "true",
}
CRDS = {"ServiceMonitor", "PrometheusRule"}  # not Kubernetes' own: checked below


def helm(*args: str) -> subprocess.CompletedProcess[str]:
    return run("helm", *args)


def render(phase: str, **values: str) -> list[dict[str, Any]]:
    sets = [f"--set={k}={v}" for k, v in {"migration.phase": phase, **values}.items()]
    done = helm("template", "kafka", str(CHART), "--namespace", "streaming", *sets)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def by_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def validate_kubernetes(docs: list[dict[str, Any]]) -> None:
    """Fail the test on the first rendered object Kubernetes' schema refuses (strict:
    unknown fields too); the Prometheus operator's objects are checked elsewhere."""
    for doc in docs:
        if doc["kind"] in CRDS:
            continue
        try:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{doc['kind']}/{doc['metadata']['name']}: {exc.message}")


def checksums(docs: list[dict[str, Any]]) -> dict[str, str]:
    return {
        name: sts["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
        for name, sts in by_kind(docs, "StatefulSet").items()
    }


def test_helm_lint_strict() -> None:
    for phase in PHASES:
        done = helm("lint", "--strict", str(CHART), f"--set=migration.phase={phase}")
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("phase", PHASES)
def test_each_phase_renders_valid_kubernetes_objects(phase: str) -> None:
    docs = render(phase, **MONITORING)
    validate_kubernetes(docs)
    kinds = {d["kind"] for d in docs}
    assert {"StatefulSet", "ConfigMap", "Service", "PodDisruptionBudget"} <= kinds
    controllers = "kafka-zk2kraft-controller" in by_kind(docs, "StatefulSet")
    assert controllers == (phase != "zookeeper")


def test_the_prometheus_rule_is_the_rule_file_with_runbook_links(tmp_path: Path) -> None:
    docs = render("migration", **MONITORING)
    (rule,) = by_kind(docs, "PrometheusRule").values()
    plain = yaml.safe_load(RULES.read_text())
    rendered = rule["spec"]
    for group, source in zip(rendered["groups"], plain["groups"], strict=True):
        for r, s in zip(group["rules"], source["rules"], strict=True):
            assert r["expr"] == s["expr"] and r.get("for") == s.get("for")
            url = r["annotations"]["runbook_url"]
            assert (
                url
                == "https://github.com/zk2kraft/zk2kraft/blob/main/"
                + s["annotations"]["runbook_url"]
            )
    path = tmp_path / "rendered-rules.yaml"
    path.write_text(yaml.safe_dump(rendered))
    done = run("promtool", "check", "rules", str(path))
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_service_monitor_scrapes_every_pod_and_the_dashboard_is_shipped() -> None:
    docs = render("migration", **MONITORING)
    (monitor,) = by_kind(docs, "ServiceMonitor").values()
    wanted = monitor["spec"]["selector"]["matchLabels"]
    scraped = [
        s for s in by_kind(docs, "Service").values()
        if wanted.items() <= s["metadata"]["labels"].items()
    ]  # fmt: skip
    assert sorted(s["metadata"]["name"] for s in scraped) == [
        "kafka-zk2kraft-broker-headless",
        "kafka-zk2kraft-controller-headless",
    ]
    for service in scraped:
        assert "metrics" in {p["name"] for p in service["spec"]["ports"]}
    (endpoint,) = monitor["spec"]["endpoints"]
    assert {"targetLabel": "cluster", "replacement": "kafka"} in endpoint["relabelings"]
    for sts in by_kind(docs, "StatefulSet").values():
        (container,) = sts["spec"]["template"]["spec"]["containers"]
        assert "metrics" in {p["name"] for p in container["ports"]}
    board = by_kind(docs, "ConfigMap")["kafka-zk2kraft-dashboard"]
    assert json.loads(board["data"]["zk2kraft-migration.json"]) == json.loads(DASHBOARD.read_text())


def test_voters_follow_the_controller_replicas() -> None:
    docs = render("migration", **{"controllers.replicas": "5"})
    config = by_kind(docs, "ConfigMap")["kafka-zk2kraft-controller"]["data"]
    voters = next(
        line.split("=", 1)[1]
        for line in config["controller.properties"].splitlines()
        if line.startswith("controller.quorum.voters=")
    )
    assert [v.split("@")[0] for v in voters.split(",")] == ["3000", "3001", "3002", "3003", "3004"]
    assert voters.split(",")[0].endswith(
        "@kafka-zk2kraft-controller-0.kafka-zk2kraft-controller-headless"
        ".streaming.svc.cluster.local:9093"
    )
    broker = by_kind(docs, "ConfigMap")["kafka-zk2kraft-broker"]["data"]
    assert broker["controller.quorum.voters"] == voters
    pdb = by_kind(docs, "PodDisruptionBudget")["kafka-zk2kraft-controller"]
    assert pdb["spec"]["maxUnavailable"] == 1


# Each step restarts exactly the pods the runbooks restart in it.
STEPS = [
    ("zookeeper", "controllers", set()),  # controllers appear; brokers untouched
    ("controllers", "migration", {"kafka-zk2kraft-broker"}),
    ("migration", "kraft-brokers", {"kafka-zk2kraft-broker"}),
    ("kraft-brokers", "kraft", {"kafka-zk2kraft-controller"}),
]


@pytest.mark.parametrize(("before", "after", "rolled"), STEPS)
def test_a_phase_step_rolls_exactly_the_pods_it_reconfigures(
    before: str, after: str, rolled: set[str]
) -> None:
    old, new = checksums(render(before)), checksums(render(after))
    changed = {name for name in old.keys() & new.keys() if old[name] != new[name]}
    assert changed == rolled


def test_a_config_value_rolls_only_its_own_workload() -> None:
    base = checksums(render("migration"))
    tuned = checksums(
        render("migration", **{"controllers.config.broker\\.session\\.timeout\\.ms": "12000"})
    )
    assert {n for n in base if base[n] != tuned[n]} == {"kafka-zk2kraft-controller"}
    metrics_off = checksums(render("migration", **{"metrics.enabled": "false"}))
    assert all(base[n] != metrics_off[n] for n in base)  # metrics.port left every file


def test_bad_values_are_refused_by_the_schema() -> None:
    done = helm("template", "kafka", str(CHART), "--set=migration.phase=dual-write")
    assert done.returncode != 0
    assert "migration/phase" in done.stderr and "kraft-brokers" in done.stderr
    done = helm("template", "kafka", str(CHART), "--set=controllers.replicas=0")
    assert done.returncode != 0 and "controllers/replicas" in done.stderr


def test_the_image_installs_this_project_and_runs_its_command() -> None:
    dockerfile = (CHART.parent / "image" / "Dockerfile").read_text()
    root = CHART.parents[1]
    for line in dockerfile.splitlines():
        if line.startswith("COPY "):
            *sources, _ = line.split()[1:]
            assert all((root / s).exists() for s in sources), line
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    assert f'ENTRYPOINT ["{next(iter(project["scripts"]))}"]' in dockerfile
    assert "pip install --no-cache-dir '.[audit]'" in dockerfile  # pyspark for the audit
    needed = project["requires-python"].removeprefix(">=")
    assert f"FROM python:{needed}" in dockerfile
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["podSecurityContext"]["runAsUser"] == 1000
    assert "USER 1000" in dockerfile  # the user the chart runs as owns the image's dirs


def test_the_audit_cron_job_runs_the_spark_submit_entry_with_the_cli_s_arguments() -> None:
    docs = render("migration", **MONITORING)
    (cron,) = by_kind(docs, "CronJob").values()
    (container,) = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["spark-submit"]
    args = container["args"]
    script = args.index("/opt/zk2kraft/migration/cli/spark_submit.py")
    assert args[:script] == ["--master", "local[2]"]  # audit.sparkMaster
    # The Dockerfile copies migration/ to /opt/zk2kraft: the entry is there.
    assert (Path(__file__).parents[2] / "migration" / "cli" / "spark_submit.py").is_file()
    parsed = build_parser().parse_args(["audit", *args[script + 1 :]])
    assert parsed.run.__module__ == "migration.cli.audit_command"
    assert parsed.bootstrap_controller and parsed.json and parsed.zk


def test_a_secured_cluster_mounts_its_secret_everywhere_and_the_audit_logs_in() -> None:
    secured = {
        **MONITORING,
        "security.secretName": "kafka-security",
        "security.zkConfig": "zk-client.properties",
        "security.commandConfig": "command.properties",
    }
    docs = render("migration", **secured)
    for doc in docs:
        if doc["kind"] not in CRDS:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    workloads = {**by_kind(docs, "StatefulSet"), **by_kind(docs, "CronJob")}
    assert len(workloads) == 3
    for name, doc in workloads.items():
        pod = (
            doc["spec"]["jobTemplate"]["spec"]["template"]
            if "jobTemplate" in doc["spec"]
            else doc["spec"]["template"]
        )
        volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
        assert volumes["security"]["secret"]["secretName"] == "kafka-security", name
        for container in pod["spec"]["containers"] + pod["spec"].get("initContainers", []):
            if container["name"] == "format" or container["name"] in (
                "controller",
                "broker",
                "audit",
            ):
                mounts = {m["name"]: m for m in container["volumeMounts"]}
                assert mounts["security"]["readOnly"], (name, container["name"])
    (cron,) = by_kind(docs, "CronJob").values()
    (container,) = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    args = container["args"][
        container["args"].index("/opt/zk2kraft/migration/cli/spark_submit.py") + 1 :
    ]
    assert args[:2] == ["--command-config", "/etc/zk2kraft/security/command.properties"]
    parsed = build_parser().parse_args([*args[:2], "audit", *args[2:]])
    assert parsed.zk_config == Path("/etc/zk2kraft/security/zk-client.properties")
    assert parsed.command_config == Path("/etc/zk2kraft/security/command.properties")
    # without a Secret, nothing is mounted
    plain = render("migration", **MONITORING)
    for doc in by_kind(plain, "StatefulSet").values():
        assert "security" not in {v["name"] for v in doc["spec"]["template"]["spec"]["volumes"]}
