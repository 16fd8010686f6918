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

The HTML is :mod:`migration.server.page_html`'s document (its CSS, its CSP-hashed refresh
script) around this page's own ``<main>``; every text in it is escaped
(:func:`~migration.observability.svg.esc`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from migration.observability.svg import esc as _e
from migration.operate.plan import FINAL_STEP, PHASES
from migration.operate.rollback_plan import ROLLBACK_PHASES
from migration.server.page_html import clock, document, lag_chart, strip, when

VERSION = 1
MODES = ("kraft", "migrating", "zookeeper", "unregistered")
"""The brokers' modes (:func:`~migration.operate.status.broker_modes`)."""
_MODE = {"kraft": "KRaft", "migrating": "migrating", "zookeeper": "ZooKeeper",
         "unregistered": "unregistered"}  # fmt: skip
_CSS = ".unregistered{background:#ffd9d9;color:#8a1313}"


def phases(status: dict[str, Any]) -> list[dict[str, str]]:
    """The phases of the run's direction in order, each ``passed``, ``current`` (the
    phase of the step under way, else of the last step done) or ``ahead``; every one
    passed once the migration's last step is done."""
    names = ROLLBACK_PHASES if status["rolling_back"] else PHASES
    order = list(names)
    finished = not status["rolling_back"] and status["last_done"] == FINAL_STEP
    reached = order.index(status["phase"]) if status["phase"] in names else -1
    out = []
    for i, name in enumerate(order):
        state = "passed" if finished or i < reached else "current" if i == reached else "ahead"
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


def _headline(m: dict[str, Any]) -> str:
    done = m["last_done"] == FINAL_STEP and not m["rolling_back"]
    phase = "finalized" if done else m["phase"] or "not started"
    step = m["step"]
    under_way = (
        f"step <b id='step'>{_e(step)}</b> under way"
        if step
        else "no step under way (the run is not running, or between steps)"
    )
    return (
        f'<section class="wide"><div class="big" id="phase">{_e(phase)}'
        f"{' (rolling back)' if m['rolling_back'] else ''}</div>"
        f'<div class="phase">{under_way} · {m["steps_done"]} step(s) done, the last '
        f"{_e(m['last_done'] or '—')} · the journal updated {when(m['updated'])}</div>"
        f"{strip([(p['name'], p['state']) for p in m['phases']])}</section>"
    )


def _gate(m: dict[str, Any]) -> str:
    gate = m["gate"]
    if gate is None:
        return "<p class='muted'>No gate is closed.</p>"
    seconds = gate["seconds"]
    since = "" if seconds is None else f" (seen closed for {seconds:g} s)"
    return (
        f"<p>Waiting at <b id='gate'>{_e(gate['step'])}</b>{since}:</p>"
        f"<p class='bad' id='waiting-for'>{_e(gate['waiting_for'])}</p>"
    )


def _way_back(m: dict[str, Any]) -> str:
    if m["way_back"] is None:
        return "<p class='bad'><b>None: the migration is finalized.</b></p>"
    return f"<pre id='way-back'>{_e(m['way_back'])}</pre>"


def _brokers(m: dict[str, Any]) -> str:
    counts = ", ".join(f"{n} {_MODE.get(mode, mode)}" for mode, n in m["brokers_by_mode"].items())
    rows = "".join(
        f'<tr class="broker" data-broker="{b["id"]}" data-mode="{_e(b["mode"])}">'
        f'<td>{b["id"]}</td><td><span class="tag {_e(b["mode"])}">'
        f"{_e(_MODE.get(b['mode'], b['mode']))}</span></td></tr>"
        for b in m["brokers"]
    )
    return (
        f"<p>{_e(counts)}</p><table><tr><th>broker</th><th>mode</th></tr>{rows}</table>"
        "<p class='note'>As the cluster reports them: KRaft (registered with the controllers), "
        "migrating (a ZooKeeper-mode broker registered with them too), ZooKeeper "
        "(in /brokers/ids only), unregistered.</p>"
    )


def _kafka(m: dict[str, Any]) -> str:
    audit = m["last_audit"]
    if audit is None:
        seen = "<p class='muted'>No audit made by the run yet.</p>"
    else:
        cls = "ok" if audit["verdict"] == "CONSISTENT" else "bad"
        seen = (
            f"<p>Last audit: <b class='{cls}'>{_e(audit['verdict'])}</b> at "
            f"{when(audit['at'])} ({_e(audit['step'])})</p>"
        )
    return f"<p>ZkMigrationState <b>{_e(m['zk_migration_state'] or 'not read')}</b></p>{seen}"


def _errors(m: dict[str, Any]) -> str:
    rows = "".join(
        f"<li>{_e(part)} not read: {_e(why)}</li>" for part, why in m["errors"].items() if why
    )
    if not rows:
        return ""
    return f'<section class="wide" id="errors"><ul class="bad">{rows}</ul></section>'


def render(model: dict[str, Any]) -> str:
    """The whole document for ``model`` (:func:`driven_model`, or :func:`starting`)."""
    title = f"zk2kraft kafka {model.get('direction', 'migrate')}"
    if model["starting"]:
        main = (
            '<main data-phase="starting"><section class="wide"><div class="big">Starting'
            f"</div><p>{_e(model['reason'])}</p></section></main>"
        )
        return document(title, title, "reading the cluster", main, css=_CSS)
    lag = model["write_behind"]
    main = (
        f'<main data-phase="{_e(model["phase"] or "")}" data-step="{_e(model["step"] or "")}">'
        f"{_headline(model)}"
        f"<section><h2>The gate waited on</h2>{_gate(model)}</section>"
        f'<section id="way-back-section"><h2>The way back valid now</h2>{_way_back(model)}'
        "</section>"
        f'<section id="brokers"><h2>Brokers by mode</h2>{_brokers(model)}</section>'
        f"<section><h2>Kafka's migration and the audit</h2>{_kafka(model)}</section>"
        f'<section class="wide" id="lag"><h2>Write-behind lag</h2><p>now <b>'
        f"{'not read' if lag['lag'] is None else lag['lag']}</b> record(s) committed that "
        f"ZooKeeper does not hold yet</p>{lag_chart(lag['samples'])}</section>"
        f"{_errors(model)}</main>"
    )
    subtitle = f"inventory {model['inventory']} · read {clock(model['generated'])}"
    return document(title, title, subtitle, main, css=_CSS)
