"""The live migration page on real sockets: the routes on a real metrics endpoint (a
failing page answers 500 naming only the exception's type), the driver's outcome when
ZooKeeper cannot be reached (no connect string on the page), and an audit's summary
that reaches no controller: one warning. The renderer and contract:
tests/unit/test_migration_page.py."""

from __future__ import annotations

import dataclasses
import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from migration.audit.report import AuditReport
from migration.cli.audit_report_page import summary, tell_controllers
from migration.common.ports import unused_port
from migration.controller.config import parse_config
from migration.driver import readiness
from migration.driver.controller_port import Inputs
from migration.driver.driver import MigrationDriver, connect_forms
from migration.image.model import ZK_MIGRATION_MIGRATION, MetadataImage
from migration.observability.endpoint import MetricsEndpoint, MetricsServer
from migration.observability.health import Page
from migration.pages.live import render_controller as render
from migration.records import versions
from migration.server.page_model import JSON_PATH, PAGE_PATH, page_model
from tests.unit.test_migration_page import T0, inputs


@pytest.fixture
def server() -> Iterator[MetricsServer]:
    metrics = MetricsServer(MetricsEndpoint("127.0.0.1", 0), [])
    yield metrics
    metrics.close()


def get(server: MetricsServer, path: str) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}{path}", timeout=10) as a:
            return a.status, dict(a.headers), a.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def test_the_routes_on_a_metrics_endpoint(server: MetricsServer) -> None:
    model: dict[str, Any] = page_model(inputs())
    server.route(PAGE_PATH, lambda: Page(render(model).encode(), "text/html; charset=utf-8"))
    server.route(JSON_PATH, lambda: Page(json.dumps(model).encode(), "application/json"))
    code, headers, body = get(server, PAGE_PATH)
    assert code == 200 and headers["Content-Type"].startswith("text/html")
    assert headers["Cache-Control"] == "no-store" and b"MigrationActive" in body
    code, _, body = get(server, JSON_PATH)
    assert code == 200 and json.loads(body)["state"] == "MigrationActive"
    code, _, body = get(server, "/metrics")
    assert code == 200 and b"process_" in body

    def broken() -> Page:
        raise ValueError("a secret message")

    server.route(PAGE_PATH, broken)
    code, _, body = get(server, PAGE_PATH)
    assert code == 500 and b"ValueError" in body and b"secret" not in body


def test_an_audit_that_reaches_no_controller_warns_once(capsys: pytest.CaptureFixture[str]) -> None:
    report = AuditReport(offset=120, offset_source="/migration", offset_window=(120, 120),
                         log_end_offset=130)  # fmt: skip
    request = summary(report, T0)
    assert (request.consistent, request.differences, request.offset) == (True, 0, 120)
    nobody = f"127.0.0.1:{unused_port()}"
    assert tell_controllers([nobody], report) == []
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warning: the audit's summary did not reach")
    assert nobody in err[0]
    assert tell_controllers(None, report) == [] and capsys.readouterr().err == ""


class ActivePort:
    """A controller port that leads, its image in MIGRATION (the driver goes straight to
    ZooKeeper); ``fails``: what the poll's first call after its inputs (admin writes
    accepted, a new leadership's reset) raises instead."""

    def __init__(self, fails: Exception | None = None) -> None:
        self.fails = fails

    def inputs(self) -> Inputs:
        image = MetadataImage(
            features={versions.METADATA_VERSION: readiness.MIN_MIGRATION_LEVEL},
            zk_migration_state=ZK_MIGRATION_MIGRATION,
        )
        return Inputs(node_id=1, active=True, leader_id=1, epoch=3, image=image, high_watermark=0)

    def refuse_admin_writes(self, why: str | None) -> None:
        if self.fails is not None:
            raise self.fails


def no_connect_string(connect: str, text: str) -> None:
    """The page's no-secret check: ``connect`` in no form (as configured, normalized,
    one host:port of it)."""
    for form in connect_forms(connect):
        assert form not in text, f"{form!r} shown"


@pytest.mark.parametrize("why", ["connect", "error naming it"])
def test_an_outcome_never_names_zookeepers_address(
    tmp_path: Path, why: str, caplog: pytest.LogCaptureFixture
) -> None:
    zk_port = unused_port()  # nothing listens: the driver cannot connect
    connect = f"localhost:{zk_port},127.0.0.1:{zk_port}/kafka"
    config = parse_config(
        {
            "node.id": "1", "process.roles": "controller", "controller.quorum.voters": "1@h:9093",
            "listeners": "CONTROLLER://h:9093", "metadata.log.dir": str(tmp_path),
            "zookeeper.metadata.migration.enable": "true", "zookeeper.connect": connect,
            "zookeeper.connection.timeout.ms": "100", "inter.broker.listener.name": "INTERNAL",
        },
        "t",
    )  # fmt: skip
    fails = None if why == "connect" else OSError(f"{connect} said no, then 127.0.0.1:{zk_port}")
    port = ActivePort(fails)
    driver = MigrationDriver(config, "cluster", port)  # type: ignore[arg-type]
    caplog.set_level(logging.INFO, logger="migration.driver.driver")
    driver.start()
    try:
        deadline = time.monotonic() + 30
        while driver.status().outcome == "starting":
            assert time.monotonic() < deadline, "the driver never polled"
            time.sleep(0.05)
        status = driver.status()
    finally:
        port.fails = None  # the stop's own reset
        driver.stop()
    if why == "connect":
        assert status.outcome.startswith("ZooKeeper could not be reached (the controller's log")
    else:
        assert status.outcome == (
            "the poll failed (OSError: <zookeeper.connect> said no, then <zookeeper.connect>); "
            "retrying"
        )
    assert f"127.0.0.1:{zk_port}" in caplog.text  # the log keeps the error whole
    model = page_model(dataclasses.replace(inputs(), status=status, zk_broker_ids=None))
    assert model["outcome"] == status.outcome
    for text in (str(status), json.dumps(model), render(model)):
        no_connect_string(connect, text)
