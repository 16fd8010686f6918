"""The pages' templates (migration/pages): autoescape on for every one, undefined names
failing the render, and every page rendered with hostile text in each of its strings --
a script tag, a quote that would close an attribute, control characters -- showing it
as text only: no tag, no attribute, no control character of it reaches the page."""

from __future__ import annotations

import dataclasses
from html.parser import HTMLParser
from typing import Any

import pytest
from jinja2 import UndefinedError
from markupsafe import Markup

from migration.operate.page import driven_model, starting
from migration.operate.page import render as render_driven_page
from migration.pages import live
from migration.pages.env import environment, render
from migration.pages.rehearsal import render as render_report
from migration.rehearse import report as rehearse_report
from migration.server.page_model import page_model
from tests.unit.test_driven_page import AT, status
from tests.unit.test_migration_page import inputs
from tests.unit.test_rehearse_report import _full_report

HOSTILE = "\"'><img src=x onerror=alert(1)><script>alert(2)</script>\x1b[31m\u202e&"
ESCAPED = "&quot;&#x27;&gt;&lt;img src=x onerror=alert(1)&gt;&lt;script&gt;alert(2)"


def poison(value: Any, keep: frozenset[str] = frozenset()) -> Any:
    """``value`` with HOSTILE after every string in it (dict values, list items,
    dataclass fields; the names of a dict of counts too), but under the keys or fields
    named in ``keep``."""
    if isinstance(value, str):
        return value + HOSTILE
    if isinstance(value, dict):
        counts = all(isinstance(v, int) for v in value.values())
        return {
            poison(k) if counts else k: v if k in keep else poison(v, keep)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return type(value)(poison(v, keep) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: poison(getattr(value, f.name), keep)
            for f in dataclasses.fields(value)
            if f.name not in keep
        }
        return dataclasses.replace(value, **changes)
    return value


class Parsed(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: set[str] = set()
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs |= {name for name, _ in attrs}
        self._in_script = tag == "script"

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts.append(data)
            self._in_script = False


def assert_inert(html: str, *, scripts: int) -> None:
    """HOSTILE shown escaped (at least once), never acted on."""
    assert ESCAPED in html
    assert "\x1b" not in html and "\u202e" not in html and "\\x1b[31m\\u202e" in html
    parsed = Parsed()
    parsed.feed(html)
    assert "img" not in parsed.tags and "onerror" not in parsed.attrs
    assert parsed.tags.count("script") == scripts
    assert all(s == live.SCRIPT for s in parsed.scripts)


def test_autoescape_is_on_for_every_template_and_undefined_fails() -> None:
    env = environment()
    names = env.list_templates()
    assert {"live.html.j2", "controller.html.j2", "driven.html.j2", "rehearsal.html.j2"} <= set(
        names
    )
    assert env.autoescape is True  # every template, from a file or a string alike
    page = env.from_string('<a title="{{ x }}">{{ x }}</a>').render(x=HOSTILE)
    assert_inert(page, scripts=0)
    assert env.from_string("{{ x }}").render(x=Markup("<b>built</b>")) == "<b>built</b>"
    with pytest.raises(UndefinedError):
        env.from_string("{{ missing }}").render()
    with pytest.raises(UndefinedError):
        render("controller.html.j2")  # no model: fails, never a blank page


def test_the_controllers_page_shows_hostile_text_inert() -> None:
    model = page_model(inputs())
    hostile = poison(model, keep=frozenset({"samples", "mode", "is_active"}))
    assert_inert(live.render_controller(hostile), scripts=1)
    standby = poison(page_model(inputs(active=False)), keep=frozenset({"is_active"}))
    html = live.render_controller(standby)
    assert_inert(html, scripts=1)
    assert f'href="http://127.0.0.1:9400/migration{ESCAPED}' in html  # inside its quotes


def test_the_driven_page_shows_hostile_text_inert() -> None:
    model = driven_model(status(), generated=AT, lag=[(AT, 4)], waiting_s=2, failure="x")
    hostile = poison(model, keep=frozenset({"samples", "starting", "rolling_back"}))
    assert_inert(render_driven_page(hostile), scripts=1)
    assert_inert(render_driven_page(starting(HOSTILE)), scripts=1)


def test_the_rehearsal_report_shows_hostile_text_inert(monkeypatch: pytest.MonkeyPatch) -> None:
    this_one = rehearse_report.Machine(cpus=2, platform="Linux", python="3.11")
    monkeypatch.setattr(rehearse_report.Machine, "this_one", staticmethod(lambda: this_one))
    report = poison(_full_report(), keep=frozenset({"engine", "to", "kind"}))
    assert_inert(render_report(report), scripts=0)
