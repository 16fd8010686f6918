"""The live migration page's facts: ``GET /migration.json`` as it is, and the one input
of the HTML renderer (:func:`migration.pages.live.render_controller`). The contract
(version 1) is documented in docs/operations.md ("Watching the migration"); fields are
only ever added.

Built from what the process publishes (the driver's DescribeMigration answer, the newest
committed image, the sampler's timeline, lag, quorum and audit): no I/O, nothing that
waits. Never a configuration value, never a connect string: ids, offsets, epochs, names
of states and phases, the brokers' advertised endpoints, runbook commands with their
variables unfilled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from migration.common.times import iso
from migration.driver import next_steps
from migration.driver.describe import migration_znode
from migration.driver.next_steps import Step
from migration.driver.states import (
    ZK_MIGRATION_STATE_NAMES,
    ClusterState,
    Phase,
    known_state,
    state_name,
)
from migration.image.model import MetadataImage
from migration.proto import controller_pb2 as cpb
from migration.server.page_sampler import ActivePage, AuditSummary, Quorum, Transition

VERSION = 1
PAGE_PATH = "/migration"
JSON_PATH = "/migration.json"


@dataclass(frozen=True)
class PageInputs:
    status: cpb.DescribeMigrationResponse  # this controller's DescribeMigration answer
    image: MetadataImage  # its newest committed image
    zk_broker_ids: Sequence[int] | None  # /brokers/ids as the driver last read it
    raft_role: str
    started_ms: int
    timeline: Sequence[Transition]
    lag: Sequence[tuple[int, int]]
    quorum: Quorum | None
    active_page: ActivePage | None
    audit: AuditSummary | None
    now_ms: int
    page_scheme: str = "http"  # of the link to the active controller's page


def _at(ms: int) -> str | None:
    """Wall-clock ms since the Unix epoch as ISO 8601 UTC; None for -1 (unknown)."""
    return None if ms < 0 else iso(ms)


def _step(step: Step | None) -> dict[str, Any] | None:
    if step is None:
        return None
    return {"runbook": step.runbook, "title": step.title, "commands": list(step.commands)}


def _brokers(image: MetadataImage, zk_ids: Sequence[int] | None) -> list[dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    for b in zk_ids or ():
        out[b] = {"id": b, "mode": "zookeeper", "fenced": None, "endpoints": [], "rack": None}
    for b, reg in image.brokers.items():
        out[b] = {
            "id": b,
            "mode": "migrating" if reg.is_migrating_zk_broker else "kraft",
            "fenced": reg.fenced,
            "endpoints": [f"{e.name}://{e.host}:{e.port}" for e in reg.endpoints],
            "rack": reg.rack,
        }
    return [out[b] for b in sorted(out)]


def _znode(status: cpb.DescribeMigrationResponse) -> dict[str, Any] | None:
    """``/migration``'s four numbers, read as ``migration status --json`` reads them
    (bounded); None when the answer has none or a copy no decoder accepts."""
    try:
        raw = migration_znode(status)
    except ValueError:
        return None
    keys = (
        "kraft_controller_id",
        "kraft_controller_epoch",
        "kraft_metadata_offset",
        "kraft_metadata_epoch",
    )
    if not isinstance(raw, dict):
        return None
    return {k: raw[k] for k in keys if isinstance(raw.get(k), int)}


# What only the active controller knows: null elsewhere (``active_page`` says where).
_ACTIVE_ONLY = (
    "state", "driver_phase", "outcome", "zk_migration_state", "timeline", "voters",
    "brokers", "write_behind", "migration_znode", "zk_controller_epoch", "audit",
    "next_step", "rollback", "no_way_back",
)  # fmt: skip


def page_model(p: PageInputs) -> dict[str, Any]:
    """``/migration.json`` (module doc). On a controller that is not the active one, the
    migration's fields are ``null`` and ``active_page`` says where to look."""
    s = p.status
    leader = s.active_controller if s.active_controller >= 0 else None
    page = p.active_page
    model: dict[str, Any] = {
        "version": VERSION,
        "generated": _at(p.now_ms),
        "process_started": _at(p.started_ms),
        "node_id": s.node_id,
        "is_active": s.is_active,
        "active_controller": leader,
        "active_page": (
            f"{p.page_scheme}://{page.endpoint}{PAGE_PATH}"
            if page is not None and page.endpoint and page.node_id == leader
            else None
        ),
        "cluster_id": s.cluster_id,
        "controller": {
            "raft_state": p.raft_role,
            "kraft_epoch": s.kraft_epoch,
            "high_watermark": s.high_watermark,
        },
    }
    model.update(_migration(p) if s.is_active else dict.fromkeys(_ACTIVE_ONLY))
    return model


def _migration(p: PageInputs) -> dict[str, Any]:
    """The active controller's part of the model: the keys of :data:`_ACTIVE_ONLY`."""
    s = p.status
    state = known_state(s.state_code)
    phase = Phase(s.driver_phase) if s.driver_phase in Phase._value2member_map_ else Phase.INACTIVE
    brokers = _brokers(p.image, p.zk_broker_ids)
    kraft_brokers = any(b["mode"] == "kraft" for b in brokers)
    return {
        "state": state_name(s.state_code),
        "driver_phase": s.driver_phase,
        "outcome": s.outcome,
        "zk_migration_state": ZK_MIGRATION_STATE_NAMES.get(s.zk_migration_state_code, "UNKNOWN"),
        "timeline": _timeline(p),
        "voters": _voters(p),
        "brokers": brokers,
        "write_behind": {
            "lag": s.zk_write_behind_lag,
            "samples": [[_at(at), lag] for at, lag in p.lag],
        },
        "migration_znode": _znode(s),
        "zk_controller_epoch": s.zk_controller_epoch,
        "audit": _audit(p.audit),
        "next_step": _step(next_steps.next_step(state, phase)) if state else None,
        "rollback": _step(next_steps.rollback_step(state, kraft_brokers=kraft_brokers))
        if state
        else None,
        "no_way_back": state == ClusterState.KRaft,
    }


def _timeline(p: PageInputs) -> list[dict[str, Any]]:
    """Each transition with how long it lasted (the last: until now)."""
    ends = [*(n.at_ms for n in p.timeline[1:]), p.now_ms]
    return [
        {
            "at": _at(t.at_ms),
            "state": t.state,
            "driver_phase": t.phase,
            "seconds": round(max(0, until - t.at_ms) / 1000, 1),
        }
        for t, until in zip(p.timeline, ends, strict=True)
    ]


def _voters(p: PageInputs) -> list[dict[str, Any]]:
    """Each voter with its lag behind the furthest voter's log end."""
    voters = p.quorum.voters if p.quorum else ()
    leo = max((v.log_end_offset for v in voters), default=-1)
    return [
        {
            "node_id": v.node_id,
            "log_end_offset": v.log_end_offset,
            "lag": max(0, leo - v.log_end_offset) if v.log_end_offset >= 0 else None,
            "last_fetch": _at(v.last_fetch_ms),
        }
        for v in voters
    ]


def _audit(audit: AuditSummary | None) -> dict[str, Any] | None:
    if audit is None:
        return None
    return {
        "consistent": audit.consistent,
        "differences": audit.differences,
        "offset": audit.offset,
        "log_end_offset": audit.log_end_offset,
        "finished": _at(audit.finished_ms),
        "seconds": audit.seconds,
    }
