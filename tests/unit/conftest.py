"""Fixtures the unit tests share."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lone_controller import LoneController, lone_controller


@pytest.fixture
def lone(tmp_path: Path) -> Iterator[LoneController]:
    """An active controller in process with a one-second broker session timeout."""
    c = lone_controller(tmp_path, session_timeout_ms=1000)
    yield c
    c.close()
