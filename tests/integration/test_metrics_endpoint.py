"""The /metrics endpoint under clients that never finish their request (real sockets):
threads stay bounded however many connect, the server closes every one of them, and
/metrics keeps answering meanwhile."""

from __future__ import annotations

import select
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client.core import GaugeMetricFamily, Metric

from migration.observability.endpoint import MetricsEndpoint, MetricsServer
from migration.observability.http_server import MAX_CONNECTIONS

HALF_SENT = 300
HANG_GUARD_S = 60.0


class Up:
    """One gauge, so a scrape has something to show; counts the scrapes collected."""

    def __init__(self) -> None:
        self.collected = 0

    def collect(self) -> Iterator[Metric]:
        self.collected += 1
        yield GaugeMetricFamily("zk2kraft_test_up", "the endpoint answers", value=1)


@pytest.fixture
def up() -> Up:
    return Up()


@pytest.fixture
def server(up: Up) -> Iterator[MetricsServer]:
    metrics = MetricsServer(MetricsEndpoint("127.0.0.1", 0), [up])
    yield metrics
    metrics.close()


def scrape(server: MetricsServer) -> str:
    url = f"http://127.0.0.1:{server.port}/metrics"
    with urllib.request.urlopen(url, timeout=HANG_GUARD_S) as answer:
        assert answer.status == 200
        return str(answer.read().decode())


def closed_by_server(client: socket.socket) -> bool:
    """Whether the server has closed ``client`` (waits for it, up to the hang guard)."""
    client.settimeout(HANG_GUARD_S)
    try:
        return client.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def _request_threads() -> int:
    """The threads the server runs a connection on (socketserver names them after
    ``process_request_thread``): not the whole process's, which other tests' leftovers in
    this worker come and go in."""
    return sum("process_request_thread" in t.name for t in threading.enumerate())


def test_half_sent_requests_hold_bounded_threads_and_are_closed(
    server: MetricsServer, up: Up
) -> None:
    """Their request lines are whole, their headers never end: none is answered (no
    collection is spent on them), each is closed, and a scrape gets through."""
    clients = []
    peak = 0
    try:
        for _ in range(HALF_SENT):
            client = socket.create_connection(("127.0.0.1", server.port), timeout=HANG_GUARD_S)
            client.sendall(b"GET /metrics HTTP/1.1\r\nHost: here\r\n")  # headers never end
            clients.append(client)
            peak = max(peak, _request_threads())
        assert "zk2kraft_test_up 1.0" in scrape(server)  # answering while they hang on
        peak = max(peak, _request_threads())
        assert peak <= MAX_CONNECTIONS + 4, f"{peak} threads for {HALF_SENT} idle clients"
        assert server.connections() <= MAX_CONNECTIONS
        assert all(closed_by_server(c) for c in clients)
        assert up.collected == 1  # the scrape's alone
    finally:
        for client in clients:
            client.close()
    assert "zk2kraft_test_up 1.0" in scrape(server)


def test_a_request_trickled_in_is_dropped_at_the_deadline(server: MetricsServer) -> None:
    """One header byte at a time, for ever: the server closes it, however slowly it
    trickles (each byte well within any per-read timeout)."""
    client = socket.create_connection(("127.0.0.1", server.port), timeout=HANG_GUARD_S)
    try:
        client.sendall(b"GET /metrics HTTP/1.1\r\nX-Slow: ")
        for _ in range(int(HANG_GUARD_S / 0.25)):
            readable, _, _ = select.select([client], [], [], 0.25)
            if readable:
                break
            try:
                client.sendall(b"a")
            except (BrokenPipeError, ConnectionResetError):
                break
        assert closed_by_server(client)
    finally:
        client.close()
    assert "zk2kraft_test_up 1.0" in scrape(server)


def test_a_client_that_sends_nothing_is_dropped(server: MetricsServer) -> None:
    client = socket.create_connection(("127.0.0.1", server.port), timeout=HANG_GUARD_S)
    try:
        assert closed_by_server(client)
    finally:
        client.close()
    deadline = time.monotonic() + HANG_GUARD_S
    while server.connections() and time.monotonic() < deadline:  # its thread winds down
        time.sleep(0.05)
    assert server.connections() == 0


def test_the_process_and_its_garbage_collector_are_exposed(server: MetricsServer) -> None:
    """prometheus_client's process, platform and GC collectors, in the endpoint's own
    registry, beside the process's metrics."""
    values = {
        line.split(" ")[0]: float(line.split(" ")[-1])
        for line in scrape(server).splitlines()
        if line and not line.startswith("#")
    }
    assert values["process_resident_memory_bytes"] > 0
    assert values["process_open_fds"] > 0
    assert 'python_gc_collections_total{generation="0"}' in values
    assert any(name.startswith("python_info{") for name in values)
    assert values["zk2kraft_test_up"] == 1.0
