"""The health paths of a real metrics endpoint (loopback HTTP): not ready ("starting")
until the process wires its checks, then each check's answer as 200 or 503 with its
JSON body; a check that raises answers 503 naming the exception's type, never its
message; /metrics is served beside them."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from migration.observability.endpoint import MetricsEndpoint, MetricsServer
from migration.observability.health import LIVE_PATH, READY_PATH, Health, running

SECRET = "health-must-not-show-this"


@pytest.fixture
def server() -> Iterator[MetricsServer]:
    metrics = MetricsServer(MetricsEndpoint("127.0.0.1", 0), [])
    yield metrics
    metrics.close()


def get(server: MetricsServer, path: str, method: str = "GET") -> tuple[int, bytes]:
    request = urllib.request.Request(f"http://127.0.0.1:{server.port}{path}", method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def body(answer: tuple[int, bytes]) -> tuple[int, dict[str, Any]]:
    return answer[0], json.loads(answer[1])


def test_not_ready_until_wired_then_each_check_answers(server: MetricsServer) -> None:
    assert body(get(server, READY_PATH)) == (503, {"ready": False, "reason": "starting"})
    assert body(get(server, LIVE_PATH))[0] == 200

    def failing() -> Health:
        raise RuntimeError(SECRET)

    server.wire_health(
        lambda: Health(True, "the leader", {"node_id": 1, "leader_id": 1}),
        lambda: running({"raft-loop": True, "grpc": False}),
    )
    assert body(get(server, READY_PATH)) == (
        200,
        {"ready": True, "reason": "the leader", "node_id": 1, "leader_id": 1},
    )
    status, live = body(get(server, LIVE_PATH))
    assert status == 503 and live["live"] is False and live["reason"] == "stopped: grpc"
    assert get(server, READY_PATH, "HEAD") == (200, b"")
    server.wire_health(failing, lambda: running({"raft-loop": True}))
    status, raw = get(server, READY_PATH)
    assert status == 503 and SECRET.encode() not in raw
    assert json.loads(raw)["reason"] == "the ready check failed (RuntimeError)"
    assert get(server, LIVE_PATH)[0] == 200
    metrics_status, text = get(server, "/metrics")
    assert metrics_status == 200 and b'"ready"' not in text  # the metrics app
