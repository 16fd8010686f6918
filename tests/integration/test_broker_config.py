"""server.properties of a ZooKeeper-mode broker, in child processes: ``zk2kraft broker``
lists every problem and exits 2; a stop that cannot finish ends the process with status 1;
a controlled shutdown gives up when the quorum stops answering. The parsing itself:
tests/unit/test_broker_config.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from migration.broker.config import parse_broker_config
from migration.broker.kraft_session import KraftSession
from migration.common.ports import unused_port
from tests.support import zk2kraft
from tests.unit.test_broker_config import KRAFT


def test_the_cli_lists_every_problem_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("broker.id=x\nlisteners=PLAINTEXT://:9092\n")
    out = zk2kraft("broker", "--config", str(path))
    assert out.returncode == 2
    assert "invalid broker configuration" in out.stderr
    assert "broker.id='x' is not an integer" in out.stderr
    assert "zookeeper.connect is required" in out.stderr
    assert "inter.broker.listener.name is required" in out.stderr


def test_a_stop_that_cannot_finish_ends_the_process_with_status_1() -> None:
    """The deadline armed by the first SIGTERM: a thread that never returns (a session
    blocked on an unreachable ZooKeeper) cannot hold the process past it."""
    code = (
        "import logging, threading, time\n"
        "from migration.server.broker_server import _exit_unless_stopped_within\n"
        "logging.basicConfig()\n"
        "_exit_unless_stopped_within(0.2, 7)\n"
        "threading.Thread(target=time.sleep, args=(3600,)).start()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 1
    assert "broker 7 did not stop within 0.2 s of the signal" in done.stderr


@pytest.mark.timeout(60)
def test_a_controlled_shutdown_gives_up_when_the_quorum_stops_answering() -> None:
    """Each bound ends it on its own: the stall since the last answer (none came), and
    the whole budget."""
    port = unused_port()
    config = parse_broker_config(
        {**KRAFT, "controller.quorum.voters": f"3000@127.0.0.1:{port}"}, "server.properties"
    )
    session = KraftSession(config, "cluster", lambda epoch: None)
    session.epoch = 7  # registered once; the quorum has gone since
    assert not session.controlled_shutdown(budget_s=600, stall_s=0.5)
    assert not session.controlled_shutdown(budget_s=0.5, stall_s=600)
