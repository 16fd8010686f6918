"""Inline SVG charts for the pages zk2kraft writes -- the rehearsal's report.html and
the controllers' live migration page -- drawn in Python: no script, no external resource.

Each function returns one ``<svg>`` element (no ``xmlns``: inline SVG in HTML needs
none) sized by its ``viewBox`` to the page's width; every text in it is HTML-escaped
with :func:`~migration.pages.env.esc`, the pages' one escape. Styles come from the
page's classes (``bar-ok``, ``bar-failed``, ``pause``, ...): ``templates/charts.css``,
which each page's template inlines.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from migration.pages.env import esc

WIDTH = 760
MAX_POINTS = 1500
"""A series longer than this is thinned to it (each bucket's highest value kept, so a
peak of lag or latency is never smoothed away): a page stays small after hours."""


@dataclass(frozen=True)
class Span:
    """A phase on the timeline: seconds since the start; ``ok`` None while unfinished."""

    name: str
    start: float
    end: float
    ok: bool | None


SINCE_START = "seconds since the rehearsal started"


def _num(value: float) -> str:
    """A coordinate: two decimals at most."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _label(value: float) -> str:
    """A tick or a duration: three significant figures, never an exponent."""
    if value == int(value):
        return f"{int(value):,}"
    decimals = max(0, 2 - math.floor(math.log10(abs(value))))
    return f"{value:,.{decimals}f}".rstrip("0").rstrip(".")


def nice_ticks(high: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least ``high`` (``high`` <= 0: 0 and 1)."""
    if high <= 0 or not math.isfinite(high):
        return [0.0, 1.0]
    raw = high / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    ticks = [0.0]
    while ticks[-1] < high:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def thin(
    points: Sequence[tuple[float, float]], limit: int = MAX_POINTS
) -> list[tuple[float, float]]:
    """At most about ``limit`` points: consecutive buckets, each as its highest point."""
    if len(points) <= limit:
        return list(points)
    size = math.ceil(len(points) / limit)
    return [max(points[i : i + size], key=lambda p: p[1]) for i in range(0, len(points), size)]


def _svg(height: float, label: str, body: list[str]) -> str:
    return (
        f'<svg viewBox="0 0 {WIDTH} {_num(height)}" width="100%" role="img" '
        f'aria-label="{esc(label)}"><title>{esc(label)}</title>' + "".join(body) + "</svg>"
    )


def _x_axis(left: float, right: float, y: float, ticks: list[float], unit: str) -> list[str]:
    top, span = ticks[-1], right - left
    out = [f'<line class="axis" x1="{left}" y1="{_num(y)}" x2="{right}" y2="{_num(y)}"/>']
    for t in ticks:
        x = left + span * t / top
        out.append(
            f'<line class="grid" x1="{_num(x)}" y1="{_num(y)}" x2="{_num(x)}" y2="{_num(y + 4)}"/>'
            f'<text class="tick" x="{_num(x)}" y="{_num(y + 16)}" text-anchor="middle">'
            f"{esc(_label(t))}</text>"
        )
    out.append(
        f'<text class="tick" x="{right}" y="{_num(y + 30)}" text-anchor="end">{esc(unit)}</text>'
    )
    return out


def timeline(spans: Sequence[Span], label: str = "Phase timeline") -> str:
    """A Gantt chart: one row a phase, its bar from its start to its end in seconds."""
    left, right, row = 190.0, WIDTH - 70.0, 22.0
    ticks = nice_ticks(max((s.end for s in spans), default=0.0))
    height = 10 + row * max(len(spans), 1) + 36
    body: list[str] = []
    for i, s in enumerate(spans):
        y = 10 + i * row
        x0 = left + (right - left) * s.start / ticks[-1]
        x1 = left + (right - left) * s.end / ticks[-1]
        cls = "bar-running" if s.ok is None else "bar-ok" if s.ok else "bar-failed"
        body.append(
            f'<text class="name" x="{left - 8}" y="{_num(y + 14)}" text-anchor="end">'
            f"{esc(s.name)}</text>"
            f'<rect class="{cls}" x="{_num(x0)}" y="{_num(y + 3)}" '
            f'width="{_num(max(x1 - x0, 1.5))}" height="{_num(row - 6)}">'
            f"<title>{esc(s.name)}: {esc(_label(s.end - s.start))} s</title></rect>"
            f'<text class="value" x="{_num(max(x1, x0 + 1.5) + 4)}" y="{_num(y + 14)}">'
            f"{esc(_label(round(s.end - s.start, 3)))} s</text>"
        )
    if not spans:
        body.append(f'<text class="tick" x="{left}" y="24">no phase recorded</text>')
    body += _x_axis(left, right, height - 36, ticks, SINCE_START)
    return _svg(height, label, body)


def series(
    points: Sequence[tuple[float, float]],
    label: str,
    unit: str,
    pause: tuple[float, float] | None = None,
    *,
    pause_label: str = "write pause (copy)",
    x_unit: str = SINCE_START,
) -> str:
    """A line over time (``x_unit``: seconds since a start), ``pause`` (start, end) shaded
    and named. Thinned to :data:`MAX_POINTS`, each bucket's peak kept."""
    points = thin(points)
    left, right, top, plot = 60.0, WIDTH - 20.0, 22.0, 150.0
    bottom = top + plot
    x_high = max([t for t, _ in points] + ([pause[1]] if pause else []), default=0.0)
    xt = nice_ticks(x_high)
    yt = nice_ticks(max((v for _, v in points), default=0.0), 4)

    def x(t: float) -> float:
        return left + (right - left) * t / xt[-1]

    def y(v: float) -> float:
        return bottom - plot * v / yt[-1]

    body = [f'<text class="tick" x="{left}" y="14">{esc(unit)}</text>']
    for v in yt:
        body.append(
            f'<line class="grid" x1="{left}" y1="{_num(y(v))}" x2="{right}" y2="{_num(y(v))}"/>'
            f'<text class="tick" x="{left - 6}" y="{_num(y(v) + 4)}" text-anchor="end">'
            f"{esc(_label(v))}</text>"
        )
    if pause is not None:
        x0, x1 = x(pause[0]), x(pause[1])
        body.append(
            f'<rect class="pause" x="{_num(x0)}" y="{top}" width="{_num(max(x1 - x0, 2.0))}" '
            f'height="{plot}"><title>{esc(pause_label)}</title></rect>'
            f'<text class="pause-label" x="{_num(x0 + 3)}" y="{_num(top + 12)}">'
            f"{esc(pause_label)}</text>"
        )
    if len(points) == 1:
        t, v = points[0]
        body.append(f'<circle class="line-dot" cx="{_num(x(t))}" cy="{_num(y(v))}" r="3"/>')
    elif points:
        coords = " ".join(f"{_num(x(t))},{_num(y(v))}" for t, v in points)
        body.append(f'<polyline class="line" points="{coords}"/>')
    else:
        body.append(f'<text class="tick" x="{left + 10}" y="{_num(top + 40)}">no samples</text>')
    body += _x_axis(left, right, bottom, xt, x_unit)
    return _svg(bottom + 36, label, body)


def bars(items: Sequence[tuple[str, int]], label: str) -> str:
    """Horizontal bars, largest first, each with its count."""
    ordered = sorted(items, key=lambda kv: (-kv[1], kv[0]))
    left, right, row = 230.0, WIDTH - 90.0, 20.0
    high = max((v for _, v in ordered), default=0) or 1
    body: list[str] = []
    for i, (name, value) in enumerate(ordered):
        y = 6 + i * row
        w = (right - left) * value / high
        body.append(
            f'<text class="name" x="{left - 8}" y="{_num(y + 13)}" text-anchor="end">'
            f"{esc(name)}</text>"
            f'<rect class="bar-count" x="{left}" y="{_num(y + 3)}" width="{_num(max(w, 1.0))}" '
            f'height="{_num(row - 6)}"/>'
            f'<text class="value" x="{_num(left + max(w, 1.0) + 4)}" y="{_num(y + 13)}">'
            f"{value:,}</text>"
        )
    if not ordered:
        body.append(f'<text class="tick" x="{left}" y="20">none</text>')
    return _svg(12 + row * max(len(ordered), 1), label, body)
