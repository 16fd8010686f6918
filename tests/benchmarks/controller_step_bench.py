"""A controlled shutdown's steps on the controller's loop (``make bench``,
``--only-steps``): an active controller in process (a one-voter quorum on real files)
whose image holds N partitions (20 a topic, three brokers, replication factor 3) takes
one broker's controlled shutdown, heartbeat after heartbeat; each step is three kinds of
event of the loop: the heartbeat's handler (leaderships moved, ISRs shrunk; a slice of
the step each event), the batch encoded and appended, the commit replayed into the
image (in Raft's commit steps). Reported: the longest of each, and the whole shutdown,
at the steps and slices used now (``STEP_RECORDS`` in ``SLICE_RECORDS``) against the
baseline run beside it, the old 10,000 in one event; an expired broker's fencing, its
steps in slices of ``SLICE_RECORDS`` against a step in one event (the baseline); a small
write's time on the loop with the image's persistent topic maps against plain dicts
copied whole by each write (the baseline beside it); and a KRaft-mode leader's ISR
check after each image change of that shutdown and of the broker's return, from the
index it follows (``ShortIsrs``) against a walk of every partition (the baseline)."""

from __future__ import annotations

import dataclasses
import tempfile
import time
from pathlib import Path
from typing import Any

from migration.broker.kraft_broker import follow, isr_to_expand, live_brokers
from migration.broker.short_isrs import ShortIsrs
from migration.controller import brokers
from migration.controller.context import SLICE_RECORDS, STEP_RECORDS
from migration.image.publishing import ImageChange
from migration.image.snapshot_records import image_records
from migration.log.snapshots import SnapshotId
from migration.proto import controller_pb2 as cpb
from migration.records import versions
from tests.benchmarks.metadata_answer_bench import _image
from tests.lone_controller import LoneController, lone_controller

OLD_STEP = 10_000
WALKS = 40  # the image changes a walk of every partition is timed on, evenly spread


def _controller(partitions: int, home: Path, **settings: Any) -> LoneController:
    image = dataclasses.replace(
        _image(partitions), features={versions.METADATA_VERSION: versions.IBP_3_6_IV0 + 1}
    )
    lone = lone_controller(home, **settings)
    snapshot = SnapshotId(lone.controller.log.end_offset, lone.node.epoch)
    lone.controller.log.write_snapshot(snapshot, image_records(image))
    lone.committed.on_snapshot_installed(snapshot)
    lone.controller.active = False  # active again on the installed image
    lone.controller.on_commit(lone.node.high_watermark)
    return lone


def _heartbeat(lone: LoneController, broker: int, **flags: Any) -> tuple[Any, list[float]]:
    """One heartbeat through its events; the answer and the longest of each kind's
    seconds (its handler's slices, the append, the commit steps)."""
    epoch = lone.image.brokers[broker].epoch
    request = cpb.BrokerHeartbeatRequest(
        broker_id=broker, broker_epoch=epoch, current_metadata_offset=10**9, **flags
    )
    answers: list[Any] = []
    queued: list[Any] = []
    lone.controller.post = queued.append
    t0 = time.perf_counter()
    lone.controller.handle("BrokerHeartbeat", request, answers.append)
    slices = [time.perf_counter() - t0]
    while queued:  # each slice its own event, as the loop runs them
        t = time.perf_counter()
        queued.pop(0)()
        slices.append(time.perf_counter() - t)
    t1 = time.perf_counter()
    lone.controller.flush()
    t2 = time.perf_counter()
    commits = []
    while not answers or lone.committed.image.offset + 1 < lone.node.high_watermark:
        t = time.perf_counter()
        lone.node.tick()
        commits.append(time.perf_counter() - t)
    return answers[0], [max(slices), t2 - t1, max(commits, default=0.0)]


def _shutdown(partitions: int, step: int, piece: int) -> dict[str, Any]:
    saved = brokers.MOVES_PER_STEP, brokers.MOVES_PER_SLICE
    brokers.MOVES_PER_STEP, brokers.MOVES_PER_SLICE = step, piece
    try:
        with tempfile.TemporaryDirectory() as home:
            lone = _controller(partitions, Path(home))
            try:
                for b in (1, 2, 3):
                    _heartbeat(lone, b)
                held: list[list[float]] = []
                t0 = time.perf_counter()
                while True:
                    answer, events = _heartbeat(lone, 1, want_shut_down=True)
                    held.append(events)
                    if answer.should_shut_down:
                        break
                whole = time.perf_counter() - t0
            finally:
                lone.close()
    finally:
        brokers.MOVES_PER_STEP, brokers.MOVES_PER_SLICE = saved
    return {
        "steps": len(held),
        "handler_max_ms": round(max(e[0] for e in held) * 1000, 1),
        "append_max_ms": round(max(e[1] for e in held) * 1000, 1),
        "commit_max_ms": round(max(e[2] for e in held) * 1000, 1),
        "shutdown_s": round(whole, 2),
    }


def _fencing(partitions: int, piece: int) -> dict[str, Any]:
    """Broker 1's session expires (2 and 3 heartbeat on): the controller fences it a step
    of STEP_RECORDS moves at a time, each step once the one before has committed, in
    events of ``piece`` moves (the idle hook starting a step with its first, then each
    slice posted). Reported: the steps, the longest event and the whole fencing."""
    saved = brokers.MOVES_PER_SLICE
    brokers.MOVES_PER_SLICE = piece
    try:
        with tempfile.TemporaryDirectory() as home:
            lone = _controller(partitions, Path(home), session_timeout_ms=9_000)
            try:
                for b in (1, 2, 3):
                    _heartbeat(lone, b)
                queued: list[Any] = []
                lone.controller.post = queued.append
                lone.now[0] += 10_000  # broker 1 is silent past its session; 2 and 3 are not
                for b in (2, 3):
                    epoch = lone.image.brokers[b].epoch
                    beat = cpb.BrokerHeartbeatRequest(
                        broker_id=b, broker_epoch=epoch, current_metadata_offset=10**9
                    )
                    lone.controller.handle("BrokerHeartbeat", beat, lambda _: None)
                held: list[float] = []
                steps = 0
                t0 = time.perf_counter()
                while not lone.controller._pending.brokers[1].fenced:  # type: ignore[union-attr]
                    t = time.perf_counter()
                    lone.controller.flush()  # the idle hook: a step's first slice
                    held.append(time.perf_counter() - t)
                    while queued:  # each slice its own event, as the loop runs them
                        t = time.perf_counter()
                        queued.pop(0)()
                        held.append(time.perf_counter() - t)
                    lone.commit()
                    steps += 1
                lone.commit()
                whole = time.perf_counter() - t0
            finally:
                lone.close()
    finally:
        brokers.MOVES_PER_SLICE = saved
    return {
        "steps": steps,
        "event_max_ms": round(max(held) * 1000, 1),
        "fencing_s": round(whole, 2),
    }


def _writes(partitions: int, persistent: bool, rounds: int = 300) -> dict[str, Any]:
    """Small writes on the controller's loop: CreateTopics of one partition, from the
    request to its records queued (the handler, validation, the next pending image),
    committed every 50. Not ``persistent``: the pending image's topic maps as plain
    dicts, which every write copies whole (the rule before PersistentMap)."""
    with tempfile.TemporaryDirectory() as home:
        lone = _controller(partitions, Path(home))
        try:
            for b in (1, 2, 3):
                _heartbeat(lone, b)
            controller = lone.controller
            if not persistent:
                pending = controller._pending
                assert pending is not None
                controller._pending = dataclasses.replace(
                    pending, topics=dict(pending.topics), topic_ids=dict(pending.topic_ids)
                )
            held = []
            for i in range(rounds):
                request = cpb.CreateTopicsRequest()
                request.topics.add(name=f"bench-write-{i}", num_partitions=1, replication_factor=3)
                t0 = time.perf_counter()
                controller.handle("CreateTopics", request, lambda _: None)
                held.append(time.perf_counter() - t0)
                if i % 50 == 49:
                    lone.commit()
        finally:
            lone.close()
    held.sort()
    return {
        "write_p50_ms": round(held[len(held) // 2] * 1000, 3),
        "write_p90_ms": round(held[len(held) * 9 // 10] * 1000, 3),
    }


class _Changes:
    """A publisher keeping every image change it is handed."""

    name = "bench-changes"

    def __init__(self) -> None:
        self.changes: list[ImageChange] = []

    def publish(self, change: ImageChange) -> None:
        self.changes.append(change)


def _isr_checks(partitions: int) -> dict[str, Any]:
    """Broker 2's ISR check as a KRaft-mode leader after each image change while broker 1
    shuts down (controlled) and registers again: following the change into its index
    and asking it, against walking every partition of the image (timed on
    :data:`WALKS` of the changes); both ask for the same."""
    with tempfile.TemporaryDirectory() as home:
        lone = _controller(partitions, Path(home))
        changes = _Changes()
        try:
            for b in (1, 2, 3):
                _heartbeat(lone, b)
            lone.committed.register(changes)
            while not _heartbeat(lone, 1, want_shut_down=True)[0].should_shut_down:
                pass
            lone.register(1, incarnation=bytes([9]) * 16)
            _heartbeat(lone, 1)  # unfenced: the leaders may add it back
            assert lone.committed.wait_published(600)
        finally:
            lone.close()
    first, *rest = changes.changes
    short: ShortIsrs[tuple[bytes, int]] = ShortIsrs(2)
    follow(short, first)
    sampled = set(range(0, len(rest), max(1, len(rest) // WALKS)))
    indexed, walked, asked = [], [], 0
    for i, change in enumerate(rest):
        t0 = time.perf_counter()
        follow(short, change)
        image = change.image
        request = isr_to_expand(image, 2, short=short.of(live_brokers(image)))
        indexed.append(time.perf_counter() - t0)
        if i in sampled:
            t0 = time.perf_counter()
            assert isr_to_expand(image, 2) == request
            walked.append(time.perf_counter() - t0)
        asked += sum(len(t.partitions) for t in request.topics) if request else 0
    return {
        "image_changes": len(rest),
        "asked": asked,
        "indexed_mean_ms": round(sum(indexed) / len(indexed) * 1000, 3),
        "indexed_max_ms": round(max(indexed) * 1000, 2),
        "walked_mean_ms": round(sum(walked) / len(walked) * 1000, 2),
        "walked_max_ms": round(max(walked) * 1000, 2),
        "walks": len(walked),
    }


def run(partitions: int) -> dict[str, Any]:
    return {
        "partitions": partitions,
        "isr_checks": _isr_checks(partitions),
        "now": {
            "step": STEP_RECORDS,
            "slice": SLICE_RECORDS,
            **_shutdown(partitions, STEP_RECORDS, SLICE_RECORDS),
        },
        "baseline": {
            "step": OLD_STEP,
            "slice": OLD_STEP,
            **_shutdown(partitions, OLD_STEP, OLD_STEP),
        },
        "writes": {"now": _writes(partitions, True), "baseline": _writes(partitions, False)},
        "fencing": {
            "now": {"slice": SLICE_RECORDS, **_fencing(partitions, SLICE_RECORDS)},
            "baseline": {"slice": STEP_RECORDS, **_fencing(partitions, STEP_RECORDS)},
        },
    }


def report(results: list[dict[str, Any]]) -> None:
    for r in results:
        print(f"controlled shutdown on the controller's loop, {r['partitions']:,} partitions:")
        for label in ("now", "baseline"):
            f = r[label]
            print(
                f"  {label:8} ({f['step']:,} a step, {f['slice']:,} an event): {f['steps']} "
                f"steps in {f['shutdown_s']} s; longest handler event {f['handler_max_ms']} ms, "
                f"append {f['append_max_ms']} ms, commit step {f['commit_max_ms']} ms"
            )
        for label in ("now", "baseline"):
            f = r["fencing"][label]
            print(
                f"  an expired broker fenced, {label} ({STEP_RECORDS:,} a step, "
                f"{f['slice']:,} an event): {f['steps']} steps in {f['fencing_s']} s; "
                f"longest event {f['event_max_ms']} ms"
            )
        w = r["writes"]
        print(
            f"  a one-partition CreateTopics on the loop, p50 / p90: persistent topic maps "
            f"{w['now']['write_p50_ms']} / {w['now']['write_p90_ms']} ms; copied whole "
            f"(baseline) {w['baseline']['write_p50_ms']} / {w['baseline']['write_p90_ms']} ms"
        )
        c = r["isr_checks"]
        print(
            f"  a KRaft-mode leader's ISR check after each of {c['image_changes']} image "
            f"changes (a shutdown and a return; {c['asked']:,} partitions asked for), mean / "
            f"max: its index {c['indexed_mean_ms']} / {c['indexed_max_ms']} ms; a walk of "
            f"every partition (baseline, {c['walks']} of them) {c['walked_mean_ms']} / "
            f"{c['walked_max_ms']} ms; {c['walked_mean_ms'] / c['indexed_mean_ms']:.1f}x"
        )
