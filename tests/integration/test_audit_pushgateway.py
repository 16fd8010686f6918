"""``zk2kraft audit --pushgateway``: the result reaches a real Pushgateway (Debian's,
from `make tools`) under job zk2kraft-audit: a clean report (success 1, every kind of
difference 0), differences (success 0, the count by kind) and, from the real command,
an audit that could not run (success 0, no differences); a gateway that cannot be
reached is one warning and leaves the exit code alone; a bad URL is a usage error
naming the option. (No Spark run here: the audits of test_audit.py cover the report;
this covers what is pushed of it.)"""

from __future__ import annotations

import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from migration.cli.audit_push import push_result
from migration.common.ports import unused_port
from migration.observability import catalog
from migration.observability.pushgateway import AUDIT_JOB, push_audit_result
from migration.zk.client import ZkClient
from tests.broker_harness import eventually
from tests.support import zk2kraft
from tests.tools import tool

Pushed = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = unused_port()
    log = tmp_path_factory.mktemp("pushgateway") / "pushgateway.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [tool("pushgateway"), f"--web.listen-address=127.0.0.1:{port}"],
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        eventually(lambda: urllib.request.urlopen(f"{url}/-/ready", timeout=5), 30, "ready")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)


def pushed(gateway: str) -> Pushed:
    """The audit job's samples on the gateway: (name, sorted labels but job's) -> value."""
    with urllib.request.urlopen(f"{gateway}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    out: Pushed = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.labels.get("job") == AUDIT_JOB and sample.name.startswith("zk2kraft_"):
                labels = tuple(sorted((k, v) for k, v in sample.labels.items() if k != "job"))
                out[(sample.name, labels)] = sample.value
    return out


def strip(values: Pushed) -> dict[str, float]:
    return {name + "".join(f"{{{k}={v}}}" for k, v in labels if k != "instance"): value
            for (name, labels), value in values.items()}  # fmt: skip


def test_a_clean_result_then_an_audit_that_cannot_run(
    gateway: str, zk: ZkClient, zk_connect: str, tmp_path: Path
) -> None:
    """A clean report's push (what the command pushes after a consistent audit: every
    kind 0), then the real command whose audit cannot compare (no log there): its
    failure replaces the group, without differences, and its stderr is its one error."""
    before = time.time()
    push_result(gateway, {"topic": 0, "partition": 0, "acl": 0})
    values = strip(pushed(gateway))
    assert values[catalog.AUDIT_SUCCESS.name] == 1
    assert before <= values[catalog.AUDIT_LAST_RUN.name] <= time.time()
    kinds = {k: v for k, v in values.items() if k.startswith(catalog.AUDIT_DIFFERENCES.name)}
    assert len(kinds) == 3 and set(kinds.values()) == {0.0}

    failed = zk2kraft("audit", "--zk", zk_connect, "--log-dir", str(tmp_path / "empty"),
                      "--pushgateway", gateway.removeprefix("http://"))  # fmt: skip
    assert failed.returncode == 2
    assert len(failed.stderr.strip().splitlines()) == 1, failed.stderr  # its error, no warning
    values = strip(pushed(gateway))
    assert values[catalog.AUDIT_SUCCESS.name] == 0
    assert values[catalog.AUDIT_LAST_RUN.name] >= before
    assert not any(k.startswith(catalog.AUDIT_DIFFERENCES.name) for k in values)


def test_differences_are_pushed_by_kind(gateway: str) -> None:
    push_audit_result(
        gateway, success=False, differences={"topic": 2, "acl": 0}, finished_at=1_700_000_000
    )
    values = strip(pushed(gateway))
    assert values == {
        catalog.AUDIT_LAST_RUN.name: 1_700_000_000,
        catalog.AUDIT_SUCCESS.name: 0,
        catalog.AUDIT_DIFFERENCES.name + "{kind=acl}": 0,
        catalog.AUDIT_DIFFERENCES.name + "{kind=topic}": 2,
    }


def test_an_unreachable_gateway_is_a_warning_and_a_bad_url_a_usage_error(
    zk: ZkClient, zk_connect: str, tmp_path: Path
) -> None:
    nobody = f"http://127.0.0.1:{unused_port()}"
    failed = zk2kraft("audit", "--zk", zk_connect, "--log-dir", str(tmp_path),
                      "--pushgateway", nobody)  # fmt: skip
    assert failed.returncode == 2  # the audit's own answer, not the push's
    lines = failed.stderr.strip().splitlines()
    (warning,) = [line for line in lines if line.startswith("warning: ")]
    assert len(lines) == 2 and "not a metadata log" in failed.stderr
    assert warning.startswith("warning: the audit's result was not pushed: ") and nobody in warning
    for bad, why in (("ftp://gw:9091", "is not http or https"),
                     ("http://user:hunter2@gw:9091", "credentials in the URL"),
                     ("gw:port", "port that is not a number")):  # fmt: skip
        refused = zk2kraft("audit", "--zk", zk_connect, "--log-dir", str(tmp_path),
                           "--pushgateway", bad)  # fmt: skip
        assert refused.returncode == 2
        assert "--pushgateway: " in refused.stderr and why in refused.stderr, refused.stderr
        assert "hunter2" not in refused.stderr
