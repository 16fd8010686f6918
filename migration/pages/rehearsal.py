"""report.html: the rehearsal's report as ONE self-contained page (``rehearsal.html.j2``).

Contract: inline CSS and inline SVG (:mod:`.svg`) only -- no script, no ``<link>``, no
``url()``, no http(s) resource -- so it opens offline, attached to a ticket or an e-mail.
Every value from the report is escaped by the templates' autoescape (:mod:`.env`). A
verdict banner opens it (went through cleanly, or each problem named); each section then
opens with one sentence of what it means for production, so someone who never ran
zk2kraft can read it. A section the rehearsal never reached says so.

The report is a :class:`migration.rehearse.report.Report`, taken as the plain data it is
(this package sits below ``rehearse`` and does not import it): its fields as that module
declares them, and its ``ok`` and ``since_start``.
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from migration.pages import svg
from migration.pages.env import render as render_template
from migration.pages.env import trusted

ENGINES = {"kafka": "Apache Kafka", "zk2kraft": "zk2kraft"}
RESTARTED_INTO = {
    "migrating": "migration enabled",
    "kraft": "KRaft mode",
    "zookeeper": "ZooKeeper mode",
}


def _pause(report: Any) -> tuple[float, float] | None:
    """The copy's write pause in seconds since the start (shaded on the dual-write
    charts); None without a copy, or without a copy phase to date it."""
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


def charts(report: Any) -> dict[str, Markup | None]:
    """The report's charts, each None where its section was not reached."""
    spans = [
        svg.Span(
            p.name,
            report.since_start(p.started),
            report.since_start(p.finished or report.finished),
            p.ok if p.finished is not None else None,
        )
        for p in report.phases
    ]
    c, d, pause = report.copy, report.dual_write, _pause(report)
    lag = [(t, float(v)) for t, v in d.lag] if d is not None else []
    return {
        "timeline": trusted(svg.timeline(spans)) if spans else None,
        "records": None
        if c is None
        else trusted(svg.bars(sorted(c.records_by_type.items()), "Records by type")),
        "lag": None
        if d is None
        else trusted(svg.series(lag, "Write-behind lag", "records", pause)),
        "latency": None
        if d is None
        else trusted(svg.series(list(d.latency_ms), "Admin request latency", "ms", pause)),
    }


def render(report: Any) -> str:
    """The whole page for ``report`` (see the module doc)."""
    return render_template(
        "rehearsal.html.j2",
        r=report,
        name=report.source.name if report.source is not None else "production",
        charts=charts(report),
        engines=ENGINES,
        restarted_into=RESTARTED_INTO,
    )
