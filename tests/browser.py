"""Debian's Chromium, headless, for the tests that load a page in a real browser
(`make browser` installs it; the Makefile's `test` and `integration` depend on it).

Each call starts a fresh browser with a fresh profile, on a closed network as root:
the sandbox, GPU, QUIC, sync, component updates and background networking are off.
``dump_dom`` gives the DOM after load (the page's scripts ran, within the virtual time
budget); ``screenshot`` a PNG of the page, checked to be a PNG of the size asked for
(:func:`png_size` reads its header).
"""

from __future__ import annotations

import os
import struct
import subprocess
import tempfile
from pathlib import Path

from tests.tools import require_tool

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)
TIMEOUT_S = 60.0  # hang guard
WIDTH, HEIGHT = 1280, 1600  # a screenshot's size unless asked otherwise
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def chromium() -> str:
    """The browser's path; when it is missing, the test is skipped naming `make browser`
    (failed in CI: :func:`tests.tools.require_tool`)."""
    return require_tool("chromium")


def _run(url: str, *action: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        done = subprocess.run(
            [chromium(), *FLAGS, f"--user-data-dir={profile}", *action, url],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
            env={**os.environ, "HOME": profile},
        )
    if done.returncode != 0:
        raise RuntimeError(f"chromium exited {done.returncode}: {done.stderr[-2000:]}")
    return done


def dump_dom(url: str, budget_ms: int = 2000) -> str:
    """The serialized DOM of ``url`` after load and ``budget_ms`` of virtual time."""
    return _run(url, f"--virtual-time-budget={budget_ms}", "--dump-dom").stdout


def png_size(path: Path) -> tuple[int, int]:
    """A PNG's width and height from its IHDR chunk; ValueError when ``path`` does not
    start as a PNG does (the signature, then IHDR, the first chunk)."""
    with path.open("rb") as f:
        head = f.read(24)
    if len(head) < 24 or head[:8] != PNG_SIGNATURE or head[12:16] != b"IHDR":
        raise ValueError(f"{path} is not a PNG")
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def screenshot(url: str, path: Path, width: int = WIDTH, height: int = HEIGHT) -> Path:
    """A PNG of ``url`` at ``width`` x ``height`` written to ``path``; RuntimeError when
    chromium wrote none, or one of another size."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _run(url, f"--screenshot={path}", f"--window-size={width},{height}")
    if not path.is_file():
        raise RuntimeError(f"chromium wrote no screenshot to {path}")
    try:
        size = png_size(path)
    except ValueError as exc:
        raise RuntimeError(f"chromium's screenshot: {exc}") from None
    if size != (width, height):
        raise RuntimeError(f"chromium's screenshot {path} is {size}, not {(width, height)}")
    return path


def screenshots_dir() -> Path:
    """Where a test run keeps its screenshots: ``$ZK2KRAFT_SCREENSHOTS``, else a fresh
    temporary directory (named in the test's output)."""
    given = os.environ.get("ZK2KRAFT_SCREENSHOTS")
    if given:
        Path(given).mkdir(parents=True, exist_ok=True)
        return Path(given)
    return Path(tempfile.mkdtemp(prefix="zk2kraft-screenshots-"))
