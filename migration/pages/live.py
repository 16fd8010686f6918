"""The live pages: the controllers' migration page (:func:`render_controller`, of the
facts :func:`migration.server.page_model.page_model` builds) and the shell, stage strip
and lag chart it shares with the driven migration's page (:mod:`.driven`).

Contract: one self-contained document (``live.html.j2``). Inline CSS and SVG, one small
inline script that re-fetches the page every :data:`REFRESH_S` seconds and swaps its
``<main>`` for the new one (no second renderer, no flicker; the page works without it,
only not live): :data:`SCRIPT`, rendered once from ``refresh.js.j2`` and emitted as it
is, whose hash (:data:`SCRIPT_SOURCE`) is the only script the page's
Content-Security-Policy (:data:`CSP`) lets run. No ``<link>``, no ``src=``, no ``url()``,
no address but the active controller's page. Every text from outside (outcome sentences,
broker endpoints and racks, runbook commands) is escaped by the templates' autoescape
(:mod:`.env`).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from markupsafe import Markup

from migration.pages import svg
from migration.pages.env import clock, render, trusted

REFRESH_S = 3

SCRIPT = render("refresh.js.j2", refresh_ms=REFRESH_S * 1000)
"""The pages' one script, exactly as :func:`shell` emits it."""
_SHA256 = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
SCRIPT_SOURCE = f"'sha256-{_SHA256}'"
"""The inline script as a Content-Security-Policy ``script-src``: it, and nothing else."""

# The page loads nothing from elsewhere and runs no script but its own, and no other
# site may frame it (clickjacking): the browser is told so too (X-Frame-Options for
# browsers without frame-ancestors).
CSP = (
    f"default-src 'none'; style-src 'unsafe-inline'; script-src {SCRIPT_SOURCE}; "
    "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
HEADERS = (
    ("Content-Security-Policy", CSP),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
)
"""The live pages' response headers."""

STATES = (
    "ZooKeeper",
    "MigrationEligible",
    "MigrationReady",
    "MigrationActive",
    "MigrationFinished",
    "KRaft",
)
MODES = {"zookeeper": "ZooKeeper", "migrating": "migrating", "kraft": "KRaft"}
"""The brokers' modes as the controllers' page names them."""


def shell(title: str, heading: str, subtitle: str) -> dict[str, Any]:
    """The context ``live.html.j2`` takes (its text escaped there), the script included."""
    return {
        "title": title,
        "heading": heading,
        "subtitle": subtitle,
        "refresh_s": REFRESH_S,
        "script": trusted(SCRIPT),
    }


def lag_chart(samples: Sequence[Sequence[Any]]) -> Markup:
    """The write-behind lag's ``[[time, lag], ...]`` (oldest first) as the rehearsal's
    reports draw a series (:func:`.svg.series`)."""
    if not samples:
        return trusted('<p class="muted">no samples yet</p>')
    first = datetime.fromisoformat(samples[0][0])
    points = [  # a wall clock stepped back draws at the start, not off the chart
        (max(0.0, (datetime.fromisoformat(at) - first).total_seconds()), float(lag))
        for at, lag in samples
    ]
    since = f"seconds since {clock(samples[0][0])}"
    return trusted(svg.series(points, "Write-behind lag", "records", x_unit=since))


def progress(state: str | None) -> list[tuple[str, str]]:
    """The six states as strip cells: passed, current, still ahead."""
    cells, before = [], state in STATES
    for name in STATES:
        if name == state:
            cls, before = "current", False
        else:
            cls = "passed" if before else "ahead"
        cells.append((name, cls))
    return cells


def render_controller(model: dict[str, Any]) -> str:
    """The whole document for ``model`` (:func:`migration.server.page_model.page_model`)."""
    node = model["node_id"]
    return render(
        "controller.html.j2",
        m=model,
        progress=progress(model["state"]),
        modes=MODES,
        lag_chart=lag_chart,
        **shell(
            f"zk2kraft migration · controller {node}",
            "zk2kraft migration",
            f"cluster {model['cluster_id']} · controller {node}",
        ),
    )
