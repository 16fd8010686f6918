"""The pages' one Jinja2 environment: every page zk2kraft writes is a template of
``migration/pages/templates`` rendered here.

Contract:

- Autoescape is on for every template (``.html.j2`` and ``.svg.j2`` by name, and any
  other by default), and every value a template prints (``{{ ... }}``) is first made
  text by :func:`esc` -- quotes escaped too (``&quot;``, ``&#x27;``), any control
  character shown as its escape (:func:`~migration.common.text.inert`), never raw. Only
  a :class:`~markupsafe.Markup` value (HTML this package built: a chart, the refresh
  script) is printed as it is.
- Undefined names and keys fail the render (``StrictUndefined``): a template never
  prints a blank where the model lacks a field.
- Templates are read from the package (:class:`~jinja2.PackageLoader`): they ship as
  package data (pyproject.toml).
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from html import escape
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from migration.common.text import inert


def esc(value: object) -> str:
    """``value`` as HTML text or attribute value (quotes escaped too), any control
    character shown as its escape (:func:`~migration.common.text.inert`), never raw:
    the pages' one escape."""
    return escape(inert(str(value)), quote=True)


def _finalize(value: object) -> object:
    """What ``{{ value }}`` prints: :class:`Markup` as it is, anything else through
    :func:`esc` (autoescape then leaves the result alone)."""
    if isinstance(value, Markup):
        return value
    return Markup(esc(value))


def clock(iso: str) -> str:
    """An ISO 8601 UTC time as people read it, to the second."""
    return iso[:19].replace("T", " ") + " UTC"


def when(iso: str | None) -> str:
    """An ISO 8601 UTC time as :func:`clock` shows it, "—" for None."""
    return "—" if iso is None else clock(iso)


def duration(seconds: float) -> str:
    """A duration as people read it: ``4.2 s``, ``3 min 5 s``, ``2 h 10 min``."""
    s = int(seconds)
    if s < 60:
        return f"{seconds:.1f} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def num(value: float | None, unit: str = "") -> str:
    """A count or a measure as the rehearsal's report writes it: thousands separated, at
    most three decimals, ``unit`` after it; "—" for None."""
    if value is None:
        return "—"
    text = f"{value:,}" if isinstance(value, int) else f"{value:,.3f}".rstrip("0").rstrip(".")
    return f"{text} {unit}".rstrip()


def moment(at: datetime) -> str:
    """A moment in UTC, to the second."""
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


@cache
def environment() -> Environment:
    """The environment of the module doc (one per process)."""
    env = Environment(
        loader=PackageLoader("migration.pages", "templates"),
        autoescape=True,  # every template, whatever its name
        undefined=StrictUndefined,
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(clock=clock, when=when, duration=duration, num=num, moment=moment)
    return env


def render(template: str, /, **context: Any) -> str:
    """``template`` rendered with ``context`` (the module doc's escaping)."""
    return environment().get_template(template).render(**context)


def trusted(html: str) -> Markup:
    """``html`` this package built (a chart, the refresh script), printed as it is."""
    return Markup(html)
