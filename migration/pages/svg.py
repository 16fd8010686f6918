"""Inline SVG charts for the pages zk2kraft writes -- the rehearsal's report.html and
the two live migration pages (the controllers', the driven migration's) -- drawn by a
template (charts.svg.j2) from geometry computed here: no script, no external resource.

Each function returns one ``<svg>`` element (no ``xmlns``: inline SVG in HTML needs
none) sized by its ``viewBox`` to the page's width, drawn by a macro of
``templates/charts.svg.j2``: this module computes the geometry (every coordinate as it
is printed), the template places it, every text in it escaped by the templates'
autoescape (:mod:`.env`). Styles come from the page's classes (``bar-ok``,
``bar-failed``, ``pause``, ...): ``templates/charts.css``, which each page's template
inlines.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from migration.pages.env import environment

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


def _draw(macro: str, chart: dict[str, Any]) -> str:
    """``chart`` drawn by the macro ``macro`` of ``charts.svg.j2``."""
    drawn = getattr(environment().get_template("charts.svg.j2").module, macro)(chart)
    return str(drawn)


def _frame(height: float, label: str) -> dict[str, Any]:
    """What every chart's ``<svg>`` takes: its size and its label (text)."""
    return {"width": WIDTH, "height": _num(height), "label": label}


def _x_axis(left: float, right: float, y: float, ticks: list[float], unit: str) -> dict[str, Any]:
    """The time axis from ``left`` to ``right`` at ``y``: ``ticks`` (0 to the last) and
    the ``unit`` under them."""
    top, span = ticks[-1], right - left
    return {
        "left": left,
        "right": right,
        "y": _num(y),
        "tick_y": _num(y + 4),
        "label_y": _num(y + 16),
        "unit_y": _num(y + 30),
        "ticks": [(_num(left + span * t / top), _label(t)) for t in ticks],
        "unit": unit,
    }


def timeline(spans: Sequence[Span], label: str = "Phase timeline") -> str:
    """A Gantt chart: one row a phase, its bar from its start to its end in seconds."""
    left, right, row = 190.0, WIDTH - 70.0, 22.0
    ticks = nice_ticks(max((s.end for s in spans), default=0.0))
    height = 10 + row * max(len(spans), 1) + 36
    rows = []
    for i, s in enumerate(spans):
        y = 10 + i * row
        x0 = left + (right - left) * s.start / ticks[-1]
        x1 = left + (right - left) * s.end / ticks[-1]
        rows.append(
            {
                "name": s.name,
                "cls": "bar-running" if s.ok is None else "bar-ok" if s.ok else "bar-failed",
                "text_y": _num(y + 14),
                "x": _num(x0),
                "y": _num(y + 3),
                "w": _num(max(x1 - x0, 1.5)),
                "h": _num(row - 6),
                "span": _label(s.end - s.start),
                "value_x": _num(max(x1, x0 + 1.5) + 4),
                "value": _label(round(s.end - s.start, 3)),
            }
        )
    axis = _x_axis(left, right, height - 36, ticks, SINCE_START)
    chart = _frame(height, label) | {"left": left, "name_x": left - 8, "rows": rows, "axis": axis}
    return _draw("timeline", chart)


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

    shaded = None
    if pause is not None:
        x0, x1 = x(pause[0]), x(pause[1])
        shaded = {
            "x": _num(x0),
            "w": _num(max(x1 - x0, 2.0)),
            "label_x": _num(x0 + 3),
            "label_y": _num(top + 12),
        }
    chart = _frame(bottom + 36, label) | {
        "left": left,
        "right": right,
        "top": top,
        "plot": plot,
        "unit": unit,
        "grid": [(_num(y(v)), _num(y(v) + 4), _label(v)) for v in yt],
        "grid_label_x": left - 6,
        "pause": shaded,
        "pause_label": pause_label,
        "dot": (_num(x(points[0][0])), _num(y(points[0][1]))) if len(points) == 1 else None,
        "points": " ".join(f"{_num(x(t))},{_num(y(v))}" for t, v in points),
        "empty_x": left + 10,
        "empty_y": _num(top + 40),
        "axis": _x_axis(left, right, bottom, xt, x_unit),
    }
    return _draw("series", chart)


def bars(items: Sequence[tuple[str, int]], label: str) -> str:
    """Horizontal bars, largest first, each with its count."""
    ordered = sorted(items, key=lambda kv: (-kv[1], kv[0]))
    left, right, row = 230.0, WIDTH - 90.0, 20.0
    high = max((v for _, v in ordered), default=0) or 1
    rows = []
    for i, (name, value) in enumerate(ordered):
        y = 6 + i * row
        w = (right - left) * value / high
        rows.append(
            {
                "name": name,
                "text_y": _num(y + 13),
                "y": _num(y + 3),
                "w": _num(max(w, 1.0)),
                "h": _num(row - 6),
                "value_x": _num(left + max(w, 1.0) + 4),
                "value": f"{value:,}",
            }
        )
    chart = _frame(12 + row * max(len(ordered), 1), label)
    return _draw("bars", chart | {"left": left, "name_x": left - 8, "rows": rows})
