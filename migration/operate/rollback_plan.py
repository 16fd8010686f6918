"""The way back to ZooKeeper from any phase before finalization, as steps (Kafka's revert
table, corrected by the field; see runbooks/kafka-clusters.md):

1. ``rollback-kraft-brokers`` -- each broker in KRaft mode rolled back to ZooKeeper mode
   *with* the migration flag (the keys its roll into KRaft changed put back as its
   ``.before-brokers-kraft.bak`` had them); gate: registered again as a migrating
   ZooKeeper broker;
2. ``rollback-controllers`` -- while Kafka dual-writes: the write-behind caught up and
   zk2kraft's audit CONSISTENT (ZooKeeper holds the last KRaft state); then every
   controller stopped;
3. ``rollback-zookeeper`` -- ZooKeeper handed back in one checked multi
   (:func:`migration.rollback.assess` / :func:`~migration.rollback.hand_back`): no
   controller writing (``/migration`` still), the write-behind lag 0 against the
   controllers' logs, ``/controller`` and ``/migration`` deleted (a null or stale
   ``/migration`` with them), ``/controller_epoch`` raised above every partition state's
   epoch and the KRaft controller's, so the ZooKeeper controller elected next wins;
4. ``rollback-brokers`` -- each broker with the migration settings rolled without them
   (the keys its first roll changed put back as ``.before-brokers-migration.bak`` had
   them); gate: registered again in ZooKeeper, partitions in sync;
5. ``rollback-deprovision`` -- each controller's metadata directory moved aside (kept
   for the post-mortem, never reused: a controller formatted over an old log would take
   it for a finished copy);
6. ``rollback-verify`` -- a ZooKeeper-mode broker is the controller, no ``/migration``,
   every broker registered, no partition offline or out of sync.

Built from the files as they are (a step already taken, its file's edit is empty); a
broker file in KRaft mode without its ``.bak`` is a problem (the plan cannot say what its
ZooKeeper settings were).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from functools import partial
from pathlib import Path

from migration.operate.edits import (
    MIGRATION_FLAG,
    Changes,
    broker_kraft_changes,
    broker_migration_changes,
    values_of,
)
from migration.operate.inventory import Inventory
from migration.operate.plan import MIGRATING_BACK, ClusterFacts, Files, Phase, Plan, PlanBuilder

ROLLBACK_PHASES = {
    "rollback-kraft-brokers": "roll KRaft brokers back to ZooKeeper",
    "rollback-controllers": "stop the controllers",
    "rollback-zookeeper": "give ZooKeeper back to the brokers",
    "rollback-brokers": "roll the brokers without the migration settings",
    "rollback-deprovision": "set the controllers' metadata aside",
    "rollback-verify": "verify",
}
"""The way back's phases in order, each with its title."""
KRAFT_BAK = ".before-brokers-kraft.bak"
MIGRATION_BAK = ".before-brokers-migration.bak"


def undo(rule: Callable[[str], Changes], before: str) -> Callable[[str], Changes]:
    """The rule that puts back what ``rule`` changed in ``before``: each key it set or
    removed, as ``before`` had it (a key ``before`` lacked is removed)."""
    keys = tuple(rule(before))
    original = values_of(before)

    def put_back(text: str) -> Changes:
        now = values_of(text)
        return {k: original.get(k) for k in keys if now.get(k) != original.get(k)}

    return put_back


def backup(path: Path, suffix: str) -> str | None:
    """The ``.bak`` an edit left beside the file (a symlinked file's is beside the file
    it links to, where the edit wrote)."""
    real = Path(os.path.realpath(path))
    bak = real.with_name(real.name + suffix)
    return bak.read_text(encoding="latin-1") if bak.is_file() else None


def _under_way(done: Collection[str], phase: str, broker_id: int) -> bool:
    """The broker's turn in ``phase`` begun (its edit done) and not finished: a run
    killed between its edit and its gate (the file says the step is done, the broker
    may not run it yet)."""
    return f"{phase}.{broker_id}.edit" in done and f"{phase}.{broker_id}.back" not in done


def build_rollback_plan(
    inv: Inventory,
    files: Files,
    cluster: ClusterFacts,
    dual_writing: bool,
    done: Collection[str] = (),
) -> Plan:
    """The steps of the module doc for the files as they are now; ``dual_writing``:
    ZooKeeper's ``/migration`` names an offset (Kafka copied and dual-writes);
    ``done``: the journal's steps done (a broker's turn under way is kept whole). Its
    phases in order, each built by its own function on one :class:`PlanBuilder`."""
    b = PlanBuilder(inv, cluster.cluster_id or "")
    problems: list[str] = []
    texts = dict(files.brokers)  # each broker's properties as the steps so far leave them
    phases = [
        _kraft_brokers_back(b, inv, texts, done, problems),
        _controllers_stopped(b, inv, dual_writing),
        _zookeeper_handed_back(b),
        _migration_settings_off(b, inv, texts, done, problems),
        _deprovisioned(b, inv),
        _verified(b),
    ]
    return Plan(inv, cluster, tuple(problems), tuple(phases), texts_after=b.after)


def _kraft_brokers_back(
    b: PlanBuilder,
    inv: Inventory,
    texts: dict[int, str],
    done: Collection[str],
    problems: list[str],
) -> Phase:
    """Each KRaft-mode broker (or one whose turn is under way) rolled back to ZooKeeper
    mode with the migration flag, from its backup; ``texts`` updated, a missing backup
    added to ``problems``."""
    for x in inv.brokers:
        if "process.roles" not in values_of(texts[x.id]) and not _under_way(
            done, "rollback-kraft-brokers", x.id
        ):
            continue
        before = backup(x.properties, KRAFT_BAK)
        if before is None:
            problems.append(
                f"broker {x.id}: {x.properties} is in KRaft mode and {x.properties.name}"
                f"{KRAFT_BAK} is gone: put its ZooKeeper-mode settings back by hand"
            )
            continue
        rule = undo(partial(broker_kraft_changes, inv, broker_id=x.id), before)
        texts[x.id] = b.roll(
            "rollback-kraft-brokers", x,
            ("back to ZooKeeper mode, with the migration flag", texts[x.id], rule),
            ("migrating", MIGRATING_BACK.format(id=x.id)),
        )  # fmt: skip
    return b.phase("rollback-kraft-brokers", ROLLBACK_PHASES["rollback-kraft-brokers"])


def _controllers_stopped(b: PlanBuilder, inv: Inventory, dual_writing: bool) -> Phase:
    """ZooKeeper caught up (when dual-writing), no broker in KRaft mode, every
    controller stopped."""
    if dual_writing:
        b.gate("rollback-controllers.written-behind", "the dual-write caught up",
               "/migration's kraft_metadata_offset at the active controller's log end")  # fmt: skip
        b.gate("audit.before-rollback", "ZooKeeper holds the last KRaft state",
               "zk2kraft audit: CONSISTENT")  # fmt: skip
    b.gate("rollback-controllers.brokers", "no broker left in KRaft mode",
           "every broker registered with the controllers as a migrating ZooKeeper broker "
           "(a KRaft-mode broker cannot read ZooKeeper)")  # fmt: skip
    for c in inv.controllers:
        b.run(f"rollback-controllers.{c.id}.stop", c, f"controller {c.id}: stop", c.stop)
    return b.phase("rollback-controllers", ROLLBACK_PHASES["rollback-controllers"])


def _zookeeper_handed_back(b: PlanBuilder) -> Phase:
    b.zookeeper("rollback-zookeeper.hand-back", "hand ZooKeeper back: delete /controller "
                "and /migration, raise /controller_epoch above every KRaft and partition "
                "epoch")  # fmt: skip
    return b.phase("rollback-zookeeper", ROLLBACK_PHASES["rollback-zookeeper"])


def _migration_settings_off(
    b: PlanBuilder,
    inv: Inventory,
    texts: dict[int, str],
    done: Collection[str],
    problems: list[str],
) -> Phase:
    """Each broker with the migration flag (or whose turn is under way) rolled without
    the migration settings, from its backup; a missing backup added to ``problems``."""
    for x in inv.brokers:
        if MIGRATION_FLAG not in values_of(texts[x.id]) and not _under_way(
            done, "rollback-brokers", x.id
        ):
            continue
        before = backup(x.properties, MIGRATION_BAK)
        if before is None:
            problems.append(
                f"broker {x.id}: {x.properties.name}{MIGRATION_BAK} is gone: remove the "
                "migration settings by hand"
            )
            continue
        b.roll(
            "rollback-brokers", x,
            ("without the migration settings", texts[x.id],
             undo(partial(broker_migration_changes, inv), before)),
            ("in ZooKeeper mode", f"broker {x.id} registered again in /brokers/ids; no "
             "under-replicated partition"),
        )  # fmt: skip
    return b.phase("rollback-brokers", ROLLBACK_PHASES["rollback-brokers"])


def _deprovisioned(b: PlanBuilder, inv: Inventory) -> Phase:
    for c in inv.controllers:
        b.deprovision(f"rollback-deprovision.{c.id}", c)
    return b.phase("rollback-deprovision", ROLLBACK_PHASES["rollback-deprovision"])


def _verified(b: PlanBuilder) -> Phase:
    b.gate("rollback-verify.zookeeper", "the cluster on ZooKeeper again",
           "a ZooKeeper-mode broker in /controller, no /migration, every broker in "
           "/brokers/ids, every partition led and in sync")  # fmt: skip
    return b.phase("rollback-verify", ROLLBACK_PHASES["rollback-verify"])
