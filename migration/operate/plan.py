"""The plan: Kafka 3.9's migration of one cluster as concrete steps, built from its
inventory, its nodes' files as they are and what its ZooKeeper holds, changing nothing.

Kafka's procedure, phase by phase (each gate says what it waits for; a run opens each on
what Kafka itself reports):

1. ``preflight`` -- ZooKeeper's tree ready (zk2kraft's preflight: no blocker, among them
   a reassignment in flight or a migration left over), every inventory broker registered
   and no other, the files agreeing with the inventory;
2. ``controllers`` -- each controller's file written, formatted with ZooKeeper's cluster
   id, started; gate: the quorum (DescribeQuorum: a leader, every voter caught up);
3. ``brokers-migration`` -- each broker in turn: the migration settings, restarted; gate:
   registered again, with the controllers as a migrating ZooKeeper broker, partitions
   in sync;
4. ``copy`` -- gates: Kafka's copy done (``ZkMigrationState`` MIGRATION in the
   controller's metadata log, ``/migration`` claimed), then the dual-write caught up;
5. ``audit`` -- zk2kraft's audit of ZooKeeper against the metadata log: CONSISTENT;
6. ``brokers-kraft`` -- each broker in turn: into KRaft mode, restarted; gate: registered
   with the controllers, not migrating, unfenced, partitions in sync;
7. ``finalize`` -- gates: no broker left in ZooKeeper mode or unregistered, the audit
   CONSISTENT again; each controller without the migration settings, restarted; gate:
   ``ZkMigrationState`` POST_MIGRATION.

Each step has a stable ``id`` (``<phase>.<node>.<action>``) that a run records. An edit
whose file already says what it would write has an empty diff: done. :func:`roll_seconds`
is the rolls' duration model the rehearsal's estimate uses too.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal, assert_never

from migration.bridge.preflight import PreflightReport
from migration.common.text import inert
from migration.operate.edits import (
    Changes,
    apply,
    broker_kraft_changes,
    broker_migration_changes,
    controller_changes,
    controller_finalize_changes,
    file_problems,
    shown_diff,
)
from migration.operate.inventory import Broker, Command, Controller, Inventory

MIGRATING_BACK = (
    "broker {id} in /brokers/ids and registered with the controllers as a migrating "
    "ZooKeeper broker; no under-replicated partition"
)
PHASES = {
    "preflight": "check the cluster",
    "controllers": "provision the KRaft controllers",
    "brokers-migration": "roll the brokers with the migration flag",
    "copy": "Kafka copies the metadata and dual-writes",
    "brokers-kraft": "roll the brokers into KRaft mode",
    "finalize": "finalize: the controllers leave ZooKeeper",
}
"""The migration's phases in order, each with its title."""
FINAL_STEP = "finalize.done"
"""The migration's last step: once it is done, every phase is passed."""
ROLLS = 2
"""Rolling restarts of every broker: migration enabled, then into KRaft mode."""


def roll_seconds(
    brokers: int, broker_restart_s: float, controllers: int = 0, controller_restart_s: float = 0.0
) -> float:
    """The rolls' time: ``2 x brokers x broker_restart_s + controllers x
    controller_restart_s`` (restarts one at a time, as the runbooks do them)."""
    return ROLLS * brokers * broker_restart_s + controllers * controller_restart_s


@dataclass(frozen=True)
class ClusterFacts:
    """What the plan read of the cluster: ZooKeeper's cluster id, the registered broker
    ids and zk2kraft's preflight of the tree (None, with ``error``, when ZooKeeper could
    not be read)."""

    cluster_id: str | None
    registered: frozenset[int]
    preflight: PreflightReport | None
    error: str | None = None


StepKind = Literal["edit", "run", "gate", "zookeeper", "deprovision"]
"""What a step does: edit a node's properties file, run a node's command, wait at a gate
on what Kafka reports, write ZooKeeper (the rollback's hand-back), or move a
controller's metadata directory aside."""


@dataclass(frozen=True)
class Step:
    id: str
    kind: StepKind
    what: str
    node: int | None = None
    file: str | None = None
    diff: str | None = None
    command: tuple[str, ...] | None = None
    waits_for: str | None = None
    done: bool = False
    """An edit whose file already says what it would write."""
    change: Callable[[str], Changes] | None = field(default=None, compare=False, repr=False)
    """An edit's rule: the changes to make to its file's text as it is when the step runs."""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "what": self.what,
            "node": self.node,
            "file": self.file,
            "diff": self.diff,
            "done": self.done if self.kind == "edit" else None,
            "command": list(self.command) if self.command is not None else None,
            "waits_for": self.waits_for,
        }


@dataclass(frozen=True)
class Phase:
    name: str
    title: str
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class Plan:
    inventory: Inventory
    cluster: ClusterFacts
    problems: tuple[str, ...]
    phases: tuple[Phase, ...]
    broker_restart_s: float | None = None
    controller_restart_s: float | None = None
    texts_after: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def ready(self) -> bool:
        return not self.problems

    def estimate(self) -> dict[str, Any]:
        inv = self.inventory
        b, c = len(inv.brokers), len(inv.controllers)
        seconds = None
        if self.broker_restart_s is not None:
            seconds = round(
                roll_seconds(b, self.broker_restart_s, c, self.controller_restart_s or 0.0), 1
            )
        return {
            "formula": f"{ROLLS} x {b} brokers x T_broker + {c} controllers x T_controller",
            "broker_restart_seconds": self.broker_restart_s,
            "controller_restart_seconds": self.controller_restart_s,
            "rolls_seconds": seconds,
        }

    def to_json(self) -> dict[str, Any]:
        inv, cluster = self.inventory, self.cluster
        report = cluster.preflight
        return {
            "inventory": str(inv.path),
            "kafka_version": inv.version,
            "zookeeper_connect": str(inv.zookeeper_connect),
            "cluster_id": cluster.cluster_id,
            "zookeeper_error": cluster.error,
            "brokers": [
                {"id": b.id, "host": b.host, "registered": b.id in cluster.registered}
                for b in inv.brokers
            ],
            "controllers": [{"id": c.id, "host": c.host, "port": c.port} for c in inv.controllers],
            "preflight": report.to_json() if report is not None else None,
            "ready": self.ready,
            "problems": list(self.problems),
            "phases": [
                {"name": p.name, "title": p.title, "steps": [s.to_json() for s in p.steps]}
                for p in self.phases
            ],
            "estimate": self.estimate(),
        }


def _problems(inv: Inventory, texts: dict[int, str], cluster: ClusterFacts) -> list[str]:
    problems = file_problems(inv, texts)
    if cluster.error is not None:
        return [f"ZooKeeper not read: {cluster.error}", *problems]
    if cluster.cluster_id is None:
        problems.append("ZooKeeper holds no /cluster/id: is zookeeper.connect the cluster's?")
    expected = {b.id for b in inv.brokers}
    if missing := sorted(expected - cluster.registered):
        problems.append(
            f"broker(s) {missing} of the inventory not registered in /brokers/ids: start them"
        )
    if unexpected := sorted(cluster.registered - expected):
        problems.append(
            f"broker(s) {unexpected} registered in /brokers/ids are not in the inventory: add "
            "them (every broker is rolled)"
        )
    if cluster.preflight is not None:
        problems += [f"preflight: {f.code}: {f.message}" for f in cluster.preflight.blockers]
    return problems


class PlanBuilder:
    """Steps gathered phase by phase (each edit's text chained to the next's)."""

    def __init__(self, inv: Inventory, cluster_id: str) -> None:
        self.inv, self.cluster_id = inv, cluster_id
        self.steps: list[Step] = []
        self.after: dict[str, str] = {}

    def edit(
        self,
        step_id: str,
        node: Broker | Controller,
        what: str,
        text: str,
        rule: Callable[[str], Changes],
    ) -> str:
        new = apply(text, rule(text))
        path = str(node.properties)
        diff = shown_diff(text, new, f"{path} (now)", f"{path} (after)")
        self.steps.append(
            Step(step_id, "edit", what, node.id, path, diff, done=new == text, change=rule)
        )
        self.after[step_id] = new
        return new

    def run(
        self, step_id: str, node: Broker | Controller, what: str, command: Command, **more: str
    ) -> None:
        argv = tuple(command.argv(self.inv.values(node, **more)))
        self.steps.append(Step(step_id, "run", what, node.id, command=argv))

    def roll(
        self,
        phase: str,
        broker: Broker,
        change: tuple[str, str, Callable[[str], Changes]],
        back: tuple[str, str],
    ) -> str:
        """One broker's turn in a roll: ``change`` (what, its file's text, the rule)
        edited and pushed, the broker restarted, then the gate ``back`` (what, what it
        waits for); the file's text after the edit."""
        p = f"{phase}.{broker.id}"
        what, text, rule = change
        after = self.edit(f"{p}.edit", broker, f"broker {broker.id}: {what}", text, rule)
        self.push(p, broker)
        self.run(f"{p}.restart", broker, f"broker {broker.id}: restart", broker.restart)
        self.gate(f"{p}.back", f"broker {broker.id} back, {back[0]}", back[1], broker.id)
        return after

    def push(self, prefix: str, node: Broker | Controller) -> None:
        if node.push is not None:
            self.run(f"{prefix}.push", node, "copy the edited file to its host", node.push)

    def gate(self, step_id: str, what: str, waits_for: str, node: int | None = None) -> None:
        self.steps.append(Step(step_id, "gate", what, node, waits_for=waits_for))

    def zookeeper(self, step_id: str, what: str) -> None:
        """A checked write to ZooKeeper (the rollback's hand-back)."""
        self.steps.append(Step(step_id, "zookeeper", what))

    def deprovision(self, step_id: str, node: Controller) -> None:
        """A controller's metadata directory moved aside."""
        what = f"controller {node.id}: move {node.metadata_log_dir} aside"
        self.steps.append(Step(step_id, "deprovision", what, node.id, str(node.metadata_log_dir)))

    def phase(self, name: str, title: str) -> Phase:
        phase = Phase(name, title, tuple(self.steps))
        self.steps = []
        return phase


@dataclass(frozen=True)
class Files:
    """The nodes' properties files as they are now: ``brokers``/``controllers`` by node
    id (a controller's is empty when it has none yet); ``client``: the file with the
    ZooKeeper client settings."""

    brokers: dict[int, str]
    controllers: dict[int, str]
    client: str


def build_plan(
    inv: Inventory,
    files: Files,
    cluster: ClusterFacts,
    *,
    broker_restart_s: float | None = None,
    controller_restart_s: float | None = None,
) -> Plan:
    """The plan of the module doc for ``inv``, its ``files`` and its ``cluster``: its
    phases in order, each built by its own function on one :class:`PlanBuilder`."""
    cluster_id = cluster.cluster_id or "{cluster_id}"
    b = PlanBuilder(inv, cluster_id)
    phases = [_preflight(b, inv), _controllers(b, inv, files, cluster_id)]
    rolled = {x.id: _migration_roll(b, inv, files, x) for x in inv.brokers}
    phases.append(b.phase("brokers-migration", PHASES["brokers-migration"]))
    phases.append(_copy(b, inv))
    phases.append(_brokers_kraft(b, inv, rolled))
    phases.append(_finalize(b, inv, files))
    return Plan(
        inventory=inv,
        cluster=cluster,
        problems=tuple(_problems(inv, files.brokers, cluster)),
        phases=tuple(phases),
        broker_restart_s=broker_restart_s,
        controller_restart_s=controller_restart_s,
        texts_after=b.after,
    )


def _preflight(b: PlanBuilder, inv: Inventory) -> Phase:
    """ZooKeeper's tree ready and every broker of the inventory registered."""
    b.gate("preflight.zookeeper", "ZooKeeper's tree ready to migrate",
           "zk2kraft preflight: no blocker (no reassignment in flight, no migration left "
           "over, every partition led); /cluster/id present")  # fmt: skip
    b.gate("preflight.brokers", "every broker of the inventory registered, and no other",
           f"/brokers/ids = {sorted(x.id for x in inv.brokers)}")  # fmt: skip
    return b.phase("preflight", PHASES["preflight"])


def _controllers(b: PlanBuilder, inv: Inventory, files: Files, cluster_id: str) -> Phase:
    """Each controller configured (from the first broker's and the client's settings),
    formatted with ZooKeeper's cluster id and started; then the quorum up."""
    first_broker = files.brokers.get(inv.brokers[0].id, "")
    for c in inv.controllers:
        p = f"controllers.{c.id}"
        now = files.controllers.get(c.id, "")
        b.edit(f"{p}.write", c, f"controller {c.id}: its properties", now,
               partial(controller_changes, inv, c, broker_text=first_broker,
                       client_text=files.client))  # fmt: skip
        b.push(p, c)
        b.run(f"{p}.format", c, f"controller {c.id}: format its metadata directory with "
              f"ZooKeeper's cluster id {cluster_id}", c.format, cluster_id=cluster_id)  # fmt: skip
        b.run(f"{p}.start", c, f"controller {c.id}: start", c.start)
    b.gate("controllers.quorum", "the controller quorum up",
           f"DescribeQuorum at {inv.voters}: a leader, every voter caught up")  # fmt: skip
    return b.phase("controllers", PHASES["controllers"])


def _migration_roll(b: PlanBuilder, inv: Inventory, files: Files, x: Broker) -> str:
    """Broker ``x`` rolled with the migration settings; returns its properties after."""
    return b.roll(
        "brokers-migration", x,
        ("the migration settings", files.brokers.get(x.id, ""),
         partial(broker_migration_changes, inv)),
        ("migrating", MIGRATING_BACK.format(id=x.id)),
    )  # fmt: skip


def _copy(b: PlanBuilder, inv: Inventory) -> Phase:
    """Kafka's copy in the log, the dual-write caught up, and the audit consistent."""
    leader = inv.controllers[0]
    b.gate("copy.done", "Kafka's copy of ZooKeeper's metadata",
           "ZkMigrationState MIGRATION in the controllers' metadata log (controller "
           f"{leader.id}: {leader.metadata_log_dir}); /migration claimed by the active "
           "controller")  # fmt: skip
    b.gate("copy.dual-write", "the dual-write caught up",
           "/migration's kraft_metadata_offset at the active controller's log end")  # fmt: skip
    b.gate("audit.before-kraft", "ZooKeeper and the metadata log agree",
           "zk2kraft audit: CONSISTENT")  # fmt: skip
    return b.phase("copy", PHASES["copy"])


def _brokers_kraft(b: PlanBuilder, inv: Inventory, rolled: dict[int, str]) -> Phase:
    """Each broker rolled into KRaft mode from its migration properties (``rolled``)."""
    for x in inv.brokers:
        b.roll(
            "brokers-kraft", x,
            ("into KRaft mode", rolled[x.id], partial(broker_kraft_changes, inv, broker_id=x.id)),
            ("in KRaft mode", f"broker {x.id} registered with the controllers, not migrating, "
             "unfenced; no under-replicated partition"),
        )  # fmt: skip
    return b.phase("brokers-kraft", PHASES["brokers-kraft"])


def _finalize(b: PlanBuilder, inv: Inventory, files: Files) -> Phase:
    """No broker left in ZooKeeper mode, the audit consistent, then each controller
    restarted without the migration settings: POST_MIGRATION."""
    b.gate("finalize.brokers", "no broker left in ZooKeeper mode",
           "every broker registered with the controllers, none migrating")  # fmt: skip
    b.gate("audit.before-finalize", "ZooKeeper and the metadata log agree",
           "zk2kraft audit: CONSISTENT")  # fmt: skip
    for c in inv.controllers:
        p = f"finalize.{c.id}"
        written = b.after.get(f"controllers.{c.id}.write", files.controllers.get(c.id, ""))
        b.edit(f"{p}.edit", c, f"controller {c.id}: without the migration settings", written,
               controller_finalize_changes)  # fmt: skip
        b.push(p, c)
        b.run(f"{p}.stop", c, f"controller {c.id}: stop", c.stop)
        b.run(f"{p}.start", c, f"controller {c.id}: start", c.start)
    b.gate(FINAL_STEP, "the migration finalized",
           "ZkMigrationState POST_MIGRATION in the metadata log")  # fmt: skip
    return b.phase("finalize", PHASES["finalize"])


def render_text(plan: Plan) -> str:
    """The plan as an operator reads it (every line from a file or ZooKeeper made inert)."""
    inv, cluster = plan.inventory, plan.cluster
    out = [
        f"Plan: {inv.zookeeper_connect} (cluster id {cluster.cluster_id or 'not read'}, "
        f"Kafka {inv.version}) to KRaft: {len(inv.brokers)} broker(s), "
        f"{len(inv.controllers)} controller(s)",
        "Ready to start." if plan.ready else "NOT ready:",
    ]
    out += [f"  - {p}" for p in plan.problems]
    for number, phase in enumerate(plan.phases, 1):
        out.append(f"\n{number}. {phase.name}: {phase.title}")
        for s in phase.steps:
            match s.kind:
                case "gate":
                    out.append(f"   [gate] {s.what}: waits for {s.waits_for}")
                case "run":
                    out.append(f"   [run]  {s.what}: {shlex.join(s.command or ())}")
                case "zookeeper" | "deprovision":
                    out.append(f"   [{s.kind}] {s.what}")
                case "edit":
                    out.append(
                        f"   [edit] {s.what}: {s.file}" + (" (as wanted already)" if s.done else "")
                    )
                    out += [f"          {line}" for line in (s.diff or "").splitlines()]
                case _:
                    assert_never(s.kind)
    e = plan.estimate()
    seconds = (
        f" = {e['rolls_seconds']:g} s"
        if e["rolls_seconds"] is not None
        else " (give --broker-restart-seconds: one of your brokers' restart, timed)"
    )
    out.append(f"\nEstimate of the rolls: {e['formula']}{seconds}")
    return inert("\n".join(out)) + "\n"
