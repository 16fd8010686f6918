"""One chaos run, from its seed (:mod:`.plan`), with real processes: a ZooKeeper ensemble
of three, a seeded cluster served by three ZooKeeper-mode brokers, three controllers
each reaching ZooKeeper through proxies of its own (:mod:`.proxy`), and the client of
:mod:`.workload` changing metadata from before the controllers start to after the end.

The migration is taken stage by stage; each stage's faults are injected on a thread of
their own at their offsets into the stage while the stage's work (the broker roll, or
just time passing) goes on; then everything is put back (every process running, the
network whole) and the run waits until the migration is healthy again before the next
stage. Every wait is a hang guard: a run that does not converge fails, naming what it
waited for.

After the run (:mod:`.checks`): the Spark audit, every acknowledged write in KRaft and
(until finalization) in ZooKeeper, ZooKeeper's transaction logs for fenced writes, and
the partitions seen offline.
"""

from __future__ import annotations

import json
import signal
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migration.broker.modes import Mode
from migration.zk import paths
from migration.zk.embedded import EmbeddedZooKeeper
from migration.zk.model.cluster import parse_controller
from migration.zk.seed import ClusterSpec
from tests.broker_harness import eventually
from tests.chaos import checks
from tests.chaos.plan import BROKERS, Fault, Plan, make_plan
from tests.chaos.proxy import ZkProxy
from tests.chaos.workload import Workload
from tests.migration_harness import MigrationRig, migration_rig, restart_controllers

FLAG = "zookeeper.metadata.migration.enable"
SPEC = ClusterSpec(
    brokers=3, topics=60, partitions=3000, replication_factor=3,
    quota_entities=6, scram_users=4, acl_resources=10, delegation_tokens=1,
)  # fmt: skip
"""The cluster each run migrates: big enough that the copy takes many commit rounds
(``batch.bytes`` 1 KiB, the least), so a kill in the copy stage lands in it."""
WAITING = ("INACTIVE", "WAIT_FOR_CONTROLLER_QUORUM", "WAIT_FOR_BROKERS", "BECOME_CONTROLLER")
HEALTHY_S = 240.0  # hang guard: the migration healthy again after a stage's faults


@dataclass
class Run:
    """One run's live state and record."""

    plan: Plan
    rig: MigrationRig
    ensemble: EmbeddedZooKeeper
    proxies: dict[int, list[ZkProxy]]
    started: float = field(default_factory=time.monotonic)
    stage: str = "zookeeper"
    events: list[dict[str, Any]] = field(default_factory=list)
    stages: dict[str, float] = field(default_factory=dict)  # stage -> seconds it took
    facts: dict[str, Any] = field(default_factory=dict)  # what the checks measured
    lock: threading.Lock = field(default_factory=threading.Lock)
    sampler: checks.OfflineSampler = field(init=False)

    def __post_init__(self) -> None:
        self.sampler = checks.OfflineSampler(self.rig.cluster, lambda: self.stage)

    def note(self, event: str, **details: Any) -> None:
        at = round(time.monotonic() - self.started, 2)
        with self.lock:
            self.events.append({"t": at, "stage": self.stage, "event": event, **details})

    def status(self) -> dict[str, Any]:
        return self.rig.status()

    def active(self, fault: Fault) -> tuple[int, str]:
        """The active controller and its driver phase (hang guard). In the copy stage,
        aimed at the copy: the first leader once its driver is past waiting (polled as
        fast as the quorum answers, to land inside ZK_MIGRATION)."""
        if fault.stage != "copy":
            s = eventually(lambda: dual_writing(s := self.status()) and s, 120, "a leader")
            return s["active_controller"], s["driver_phase"]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                s = self.status()
            except Exception:
                time.sleep(0.01)  # no voter answering yet
                continue
            if s["active_controller"] >= 0 and s["driver_phase"] not in WAITING:
                return s["active_controller"], s["driver_phase"]
        raise TimeoutError("no leader began migrating")


# --- the faults ------------------------------------------------------------------------


def _restart_controller(run: Run, node: int, down_s: float) -> None:
    time.sleep(down_s)
    run.rig.quorum.start(node)
    run.note("controller started", node=node)


def kill_active_controller(run: Run, fault: Fault) -> None:
    node, phase = run.active(fault)
    run.rig.quorum.kill(node, signal.SIGKILL)
    run.note("SIGKILL active controller", node=node, phase=phase)
    _restart_controller(run, node, fault.params["down_s"])


def kill_controller_mid_sync(run: Run, fault: Fault) -> None:
    """The leader killed, then its successor killed while it takes over (syncing
    ZooKeeper to the log, telling the brokers)."""
    first, _ = run.active(fault)
    epoch = run.status()["kraft_epoch"]
    run.rig.quorum.kill(first, signal.SIGKILL)
    run.note("SIGKILL active controller", node=first)
    run.rig.quorum.start(first)  # it may win the next election itself
    second, phase = eventually(
        lambda: (
            (s := run.status())["active_controller"] >= 0
            and s["kraft_epoch"] > epoch
            and (s["active_controller"], s["driver_phase"])
        ),
        120,
        "a leader in a later epoch",
    )
    run.rig.quorum.kill(second, signal.SIGKILL)
    run.note("SIGKILL successor while it takes over", node=second, phase=phase)
    _restart_controller(run, second, fault.params["down_s"])


def zombie_controller(run: Run, fault: Fault) -> None:
    node, phase = run.active(fault)
    proc = run.rig.quorum.procs[node]
    proc.send_signal(signal.SIGSTOP)
    run.note("SIGSTOP active controller", node=node, phase=phase)
    try:
        time.sleep(fault.params["stopped_s"])
    finally:
        proc.send_signal(signal.SIGCONT)
        run.note("SIGCONT", node=node)


def controller_zk_session_expiry(run: Run, fault: Fault) -> None:
    node, phase = run.active(fault)
    for proxy in run.proxies[node]:
        proxy.cut(fault.params["cut_s"])
    run.note("network to ZooKeeper cut", node=node, phase=phase, seconds=fault.params["cut_s"])
    time.sleep(fault.params["cut_s"])
    run.note("network to ZooKeeper back", node=node)


def zk_server_restart(run: Run, fault: Fault) -> None:
    phase = run.active(fault)[1] if fault.stage == "copy" else None
    server = int(fault.params["server"])
    mode = run.ensemble.servers[server - 1].mode()
    run.ensemble.kill(server)
    run.note("SIGKILL ZooKeeper server", server=server, mode=mode, phase=phase)
    time.sleep(fault.params["down_s"])
    run.ensemble.restart(server)
    run.note("ZooKeeper server restarted", server=server)


def slow_zk_network(run: Run, fault: Fault) -> None:
    if fault.stage == "copy":
        run.active(fault)
    delay = fault.params["delay_ms"] / 1000
    for proxy in (p for ps in run.proxies.values() for p in ps):
        proxy.delay_s = delay
    run.note("network to ZooKeeper slow", delay_ms=fault.params["delay_ms"])
    time.sleep(fault.params["for_s"])
    for proxy in (p for ps in run.proxies.values() for p in ps):
        proxy.delay_s = 0.0
    run.note("network to ZooKeeper fast again")


def broker_kill(run: Run, fault: Fault) -> None:
    """Run by the roll itself, between two broker restarts (the cluster is the roll's)."""
    broker = int(fault.params["broker"])
    unfenced = _unfenced(run, broker)
    run.sampler.uncontrolled = True
    run.rig.cluster.kill(broker)
    mode = run.rig.cluster.brokers[broker].mode
    run.note("SIGKILL broker", broker=broker, mode=mode.name if mode else "MIGRATING")
    time.sleep(fault.params["down_s"])
    run.rig.cluster.start(broker)
    run.rig.cluster.wait_ready(120, expected=list(BROKERS))
    # Its old registration lives on in the controller until its session times out:
    # only once the new one is unfenced do the ISRs say anything about it.
    what = f"broker {broker} registered anew and unfenced"
    eventually(lambda: _unfenced(run, broker) > unfenced, HEALTHY_S, what)
    wait_fully_replicated(run)
    run.sampler.uncontrolled = False
    run.note("broker back", broker=broker)


def _unfenced(run: Run, broker: int) -> int:
    """How often the broker's log says the KRaft controller unfenced it."""
    log = run.rig.cluster.brokers[broker].log.read_text(errors="replace")
    return log.count("is unfenced by the KRaft controller")


def wait_fully_replicated(run: Run) -> None:
    """Until every partition's replicas are all in its ISR again, as an operator waits
    for no under-replicated partitions before restarting the next broker."""

    def in_sync(broker: int) -> bool:
        m: Any = run.rig.cluster.metadata(broker, timeout_s=10)
        return all(
            sorted(p.isr_nodes) == sorted(p.replica_nodes) for t in m.topics for p in t.partitions
        )

    for broker in BROKERS:  # as each broker answers Metadata
        eventually(
            lambda b=broker: in_sync(b), HEALTHY_S, f"no under-replicated partitions ({broker})"
        )


INJECT: dict[str, Callable[[Run, Fault], None]] = {
    "kill-active-controller": kill_active_controller,
    "kill-controller-mid-sync": kill_controller_mid_sync,
    "zombie-controller": zombie_controller,
    "controller-zk-session-expiry": controller_zk_session_expiry,
    "zk-server-restart": zk_server_restart,
    "slow-zk-network": slow_zk_network,
}


class FaultThread(threading.Thread):
    """The stage's faults (all but the roll's broker kills), in order, each at its
    offset into the stage."""

    def __init__(self, run: Run, stage: str) -> None:
        super().__init__(name=f"faults-{stage}", daemon=True)
        self.run_ = run
        self.faults = [f for f in run.plan.at(stage) if f.kind in INJECT]
        self.error: BaseException | None = None

    def run(self) -> None:
        began = time.monotonic()
        try:
            for fault in self.faults:
                time.sleep(max(0.0, fault.after_s - (time.monotonic() - began)))
                INJECT[fault.kind](self.run_, fault)
        except BaseException as exc:  # reported by the stage
            self.error = exc

    def finish(self) -> None:
        self.join(timeout=600)
        if self.error is not None:
            raise RuntimeError(f"injecting a fault failed: {self.error!r}") from self.error


# --- putting things back ---------------------------------------------------------------


def settle(run: Run, until: Callable[[dict[str, Any]], bool], what: str) -> None:
    """Every process running and the network whole again, then until the migration is
    ``what`` (hang guard)."""
    for node in run.rig.quorum.ids:
        proc = run.rig.quorum.procs.get(node)
        if proc is not None and proc.poll() is not None:
            run.note("controller had exited", node=node, code=proc.returncode)
            run.rig.quorum.procs.pop(node)
        if node not in run.rig.quorum.procs:
            run.rig.quorum.start(node)
    for proxy in (p for ps in run.proxies.values() for p in ps):
        proxy.delay_s = 0.0
    if any(not s.running for s in run.ensemble.servers):
        for s in run.ensemble.servers:
            if not s.running:
                run.ensemble.restart(s.myid)
    exited = [b for b, c in run.rig.cluster.brokers.items() if c.process and c.process.poll()]
    if exited:
        run.note("brokers had exited", brokers=exited)
        for b in exited:
            run.rig.cluster.start(b)
    run.rig.cluster.wait_ready(120, expected=list(BROKERS))
    eventually(lambda: until(run.status()), HEALTHY_S, what)


def dual_writing(s: dict[str, Any]) -> bool:
    return s["active_controller"] >= 0 and s["driver_phase"] == "DUAL_WRITE"


def stage(
    run: Run, name: str, work: Callable[[], None], healthy: Callable[[dict[str, Any]], bool]
) -> None:
    run.stage = name
    began = time.monotonic()
    faults = FaultThread(run, name)
    faults.start()
    work()
    faults.finish()
    settle(run, healthy, f"{name}: the migration healthy again")
    run.stages[name] = round(time.monotonic() - began, 2)


# --- the run ---------------------------------------------------------------------------


def _proxied_connect(ensemble: EmbeddedZooKeeper, proxies: list[ZkProxy], chroot: str) -> str:
    return ",".join(f"127.0.0.1:{p.port}" for p in proxies) + chroot


def run_seed(
    seed: int, root: Path, faults: int | None = None, plan: Plan | None = None
) -> dict[str, Any]:
    """Run ``seed`` (or ``plan``) under ``root``; the run's record (``ok``, and
    ``failure`` and ``problems`` when not)."""
    plan = plan or make_plan(seed, faults)
    record: dict[str, Any] = {"seed": seed, "plan": plan.to_json(), "ok": False}
    root.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    with EmbeddedZooKeeper(nodes=3, base_dir=root / "zk") as ensemble:
        proxies: dict[int, list[ZkProxy]] = {}
        try:
            with migration_rig(
                ensemble, root, SPEC, start_quorum=False, ready_timeout_s=120,
                controller_props={"zookeeper.metadata.migration.batch.bytes": "1024"},
            ) as rig:  # fmt: skip
                chroot = rig.zk_connect[len(ensemble.connect_string) :]
                for node in rig.quorum.ids:
                    proxies[node] = [ZkProxy(s.client_port) for s in ensemble.servers]
                    connect = _proxied_connect(ensemble, proxies[node], chroot)
                    rig.quorum.reconfigure(node, **{"zookeeper.connect": connect})
                run = Run(plan, rig, ensemble, proxies)
                try:
                    record["problems"] = _migrate(run, root)
                    record["ok"] = not record["problems"]
                except BaseException as exc:
                    record["failure"] = f"{type(exc).__name__}: {exc}"
                    record["traceback"] = traceback.format_exc()
                    if not isinstance(exc, Exception):
                        raise
                finally:
                    record.update(run.facts, events=run.events, stages_s=run.stages)
        finally:
            for ps in proxies.values():
                for p in ps:
                    p.close()
    record["seconds"] = round(time.monotonic() - began, 1)
    (root / "run.json").write_text(json.dumps(record, indent=2, default=str))
    return record


def _migrate(run: Run, root: Path) -> list[str]:
    """The run's stages with the workload going the whole time; its problems."""
    rig, plan = run.rig, run.plan
    workload = Workload(rig.cluster.bootstrap, plan.seed, lambda: run.stage)
    sampler = run.sampler
    workload.start()
    sampler.start()
    try:
        eventually(lambda: workload.ledger.acked >= 3, 120, "writes acknowledged in ZooKeeper mode")
        problems = _stages(run, workload, root)
    finally:
        workload.stop()
        sampler.stop()
        run.facts.update(checks.summary(workload, sampler))
    if sampler.seen:
        shown = sorted(sampler.seen.items())[:10]
        problems.append(f"offline under controlled restarts ({len(sampler.seen)}): {shown}")
    return problems


def _stages(run: Run, workload: Workload, root: Path) -> list[str]:
    rig, plan = run.rig, run.plan

    def copy() -> None:
        run.note("controllers started")
        rig.quorum.start_all()
        eventually(lambda: dual_writing(run.status()), HEALTHY_S, "the first DUAL_WRITE")

    stage(run, "copy", copy, dual_writing)
    stage(run, "dual-write", lambda: time.sleep(3.0), dual_writing)
    if plan.ending == "rollback-active":
        return _rollback(run, workload, root)
    rolled = _roll(run)
    if plan.ending == "rollback-mid-roll":
        run.stage = "roll-back"
        for b in rolled:
            rig.cluster.set_mode(b, Mode.MIGRATING)
            rig.cluster.restart(b)
            rig.cluster.wait_ready(120, expected=list(BROKERS))
            wait_fully_replicated(run)
        eventually(
            lambda: (
                (s := run.status())["zk_brokers"] == list(BROKERS)
                and s["state"] == "MigrationActive"
            ),
            120,
            "every broker back in ZooKeeper mode",
        )
        return _rollback(run, workload, root)

    def finished(s: dict[str, Any]) -> bool:
        return dual_writing(s) and s["state"] == "MigrationFinished"

    eventually(lambda: finished(run.status()), 120, "MigrationFinished")
    stage(run, "finished", lambda: time.sleep(3.0), finished)
    run.stage = "finalizing"
    began = time.monotonic()
    restart_controllers(rig, **{FLAG: "false", "zookeeper.connect": None})
    eventually(lambda: run.status()["state"] == "KRaft", 120, "KRaft")
    run.stages["finalizing"] = round(time.monotonic() - began, 2)
    run.stage = "kraft"
    acked = workload.ledger.acked
    eventually(lambda: workload.ledger.acked >= acked + 3, 120, "writes acknowledged in KRaft")
    run.note("writes acknowledged in KRaft")
    workload.stop()
    run.note("workload stopped")
    return checks.after_finalization(run, workload.ledger, root)


def _roll(run: Run) -> list[int]:
    """Brokers into KRaft mode in the plan's order (up to the rollback point), with the
    broker kill the plan puts in between; returns the brokers rolled."""
    rig, plan = run.rig, run.plan
    count = plan.rolled_before_rollback if plan.ending == "rollback-mid-roll" else len(BROKERS)
    kills = [f for f in plan.at("roll") if f.kind == "broker-kill-mid-roll"]
    rolled: list[int] = []

    def work() -> None:
        for i, b in enumerate(plan.roll_order[:count]):
            rig.cluster.set_mode(b, Mode.KRAFT)
            rig.cluster.restart(b)
            rig.cluster.wait_ready(120, expected=list(BROKERS))
            wait_fully_replicated(run)
            rolled.append(b)
            run.note("broker rolled into KRaft mode", broker=b)
            for fault in kills:
                if min(int(fault.params["after_rolled"]), count) == i + 1:
                    broker_kill(run, fault)

    stage(run, "roll", work, dual_writing)
    return rolled


def _rollback(run: Run, workload: Workload, root: Path) -> list[str]:
    """Quiesce, stop the quorum, audit and check both stores, hand ZooKeeper back."""
    run.stage = "rollback"
    workload.stop()
    rig = run.rig
    eventually(lambda: run.status()["zk_write_behind_lag"] == 0, 120, "write-behind lag 0")
    rig.quorum.stop_all(signal.SIGTERM)
    run.note("quorum stopped")
    problems = checks.before_hand_back(run, workload.ledger, root)
    checks.hand_back(run)
    owner = eventually(
        lambda: (
            (o := parse_controller(paths.CONTROLLER, rig.zk.get(paths.CONTROLLER)[0]))
            and not o.is_kraft
            and o
        ),
        120,
        "a ZooKeeper controller elected",
    )
    run.note("ZooKeeper controller elected", broker=owner.broker_id)
    return problems
