"""The live migration page's HTML: the one renderer, server side, of the facts
:func:`.page_model.page_model` builds (``/migration.json`` is the same facts). Its
document shell (:func:`document`) and stage strip (:func:`strip`) also frame the driven
migration's page (:mod:`migration.operate.page`), under the same contract.

Contract: one self-contained document. Inline CSS and SVG, one small inline script that
re-fetches the page every :data:`REFRESH_S` seconds and swaps its ``<main>`` for the new
one (no second renderer, no flicker; the page works without it, only not live): a
constant, whose hash (:data:`SCRIPT_SOURCE`) is the only script the page's
Content-Security-Policy lets run. No ``<link>``, no ``src=``, no ``url()``, no address
but the active controller's page.
Every text from outside (outcome sentences, broker endpoints and racks, runbook commands)
is HTML-escaped.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from migration.observability import svg
from migration.observability.svg import esc as _e

REFRESH_S = 3

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1b1f24;
background:#f6f7f9}
header{background:#1f2a44;color:#fff;padding:14px 24px;display:flex;gap:16px;align-items:baseline}
header h1{font-size:18px;margin:0}header .sub{opacity:.8}#live{margin-left:auto;font-size:12px}
main{padding:16px 24px;display:grid;grid-template-columns:repeat(auto-fit,minmax(460px,1fr));
gap:16px}
section{background:#fff;border:1px solid #d8dde3;border-radius:6px;padding:12px 16px}
section.wide{grid-column:1/-1}h2{font-size:15px;margin:0 0 8px}
.big{font-size:26px;font-weight:600}.phase{font-size:15px;color:#445}
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:3px 8px 3px 0;
border-bottom:1px solid #eef0f3;vertical-align:top}th{font-weight:600;color:#445}
.tag{display:inline-block;white-space:nowrap;padding:1px 7px;border-radius:9px;font-size:12px;
font-weight:600}
.zookeeper{background:#fde7c8;color:#7a4500}.migrating{background:#dbe8ff;color:#173f8a}
.kraft{background:#d7f2dd;color:#155d27}.fenced{background:#ffd9d9;color:#8a1313}
.ok{color:#155d27}.bad{color:#8a1313}.muted{color:#667}
pre{background:#0f1623;color:#e6edf3;padding:8px 10px;border-radius:4px;white-space:pre-wrap;
overflow-wrap:anywhere;font-size:12.5px;margin:6px 0}
.steps{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:16px}
.steps>div,section{min-width:0}td.ep{overflow-wrap:anywhere}#lag svg{max-width:760px}
.note{font-size:12px;color:#667}a{color:#1746a2}
.strip td{text-align:center;font-size:12px;padding:4px;border:1px solid #fff}
.strip .passed{background:#d7f2dd;color:#155d27}.strip .current{background:#1746a2;color:#fff;
font-weight:600}.strip .ahead{background:#eef0f3;color:#667}
"""

_SCRIPT = (
    "(function(){var live=document.getElementById('live');"
    "setInterval(function(){fetch(location.pathname,{cache:'no-store'})"
    ".then(function(r){return r.text()}).then(function(t){"
    "var d=new DOMParser().parseFromString(t,'text/html');"
    "var m=d.querySelector('main');if(m){document.querySelector('main').replaceWith(m);"
    "live.textContent='live \\u00b7 updated '+new Date().toLocaleTimeString()}"
    "}).catch(function(){live.textContent='not reachable: showing the last answer'})"
    "}," + str(REFRESH_S * 1000) + ")})();"
)
_SHA256 = base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode()
SCRIPT_SOURCE = f"'sha256-{_SHA256}'"
"""The inline script as a Content-Security-Policy ``script-src``: it, and nothing else."""

STATES = (
    "ZooKeeper",
    "MigrationEligible",
    "MigrationReady",
    "MigrationActive",
    "MigrationFinished",
    "KRaft",
)


def clock(iso: str) -> str:
    """An ISO 8601 UTC time as people read it, to the second."""
    return iso[:19].replace("T", " ") + " UTC"


def when(iso: str | None) -> str:
    """An ISO 8601 UTC time as HTML (:func:`clock`'s form), "—" for None."""
    return "—" if iso is None else _e(clock(iso))


def _duration(seconds: float) -> str:
    s = int(seconds)
    if s < 60:
        return f"{seconds:.1f} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def lag_chart(samples: Sequence[Sequence[Any]]) -> str:
    """The write-behind lag's ``[[time, lag], ...]`` (oldest first) as the rehearsal's
    reports draw a series (:func:`migration.observability.svg.series`)."""
    if not samples:
        return '<p class="muted">no samples yet</p>'
    first = datetime.fromisoformat(samples[0][0])
    points = [  # a wall clock stepped back draws at the start, not off the chart
        (max(0.0, (datetime.fromisoformat(at) - first).total_seconds()), float(lag))
        for at, lag in samples
    ]
    since = f"seconds since {clock(samples[0][0])}"
    return svg.series(points, "Write-behind lag", "records", x_unit=since)


def strip(cells: Sequence[tuple[str, str]]) -> str:
    """Named stages in a row, each ``(name, class)``: ``passed``, ``current`` or
    ``ahead`` (the page's CSS colours them)."""
    tds = "".join(f'<td class="{_e(cls)}">{_e(name)}</td>' for name, cls in cells)
    return f'<table class="strip"><tr>{tds}</tr></table>'


def _progress(state: str) -> str:
    """The six states as a strip: passed, current, still ahead."""
    cells, before = [], state in STATES
    for name in STATES:
        if name == state:
            cls, before = "current", False
        else:
            cls = "passed" if before else "ahead"
        cells.append((name, cls))
    return strip(cells)


def _step(title: str, step: dict[str, Any] | None, empty: str) -> str:
    if step is None:
        return f"<div><h2>{_e(title)}</h2><p class='bad'><b>{_e(empty)}</b></p></div>"
    commands = (
        f"<pre>{_e(chr(10).join(step['commands']))}</pre>"
        if step["commands"]
        else "<p class='muted'>Nothing to run: the runbook says what to do.</p>"
    )
    return (
        f"<div><h2>{_e(title)}</h2><p><b>{_e(step['title'])}</b> "
        f'<span class="muted">({_e(step["runbook"])})</span></p>{commands}</div>'
    )


def _brokers(brokers: list[dict[str, Any]]) -> str:
    if not brokers:
        return '<p class="muted">no broker known yet</p>'
    counts: dict[str, int] = {}
    rows = []
    for b in brokers:
        counts[b["mode"]] = counts.get(b["mode"], 0) + 1
        fenced = b["fenced"]
        shown = "—" if fenced is None else (_FENCED if fenced else "unfenced")
        rows.append(
            f'<tr class="broker" data-broker="{b["id"]}" data-mode="{_e(b["mode"])}">'
            f"<td>{b['id']}</td>"
            f'<td><span class="tag {_e(b["mode"])}">{_e(_MODE[b["mode"]])}</span></td>'
            f"<td>{shown}</td>"
            f"<td class='ep'>{_e(', '.join(b['endpoints']))}</td>"
            f"<td class='ep'>{_e(b['rack'] or '')}</td></tr>"
        )
    summary = ", ".join(f"{n} {_MODE[m]}" for m, n in sorted(counts.items()))
    return (
        f"<p>{_e(summary)}</p><table><tr><th>broker</th><th>mode</th><th>fenced</th>"
        f"<th>endpoints</th><th>rack</th></tr>{''.join(rows)}</table>"
    )


_MODE = {"zookeeper": "ZooKeeper", "migrating": "migrating", "kraft": "KRaft"}
_FENCED = '<span class="tag fenced">fenced</span>'


def _timeline(m: dict[str, Any]) -> str:
    rows = "".join(
        f"<tr><td>{when(t['at'])}</td><td>{_e(t['state'])}</td><td>{_e(t['driver_phase'])}</td>"
        f"<td>{_duration(t['seconds'])}{' (now)' if i == len(m['timeline']) - 1 else ''}</td></tr>"
        for i, t in enumerate(m["timeline"])
    )
    return (
        f"<table><tr><th>reached at</th><th>state</th><th>driver phase</th><th>held for</th></tr>"
        f"{rows}</table>"
        f'<p class="note">As this controller saw it since its process started '
        f"({when(m['process_started'])}); a state held under a second may be missing.</p>"
    )


def _controllers(m: dict[str, Any]) -> str:
    c = m["controller"]
    rows = "".join(
        f"<tr><td>{v['node_id']}{' (active)' if v['node_id'] == m['node_id'] else ''}</td>"
        f"<td>{v['log_end_offset']}</td><td>{'—' if v['lag'] is None else v['lag']}</td>"
        f"<td>{when(v['last_fetch'])}</td></tr>"
        for v in m["voters"]
    )
    table = (
        f"<table><tr><th>voter</th><th>log end offset</th><th>lag</th><th>last fetch</th></tr>"
        f"{rows}</table><p class='note'>As the leader tracks its voters.</p>"
        if rows
        else ""
    )
    return (
        f"<p>Active controller <b>{m['active_controller']}</b>, KRaft epoch "
        f"<b>{c['kraft_epoch']}</b>, high watermark {c['high_watermark']}.</p>{table}"
    )


def _znode_and_audit(m: dict[str, Any]) -> str:
    z = m["migration_znode"]
    absent = (
        "finalized: ZooKeeper is no longer read or written"
        if m["no_way_back"]
        else "not written yet"
    )
    zn = (
        f"<p class='muted'>/migration: {absent}</p>"
        if not z
        else f"<p>/migration: kraftMetadataOffset <b>{z.get('kraft_metadata_offset')}</b>, "
        f"kraftMetadataEpoch {z.get('kraft_metadata_epoch')}, kraftControllerId "
        f"{z.get('kraft_controller_id')}, kraftControllerEpoch "
        f"{z.get('kraft_controller_epoch')}</p>"
    )
    a = m["audit"]
    if a is None:
        au = "<p class='muted'>No audit reported to this controller since it started.</p>"
    else:
        verdict = (
            "<span class='ok'>consistent</span>"
            if a["consistent"]
            else f"<span class='bad'>{a['differences']} difference(s)</span>"
        )
        au = (
            f"<p>Last audit: <b>{verdict}</b> at log offset {a['offset']} (log end "
            f"{a['log_end_offset']}), finished {when(a['finished'])}, took "
            f"{float(a['seconds']):.1f} s.</p>"
        )
    epoch = m["zk_controller_epoch"]
    claim = (
        f"<p>ZooKeeper controller epoch {epoch} (this controller's claim)</p>" if epoch >= 0 else ""
    )
    return zn + claim + au


def _active_main(m: dict[str, Any]) -> str:
    lag = m["write_behind"]
    no_way_back = "No way back: the migration is finalized." if m["no_way_back"] else "—"
    return (
        f'<main data-state="{_e(m["state"])}" data-phase="{_e(m["driver_phase"])}">'
        f'<section class="wide"><div class="big" id="state">{_e(m["state"])}</div>'
        f'<div class="phase">driver phase <b id="phase">{_e(m["driver_phase"])}</b> · '
        f"ZkMigrationState {_e(m['zk_migration_state'])}</div>{_progress(m['state'])}"
        f'<p id="outcome">{_e(m["outcome"])}</p></section>'
        f'<section class="wide" id="what-now"><div class="steps">'
        f"{_step('What now', m['next_step'], 'nothing left to do')}"
        f"{_step('The way back valid now', m['rollback'], no_way_back)}</div>"
        f'<p class="note">Commands as in the runbooks, their variables unfilled '
        f"(runbooks/README.md).</p></section>"
        f'<section class="wide" id="brokers"><h2>Brokers</h2>{_brokers(m["brokers"])}</section>'
        f"<section><h2>Controllers</h2>{_controllers(m)}</section>"
        f"<section><h2>/migration and the audit</h2>{_znode_and_audit(m)}</section>"
        f'<section class="wide" id="lag"><h2>Write-behind lag (last 10 minutes)</h2><p>now '
        f"<b>{lag['lag']}</b> record(s) not yet in ZooKeeper</p>"
        f"{lag_chart(lag['samples'])}</section>"
        f'<section class="wide"><h2>Timeline</h2>{_timeline(m)}</section>'
        f"</main>"
    )


def _standby_main(m: dict[str, Any]) -> str:
    leader = m["active_controller"]
    if leader is None:
        where = "<p class='bad'>No active controller is known (an election?).</p>"
    elif m["active_page"]:
        where = (
            f'<p>The active controller is <b id="active">{leader}</b>: '
            f'<a id="active-link" href="{_e(m["active_page"])}">its migration page</a>.</p>'
        )
    else:
        where = (
            f'<p>The active controller is <b id="active">{leader}</b>; its page address '
            "is not known yet (it has no metrics port, or did not answer).</p>"
        )
    c = m["controller"]
    return (
        f'<main data-state="standby"><section class="wide"><div class="big">Not the active '
        f"controller</div>{where}<p>Controller {m['node_id']}: {_e(c['raft_state'])}, "
        f"KRaft epoch {c['kraft_epoch']}, high watermark {c['high_watermark']}.</p>"
        f"</section></main>"
    )


def document(title: str, heading: str, subtitle: str, main: str, *, css: str = "") -> str:
    """A whole page around ``main`` (one ``<main>`` element, already HTML): the pages'
    head (their CSS, the charts', then ``css``, a constant of the caller's), a header of
    ``heading`` and ``subtitle``, and the refresh script of the module doc. ``title``,
    ``heading`` and ``subtitle`` are text, escaped here."""
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width'>"
        f"<title>{_e(title)}</title>"
        f"<style>{_CSS}{svg.CSS}{css}</style></head><body><header><h1>{_e(heading)}</h1>"
        f"<span class='sub'>{_e(subtitle)}</span><span id='live'>refreshes every {REFRESH_S} s"
        f"</span></header>{main}<script>{_SCRIPT}</script></body></html>"
    )


def render(model: dict[str, Any]) -> str:
    """The whole document for ``model`` (:func:`.page_model.page_model`)."""
    main = _active_main(model) if model["is_active"] else _standby_main(model)
    node = model["node_id"]
    return document(
        f"zk2kraft migration · controller {node}",
        "zk2kraft migration",
        f"cluster {model['cluster_id']} · controller {node}",
        main,
    )
