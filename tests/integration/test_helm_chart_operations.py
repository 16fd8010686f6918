"""The chart's operator-facing parts, rendered by real Helm: every optional feature on
and valid for Kubernetes (strict schemas); probes over HTTP on the metrics port, at the
paths the metrics endpoint serves; the brokers' grace period held to the stop budget
`zk2kraft broker` computes for the config each phase gives them (one second less is
refused); scheduling spread by default and replaceable; a ServiceAccount with no token;
the NetworkPolicy; the audit's shared --work-dir; and the `helm test` pod, whose
arguments the CLI's own parser accepts."""

from __future__ import annotations

import math
from typing import Any

import pytest

from migration.audit.handoff import is_local_master
from migration.broker.config import parse_broker_config
from migration.broker.modes import Mode, rewrite
from migration.cli.main import build_parser
from migration.common.properties import parse_properties
from migration.observability.health import LIVE_PATH, READY_PATH
from tests.integration.test_helm_chart import MONITORING, by_kind, helm, render, validate_kubernetes
from tests.tools import CHART

EVERYTHING = {
    **MONITORING,
    "networkPolicy.enabled": "true",
    "networkPolicy.allowExternal": "false",
    "networkPolicy.metricsNamespaceSelector.matchLabels.name": "monitoring",
    "serviceAccount.annotations.team": "streaming",
    "audit.sparkMaster": "spark://spark-master:7077",
    "audit.workDir.claimName": "audit-work",
    "security.secretName": "kafka-security",
    "security.commandConfig": "command.properties",
}


# A phase for each mode the brokers run in (the others repeat one of these).
BROKER_MODES = {
    "zookeeper": Mode.ZOOKEEPER,
    "migration": Mode.MIGRATING,
    "kraft-brokers": Mode.KRAFT,
}


def pods(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every pod spec rendered: the workloads' templates and bare Pods, by object name."""
    out = {}
    for doc in docs:
        spec = doc.get("spec", {})
        if doc["kind"] == "Pod":
            out[doc["metadata"]["name"]] = spec
        elif "jobTemplate" in spec:
            out[doc["metadata"]["name"]] = spec["jobTemplate"]["spec"]["template"]["spec"]
        elif "template" in spec:
            out[doc["metadata"]["name"]] = spec["template"]["spec"]
    return out


def refused(*sets: str) -> str:
    done = helm("template", "kafka", str(CHART), *(f"--set={s}" for s in sets))
    assert done.returncode != 0, "rendered"
    return done.stderr


def test_every_optional_feature_renders_valid_kubernetes_objects() -> None:
    docs = render("migration", **EVERYTHING)  # the phase with every workload
    validate_kubernetes(docs)
    kinds = {d["kind"] for d in docs}
    assert {"ServiceAccount", "NetworkPolicy", "Pod", "CronJob", "StatefulSet"} <= kinds


def test_probes_ask_the_metrics_port_for_the_paths_it_serves() -> None:
    docs = render("migration", **{"metrics.port": "9500"})
    for name, sts in by_kind(docs, "StatefulSet").items():
        (container,) = sts["spec"]["template"]["spec"]["containers"]
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert ports["metrics"] == 9500, name
        assert container["readinessProbe"]["httpGet"] == {"path": READY_PATH, "port": "metrics"}
        assert container["livenessProbe"]["httpGet"] == {"path": LIVE_PATH, "port": "metrics"}
    # without the metrics port: TCP, and no liveness on a broker's Kafka port (a KRaft
    # broker opens it only once caught up)
    plain = by_kind(render("migration", **{"metrics.enabled": "false"}), "StatefulSet")
    (broker,) = plain["kafka-zk2kraft-broker"]["spec"]["template"]["spec"]["containers"]
    assert broker["readinessProbe"]["tcpSocket"] == {"port": "kafka"}
    assert "livenessProbe" not in broker
    (controller,) = plain["kafka-zk2kraft-controller"]["spec"]["template"]["spec"]["containers"]
    assert controller["livenessProbe"]["tcpSocket"] == {"port": "controller"}


def broker_key(key: str) -> str:
    """A --set path for a property of brokers.config (its dots escaped)."""
    return "brokers.config." + key.replace(".", "\\.")


def stop_budget_s(phase: str, config: dict[str, str]) -> float:
    """What `zk2kraft broker` allows itself to stop, on the file a broker pod of
    ``phase`` runs: the rendered properties, rewritten for the phase's mode."""
    sets = {broker_key(k): v for k, v in config.items()}
    docs = render(phase, **sets, **{"brokers.terminationGracePeriodSeconds": "100000"})
    data = by_kind(docs, "ConfigMap")["kafka-zk2kraft-broker"]["data"]
    text = data["server.properties"].replace("@ID@", "1").replace("@POD@", "broker-1")
    props = parse_properties(text)
    assert data["mode"] == BROKER_MODES.get(phase, data["mode"])
    if data["mode"] != Mode.ZOOKEEPER:
        props = rewrite(props, Mode(data["mode"]), voters=data["controller.quorum.voters"])
    return parse_broker_config(props, "rendered").stop_budget_s()


@pytest.mark.parametrize(
    "config",
    [
        {},
        # attempts of 330.011 s: over the KRaft controller's 300 s, and not whole seconds
        {"controlled.shutdown.max.retries": "11", "controller.socket.timeout.ms": "30001"},
        {"controlled.shutdown.enable": "false"},
    ],
)
def test_the_brokers_grace_period_is_at_least_their_stop_budget(config: dict[str, str]) -> None:
    for phase in BROKER_MODES:
        budget = math.ceil(stop_budget_s(phase, config))
        sets = [f"migration.phase={phase}", *(f"{broker_key(k)}={v}" for k, v in config.items())]
        error = refused(*sets, "brokers.terminationGracePeriodSeconds=1")
        assert "brokers.terminationGracePeriodSeconds=1 is below" in error, error
        assert f"in phase {phase} ({budget} s:" in error, (phase, config, budget, error)
    defaults = by_kind(render("kraft-brokers"), "StatefulSet")["kafka-zk2kraft-broker"]
    grace = defaults["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace >= max(stop_budget_s(phase, {}) for phase in BROKER_MODES)


def test_pods_spread_by_default_and_values_replace_the_presets() -> None:
    for name, spec in pods(render("migration")).items():
        if name.endswith(("-controller", "-broker")):
            component = name.rsplit("-", 1)[1]
            (term,) = spec["affinity"]["podAntiAffinity"][
                "preferredDuringSchedulingIgnoredDuringExecution"
            ]
            assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
            selector = term["podAffinityTerm"]["labelSelector"]["matchLabels"]
            assert selector["app.kubernetes.io/component"] == component
            (spread,) = spec["topologySpreadConstraints"]
            assert spread["whenUnsatisfiable"] == "ScheduleAnyway"
            assert spread["labelSelector"]["matchLabels"] == selector
    mine = {
        "controllers.podAntiAffinityPreset": "hard",
        "controllers.topologySpreadPreset": "",
        "brokers.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms[0].matchExpressions[0].key": "pool",
        "brokers.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms[0].matchExpressions[0].operator": "Exists",
    }
    changed = pods(render("migration", **mine))
    controller, broker = changed["kafka-zk2kraft-controller"], changed["kafka-zk2kraft-broker"]
    assert (
        "requiredDuringSchedulingIgnoredDuringExecution"
        in controller["affinity"]["podAntiAffinity"]
    )
    assert "topologySpreadConstraints" not in controller
    assert set(broker["affinity"]) == {"nodeAffinity"}  # replaced whole


def test_a_service_account_without_a_token_unless_asked() -> None:
    docs = render("migration", **EVERYTHING)
    (account,) = by_kind(docs, "ServiceAccount").values()
    assert account["automountServiceAccountToken"] is False
    assert account["metadata"]["annotations"] == {"team": "streaming"}
    every = pods(docs)
    assert set(every) == {
        "kafka-zk2kraft-controller", "kafka-zk2kraft-broker", "kafka-zk2kraft-audit",
        "kafka-zk2kraft-test-migration-status",
    }  # fmt: skip
    for name, spec in every.items():
        assert spec["serviceAccountName"] == account["metadata"]["name"], name
        assert spec["automountServiceAccountToken"] is False, name
    asked = render("migration", **{"serviceAccount.automountServiceAccountToken": "true"})
    assert all(s["automountServiceAccountToken"] is True for s in pods(asked).values())
    theirs = render(
        "migration", **{"serviceAccount.create": "false", "serviceAccount.name": "kafka"}
    )
    assert not by_kind(theirs, "ServiceAccount")
    assert {s["serviceAccountName"] for s in pods(theirs).values()} == {"kafka"}


def test_the_network_policy_is_off_by_default_and_admits_only_the_cluster_s_pods() -> None:
    assert not by_kind(render("migration"), "NetworkPolicy")
    policies = by_kind(render("migration", **EVERYTHING), "NetworkPolicy")
    controller = policies["kafka-zk2kraft-controller"]["spec"]
    raft, metrics = controller["ingress"]
    assert raft["ports"] == [{"port": "controller", "protocol": "TCP"}]
    components = {
        p["podSelector"]["matchLabels"]["app.kubernetes.io/component"] for p in raft["from"]
    }
    assert components == {"controller", "broker", "audit", "test"}
    assert metrics["from"] == [{"namespaceSelector": {"matchLabels": {"name": "monitoring"}}}]
    broker = policies["kafka-zk2kraft-broker"]["spec"]
    internal, clients, _ = broker["ingress"]
    assert {
        p["podSelector"]["matchLabels"]["app.kubernetes.io/component"] for p in internal["from"]
    } == {"controller", "broker"}
    assert {"podSelector": {"matchLabels": {"kafka-zk2kraft-client": "true"}}} in clients["from"]
    external = by_kind(render("migration", **{"networkPolicy.enabled": "true"}), "NetworkPolicy")
    assert "from" not in external["kafka-zk2kraft-broker"]["spec"]["ingress"][1]  # any client


def audit_pod(**values: str) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
    """The audit's arguments after the script, its mounts and its volumes."""
    (cron,) = by_kind(
        render("migration", **{"audit.enabled": "true", **values}), "CronJob"
    ).values()
    spec = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    args = container["args"]
    after = args[args.index("/opt/zk2kraft/migration/cli/spark_submit.py") + 1 :]
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    return after, mounts, {v["name"]: v for v in spec["volumes"]}


def test_the_audit_hands_its_rows_through_a_work_dir_its_executors_share() -> None:
    args, mounts, volumes = audit_pod()  # local[2]: the pod's own emptyDir serves
    work_dir = args[args.index("--work-dir") + 1]
    assert build_parser().parse_args(["audit", *args]).work_dir == work_dir
    assert mounts["work"]["mountPath"] == work_dir and volumes["work"]["emptyDir"] == {}
    args, mounts, volumes = audit_pod(
        **{"audit.sparkMaster": "spark://m:7077", "audit.workDir.claimName": "shared"}
    )
    assert volumes["work"]["persistentVolumeClaim"] == {"claimName": "shared"}
    assert mounts["work"]["mountPath"] == args[args.index("--work-dir") + 1]
    args, mounts, volumes = audit_pod(
        **{"audit.sparkMaster": "spark://m:7077", "audit.workDir.uri": "s3://bucket/audit"}
    )
    assert args[args.index("--work-dir") + 1] == "s3://bucket/audit" and "work" not in volumes
    error = refused(
        "migration.phase=migration", "audit.enabled=true", "audit.sparkMaster=spark://m:7077"
    )
    assert "audit.workDir.claimName" in error and "spark://m:7077" in error
    # the chart's rule for a local master is the audit's own
    for master in ("local[*]", "local[4,2]", "spark://m:7077", "local[0]"):
        escaped = master.replace(",", "\\,")  # --set splits on commas
        sets = ["migration.phase=migration", "audit.enabled=true", f"audit.sparkMaster={escaped}"]
        done = helm("template", "kafka", str(CHART), *(f"--set={s}" for s in sets))
        assert (done.returncode == 0) == is_local_master(master), master


def test_helm_test_runs_migration_status_against_the_controllers() -> None:
    assert "Pod" not in {d["kind"] for d in render("zookeeper")}  # no controllers yet
    docs = render("kraft", **{"security.secretName": "s", "security.commandConfig": "c.properties"})
    (pod,) = by_kind(docs, "Pod").values()
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    assert pod["spec"]["restartPolicy"] == "Never"
    (container,) = pod["spec"]["containers"]
    parsed = build_parser().parse_args(container["args"])
    assert parsed.command == "migration" and parsed.migration_command == "status"
    assert parsed.run.__name__ == "run_status"
    voters = by_kind(docs, "ConfigMap")["kafka-zk2kraft-controller"]["data"][
        "controller.properties"
    ]
    for endpoint in parsed.bootstrap_controller.split(","):
        assert f"@{endpoint}" in voters
    assert str(parsed.command_config) == "/etc/zk2kraft/security/c.properties"
    mounts = {m["name"] for m in container["volumeMounts"]}
    assert "security" in mounts
