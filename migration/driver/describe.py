"""``migration status`` as a client reads it: the DescribeMigration answer of the
active controller (each controller answers for itself; the first answer names the
active one) and its ``--json`` form (docs/cli.md). What ``zk2kraft migration status``,
the rollback, the demo and the rehearsal read; it writes nothing."""

from __future__ import annotations

from typing import Any

import grpc

from migration.common import rpc
from migration.common.json_input import decode_json
from migration.driver.states import ZK_MIGRATION_STATE_NAMES, state_name
from migration.proto import controller_pb2 as cpb
from migration.proto import controller_pb2_grpc

STATUS_TIMEOUT_S = 5.0


def describe_migration(bootstrap: list[str]) -> cpb.DescribeMigrationResponse:
    """The active controller's answer (each controller answers for itself; the first
    answer names the active one); without one, an answer that knows the state.
    ConnectionError when no controller answers."""
    answers: dict[str, cpb.DescribeMigrationResponse] = {}
    problems = []
    for endpoint in bootstrap:
        try:
            with rpc.channel(endpoint, []) as channel:
                answers[endpoint] = controller_pb2_grpc.ControllerStub(channel).DescribeMigration(
                    cpb.DescribeMigrationRequest(), timeout=STATUS_TIMEOUT_S
                )
        except grpc.RpcError as exc:
            problems.append(f"{endpoint}: {exc.code().name}")
            continue
        if answers[endpoint].is_active:
            return answers[endpoint]
    if answers:  # no active controller: one that knows the state, if any does
        known = [a for a in answers.values() if a.state_code]
        return (known or list(answers.values()))[0]
    raise ConnectionError("no controller answered: " + "; ".join(problems))


def status_json(r: cpb.DescribeMigrationResponse) -> dict[str, Any]:
    """The ``--json`` contract (see docs/cli.md)."""
    return {
        "state": state_name(r.state_code),
        "state_code": r.state_code,
        "zk_migration_state": ZK_MIGRATION_STATE_NAMES.get(r.zk_migration_state_code, "UNKNOWN"),
        "zk_migration_state_code": r.zk_migration_state_code,
        "driver_phase": r.driver_phase,
        "outcome": r.outcome,
        "active_controller": r.active_controller,
        "answered_by": r.node_id,
        "kraft_epoch": r.kraft_epoch,
        "zk_controller_epoch": r.zk_controller_epoch,
        "migration_znode": migration_znode(r),
        "high_watermark": r.high_watermark,
        "zk_write_behind_lag": r.zk_write_behind_lag,
        "zk_brokers": list(r.zk_brokers),
        "kraft_brokers": list(r.kraft_brokers),
        "metadata_version": r.metadata_version,
        "cluster_id": r.cluster_id,
    }


def migration_znode(r: cpb.DescribeMigrationResponse) -> Any:
    """The answer's copy of ``/migration`` (None when it has none), bounded as any JSON
    read from outside (what ``migration status --json`` and the migration page read): a
    JsonInputError (a ValueError) names the controller."""
    if not r.migration_znode_json:
        return None
    source = f"controller {r.node_id}'s DescribeMigration answer (migration_znode_json)"
    return decode_json(source, r.migration_znode_json.encode("utf-8"))
