"""The driven migration's live page: ``/migration.json`` (:func:`driven_model`) and its
one renderer, ``/migration`` (:func:`render`), served by ``zk2kraft kafka
migrate|rollback --page`` and ``kafka status --serve`` (:mod:`.watch`).

Contract of ``/migration.json`` (version 1, documented in docs/kafka-clusters.md; fields
are only ever added): every key of ``kafka status --json``
(:func:`~migration.operate.status.driven_status`), plus ``version``, ``starting``
(false), ``generated`` (when that status was read), ``direction`` (``migrate`` or
``rollback``), ``phases`` (the plan's phases in order, each ``passed``, ``current`` or
``ahead``), ``gate`` (the gate waited on: its step, why, for how long), ``brokers_by_mode``
(a count for each of :data:`MODES`), ``write_behind`` (the lag and its recent samples)
and ``errors.status`` (why the newest read failed: the page then shows the last good
one). Nothing else of the cluster: ids, modes, state names, the inventory's path, the
way back's command -- no configuration value, no secret.

The HTML is :func:`migration.pages.driven.render_driven`'s (a template in the live
pages' shell: their CSS, their CSP-hashed refresh script; every text in it escaped).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from migration.operate.plan import FINAL_STEP, PHASES
from migration.operate.rollback_plan import ROLLBACK_PHASES
from migration.pages.driven import render_driven

VERSION = 1
MODES = ("kraft", "migrating", "zookeeper", "unregistered")
"""The brokers' modes (:func:`~migration.operate.status.broker_modes`)."""


def finished(status: dict[str, Any]) -> bool:
    """Whether the migration's last step is done (and no rollback begun)."""
    return not status["rolling_back"] and status["last_done"] == FINAL_STEP


def phases(status: dict[str, Any]) -> list[dict[str, str]]:
    """The phases of the run's direction in order, each ``passed``, ``current`` (the
    phase of the step under way, else of the last step done) or ``ahead``; every one
    passed once the migration's last step is done."""
    names = ROLLBACK_PHASES if status["rolling_back"] else PHASES
    order = list(names)
    done = finished(status)
    reached = order.index(status["phase"]) if status["phase"] in names else -1
    out = []
    for i, name in enumerate(order):
        state = "passed" if done or i < reached else "current" if i == reached else "ahead"
        out.append({"name": name, "title": names[name], "state": state})
    return out


def starting(reason: str) -> dict[str, Any]:
    """``/migration.json`` before the first reading of the cluster."""
    return {"version": VERSION, "starting": True, "reason": reason}


def driven_model(
    status: dict[str, Any],
    *,
    generated: str,
    lag: Sequence[tuple[str, int]] = (),
    waiting_s: float | None = None,
    failure: str | None = None,
) -> dict[str, Any]:
    """``/migration.json`` (module doc) for ``status`` (:func:`driven_status`'s dict),
    read at ``generated`` (ISO 8601); ``lag``: the write-behind lag's recent samples,
    ``(at, lag)`` oldest first; ``waiting_s``: how long the watcher has seen the run
    waiting at this gate; ``failure``: why the newest read failed (``status`` is then
    the last good one)."""
    counts = dict.fromkeys(MODES, 0)
    for b in status["brokers"]:
        counts[b["mode"]] = counts.get(b["mode"], 0) + 1
    waiting = status["waiting_for"]
    gate = None
    if waiting is not None and status["step"] is not None:
        seconds = None if waiting_s is None else round(waiting_s, 1)
        gate = {"step": status["step"], "waiting_for": waiting, "seconds": seconds}
    return status | {
        "version": VERSION,
        "starting": False,
        "generated": generated,
        "direction": "rollback" if status["rolling_back"] else "migrate",
        "phases": phases(status),
        "gate": gate,
        "brokers_by_mode": counts,
        "write_behind": {
            "lag": status["zk_write_behind_lag"],
            "samples": [[at, n] for at, n in lag],
        },
        "errors": status["errors"] | {"status": failure},
    }


def render(model: dict[str, Any]) -> str:
    """The whole document for ``model`` (:func:`driven_model`, or :func:`starting`)."""
    return render_driven(model, finalized=not model["starting"] and finished(model))
