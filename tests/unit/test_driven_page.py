"""The driven migration's live page (``kafka migrate|rollback --page``, ``kafka status
--serve``): ``/migration.json`` built from ``kafka status``'s dict (the phases passed,
current and ahead either way, the gate, the brokers by mode, the lag's samples), the HTML
escaping every outside text and loading nothing from elsewhere, the watcher's starting
answer and its keeping the last good reading, the collector's samples under the
catalog's names. The routes on a real endpoint and the serving command:
tests/integration/test_driven_page.py."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from migration.cli.main import build_parser
from migration.cli.parser import UsageError
from migration.observability import catalog
from migration.operate.page import MODES, driven_model, render, starting
from migration.operate.plan import FINAL_STEP, PHASES
from migration.operate.rollback_plan import ROLLBACK_PHASES
from migration.operate.watch import DrivenWatch

HOSTILE = '<script>alert("x")</script>&'
AT = "2026-11-29T05:00:00+00:00"


def status(**changes: Any) -> dict[str, Any]:
    """A ``kafka status --json`` dict: into KRaft mode, broker 2's gate closed."""
    base: dict[str, Any] = {
        "inventory": "/srv/inv.toml", "journal": "/srv/inv.toml.run.json",
        "rolling_back": False, "phase": "brokers-kraft", "step": "brokers-kraft.2.back",
        "last_done": "brokers-kraft.2.restart", "steps_done": 31,
        "waiting_for": "broker 2 fenced (catching up with the metadata log)",
        "updated": AT, "zk_migration_state": "MIGRATION", "zk_write_behind_lag": 3,
        "brokers": [{"id": 1, "mode": "kraft"}, {"id": 2, "mode": "unregistered"},
                    {"id": 3, "mode": "migrating"}],
        "last_audit": {"step": "audit.before-kraft", "at": AT, "verdict": "CONSISTENT",
                       "differences": 0},
        "way_back": "zk2kraft kafka rollback --inventory /srv/inv.toml",
        "errors": {"zookeeper": None, "metadata_log": None},
    }  # fmt: skip
    return base | changes


def states(model: dict[str, Any]) -> dict[str, str]:
    return {p["name"]: p["state"] for p in model["phases"]}


def test_the_model_is_the_status_and_what_the_page_needs() -> None:
    s = status()
    lag = [("2026-11-29T05:00:00.000Z", 5), ("2026-11-29T05:00:02.000Z", 3)]
    model = driven_model(s, generated="2026-11-29T05:00:02.000Z", lag=lag, waiting_s=12.34)
    assert all(model[k] == v for k, v in s.items() if k != "errors")  # kafka status --json's
    assert model["version"] == 1 and model["starting"] is False
    assert model["direction"] == "migrate"
    assert states(model) == {
        "preflight": "passed", "controllers": "passed", "brokers-migration": "passed",
        "copy": "passed", "brokers-kraft": "current", "finalize": "ahead",
    }  # fmt: skip
    assert [p["title"] for p in model["phases"]] == list(PHASES.values())
    assert model["gate"] == {
        "step": "brokers-kraft.2.back",
        "waiting_for": "broker 2 fenced (catching up with the metadata log)",
        "seconds": 12.3,
    }
    assert model["brokers_by_mode"] == {"kraft": 1, "migrating": 1, "zookeeper": 0,
                                        "unregistered": 1}  # fmt: skip
    assert model["write_behind"] == {"lag": 3, "samples": [list(x) for x in lag]}
    assert model["errors"] == {"zookeeper": None, "metadata_log": None, "status": None}
    json.dumps(model)  # all JSON


def test_the_phases_before_the_start_at_the_end_and_on_the_way_back() -> None:
    fresh = status(phase=None, step=None, last_done=None, steps_done=0, waiting_for=None)
    model = driven_model(fresh, generated=AT)
    assert set(states(model).values()) == {"ahead"} and model["gate"] is None
    done = status(phase="finalize", step=None, last_done=FINAL_STEP, waiting_for=None,
                  way_back=None, zk_migration_state="POST_MIGRATION")  # fmt: skip
    assert set(states(driven_model(done, generated=AT)).values()) == {"passed"}
    # stopped between steps (--until): the phase of the last step done is where it is
    stopped = status(phase="copy", step=None, last_done="audit.before-kraft", waiting_for=None)
    assert states(driven_model(stopped, generated=AT))["copy"] == "current"
    back = status(rolling_back=True, phase="rollback-controllers", step="audit.before-rollback",
                  waiting_for=None)  # fmt: skip
    model = driven_model(back, generated=AT)
    assert model["direction"] == "rollback"
    assert list(states(model)) == list(ROLLBACK_PHASES)
    assert states(model) == {
        "rollback-kraft-brokers": "passed", "rollback-controllers": "current",
        "rollback-zookeeper": "ahead", "rollback-brokers": "ahead",
        "rollback-deprovision": "ahead", "rollback-verify": "ahead",
    }  # fmt: skip
    # a rollback begun after the migration's last step was a migration step: all ahead
    begun = status(rolling_back=True, phase="brokers-kraft", step=None, waiting_for=None)
    assert set(states(driven_model(begun, generated=AT)).values()) == {"ahead"}


def external(html: str) -> list[str]:
    """Anything that would make a browser fetch from elsewhere."""
    return re.findall(r"<link\b|\bsrc\s*=|url\(|@import|https?://[^\s\"'<]+", html, re.I)


def test_the_page_shows_it_all_escapes_every_outside_text_and_loads_nothing() -> None:
    hostile = status(
        inventory=f"/srv/{HOSTILE}.toml", step=f"brokers-kraft.{HOSTILE}", waiting_for=HOSTILE,
        last_done=HOSTILE, way_back=f"zk2kraft kafka rollback --inventory {HOSTILE}",
        brokers=[{"id": 1, "mode": HOSTILE}],
        last_audit={"step": HOSTILE, "at": AT, "verdict": HOSTILE, "differences": 1},
        errors={"zookeeper": HOSTILE, "metadata_log": None},
        zk_migration_state=HOSTILE,
    )  # fmt: skip
    html = render(driven_model(hostile, generated=AT, waiting_s=3, failure=HOSTILE))
    assert HOSTILE not in html and "alert(" in html
    assert html.count("<script>") == 1 and "&lt;script&gt;alert(&quot;x&quot;)" in html
    assert external(html) == []
    page = render(driven_model(status(), generated=AT, lag=[(AT, 4), (AT, 3)], waiting_s=7))
    assert external(page) == [] and page.count("<script>") == 1
    assert 'data-phase="brokers-kraft" data-step="brokers-kraft.2.back"' in page
    assert re.findall(r'data-broker="(\d+)" data-mode="(\w+)"', page) == [
        ("1", "kraft"), ("2", "unregistered"), ("3", "migrating"),
    ]  # fmt: skip
    assert "zk2kraft kafka rollback --inventory /srv/inv.toml" in page
    assert "seen closed for 7 s" in page and "<svg" in page  # the lag's chart
    assert '<td class="current">brokers-kraft</td>' in page
    assert "None: the migration is finalized" in render(
        driven_model(status(way_back=None), generated=AT)
    )


class Reads:
    """A status reader the test steers: a dict to answer, an exception to raise."""

    def __init__(self) -> None:
        self.answer: dict[str, Any] | Exception = RuntimeError("not yet")

    def __call__(self) -> dict[str, Any]:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_starting_then_the_last_good_reading_kept_with_the_failure() -> None:
    reads = Reads()
    watch = DrivenWatch(reads)
    page = watch.json()
    assert page.status.startswith("503") and ("Retry-After", "2") in page.headers
    assert json.loads(page.body) == starting("the first reading of the cluster is under way")
    assert "Starting" in watch.html().body.decode()
    assert list(watch.collect()) == []
    watch.sample()  # fails: still starting, saying why
    assert json.loads(watch.json().body)["reason"] == "not read: RuntimeError: not yet"
    reads.answer = status()
    watch.sample()
    assert watch.json().status == "200 OK" and json.loads(watch.json().body)["step"]
    reads.answer = ValueError(f"the journal is not one: {HOSTILE}")
    watch.sample()
    model = json.loads(watch.json().body)
    assert model["errors"]["status"] == f"ValueError: the journal is not one: {HOSTILE}"
    assert model["phase"] == "brokers-kraft"  # the last good reading
    assert HOSTILE not in watch.html().body.decode()


def test_the_lag_samples_and_the_gate_seen_closed() -> None:
    reads = Reads()
    watch = DrivenWatch(reads)
    for lag in (5, None, 2):
        reads.answer = status(zk_write_behind_lag=lag)
        watch.sample()
    assert watch.model is not None
    assert [n for _, n in watch.model["write_behind"]["samples"]] == [5, 2]
    seconds = watch.model["gate"]["seconds"]
    assert seconds is not None and seconds >= 0
    reads.answer = status(waiting_for=None)
    watch.sample()
    assert watch.model["gate"] is None


def scraped(watch: DrivenWatch) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(watch)
    text = generate_latest(registry).decode()
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def test_the_collector_exports_the_catalogs_names() -> None:
    reads = Reads()
    reads.answer = status()
    watch = DrivenWatch(reads)
    watch.sample()
    got = scraped(watch)
    assert got[catalog.ZK_MIGRATION_STATE.name] == {(): 1.0}  # MIGRATION's code
    assert got[catalog.ZK_WRITE_BEHIND_LAG.name] == {(): 3.0}
    assert got[catalog.MIGRATING_ZK_BROKER_COUNT.name] == {(): 1.0}
    assert got[catalog.DRIVEN_BROKERS.name] == {
        (("mode", m),): float(n) for m, n in zip(MODES, (1, 1, 0, 1), strict=True)
    }
    phases = got[catalog.DRIVEN_PHASE.name]
    assert len(phases) == len(PHASES) + len(ROLLBACK_PHASES)
    assert {k[0][1] for k, v in phases.items() if v == 1} == {"brokers-kraft"}
    assert got[catalog.DRIVEN_STEPS_DONE.name] == {(): 31.0}
    assert got[catalog.DRIVEN_ROLLING_BACK.name] == {(): 0.0}
    assert got[catalog.DRIVEN_WAY_BACK.name] == {(): 1.0}
    assert list(got[catalog.DRIVEN_GATE_CLOSED_SECONDS.name]) == [
        (("gate", "brokers-kraft.2.back"),)
    ]
    assert got[catalog.DRIVEN_READ_ERRORS.name] == {
        (("part", p),): 0.0 for p in ("zookeeper", "metadata_log", "status")
    }
    assert got[catalog.AUDIT_SUCCESS.name] == {(): 1.0}
    assert got[catalog.AUDIT_LAST_RUN.name] == {(): 1795928400.0}
    driven = {s.name for s in catalog.ALL if catalog.Where.DRIVEN in s.where}
    assert set(got) == driven  # every one, and only the catalog's
    # finalized, unread parts: 0 way back; what was not read is absent, never 0
    reads.answer = status(way_back=None, zk_write_behind_lag=None, zk_migration_state=None,
                          last_audit=None, waiting_for=None,
                          errors={"zookeeper": "refused", "metadata_log": None})  # fmt: skip
    watch.sample()
    got = scraped(watch)
    assert got[catalog.DRIVEN_WAY_BACK.name] == {(): 0.0}
    for spec in (catalog.ZK_MIGRATION_STATE, catalog.ZK_WRITE_BEHIND_LAG, catalog.AUDIT_SUCCESS,
                 catalog.AUDIT_LAST_RUN, catalog.DRIVEN_GATE_CLOSED_SECONDS):  # fmt: skip
        assert spec.name not in got
    assert got[catalog.DRIVEN_READ_ERRORS.name][(("part", "zookeeper"),)] == 1.0


def test_page_and_serve_take_host_port_only() -> None:
    parser = build_parser()
    args = parser.parse_args(["kafka", "migrate", "--inventory", "i", "--page", "[::1]:0"])
    assert (args.page.host, args.page.port) == ("::1", 0)
    for bad in ("localhost", "h:70000", ":80", "bad host:80"):
        with pytest.raises(UsageError, match=r"is not HOST:PORT|not a host name"):
            parser.parse_args(["kafka", "status", "--inventory", "i", "--serve", bad])
    with pytest.raises(UsageError, match="not allowed with"):  # printed once, or served
        parser.parse_args(["kafka", "status", "--inventory", "i", "--json", "--serve", "h:0"])
