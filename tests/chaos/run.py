"""One chaos run, from its seed (:mod:`.plan`), with real processes: a ZooKeeper ensemble
of three, a seeded cluster served by three ZooKeeper-mode brokers, three controllers
each reaching ZooKeeper through proxies of its own (:mod:`.proxy`), each controller
reaching the other voters and each broker the controllers through proxies of their own
(:mod:`.net_faults`), and the client of :mod:`.workload` changing metadata from before
the controllers start to after the end.

The migration is taken stage by stage; each stage's faults (:mod:`.faults`) are injected
on a thread of their own at their offsets into the stage while the stage's work (the
broker roll, or just time passing) goes on; then everything is put back (every process
running, the network whole) and the run waits until the migration is healthy again
before the next stage. Every wait is a hang guard: a run that does not converge fails,
naming what it waited for. The run's shared state: :mod:`.context`.

After the run (:mod:`.checks`): the Spark audit, every acknowledged write in KRaft and
(until finalization) in ZooKeeper, ZooKeeper's transaction logs for fenced writes, and
the partitions seen offline (:mod:`.sampler`).
"""

from __future__ import annotations

import json
import logging
import signal
import time
import traceback
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from migration.broker.modes import Mode
from migration.cli.migration_commands import zk_caught_up
from migration.local.seed import ClusterSpec
from migration.local.zookeeper import EmbeddedZooKeeper
from tests.broker_harness import eventually
from tests.chaos import checks
from tests.chaos.context import (
    HEALTHY_S,
    Run,
    dual_writing,
    start_exited_controllers,
    wait_fully_replicated,
)
from tests.chaos.faults import FaultThread, broker_kill
from tests.chaos.host_faults import host_tools
from tests.chaos.net_faults import broker_links, wire_controllers
from tests.chaos.plan import BROKERS, Plan, make_plan
from tests.chaos.proxy import Links, TcpProxy
from tests.chaos.workload import Workload
from tests.migration_harness import (
    CONTROLLER_IDS_FROM,
    migration_rig,
    restart_controllers,
    zk_controller_elected,
)

FLAG = "zookeeper.metadata.migration.enable"
SPEC = ClusterSpec(
    brokers=3, topics=60, partitions=3000, replication_factor=3,
    quota_entities=6, scram_users=4, acl_resources=10, delegation_tokens=1,
)  # fmt: skip
"""The cluster each run migrates: big enough that the copy takes many commit rounds
(``batch.bytes`` 1 KiB, the least), so a kill in the copy stage lands in it."""


# --- putting things back ---------------------------------------------------------------


def settle(run: Run, until: Callable[[dict[str, Any]], bool], what: str) -> None:
    """Every process running and the network whole again, then until the migration is
    ``what`` (hang guard)."""
    start_exited_controllers(run, "controller had exited")
    for proxy in (p for ps in run.proxies.values() for p in ps):
        proxy.delay_s = 0.0
    run.links.heal()
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


def _proxied_connect(ensemble: EmbeddedZooKeeper, proxies: list[TcpProxy], chroot: str) -> str:
    return ",".join(f"127.0.0.1:{p.port}" for p in proxies) + chroot


def quiet_logs() -> None:
    """In each process running chaos runs: kazoo's reconnect warnings are the faults at
    work, not news."""
    logging.getLogger("kazoo").setLevel(logging.ERROR)


def run_seed(
    seed: int, root: Path, faults: int | None = None, plan: Plan | None = None
) -> dict[str, Any]:
    """Run ``seed`` (or ``plan``) under ``root``; the run's record (``ok``, and
    ``failure`` and ``problems`` when not)."""
    plan = plan or make_plan(seed, faults)
    record: dict[str, Any] = {"seed": seed, "root": str(root), "plan": plan.to_json(), "ok": False}
    root.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    try:  # a run that cannot even start (a port taken, a server that died) fails alone
        _run(plan, root, record)
    except Exception as exc:
        record["failure"] = f"{type(exc).__name__}: {exc}"
        record["traceback"] = traceback.format_exc()
    record["seconds"] = round(time.monotonic() - began, 1)
    (root / "run.json").write_text(json.dumps(record, indent=2, default=str))
    return record


def _run(plan: Plan, root: Path, record: dict[str, Any]) -> None:
    with EmbeddedZooKeeper(nodes=3, base_dir=root / "zk") as ensemble:
        proxies: dict[int, list[TcpProxy]] = {}
        links = Links()  # controllers' links to each other, brokers' to the controllers
        controllers = [CONTROLLER_IDS_FROM + k for k in range(3)]
        host = ExitStack()  # the controllers' host tools (host_faults): undone once they stop
        try:
            with migration_rig(
                ensemble, root, SPEC, start_quorum=False, ready_timeout_s=120,
                controller_props={"zookeeper.metadata.migration.batch.bytes": "1024"},
                broker_properties=broker_links(links, list(BROKERS), controllers),
            ) as rig:  # fmt: skip
                host.enter_context(host_tools(rig.quorum, {f.kind for f in plan.faults}))
                chroot = rig.zk_connect[len(ensemble.connect_string) :]
                wire_controllers(links, rig.quorum)
                for node in rig.quorum.ids:
                    proxies[node] = [
                        TcpProxy(s.client_port, name=f"controller {node} -> zk {s.myid}")
                        for s in ensemble.servers
                    ]
                    connect = _proxied_connect(ensemble, proxies[node], chroot)
                    rig.quorum.reconfigure(node, **{"zookeeper.connect": connect})
                run = Run(plan, rig, ensemble, proxies, links)
                try:
                    record["problems"] = _migrate(run, root)
                    record["ok"] = not record["problems"]
                finally:
                    record.update(run.facts, events=run.events, stages_s=run.stages)
        finally:
            host.close()
            links.close()
            for ps in proxies.values():
                for p in ps:
                    p.close()


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
        quorum = rig.quorum
        run.facts["copy_caught_up"] = checks.copy_catch_ups(quorum.output(n) for n in quorum.ids)
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
    # as the runbook has it: what was acknowledged before now is in ZooKeeper first
    eventually(lambda: zk_caught_up(run.status()), 120, "ZooKeeper caught up")
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


ROLLBACK_ATTEMPTS = 3
"""Stop the quorum and check the rollback at most this often: a refusal for write-behind
lag is answered as the runbook says (start the quorum again, let ZooKeeper catch up, stop
it again)."""
STEADY_S = 1.0


def wait_zk_caught_up(run: Run, what: str = "ZooKeeper caught up") -> dict[str, Any]:
    """Until ZooKeeper has caught up, as far as ``migration status`` can tell (hang
    guard): the lag 0 on two answers at least :data:`STEADY_S` apart that agree on the
    active controller, the high watermark and ``/migration``'s offset. The ledger knows
    no offsets to compare ``/migration`` with, and one answer may predate a change still
    on its way to ZooKeeper (a lag counted only from what reached the driver said 0 while
    an acknowledged write was committed, seed 380031): the rollback's own check of the
    logs is the last word (:func:`_rollback`)."""
    first: tuple[tuple[Any, ...], float] | None = None

    def steady() -> dict[str, Any] | None:
        nonlocal first
        s = run.status()
        if not zk_caught_up(s):
            first = None
            return None
        held = (s["migration_znode"] or {}).get("kraft_metadata_offset")
        key = (s["active_controller"], s["high_watermark"], held)
        now = time.monotonic()
        if first is None or first[0] != key:
            first = (key, now)
            return None
        return s if now - first[1] >= STEADY_S else None

    found = eventually(steady, 120, what)
    assert found is not None  # eventually returns only a truthy answer
    return found


def _rollback(run: Run, workload: Workload, root: Path) -> list[str]:
    """Quiesce; then as the runbook has it: ZooKeeper caught up, every controller
    stopped, the rollback's checks (``--dry-run``), and on a refusal for write-behind lag
    the quorum started again to let ZooKeeper catch up (:data:`ROLLBACK_ATTEMPTS`). Once
    they pass, audit and check both stores (ZooKeeper as it is handed back), then hand
    ZooKeeper back."""
    run.stage = "rollback"
    workload.stop()
    rig = run.rig
    for attempt in range(1, ROLLBACK_ATTEMPTS + 1):
        caught_up = wait_zk_caught_up(run)
        rig.quorum.stop_all(signal.SIGTERM)
        run.note("quorum stopped", attempt=attempt, high_watermark=caught_up["high_watermark"])
        refused = checks.hand_back(run, dry_run=True)
        if not refused:
            break
        codes = sorted({f["code"] for f in refused})
        run.note("rollback refused", attempt=attempt, codes=codes,
                 messages=[f["message"] for f in refused])  # fmt: skip
        if codes != ["write-behind-lag"] or attempt == ROLLBACK_ATTEMPTS:
            raise RuntimeError(f"rollback refused (attempt {attempt}): {refused}")
        rig.quorum.start_all()  # the runbook: start it again and let ZooKeeper catch up
        run.note("quorum started again", attempt=attempt)
    problems = checks.before_hand_back(run, workload.ledger, root)
    refused = checks.hand_back(run)
    if refused:
        raise RuntimeError(f"rollback refused after its dry run passed: {refused}")
    owner = zk_controller_elected(rig, 120)
    run.note("ZooKeeper controller elected", broker=owner.broker_id)
    return problems
