"""Where a driven migration is (``zk2kraft kafka status``): the run's journal read with
the cluster as Kafka reports it now -- the phase and step, the gate being waited on and
why, each broker by mode, Kafka's ``ZkMigrationState``, the write-behind lag, the last
audit, and the way back that is valid now. Read-only; the contract of ``--json`` is
:func:`driven_status`'s dict (docs/kafka-clusters.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from migration.driver.states import ZK_MIGRATION_STATE_NAMES
from migration.image.model import ZK_MIGRATION_POST
from migration.operate.gates import View, read_view
from migration.operate.inventory import Inventory
from migration.operate.journal import Journal


def broker_modes(inv: Inventory, view: View) -> dict[int, str]:
    """Each inventory broker's mode as the cluster reports it: ``kraft`` (registered
    with the controllers, not migrating), ``migrating`` (a ZooKeeper-mode broker
    registered with the controllers too), ``zookeeper`` (in ``/brokers/ids`` only),
    ``unregistered``."""
    kraft = view.kraft_brokers()
    in_zk = set(view.snap.brokers) if view.snap is not None else set()
    modes = {}
    for b in inv.brokers:
        registered = kraft.get(b.id)
        if registered is not None and not registered.is_migrating_zk_broker:
            modes[b.id] = "kraft"
        elif b.id in in_zk:
            modes[b.id] = "migrating" if registered is not None else "zookeeper"
        else:
            modes[b.id] = "unregistered"
    return modes


AUDIT_PHASES = {
    "audit.before-kraft": "copy",
    "audit.before-finalize": "finalize",
    "audit.before-rollback": "rollback-controllers",
}
"""The phase of the plans each audit gate is taken in."""


def phase_of(step: str | None) -> str | None:
    """The phase of the plan (:data:`~migration.operate.plan.PHASES`,
    :data:`~migration.operate.rollback_plan.ROLLBACK_PHASES`) step id ``step`` is taken
    in: the id's first part (``<phase>.<node>.<action>``), an audit gate's from
    :data:`AUDIT_PHASES`; None for None."""
    if not step:
        return None
    return AUDIT_PHASES.get(step) or step.split(".", 1)[0]


def driven_status(inv: Inventory, log_dir: Path | None) -> dict[str, Any]:
    """The status of the module doc; ``log_dir``: a controller's metadata directory
    readable here (None: not read)."""
    journal = Journal.open(inv)
    view = read_view(inv, log_dir, topics=False)  # no partition is judged here
    image = view.image
    state = image.zk_migration_state if image is not None else None
    finalized = state == ZK_MIGRATION_POST or any(
        s.startswith("finalize.") and s.endswith(".edit") for s in journal.done
    )
    last = journal.done[-1] if journal.done else None
    return {
        "inventory": str(inv.path),
        "journal": str(journal.path) if journal.path.exists() else None,
        "rolling_back": journal.rolling_back,
        "phase": phase_of(journal.current) or phase_of(last),
        "step": journal.current,
        "last_done": last,
        "steps_done": len(journal.done),
        "waiting_for": journal.waiting,
        "updated": journal.updated,
        "zk_migration_state": None if state is None else ZK_MIGRATION_STATE_NAMES.get(state),
        "zk_write_behind_lag": view.write_behind_lag(),
        "brokers": [{"id": i, "mode": m} for i, m in broker_modes(inv, view).items()],
        "last_audit": journal.audits[-1] if journal.audits else None,
        "way_back": None if finalized else f"zk2kraft kafka rollback --inventory {inv.path}",
        "errors": {
            "zookeeper": view.zk_error,
            "metadata_log": view.log_error if log_dir is not None else None,
        },
    }


def render_status(status: dict[str, Any]) -> str:
    """The text form, a line each."""
    brokers = ", ".join(f"{b['id']} {b['mode']}" for b in status["brokers"])
    audit = status["last_audit"]
    lines = [
        f"Inventory:           {status['inventory']}",
        f"Phase:               {status['phase'] or 'not started'}"
        + (" (rolling back)" if status["rolling_back"] else ""),
        f"Step:                {status['step'] or '-'} ({status['steps_done']} done, last "
        f"{status['last_done'] or '-'})",
        f"Waiting for:         {status['waiting_for'] or '-'}",
        f"ZkMigrationState:    {status['zk_migration_state'] or 'not read'}",
        f"ZK write-behind lag: {status['zk_write_behind_lag']}",
        f"Brokers:             {brokers}",
        "Last audit:          "
        + ("none" if audit is None else f"{audit['verdict']} at {audit['at']} ({audit['step']})"),
        f"Way back:            {status['way_back'] or 'none: the migration is finalized'}",
    ]
    lines += [f"  {part} not read: {why}" for part, why in status["errors"].items() if why]
    return "\n".join(lines) + "\n"
