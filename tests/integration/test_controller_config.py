"""``zk2kraft controller`` on a bad controller.properties, in a child process: every
problem listed, no traceback. The parsing: tests/unit/test_controller_config.py."""

from __future__ import annotations

from pathlib import Path

from tests.support import zk2kraft


def test_the_controller_command_lists_problems_without_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_bytes(b"\xff\xfe garbage")
    result = zk2kraft("controller", "--config", str(path))
    assert result.returncode == 2 and str(path) in result.stderr
    assert "Traceback" not in result.stderr
