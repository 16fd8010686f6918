"""Every field of ReportAudit (the one RPC whose numbers reach the migration page) at its
extremes, sent to a real controller process (issue 55): a value the page cannot show is
refused at the RPC (INVALID_REQUEST naming the field, the last good summary kept), one
it can is kept and shown, and after each of them ``/migration`` and ``/migration.json``
answer 200."""

from __future__ import annotations

import json
import math
import urllib.request
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from migration.common.kafka_errors import ErrorCode
from migration.common.times import MAX_MS
from migration.local.quorum import LocalQuorum
from migration.proto import controller_pb2 as cpb
from migration.proto import controller_pb2_grpc
from migration.server.page_sampler import AUDIT_LIMIT
from tests.quorum_harness import lone_quorum

INT64 = [-(2**63), -(2**53) - 1, -2, -1, 0, 1, 2**53 - 1, 2**53, 2**53 + 1, MAX_MS,
         MAX_MS + 1, 2**62, 2**63 - 1]  # fmt: skip
DOUBLES = [math.nan, math.inf, -math.inf, -0.0, -1.0, 0.0, 5e-324, 1.5, 1e9 - 1, 1e9, 1e308]
GOOD: dict[str, Any] = {"consistent": True, "differences": 0, "offset": 120, "log_end_offset": 130,
        "finished_ms": 1_764_370_000_000, "seconds": 9.5}  # fmt: skip


@pytest.fixture(scope="module")
def quorum(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalQuorum]:
    with lone_quorum(tmp_path_factory.mktemp("quorum"), metrics=True) as quorum:
        yield quorum


@pytest.fixture(scope="module")
def stub(quorum: LocalQuorum) -> Iterator[controller_pb2_grpc.ControllerStub]:
    with grpc.insecure_channel(quorum.bootstrap[0]) as channel:
        yield controller_pb2_grpc.ControllerStub(channel)


def get(quorum: LocalQuorum, path: str) -> bytes:
    url = f"http://{quorum.metrics_target(quorum.ids[0])}{path}"
    with urllib.request.urlopen(url, timeout=30) as answer:  # raises on a 500
        assert answer.status == 200
        body: bytes = answer.read()
        return body


def page(quorum: LocalQuorum) -> dict[str, Any]:
    """The page's JSON, after checking the HTML page answers too."""
    assert b"<html" in get(quorum, "/migration").lower()
    found: dict[str, Any] = json.loads(get(quorum, "/migration.json"))
    return found


def representable(field: str, value: float) -> bool:
    """Whether the controller must keep ``value`` of ``field`` (else refuse it)."""
    if field == "seconds":
        return 0 <= value < 1e9
    if field == "finished_ms":
        return value == -1 or 0 <= value <= MAX_MS
    return -1 <= value <= AUDIT_LIMIT


@pytest.mark.parametrize(
    ("field", "value"),
    [(f, v) for f in ("differences", "offset", "log_end_offset", "finished_ms") for v in INT64]
    + [("seconds", v) for v in DOUBLES],
)
def test_an_extreme_is_refused_or_shown_and_the_page_answers(
    quorum: LocalQuorum, stub: controller_pb2_grpc.ControllerStub, field: str, value: float
) -> None:
    assert not stub.ReportAudit(cpb.ReportAuditRequest(**GOOD), timeout=30).error.error_code
    answer = stub.ReportAudit(cpb.ReportAuditRequest(**{**GOOD, field: value}), timeout=30)
    shown = page(quorum)["audit"]
    if representable(field, value):
        assert answer.error.error_code == ErrorCode.NONE, answer
        if field == "finished_ms" and value == MAX_MS:
            assert shown["finished"] == "9999-12-31T23:59:59.999Z"
    else:
        assert answer.error.error_code == ErrorCode.INVALID_REQUEST, answer
        assert field in answer.error.error_message
        assert shown["offset"] == GOOD["offset"]  # the last good summary stays


HOSTILE = "\x1b[2J\x1b]0;pwned\x07<script>alert(1)</script>"


@pytest.mark.parametrize(
    ("broker_id", "host", "port", "rack"),
    [
        (2**31 - 1, "h", 65535, None),
        (11, HOSTILE, 0, HOSTILE),
        (12, "h" * 32767, 9092, "r" * 32767),
        (13, "\u202eevil", 1, "\u2028"),
    ],
)
def test_a_registration_at_its_extremes_is_kept_and_the_page_answers(
    quorum: LocalQuorum,
    stub: controller_pb2_grpc.ControllerStub,
    broker_id: int,
    host: str,
    port: int,
    rack: str | None,
) -> None:
    """What Kafka's RegisterBrokerRecord can hold is kept (beyond it: refused at the RPC,
    tests/unit/test_controller_broker_sessions.py), and the page shows it inert."""
    request = cpb.BrokerRegistrationRequest(
        broker_id=broker_id, incarnation_id=bytes(16),
        listeners=[cpb.Listener(name="PLAINTEXT", host=host, port=port)],
    )  # fmt: skip
    if rack is not None:
        request.rack = rack
    assert not stub.BrokerRegistration(request, timeout=30).error_code
    html = get(quorum, "/migration")
    assert b"\x1b" not in html and b"<script>alert" not in html
    brokers = {b["id"]: b for b in page(quorum)["brokers"]}
    assert brokers[broker_id]["endpoints"] == [f"PLAINTEXT://{host}:{port}"]
