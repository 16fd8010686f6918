"""The driven migration's live page (``zk2kraft kafka migrate|rollback --page``, ``kafka
status --serve``): :func:`render_driven`, the one renderer of the facts
:func:`migration.operate.page.driven_model` builds, in the live pages' shell
(:mod:`.live`: its CSS, its CSP-hashed refresh script).

Contract: as :mod:`.live`'s -- self-contained, every text in it escaped by the templates'
autoescape (:mod:`.env`).
"""

from __future__ import annotations

from typing import Any

from migration.pages.env import clock, render
from migration.pages.live import lag_chart, shell

MODES = {"kraft": "KRaft", "migrating": "migrating", "zookeeper": "ZooKeeper",
         "unregistered": "unregistered"}  # fmt: skip
"""The brokers' modes as the driven page names them."""


def render_driven(model: dict[str, Any], *, finalized: bool = False) -> str:
    """The whole document for ``model`` (``driven_model``'s, or ``starting``'s);
    ``finalized``: the migration's last step is done (the headline says so)."""
    title = f"zk2kraft kafka {model.get('direction', 'migrate')}"
    if model["starting"]:
        subtitle = "reading the cluster"
        stages: list[tuple[str, str]] = []
    else:
        subtitle = f"inventory {model['inventory']} · read {clock(model['generated'])}"
        stages = [(p["name"], p["state"]) for p in model["phases"]]
    return render(
        "driven.html.j2",
        m=model,
        finalized=finalized,
        stages=stages,
        modes=MODES,
        lag_chart=lag_chart,
        **shell(title, title, subtitle),
    )
