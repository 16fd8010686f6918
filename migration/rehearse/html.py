"""report.html: the rehearsal's report as ONE self-contained page.

Contract: inline CSS and inline SVG (:mod:`migration.observability.svg`) only -- no
script, no ``<link>``, no ``url()``, no http(s) resource -- so it opens offline, attached
to a ticket or an e-mail. Every value from the report is HTML-escaped. A verdict banner opens it
(went through cleanly, or each problem named); each section then opens with one sentence
of what it means for production, so someone who never ran zk2kraft can read it. A
section the rehearsal never reached says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from migration.observability import svg
from migration.observability.svg import esc as _e

if TYPE_CHECKING:
    from migration.rehearse.report import Finding, Report

_CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d232b;
margin:0 auto;max-width:900px;padding:16px 24px 48px;background:#fff}
h1{font-size:24px;margin:8px 0 4px}h2{font-size:19px;margin:32px 0 6px;
border-bottom:1px solid #d5dae0;padding-bottom:4px}h3{font-size:16px;margin:18px 0 4px}
p.what{color:#46505c;margin:4px 0 10px}
.verdict{padding:12px 16px;border-radius:6px;margin:12px 0;font-weight:600}
.verdict.ok{background:#e3f4e6;border:1px solid #7cc08a}
.verdict.bad{background:#fbe6e6;border:1px solid #d88}
.verdict ul{margin:6px 0 0;font-weight:400}
table{border-collapse:collapse;width:100%;margin:6px 0 10px;font-size:14px}
th,td{border:1px solid #d5dae0;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f3f5f7}td.num{text-align:right;font-variant-numeric:tabular-nums}
table.kv th{width:34%}table.kv td.num{text-align:left}
.ok-cell{color:#1f7a34}.bad-cell{color:#b3261e;font-weight:600}
pre{background:#f3f5f7;border:1px solid #d5dae0;padding:8px 10px;overflow-x:auto;
font-size:13px;white-space:pre-wrap;word-break:break-all}
code{font-size:13px}.muted{color:#6b7580}
"""


def _n(value: float | None, unit: str = "") -> str:
    if value is None:
        return "—"
    text = f"{value:,}" if isinstance(value, int) else f"{value:,.3f}".rstrip("0").rstrip(".")
    return f"{text} {unit}".rstrip()


def _when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _yes(ok: bool | None, yes: str = "yes", no: str = "no") -> str:
    if ok is None:
        return '<td class="muted">—</td>'
    return f'<td class="ok-cell">{_e(yes)}</td>' if ok else f'<td class="bad-cell">{_e(no)}</td>'


def _table(head: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """``rows``' cells are HTML already (``<td>...</td>``)."""
    out = "".join(f"<tr>{''.join(r)}</tr>" for r in rows)
    if not out:
        return '<p class="muted">None.</p>'
    return "<table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + f"</tr>{out}</table>"


def _td(value: object, num: bool = False) -> str:
    return f'<td class="num">{_e(value)}</td>' if num else f"<td>{_e(value)}</td>"


def _kv(*pairs: tuple[str, str]) -> str:
    """Key and value table; values are HTML already."""
    rows = "".join(f"<tr><th>{_e(k)}</th>{v}</tr>" for k, v in pairs)
    return f'<table class="kv">{rows}</table>'


_NOT_REACHED = '<p class="muted">Not reached: the rehearsal stopped before this step.</p>'


def _section(title: str, what: str, body: str | None) -> str:
    content = _NOT_REACHED if body is None else body
    return f'<h2>{_e(title)}</h2><p class="what">{_e(what)}</p>{content}'


def _verdict(report: Report) -> str:
    if report.ok:
        return (
            '<div class="verdict ok">The rehearsal went through cleanly: every step of the '
            "migration worked on a copy of production's metadata.</div>"
        )
    items = "".join(f"<li>{_e(p)}</li>" for p in report.problems)
    return (
        f'<div class="verdict bad">The rehearsal found {len(report.problems)} '
        f"problem{'s' if len(report.problems) != 1 else ''}:<ul>{items}</ul></div>"
    )


_ENGINES = {"kafka": "Apache Kafka", "zk2kraft": "zk2kraft"}


def _source(report: Report) -> str | None:
    s, m = report.source, report.machine
    rows = [
        ("started", _td(_when(report.started))),
        ("finished", _td(_when(report.finished))),
        ("this machine", _td(f"{m.cpus} CPUs, {m.platform}, Python {m.python}")),
    ]
    if report.engine is not None:
        e = report.engine
        rows.append(("engine", _td(f"{_ENGINES[e.name]} {e.version}: {e.why}")))
    if s is not None:
        rows = [
            ("read from", _td(f"{s.name} ({'ZooKeeper' if s.kind == 'zookeeper' else 'files'})")),
            ("chroot", _td(s.chroot or "/")),
            ("cluster id", _td(s.cluster_id)),
            ("broker ids", _td(", ".join(str(b) for b in s.broker_ids))),
            ("znodes", _td(_n(s.znodes), True)),
            ("bytes", _td(_n(s.bytes), True)),
            ("read took", _td(_n(s.read_s, "s"), True)),
            *((k, _td(_n(v), True)) for k, v in s.counts.items()),
            *rows,
        ]
    return _kv(*rows)


def _phases(report: Report) -> str | None:
    if not report.phases:
        return None
    spans = [
        svg.Span(
            p.name,
            report.since_start(p.started),
            report.since_start(p.finished or report.finished),
            p.ok if p.finished is not None else None,
        )
        for p in report.phases
    ]
    rows = [
        [
            _td(p.name),
            _td(_n(p.seconds, "s"), True),
            _yes(p.ok if p.finished is not None else None),
            _td(p.detail),
        ]
        for p in report.phases
    ]
    return svg.timeline(spans) + _table(("phase", "took", "ok", "detail"), rows)


def _findings(findings: Sequence[Finding]) -> str:
    rows = [
        [_td(f.code), _td(f.message + (f" ({f.path})" if f.path else "")), _td(f.fix)]
        for f in findings
    ]
    return _table(("code", "what", "fix"), rows)


def _preflight(report: Report) -> str | None:
    p = report.preflight
    if p is None:
        return None
    verdict = (
        '<p class="ok-cell">No blocker: production\'s tree can be migrated as it is.</p>'
        if p.ok
        else '<p class="bad-cell">Blocked: fix each blocker on production before migrating.</p>'
    )
    return (
        f"{verdict}<h3>Blockers ({len(p.blockers)})</h3>{_findings(p.blockers)}"
        f"<h3>Warnings ({len(p.warnings)})</h3>{_findings(p.warnings)}"
    )


def _enable_migration(report: Report) -> str | None:
    e = report.enable_migration
    if e is None:
        return None
    settings = _table(("setting", "value"), ([_td(x.name), _td(x.value)] for x in e.settings))
    flagged = ", ".join(map(str, e.flagged)) or "none"
    return (
        _kv(
            ("brokers to restart", _td(", ".join(map(str, e.restart)) or "none")),
            ("registered with the flag already", _td(flagged)),
            ("runbook", f"<td><code>{_e(e.runbook)}</code></td>"),
        )
        + settings
    )


def _pause(report: Report) -> tuple[float, float] | None:
    c = report.copy
    if c is None:
        return None
    start = c.pause_started_s
    if start is None:
        copy_phase = next((p for p in report.phases if p.name == "copy"), None)
        if copy_phase is None:
            return None
        start = report.since_start(copy_phase.started)
    return start, start + c.write_pause_ms / 1000.0


def _copy(report: Report) -> str | None:
    c = report.copy
    if c is None:
        return None
    return _kv(
        ("records", _td(_n(c.records), True)),
        ("copy took", _td(_n(c.copy_ms, "ms"), True)),
        ("controllers' writes paused", _td(_n(c.write_pause_ms, "ms"), True)),
    ) + svg.bars(sorted(c.records_by_type.items()), "Records by type")


def _dual_write(report: Report) -> str | None:
    d = report.dual_write
    if d is None:
        return None
    pause = _pause(report)
    kinds = ", ".join(f"{k}: {v:,}" for k, v in sorted(d.by_kind.items()))
    return (
        _kv(
            ("admin changes", _td(_n(d.changes), True)),
            ("by kind", _td(kinds or "—")),
            ("errors", _td(_n(d.errors), True)),
            ("largest write-behind lag", _td(_n(d.max_lag, "records"), True)),
        )
        + "<h3>Write-behind lag</h3>"
        + svg.series([(t, float(v)) for t, v in d.lag], "Write-behind lag", "records", pause)
        + "<h3>Admin request latency</h3>"
        + svg.series(list(d.latency_ms), "Admin request latency", "ms", pause)
    )


def _restarts(report: Report) -> str | None:
    if not report.restarts:
        return None
    to = {"migrating": "migration enabled", "kraft": "KRaft mode", "zookeeper": "ZooKeeper mode"}
    rows = [
        [_td(r.broker, True), _td(to.get(r.to, r.to)), _td(_n(r.seconds, "s"), True)]
        for r in report.restarts
    ]
    return _table(("broker", "restarted into", "took"), rows)


def _audit(report: Report) -> str | None:
    a = report.audit
    if a is None:
        return None
    return _kv(
        ("agreed", _yes(a.ok)),
        ("differences", _td(_n(a.differences), True)),
        ("exit code", _td(a.exit_code, True)),
        ("took", _td(_n(a.seconds, "s"), True)),
        ("summary", _td(a.summary)),
    )


def _drill(report: Report) -> str | None:
    d = report.rollback_drill
    if d is None:
        return None
    rows = [[_td(f.code), _yes(f.ok, "passed", "failed"), _td(f.message)] for f in d.findings]
    return _kv(
        ("rolled back", _yes(d.ok)),
        ("from", _td(d.from_state)),
        ("took", _td(_n(d.seconds, "s"), True)),
        ("detail", _td(d.detail)),
    ) + _table(("check", "result", "message"), rows)


def _roll(report: Report) -> str | None:
    r = report.roll
    if r is None:
        return None
    return _kv(
        ("brokers", _td(", ".join(str(b) for b in r.brokers))),
        ("took", _td(_n(r.seconds, "s"), True)),
        ("offline partitions", _td(_n(r.offline_partitions), True)),
        ("metadata agreed throughout", _yes(r.metadata_agreed)),
    )


def _finalized(report: Report) -> str | None:
    f = report.finalized
    if f is None:
        return None
    return _kv(
        ("finalized", _yes(f.ok)),
        ("state", _td(f.state)),
        ("took", _td(_n(f.seconds, "s"), True)),
    )


def _list(items: Any) -> str:
    if not isinstance(items, list):
        return ""
    return "<ul>" + "".join(f"<li>{_e(i)}</li>" for i in items) + "</ul>"


def _part(estimate: dict[str, Any], key: str) -> dict[str, Any]:
    value = estimate.get(key)
    return value if isinstance(value, dict) else {}


def _estimate(report: Report) -> str | None:
    e = report.estimate
    if e is None:
        return None
    rolls, copy = _part(e, "rolls"), _part(e, "copy")
    rows = [
        ("records production's copy writes", _td(_n(e.get("records")), True)),
        ("this machine's copy rate", _td(_n(copy.get("records_per_s"), "records/s"), True)),
        ("this machine's write pause", _td(_n(copy.get("write_pause_ms"), "ms"), True)),
        ("rolls", _td(rolls.get("formula", "—"))),
        (
            "restarts, one at a time",
            _td(
                f"{_n(rolls.get('broker_restarts'))} of brokers, "
                f"{_n(rolls.get('controller_restarts'))} of controllers"
            ),
        ),
        ("rolls on this machine (lower bound)", _td(_n(rolls.get("local_seconds"), "s"), True)),
    ]
    return (
        f"<p>{_e(e.get('summary', ''))}</p>{_kv(*rows)}"
        f"<h3>Carries over to production</h3>{_list(e.get('carries_over'))}"
        f"<h3>Does not carry over</h3>{_list(e.get('does_not_carry_over'))}"
    )


def _runbook(report: Report) -> str | None:
    if not report.runbook:
        return None
    return "".join(
        f'<h3>{_e(s.title)}</h3><p class="muted"><code>{_e(s.runbook)}</code></p>'
        f"<pre>{_e(chr(10).join(s.commands))}</pre>"
        for s in report.runbook
    )


def render(report: Report) -> str:
    """The whole page for ``report`` (see the module doc)."""
    name = report.source.name if report.source is not None else "production"
    sections = [
        (
            "What was rehearsed",
            "The migration ran on a local copy of production's metadata, "
            "read once and read-only; production itself was not changed.",
            _source(report),
        ),
        (
            "Phase timeline",
            "Each step of the procedure as it ran here, in order: green went through, red failed.",
            _phases(report),
        ),
        (
            "Preflight",
            "Checks on production's own tree: a blocker must be fixed before "
            "migrating, a warning says what the migration will do that you may not expect.",
            _preflight(report),
        ),
        (
            "What step 3 will change",
            "Enabling the migration restarts each ZooKeeper-mode broker, one at a time, "
            "with these settings added to its server.properties (the last restart starts "
            "the copy); the rehearsal's local brokers went through the same restarts.",
            _enable_migration(report),
        ),
        (
            "The copy",
            "The controllers copy ZooKeeper's metadata into their log in one "
            "transaction; writes pause while they do. Record counts are production's exactly.",
            _copy(report),
        ),
        (
            "Dual-write under load",
            "After the copy, every metadata change is written to the "
            "log and then to ZooKeeper; the lag is how far ZooKeeper trails (the shaded band "
            "is the copy's write pause).",
            _dual_write(report),
        ),
        (
            "Broker restarts",
            "Each broker restarted in four rolls: with the migration enabled, back "
            "into ZooKeeper mode (the rollback drill), with the migration enabled again, and "
            "into KRaft mode; these local brokers hold metadata only, so the times are not "
            "your brokers'.",
            _restarts(report),
        ),
        (
            "Audit",
            "A full comparison of ZooKeeper with the metadata log: whether they agreed "
            "carries over to production.",
            _audit(report),
        ),
        (
            "Rollback drill",
            "The way back to ZooKeeper from dual-write, tried for real, then "
            "the migration run again: it shows you can still go back before finalizing.",
            _drill(report),
        ),
        (
            "Roll into KRaft mode",
            "Every broker restarted into KRaft mode, one at a time, "
            "with metadata checked to agree throughout.",
            _roll(report),
        ),
        (
            "Finalization",
            "The controllers restarted without the migration flag: after this "
            "there is no way back to ZooKeeper.",
            _finalized(report),
        ),
        (
            "What production will see",
            "Counts carry over exactly; times are this machine's and scale as said here.",
            _estimate(report),
        ),
        (
            "Production runbook",
            "The commands to run on production, in order, with its "
            "connect string and broker ids filled in.",
            _runbook(report),
        ),
    ]
    body = "".join(_section(t, w, b) for t, w, b in sections)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Migration rehearsal: {_e(name)}</title><style>{_CSS}{svg.CSS}</style>"
        f"</head><body><h1>Migration rehearsal: {_e(name)}</h1>"
        '<p class="what">A rehearsal of the ZooKeeper-to-KRaft migration by zk2kraft on a '
        "copy of this cluster's metadata.</p>"
        f"{_verdict(report)}{body}</body></html>\n"
    )
