"""Fixtures the unit tests share, and their purity: every test here errors if it starts a
process, binds or connects an inet socket, or looks a host name up (tests/purity.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lone_controller import LoneController, lone_controller
from tests.purity import watched


@pytest.fixture(autouse=True)
def _pure() -> Iterator[None]:
    with watched() as seen:
        yield
    if seen:
        pytest.fail(
            "tests/unit is pure (no process, server or network), but while this test ran: "
            + "; ".join(dict.fromkeys(seen))
            + " -- it belongs in tests/integration",
            pytrace=False,
        )


@pytest.fixture
def lone(tmp_path: Path) -> Iterator[LoneController]:
    """An active controller in process with a one-second broker session timeout."""
    c = lone_controller(tmp_path, session_timeout_ms=1000)
    yield c
    c.close()
