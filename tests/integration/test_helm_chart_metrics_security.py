"""The chart's metrics.tls and metrics.basicAuth, rendered by real helm: the processes'
properties name the mounted Secrets in the keys the processes read (checked by reading
them as a process does, the mount paths moved onto real files), every container that
reads the properties mounts them, the probes switch to HTTPS and stay credential-free,
the ServiceMonitor scrapes with https, its tlsConfig and basic auth, and values that
cannot work are refused with the value to set."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import bcrypt

from migration.common.properties import TypedProperties, parse_properties
from migration.observability.endpoint import KEYS, metrics_endpoint
from tests.integration.test_helm_chart import MONITORING, by_kind, helm, render, validate_kubernetes
from tests.security_harness import Authority
from tests.tools import CHART

SECURED = {
    **MONITORING,
    "metrics.tls.enabled": "true",
    "metrics.tls.secretName": "metrics-tls",
    "metrics.basicAuth.enabled": "true",
    "metrics.basicAuth.secretName": "metrics-auth",
    "metrics.serviceMonitor.tlsConfig.serverName": "metrics.kafka.example",
    "metrics.serviceMonitor.tlsConfig.ca.secret.name": "metrics-tls",
    "metrics.serviceMonitor.tlsConfig.ca.secret.key": "ca\\.crt",
}
CONFIGS = {
    "kafka-zk2kraft-controller": "controller.properties",
    "kafka-zk2kraft-broker": "server.properties",
}


def pod(sts: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = sts["spec"]["template"]["spec"]
    return spec


def test_a_secured_port_renders_valid_objects_mounts_and_https_probes() -> None:
    docs = render("migration", **SECURED)
    validate_kubernetes(docs)
    for name, sts in by_kind(docs, "StatefulSet").items():
        volumes = {v["name"]: v["secret"] for v in pod(sts)["volumes"] if "secret" in v}
        assert volumes["metrics-tls"]["secretName"] == "metrics-tls"
        assert volumes["metrics-tls"]["items"] == [
            {"key": "tls-combined.pem", "path": "tls-combined.pem"}
        ]
        assert volumes["metrics-auth"]["secretName"] == "metrics-auth"
        for container in pod(sts)["containers"] + pod(sts).get("initContainers", []):
            mounts = {m["name"]: m for m in container["volumeMounts"]}
            if container["name"] in ("controller", "broker", "format"):  # they read the file
                assert mounts["metrics-tls"]["readOnly"], (name, container["name"])
                assert mounts["metrics-auth"]["mountPath"] == "/etc/zk2kraft/metrics-auth"
        (container,) = pod(sts)["containers"]
        for probe, path in (("readinessProbe", "/ready"), ("livenessProbe", "/live")):
            get = container[probe]["httpGet"]
            assert (get["path"], get["scheme"], get["port"]) == (path, "HTTPS", "metrics")
            assert "httpHeaders" not in get  # the probes' paths need no credentials
    plain = render("migration")
    for sts in by_kind(plain, "StatefulSet").values():
        (container,) = pod(sts)["containers"]
        assert "scheme" not in container["readinessProbe"]["httpGet"]  # HTTP, the default
        assert not {"metrics-tls", "metrics-auth"} & {v["name"] for v in pod(sts)["volumes"]}


def test_the_rendered_keys_are_the_ones_a_process_reads(tmp_path: Path) -> None:
    """Each process's properties, their Secret paths moved onto real files: read as the
    process reads them, with no problem and no unknown key."""
    ca = Authority("chart CA")
    key, cert = ca.issue("localhost")
    (tmp_path / "metrics-tls").mkdir()
    (tmp_path / "metrics-tls" / "tls-combined.pem").write_text(key + cert + ca.pem)
    (tmp_path / "metrics-auth").mkdir()
    hashed = bcrypt.hashpw(b"scrape", bcrypt.gensalt(4)).decode()
    (tmp_path / "metrics-auth" / "users").write_text(f"prometheus:{hashed}\n")
    configs = by_kind(render("migration", **SECURED), "ConfigMap")
    for name, file in CONFIGS.items():
        text = configs[name]["data"][file].replace("/etc/zk2kraft/", f"{tmp_path}/")
        props = {k: v for k, v in parse_properties(text).items() if k.startswith("metrics.")}
        assert set(props) <= KEYS, name
        typed = TypedProperties(props)
        endpoint = metrics_endpoint(typed)
        assert typed.problems == [] and endpoint is not None, name
        assert endpoint.scheme == "https" and [u for u, _ in endpoint.users] == ["prometheus"]


def test_the_service_monitor_scrapes_with_https_and_basic_auth() -> None:
    (monitor,) = by_kind(render("migration", **SECURED), "ServiceMonitor").values()
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["scheme"] == "https"
    assert endpoint["tlsConfig"] == {
        "serverName": "metrics.kafka.example",
        "ca": {"secret": {"name": "metrics-tls", "key": "ca.crt"}},
    }
    assert endpoint["basicAuth"] == {
        "username": {"name": "metrics-auth", "key": "username"},
        "password": {"name": "metrics-auth", "key": "password"},
    }
    own = render(
        "migration", **SECURED, **{"metrics.serviceMonitor.basicAuth.secretName": "scraper"}
    )
    (monitor,) = by_kind(own, "ServiceMonitor").values()
    assert monitor["spec"]["endpoints"][0]["basicAuth"]["password"]["name"] == "scraper"
    (plain,) = by_kind(render("migration", **MONITORING), "ServiceMonitor").values()
    assert not {"scheme", "tlsConfig", "basicAuth"} & plain["spec"]["endpoints"][0].keys()


def refused(**values: str) -> str:
    sets = [f"--set={k}={v}" for k, v in {"migration.phase": "migration", **values}.items()]
    done = helm("template", "kafka", str(CHART), *sets)
    assert done.returncode != 0
    return done.stderr


def test_values_that_cannot_work_are_refused_naming_the_value() -> None:
    assert "metrics.tls.enabled needs metrics.tls.secretName" in refused(
        **{"metrics.tls.enabled": "true"}
    )
    assert "metrics.basicAuth.enabled needs metrics.basicAuth.secretName" in refused(
        **{"metrics.basicAuth.enabled": "true"}
    )
    assert "needs metrics.serviceMonitor.tlsConfig" in refused(
        **{
            "metrics.tls.enabled": "true",
            "metrics.tls.secretName": "metrics-tls",
            "metrics.serviceMonitor.enabled": "true",
        }
    )
    assert "metrics/tls" in refused(**{"metrics.tls.secret": "x"})  # the schema: no such key
