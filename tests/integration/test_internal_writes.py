"""A refused internal write halts the process, in a child process: exit 70, the reason on
one log line. The write paths in process: tests/unit/test_internal_writes.py."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from migration.raft.faults import FATAL_EXIT_CODE

REPO = Path(__file__).resolve().parents[2]


HALTING = """
import logging, sys, threading
from pathlib import Path
from migration.raft.event_loop import EventLoop
from migration.records import versions
from tests.lone_controller import lone_controller
from tests.unit.test_internal_writes import _scram

logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(message)s")
lone = lone_controller(Path(sys.argv[1]), bootstrap_metadata_version=versions.IBP_3_4_IV0)
loop = EventLoop()  # the default on_fatal: halt
loop.on_idle(lone.controller.flush)
loop.start(lone.node)
loop.post(lambda: lone.controller.append_records([_scram("alice")], print))
threading.Event().wait(30)  # the halt ends the process long before
sys.exit(3)
"""


def test_a_refused_internal_write_halts_the_process_with_its_reason_logged_once(
    tmp_path: Path,
) -> None:
    """A real process, its event loop and halt: exit 70, one CRITICAL line naming the
    write and why it was refused, no traceback."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(HALTING), str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == FATAL_EXIT_CODE, done.stderr
    critical = [line for line in done.stderr.splitlines() if line.startswith("CRITICAL")]
    assert len(critical) == 1, done.stderr
    (line,) = critical
    assert "halting: event loop: InternalWriteRefusedError: controller 1:" in line
    assert "UserScramCredentialRecord was refused: UNSUPPORTED_VERSION" in line
    assert "Traceback" not in done.stderr
    assert done.stderr.count("UserScramCredentialRecord was refused") == 1
    assert not done.stdout  # the write's reply never got an answer
