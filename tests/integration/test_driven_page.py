"""The driven migration's live page served: the routes on a real metrics endpoint with the
live page's CSP, and ``kafka status --serve`` in a child process printing the address
it bound, exiting 0 on SIGTERM, and naming the option when it cannot listen. The page
itself: tests/unit/test_driven_page.py."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from migration.cli.main import main
from migration.cli.output import EXIT_ERROR
from migration.observability import catalog
from migration.observability.endpoint import MetricsEndpoint, MetricsServer
from migration.operate.watch import DrivenWatch, page_address, serve
from migration.pages.live import CSP, SCRIPT_SOURCE
from tests.unit.test_driven_page import Reads, status

INVENTORY = (  # nothing listens on port 1: ZooKeeper and the quorum are not read
    '[kafka]\nversion = "3.9.2"\n[zookeeper]\nconnect = "127.0.0.1:1"\n'
    '[[broker]]\nid = 1\nhost = "k1"\nproperties = "k1.properties"\nrestart = "true"\n'
    '[[controller]]\nid = 3000\nhost = "127.0.0.1"\nport = 1\n'
    'properties = "c.properties"\nmetadata_log_dir = "meta"\nformat = "true"\n'
    'start = "true"\nstop = "true"\n'
)


@pytest.fixture
def served() -> Iterator[tuple[MetricsServer, Reads, DrivenWatch]]:
    reads = Reads()
    watch = DrivenWatch(reads)
    server = serve(watch, MetricsEndpoint("127.0.0.1", 0))
    yield server, reads, watch
    server.close()


def get(url: str) -> tuple[int, dict[str, str], str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, dict(answer.headers), answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode()


def test_the_routes_on_a_real_endpoint(served: tuple[MetricsServer, Reads, DrivenWatch]) -> None:
    server, reads, watch = served
    url = page_address(server)
    assert url == f"http://127.0.0.1:{server.port}/migration" and server.port > 0
    code, headers, body = get(url + ".json")
    assert code == 503 and json.loads(body)["starting"] is True
    reads.answer = status()
    watch.sample()
    code, headers, body = get(url)
    assert code == 200 and headers["Content-Security-Policy"] == CSP
    assert SCRIPT_SOURCE in CSP and headers["X-Frame-Options"] == "DENY"
    assert 'data-broker="3" data-mode="migrating"' in body
    code, headers, body = get(url + ".json")
    assert code == 200 and headers["Content-Type"] == "application/json"
    assert json.loads(body)["brokers_by_mode"]["kraft"] == 1
    code, _, body = get(f"http://127.0.0.1:{server.port}/metrics")
    assert code == 200 and f'{catalog.DRIVEN_PHASE.name}{{phase="brokers-kraft"}} 1.0' in body
    assert "process_resident_memory_bytes" in body  # the endpoint's own, as every one's


def test_kafka_status_serves_until_sigterm(tmp_path: Path) -> None:
    """The address bound is printed (port 0: any); the page answers; SIGTERM: exit 0."""
    inventory = tmp_path / "inv.toml"
    inventory.write_text(INVENTORY)
    child = subprocess.Popen(
        [sys.executable, "-m", "migration.cli.main", "kafka", "status",
         "--inventory", str(inventory), "--serve", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert child.stderr is not None
        line = read_line(child.stderr)
        found = re.search(r"serving (http://127\.0\.0\.1:(\d+)/migration) ", line)
        assert found and int(found[2]) > 0, line
        code, _, body = get(found[1] + ".json")
        assert code in (200, 503) and json.loads(body)["version"] == 1
        code, _, body = get(found[1])
        assert code == 200 and "zk2kraft kafka migrate" in body
    finally:
        child.send_signal(signal.SIGTERM)
        out, err = child.communicate(timeout=30)
    assert child.returncode == 0, err
    assert out == ""


def test_a_port_it_cannot_listen_on_is_an_error_naming_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inventory = tmp_path / "inv.toml"
    inventory.write_text(INVENTORY)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code = main(["kafka", "status", "--inventory", str(inventory), "--serve",
                     f"127.0.0.1:{port}"])  # fmt: skip
    assert code == EXIT_ERROR
    assert (
        f"--serve 127.0.0.1:{port}: port {port} on 127.0.0.1 is in use" in capsys.readouterr().err
    )


def read_line(stream: Any, timeout_s: float = 60.0) -> str:
    """The first line of ``stream``, or a hang guard's failure."""
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout_s)
    assert got, "hang guard: nothing printed"
    return got[0]
