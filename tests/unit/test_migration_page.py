"""The live migration page's renderer and contract, from real inputs (a DescribeMigration
answer, an image with brokers of every mode, a sampler's timeline, lag, quorum and
audit): one self-contained document (no external resource of any kind), every outside
text escaped, the standby page naming and linking the active one, ``/migration.json``'s
keys (a standby's migration fields null), the Content-Security-Policy's hash of the
page's one script, the sampler's transitions and audit bounds, its DescribeQuorum never
posted to a busy Raft loop twice. The routes on a real metrics endpoint, the driver's
outcome when ZooKeeper cannot be reached, and an audit's summary that reaches no
controller: tests/integration/test_migration_page.py."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path

from migration.common.kafka_errors import ErrorCode
from migration.driver.describe import status_json
from migration.image.model import BrokerImage, EndpointImage, MetadataImage
from migration.pages.live import CSP, lag_chart
from migration.pages.live import render_controller as render
from migration.proto import controller_pb2 as cpb
from migration.raft.event_loop import EventLoop
from migration.server.page_model import PageInputs, page_model
from migration.server.page_sampler import (
    ActivePage,
    AuditSummary,
    PageSampler,
    Quorum,
    Transition,
    VoterProgress,
)
from tests.lone_controller import lone_controller

HOSTILE = '<script>alert("x")</script>&'
T0 = 1_790_000_000_000


def broker(b: int, *, migrating: bool, fenced: bool, host: str = "b.local") -> BrokerImage:
    return BrokerImage(
        broker_id=b,
        incarnation_id=b"\0" * 16,
        epoch=10 + b,
        endpoints=(EndpointImage("INTERNAL", host, 9092 + b, 0),),
        features=(),
        rack=HOSTILE if b == 2 else None,
        fenced=fenced,
        in_controlled_shutdown=False,
        is_migrating_zk_broker=migrating,
    )


def inputs(state: int = 4, phase: str = "DUAL_WRITE", *, active: bool = True) -> PageInputs:
    status = cpb.DescribeMigrationResponse(
        node_id=3000 if active else 3001,
        active_controller=3000,
        is_active=active,
        kraft_epoch=7,
        state_code=state,
        zk_migration_state_code=1,
        driver_phase=phase,
        outcome=f"dual-writing; a name from outside: {HOSTILE}",
        zk_controller_epoch=5,
        migration_znode_json=json.dumps(
            {
                "kraft_controller_id": 3000,
                "kraft_controller_epoch": 7,
                "kraft_metadata_offset": 1234,
                "kraft_metadata_epoch": 7,
            }
        ),
        high_watermark=1240,
        zk_write_behind_lag=3,
        cluster_id="cl-<id>",
        metrics_endpoint="127.0.0.1:9400",
    )
    image = MetadataImage(
        brokers={
            1: broker(1, migrating=True, fenced=False),
            2: broker(2, migrating=False, fenced=True, host=HOSTILE),
        }
    )
    return PageInputs(
        status=status,
        image=image,
        zk_broker_ids=(1, 4),
        raft_role="Leader" if active else "Follower",
        started_ms=T0,
        timeline=(
            Transition(T0, "ZooKeeper", "WAIT_FOR_CONTROLLER_QUORUM"),
            Transition(T0 + 2000, "MigrationEligible", "WAIT_FOR_BROKERS"),
            Transition(T0 + 9000, "MigrationActive", "DUAL_WRITE"),
        ),
        lag=tuple((T0 + i * 1000, i % 7) for i in range(120)),
        quorum=Quorum(
            3000,
            1240,
            (
                VoterProgress(3000, 1241, T0),
                VoterProgress(3001, 1230, T0),
                VoterProgress(3002, -1, -1),
            ),
            T0,
        ),
        active_page=None if active else ActivePage(3000, "127.0.0.1:9400", T0),
        audit=AuditSummary(False, 2, 1200, 1230, T0 + 5000, 12.5, T0 + 6000),
        now_ms=T0 + 10_000,
    )


def external(html: str) -> list[str]:
    """Anything that would make a browser fetch from elsewhere."""
    found = re.findall(r"<link\b|\bsrc\s*=|url\(|@import|https?://[^\s\"'<]+", html, re.I)
    return [f for f in found if f != "http://127.0.0.1:9400/migration"]


def test_the_active_page_shows_everything_and_loads_nothing_from_elsewhere() -> None:
    model = page_model(inputs())
    html = render(model)
    assert external(html) == []
    assert html.count("<script>") == 1 and "<main" in html and "<svg" in html
    assert 'id="state">MigrationActive<' in html and ">DUAL_WRITE<" in html
    for b, mode in ((1, "migrating"), (2, "kraft"), (4, "zookeeper")):
        assert f'data-broker="{b}" data-mode="{mode}"' in html
    assert "kraftMetadataOffset <b>1234</b>" in html
    assert "2 difference(s)" in html
    assert "Restart the brokers into KRaft mode" in html  # what now in DUAL_WRITE
    assert "zk2kraft broker-mode --config" in html
    assert "since its process started" in html


def test_every_outside_text_is_escaped() -> None:
    html = render(page_model(inputs()))
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;" in html
    assert "cl-&lt;id&gt;" in html
    assert '"$(printf &quot;$BROKER_CONFIG&quot;' in html.replace("&quot;$(", '"$(')


def test_the_json_contract() -> None:
    model = page_model(inputs())
    again = json.loads(json.dumps(model))
    assert again["version"] == 1 and again["is_active"] is True
    assert again["state"] == "MigrationActive" and again["driver_phase"] == "DUAL_WRITE"
    assert [b["mode"] for b in again["brokers"]] == ["migrating", "kraft", "zookeeper"]
    assert again["brokers"][1]["fenced"] is True and again["brokers"][2]["fenced"] is None
    assert [v["lag"] for v in again["voters"]] == [0, 11, None]
    assert again["migration_znode"]["kraft_metadata_offset"] == 1234
    assert again["write_behind"]["lag"] == 3 and len(again["write_behind"]["samples"]) == 120
    assert again["audit"]["consistent"] is False and again["audit"]["differences"] == 2
    assert again["timeline"][0] == {
        "at": "2026-09-21T14:13:20.000Z",
        "state": "ZooKeeper",
        "driver_phase": "WAIT_FOR_CONTROLLER_QUORUM",
        "seconds": 2.0,
    }
    assert [t["seconds"] for t in again["timeline"]] == [2.0, 7.0, 1.0]  # the last: until now
    # a KRaft broker is running: the way back starts by rolling the brokers back
    assert again["rollback"]["runbook"].startswith("runbooks/rollback.md#2-")
    assert again["next_step"]["commands"][0] == "for id in $BROKER_IDS; do"
    assert again["no_way_back"] is False


def test_a_deep_migration_copy_and_an_unknown_state_are_shown_never_raised() -> None:
    """/migration's copy is decoded as ``migration status --json`` decodes it (bounded);
    a state code this version does not know is Unknown on the page and in status --json."""
    status = cpb.DescribeMigrationResponse()
    status.CopyFrom(inputs().status)
    status.migration_znode_json = "[" * 100_000
    status.state_code = 99
    model = page_model(dataclasses.replace(inputs(), status=status))
    assert model["migration_znode"] is None and model["state"] == "Unknown"
    assert model["next_step"] is None and model["rollback"] is None
    assert "not written yet" in render(model)
    status.migration_znode_json = ""
    assert status_json(status)["state"] == "Unknown"


def test_after_finalization_there_is_no_way_back() -> None:
    model = page_model(inputs(state=6, phase="INACTIVE"))
    assert model["rollback"] is None and model["no_way_back"] is True
    assert "No way back" in render(model)
    assert model["next_step"]["title"] == "Retire ZooKeeper"


def test_a_standby_names_and_links_the_active_controller() -> None:
    model = page_model(inputs(active=False))
    assert model["is_active"] is False and model["active_controller"] == 3000
    assert model["active_page"] == "http://127.0.0.1:9400/migration"
    assert model["state"] is None and model["brokers"] is None
    # a port with TLS (metrics.ssl.*) links over https
    secured = page_model(dataclasses.replace(inputs(active=False), page_scheme="https"))
    assert secured["active_page"] == "https://127.0.0.1:9400/migration"
    migration_fields = (
        "state", "driver_phase", "outcome", "zk_migration_state", "timeline", "voters",
        "brokers", "write_behind", "migration_znode", "zk_controller_epoch", "audit",
        "next_step", "rollback", "no_way_back",
    )  # fmt: skip
    assert {k: model[k] for k in migration_fields} == dict.fromkeys(migration_fields)
    assert set(model) == set(page_model(inputs()))  # the same keys as the active one's
    html = render(model)
    assert '<a id="active-link" href="http://127.0.0.1:9400/migration">' in html
    assert external(html) == []


def test_the_lag_chart_is_the_reports_series_and_handles_nothing() -> None:
    assert "no samples" in lag_chart([])
    chart = lag_chart([["2026-01-01T00:00:00.000Z", 0], ["2026-01-01T00:00:01.500Z", 40]])
    assert chart.startswith("<svg") and '<polyline class="line"' in chart
    assert ">40<" in chart and ">1.5<" in chart  # y ticks up to the peak; x in seconds
    assert "seconds since 2026-01-01 00:00:00 UTC" in chart


def test_the_csp_lets_the_pages_own_script_run_and_no_other() -> None:
    html = render(page_model(inputs()))
    scripts = re.findall(r"<script>(.*?)</script>", html, re.S)
    assert len(scripts) == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}';" in CSP
    assert CSP.count("unsafe-inline") == 1 and "style-src 'unsafe-inline'" in CSP


def test_the_sampler_keeps_transitions_lag_and_a_bounded_audit(tmp_path: Path) -> None:
    lone = lone_controller(tmp_path)
    answers = [
        cpb.DescribeMigrationResponse(
            node_id=1, is_active=True, state_code=s, driver_phase=p, zk_write_behind_lag=lag
        )
        for s, p, lag in (
            (2, "WAIT_FOR_BROKERS", 0),
            (2, "WAIT_FOR_BROKERS", 0),
            (4, "DUAL_WRITE", 5),
            (4, "DUAL_WRITE", 0),
            (0, "INACTIVE", 0),
        )
    ]
    feed = iter(answers)
    # the loop is not running: the leader's DescribeQuorum is skipped, never waited on
    sampler = PageSampler(1, lambda: next(feed), lone.node, EventLoop(), {})
    for _ in answers:
        sampler.sample()
    assert [(t.state, t.phase) for t in sampler.timeline] == [
        ("MigrationEligible", "WAIT_FOR_BROKERS"),
        ("MigrationActive", "DUAL_WRITE"),
        ("Unknown", "INACTIVE"),
    ]
    assert [lag for _, lag in sampler.lag] == [0, 0, 5, 0, 0]
    assert sampler.quorum is None and sampler.active_page is None  # it leads: no lookup

    good = cpb.ReportAuditRequest(
        consistent=True, differences=0, offset=120, log_end_offset=130, finished_ms=T0, seconds=9.5
    )
    answer = sampler.report_audit(good, is_active=True)
    assert answer.error.error_code == 0 and answer.is_active and answer.node_id == 1
    assert sampler.audit is not None and sampler.audit.offset == 120
    for bad in (
        cpb.ReportAuditRequest(differences=-5),
        cpb.ReportAuditRequest(offset=2**60),
        cpb.ReportAuditRequest(seconds=float("nan")),
        cpb.ReportAuditRequest(seconds=-1.0),
    ):
        refused = sampler.report_audit(bad, is_active=True)
        assert refused.error.error_code == ErrorCode.INVALID_REQUEST
    assert sampler.audit.offset == 120  # the last good one stays


class BusyLoop(EventLoop):
    """A Raft loop busy for as long as the test says: what is posted waits in ``queued``."""

    def __init__(self) -> None:
        super().__init__()
        self.queued: list[Callable[[], None]] = []

    @property
    def running(self) -> bool:
        return True

    def post(self, action: Callable[[], None]) -> None:
        self.queued.append(action)


def test_the_sampler_posts_no_describe_quorum_while_the_last_one_waits(tmp_path: Path) -> None:
    lone = lone_controller(tmp_path)
    loop = BusyLoop()
    status = cpb.DescribeMigrationResponse(
        node_id=1, is_active=True, state_code=4, driver_phase="DUAL_WRITE"
    )
    sampler = PageSampler(1, lambda: status, lone.node, loop, {})
    try:
        for _ in range(5):  # a loop busy for five samples holds one call, not five
            sampler.sample()
        assert len(loop.queued) == 1 and sampler.quorum is None
        loop.queued.pop()()  # the loop gets to it: the figures are published
        assert sampler.quorum is not None and [v.node_id for v in sampler.quorum.voters] == [1]
        for _ in range(3):
            sampler.sample()
        assert len(loop.queued) == 1  # the next one, once the last one ran
    finally:
        lone.close()


# --- the driver's outcome when ZooKeeper cannot be reached ------------------------------
