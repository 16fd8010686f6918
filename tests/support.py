"""Helpers shared by the tests."""

from __future__ import annotations

import subprocess
import sys


def zk2kraft(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the zk2kraft command in a real child process."""
    return subprocess.run(
        [sys.executable, "-m", "migration.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
