"""The faults a chaos run injects (:data:`INJECT`, run by :class:`FaultThread` at their
offsets into a stage), and the broker kill the roll runs between two restarts. Each
notes :data:`INJECTED` with its kind as it begins."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable

from tests.broker_harness import eventually
from tests.chaos import disk_replace, host_faults, net_faults
from tests.chaos.context import HEALTHY_S, Run, unfenced_count, wait_fully_replicated
from tests.chaos.plan import BROKERS, Fault

INJECTED = "fault injected"
"""The event each fault notes as it begins (``kind``): what the summary counts."""


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
    child = run.rig.quorum.children[node]
    child.signal(signal.SIGSTOP)
    run.note("SIGSTOP active controller", node=node, phase=phase)
    try:
        time.sleep(fault.params["stopped_s"])
    finally:
        child.signal(signal.SIGCONT)
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
    run.note(INJECTED, kind=fault.kind)
    unfenced = unfenced_count(run, broker)
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
    eventually(lambda: unfenced_count(run, broker) > unfenced, HEALTHY_S, what)
    wait_fully_replicated(run)
    run.sampler.uncontrolled = False
    run.note("broker back", broker=broker)


INJECT: dict[str, Callable[[Run, Fault], None]] = {
    "kill-active-controller": kill_active_controller,
    "kill-controller-mid-sync": kill_controller_mid_sync,
    "zombie-controller": zombie_controller,
    "controller-zk-session-expiry": controller_zk_session_expiry,
    "zk-server-restart": zk_server_restart,
    "slow-zk-network": slow_zk_network,
    "partition-active-from-voters": net_faults.partition_active_from_voters,
    "one-way-partition": net_faults.one_way_partition,
    "flapping-controller-link": net_faults.flapping_controller_link,
    "partition-broker-from-controllers": net_faults.partition_broker_from_controllers,
    "zk-quorum-loss": net_faults.zk_quorum_loss,
    host_faults.DISK_FULL: host_faults.controller_disk_full,
    host_faults.FSYNC_EIO: host_faults.controller_fsync_eio,
    host_faults.CLOCK_JUMP: host_faults.controller_clock_jump,
    disk_replace.DISK_REPLACED: disk_replace.controller_disk_replaced,
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
                self.run_.note(INJECTED, kind=fault.kind)
                INJECT[fault.kind](self.run_, fault)
        except BaseException as exc:  # reported by the stage
            self.error = exc

    def finish(self) -> None:
        self.join(timeout=600)
        if self.error is not None:
            raise RuntimeError(f"injecting a fault failed: {self.error!r}") from self.error
