"""zk2kraft leaves the directory it runs in alone: ``--help`` and the commands that do
not speak Kafka's protocol never import kio, which registers Hypothesis strategies when
Hypothesis is installed -- and Hypothesis then writes ``.hypothesis/`` into the current
directory (real child processes). And a command line loads its own command's module
alone: the commands run most often load no server, no page templates, no Spark."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from migration.log.metadata_log import MetadataLog
from tests.support import config_record

REPO = Path(__file__).resolve().parents[2]


def run_in(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_commands_leave_an_empty_directory_empty(tmp_path: Path) -> None:
    log_dir = tmp_path / "log"
    with MetadataLog(log_dir) as log:
        log.append([config_record(0)], epoch=1)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    for args in (
        ["--help"],
        ["broker-mode", "--help"],
        ["log", "verify", "--log-dir", str(log_dir)],
    ):
        result = run_in(cwd, "-m", "migration.cli.main", *args)
        assert result.returncode == 0, result.stderr
        assert sorted(p.name for p in cwd.iterdir()) == [], args


def test_the_command_line_imports_no_kafka_protocol(tmp_path: Path) -> None:
    """Whether or not Hypothesis is installed here: every command registered, no kio."""
    probe = (
        "import sys; from migration.cli.main import build_parser; build_parser(); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('kio', 'hypothesis')))"
    )
    result = run_in(tmp_path, "-c", probe)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("command", ["admin", "log", "migration", "quorum", "kafka-node"])
def test_a_command_loads_no_server_page_or_spark(tmp_path: Path, command: str) -> None:
    probe = (
        f"import sys; from migration.cli.main import build_parser; build_parser({command!r}); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'jinja2') "
        "or m.startswith(('migration.server', 'migration.audit.spark'))))"
    )
    result = run_in(tmp_path, "-c", probe)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
