"""Partitions offline while a chaos run goes on, as Kafka's clients would see them."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

from migration.local.cluster import LocalCluster


class OfflineSampler(threading.Thread):
    """Metadata through each running broker in turn, every half second: every partition
    seen without a leader (when first, through which broker, in which stage), and the
    most seen at once; those seen while a broker was down uncontrolled (``uncontrolled``
    set: SIGKILLed, until its replicas are back in sync) apart from those seen under
    controlled restarts only (the goal there is none)."""

    def __init__(self, cluster: LocalCluster, stage: Callable[[], str]) -> None:
        super().__init__(name="offline-sampler", daemon=True)
        self.cluster = cluster
        self.stage = stage
        self.started = time.monotonic()
        self.seen: dict[str, str] = {}  # partition -> when, where
        self.seen_uncontrolled: set[str] = set()
        self.uncontrolled = False
        self.most = 0
        self.samples = 0
        self._done = threading.Event()

    def stop(self) -> None:
        self._done.set()
        self.join(timeout=30)

    def run(self) -> None:
        asyncio.set_event_loop(asyncio.new_event_loop())
        turn = 0
        while not self._done.wait(0.5):
            running = self.cluster.running()
            if not running:
                continue
            turn += 1
            broker = running[turn % len(running)]
            uncontrolled = self.uncontrolled
            try:
                m: Any = self.cluster.metadata(broker, timeout_s=5)
            except Exception:
                continue  # stopping under the sampler: not a sample
            offline = {
                f"{t.name}-{p.partition_index}"
                for t in m.topics
                for p in t.partitions
                if p.leader_id < 0
            }
            if uncontrolled or self.uncontrolled:
                self.seen_uncontrolled |= offline
            else:
                at = f"+{time.monotonic() - self.started:.1f} s in {self.stage()} via {broker}"
                self.seen.update((p, at) for p in offline if p not in self.seen)
            self.most = max(self.most, len(offline))
            self.samples += 1
