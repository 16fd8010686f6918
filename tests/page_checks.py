"""The live migration page of a running rig, as a real browser sees it: Chromium's DOM
after load (and after the page's own refresh swapped its ``<main>``), a screenshot and
the HTML as served kept under :func:`tests.browser.screenshots_dir`, ``/migration.json``
parsed, and no secret of the rig on either (its ZooKeeper connect string in any form the
driver's outcomes could carry it, the password encoder's secret)."""

from __future__ import annotations

import functools
import json
import re
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import pytest

from migration.driver.driver import connect_forms
from tests.broker_harness import eventually
from tests.browser import chromium, dump_dom, screenshot, screenshots_dir
from tests.migration_harness import MigrationRig

shots = functools.cache(screenshots_dir)  # one directory per test run, made when first used
REFRESH_BUDGET_MS = 4500  # past the page's first refresh (every 3 s)


@dataclass
class Seen:
    dom: str
    json: dict[str, Any]
    screenshot: Path

    def broker_modes(self) -> dict[int, str]:
        return {
            int(b): m for b, m in re.findall(r'data-broker="(\d+)" data-mode="(\w+)"', self.dom)
        }


T = TypeVar("T")


@dataclass
class Later(Generic[T]):
    """A browser check made while a module's fixture ran -- what it saw, or what stopped
    it -- held for the test that asserts on it: so a missing Chromium (a skip outside CI,
    :func:`tests.tools.require_tool`) or a page that never showed its state is that test's
    outcome, and the fixture's other tests run."""

    value: T | None
    error: BaseException | None

    def get(self) -> T:
        """What was seen; else raise what stopped it (a skip skips, a failure fails)."""
        if self.error is not None:
            raise self.error
        assert self.value is not None
        return self.value


def later(check: Callable[[], T]) -> Later[T]:
    """``check()`` now, its answer or its exception kept for :meth:`Later.get`."""
    try:
        return Later(check(), None)
    except (Exception, pytest.skip.Exception, pytest.fail.Exception) as exc:
        return Later(None, exc)


def page_url(rig: MigrationRig, node: int, path: str = "/migration") -> str:
    return f"http://{rig.quorum.metrics_target(node)}{path}"


def page_json(rig: MigrationRig, node: int) -> dict[str, Any]:
    with urllib.request.urlopen(page_url(rig, node, "/migration.json"), timeout=10) as answer:
        assert answer.headers["Content-Type"] == "application/json"
        found: dict[str, Any] = json.loads(answer.read())
        return found


def no_secret(rig: MigrationRig, text: str) -> None:
    for form in connect_forms(rig.zk_connect):  # as configured, normalized, a host:port
        assert form not in text, f"the page shows ZooKeeper's address ({form})"
    assert rig.quorum.extra["password.encoder.secret"] not in text


def see(rig: MigrationRig, state: str, name: str | None = None) -> Seen:
    """The active controller's page once it shows ``state`` (a hang guard waits for the
    page's sampler), in Chromium, with a screenshot ``page-<name or state>.png``."""
    chromium()  # missing: said before waiting for the page
    active = rig.status()["active_controller"]
    eventually(lambda: page_json(rig, active)["state"] == state, 30, f"the page shows {state}")
    url = page_url(rig, active)
    dom = dump_dom(url, REFRESH_BUDGET_MS)
    shot = screenshot(url, shots() / f"page-{name or state}.png")
    with urllib.request.urlopen(url, timeout=10) as answer:  # the page as served, kept beside
        shot.with_suffix(".html").write_bytes(answer.read())
    print(f"screenshot: {shot}")
    model = page_json(rig, active)
    for text in (dom, json.dumps(model)):
        no_secret(rig, text)
    return Seen(dom, model, shot)


def see_standby(rig: MigrationRig) -> tuple[int, Seen]:
    """A controller that is not the active one: its page in Chromium, once it has
    learnt the active one's page address."""
    chromium()
    active = rig.status()["active_controller"]
    standby = next(n for n in rig.quorum.ids if n != active)
    eventually(lambda: page_json(rig, standby)["active_page"], 30, "the standby knows the page")
    url = page_url(rig, standby)
    dom = dump_dom(url)
    shot = screenshot(url, shots() / "page-standby.png", height=400)
    return active, Seen(dom, page_json(rig, standby), shot)
