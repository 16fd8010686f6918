"""tests/unit is pure: no module here imports or calls what starts a process, a server or
a network client, or asks for a fixture that starts a real server (tests/purity.py's
:func:`~tests.purity.offences`, over every module); and the audit hook that watches each
test while it runs (:func:`~tests.purity.watched`, the conftest's autouse fixture) names
processes, inet sockets and name lookups and nothing else."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from tests import purity

UNIT = Path(__file__).resolve().parent
FIXTURES = purity.session_fixtures(UNIT.parent / "conftest.py")


def test_no_unit_module_runs_a_process_a_server_or_a_client() -> None:
    found = [
        offence
        for path in sorted(UNIT.glob("*.py"))
        for offence in purity.offences(path.read_text(), str(path.relative_to(UNIT)), FIXTURES)
    ]
    assert found == [], "move these to tests/integration:\n" + "\n".join(found)


def test_the_servers_fixtures_are_known() -> None:
    assert {"zk_server", "zk_connect", "zk", "zk_mode_cluster"} <= set(FIXTURES)


def test_the_source_check_finds_each_kind() -> None:
    source = """
import subprocess
from socket import create_server
from concurrent.futures import ProcessPoolExecutor
from tests.support import EVERYTHING, zk2kraft
from tests.tools import ROOT, run
import grpc
import pytest

def helper() -> None:
    grpc.server(None)

@pytest.mark.parametrize("zk", [1, 2])
def test_parametrized(zk: int) -> None: ...

def test_real(zk_server: object, tmp_path: object) -> None: ...

def not_a_test(zk: object) -> None: ...
"""
    found = purity.offences(source, "m.py", FIXTURES)
    assert [f.split(": ", 1)[1].split(" (")[0] for f in found] == [
        "imports subprocess",
        "imports from socket",
        "imports concurrent.futures.ProcessPoolExecutor",
        "imports tests.support.zk2kraft",
        "imports tests.tools.run",
        "calls grpc.server",
        "test_real asks for the zk_server fixture",
    ]
    assert found[0].startswith("m.py:2: ")


class _Sock:
    def __init__(self, family: int) -> None:
        self.family = family


def test_the_hook_names_processes_inet_sockets_and_name_lookups_only() -> None:
    inet, unix = _Sock(purity.INET[0]), _Sock(-1)  # -1: no inet family
    assert purity.impurity("subprocess.Popen", ("x", ["java", "-jar"], None, None)) == (
        "a child process ['java', '-jar']"
    )
    assert purity.impurity("os.fork", ()) == "os.fork ()"
    assert purity.impurity("socket.bind", (inet, ("127.0.0.1", 0))) == (
        "an inet socket bound to ('127.0.0.1', 0)"
    )
    assert purity.impurity("socket.connect", (unix, "/tmp/s")) is None
    assert purity.impurity("socket.getaddrinfo", ("zk1.example", 2181, 0, 0, 0)) is not None
    for local in ("127.0.0.1", "::1", "localhost", None):
        assert purity.impurity("socket.getaddrinfo", (local, 2181, 0, 0, 0)) is None
    assert purity.impurity("open", ("/etc/hosts", "r", 0)) is None


def test_the_hook_watches_this_thread_and_the_ones_it_starts_only() -> None:
    inet = _Sock(purity.INET[0])
    elsewhere = threading.Event()
    release = threading.Event()

    def older() -> None:  # running before the block: not the block's
        elsewhere.set()
        release.wait(10)
        sys.audit("socket.connect", inet, ("10.0.0.1", 1))

    before = threading.Thread(target=older, daemon=True)
    before.start()
    elsewhere.wait(10)
    with purity.watched() as seen:  # nested in this test's own watch: it records here
        sys.audit("subprocess.Popen", "x", ["x"], None, None)
        started = threading.Thread(
            target=lambda: sys.audit("socket.bind", inet, ("127.0.0.1", 0)), daemon=True
        )
        started.start()
        started.join(10)
        release.set()
        before.join(10)
    assert seen == ["a child process ['x']", "an inet socket bound to ('127.0.0.1', 0)"]
