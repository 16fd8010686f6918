"""The state one chaos run shares between its stages, its faults and its checks, and
the waits they all use (hang guards, never timings)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from migration.local.zookeeper import EmbeddedZooKeeper
from tests.broker_harness import eventually
from tests.chaos.plan import BROKERS, Fault, Plan
from tests.chaos.proxy import Links, TcpProxy
from tests.chaos.sampler import OfflineSampler
from tests.migration_harness import MigrationRig

WAITING = ("INACTIVE", "WAIT_FOR_CONTROLLER_QUORUM", "WAIT_FOR_BROKERS", "BECOME_CONTROLLER")
HEALTHY_S = 240.0  # hang guard: the migration healthy again after a stage's faults


def dual_writing(s: dict[str, Any]) -> bool:
    return s["active_controller"] >= 0 and s["driver_phase"] == "DUAL_WRITE"


@dataclass
class Run:
    """One run's live state and record."""

    plan: Plan
    rig: MigrationRig
    ensemble: EmbeddedZooKeeper
    proxies: dict[int, list[TcpProxy]]  # controller -> its proxies to each ZooKeeper server
    links: Links = field(default_factory=Links)  # controllers' and brokers' to controllers
    started: float = field(default_factory=time.monotonic)
    stage: str = "zookeeper"
    events: list[dict[str, Any]] = field(default_factory=list)
    stages: dict[str, float] = field(default_factory=dict)  # stage -> seconds it took
    facts: dict[str, Any] = field(default_factory=dict)  # what the checks measured
    lock: threading.Lock = field(default_factory=threading.Lock)
    sampler: OfflineSampler = field(init=False)

    def __post_init__(self) -> None:
        self.sampler = OfflineSampler(self.rig.cluster, lambda: self.stage)

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


def unfenced_count(run: Run, broker: int) -> int:
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


def start_exited_controllers(run: Run, event: str) -> None:
    """Every controller not running started again; one that had exited (halted, killed)
    is noted as ``event`` with its exit code."""
    quorum = run.rig.quorum
    for node in quorum.ids:
        child = quorum.children[node]
        if child.running:
            continue
        if child.process is not None:
            run.note(event, node=node, code=child.process.returncode)
        quorum.start(node)
