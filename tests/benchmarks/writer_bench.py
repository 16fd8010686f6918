"""The ZooKeeper writer on the 100,000-partition tree (``make bench``).

* Dual-write of 100,000 partition-state changes (every partition's ISR shrinks or
  expands, in one committed change): the writer's batched fenced multis (median of the
  rounds after a warm-up one, alternately shrinking and expanding) against Kafka's way,
  one fenced multi per change sent one after the other (``check(/controller_epoch)``,
  ``check(/migration)`` -- ``set_data`` for the last -- and the write), for the next
  such change. Goal: >= 20x faster.
* A full sync after 1% of the partition states drifted, against the reader's time on
  the same tree, measured beside it. Goal: <= 1.5x.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from migration.bridge.sync import full_sync
from migration.bridge.writer import ZkWriter
from migration.local import seed
from migration.proto.metadata_pb2 import MetadataRecord
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.fence import ZkFence, claim, recover
from migration.zk.model import topics
from migration.zk.model.topics import PartitionState
from migration.zk.multiwrite import check, set_data
from migration.zk.reader import read_snapshot
from tests.zk_timeline import Timeline, image_of, rec

DRIFT = 0.01


def isr_changes(t: Timeline, shrink: bool) -> list[MetadataRecord]:
    """One PartitionChangeRecord per partition: drop the last replica from the ISR, or
    bring the ISR back to all replicas."""
    records = []
    for topic in t.image.topics.values():
        for pid, p in topic.partitions.items():
            isr = p.replicas[:-1] if shrink and len(p.replicas) > 1 else p.replicas
            records.append(
                rec(
                    "partition_change_record",
                    topic_id=topic.topic_id,
                    partition_id=pid,
                    isr={"ids": list(isr)},
                )
            )
    return records


def kafkas_way(client: ZkClient, fence: ZkFence, t: Timeline, records: list[MetadataRecord]) -> int:
    """Commit ``records`` and write each changed state as its own fenced multi, in
    order, waiting for each (Kafka's writer). Returns the multis sent."""
    change = t.commit(*records)
    epoch = fence.zk_controller_epoch
    changed = [
        (topic.name, pid, p)
        for topic in change.image.topics.values()
        for pid, p in topic.partitions.items()
    ]
    version = fence.migration_version
    for i, (name, pid, p) in enumerate(changed):
        state = PartitionState(p.leader, p.leader_epoch, epoch, p.isr, p.leader_recovery_state)
        last = i == len(changed) - 1
        closing = fence.advance(t.offset, t.epoch)[0] if last else check(paths.MIGRATION, version)
        client.multi_write(
            [
                fence.guard(),
                closing,
                set_data(paths.partition_state(name, pid), topics.render_partition_state(state)),
            ]
        )
    return len(changed)


def run(connect: str, rounds: int) -> dict[str, Any]:
    with ZkClient(connect) as client:
        image = image_of(read_snapshot(client), seed.SEED_PASSWORD_ENCODER_SECRET)
        writer = ZkWriter(client, secret=seed.SEED_PASSWORD_ENCODER_SECRET)
        fence = full_sync(writer, claim(client, 3000, 2), image).fence
        assert fence is not None
        t = Timeline(image, epoch=2)

        writes, batched_multis, changes = [], 0, 0
        for i in range(rounds + 1):  # ISRs shrink, expand, shrink, ...; one warm-up round
            change = t.commit(*isr_changes(t, shrink=i % 2 == 0))
            changes = change.manifest.last_offset - change.manifest.first_offset + 1
            started = time.perf_counter()
            multis_before = fence.migration_version
            fence = writer.write_change(fence, change)
            if i:
                writes.append(time.perf_counter() - started)
            batched_multis = fence.migration_version - multis_before
        batched = statistics.median(writes)

        started = time.perf_counter()  # the reverse of the last round, Kafka's way
        sent = kafkas_way(client, fence, t, isr_changes(t, shrink=(rounds + 1) % 2 == 0))
        one_by_one = time.perf_counter() - started
        fence = recover(client, fence)

        wrong = topics.render_partition_state(
            PartitionState(-1, 999, fence.zk_controller_epoch, ())
        )
        every = [(topic.name, pid) for topic in t.image.topics.values() for pid in topic.partitions]
        damage = [
            set_data(paths.partition_state(name, pid), wrong)
            for name, pid in every[:: int(1 / DRIFT)]
        ]
        client.write_all(damage)

        reads, syncs = [], []
        for _ in range(rounds):
            started = time.perf_counter()
            read_snapshot(client)
            reads.append(time.perf_counter() - started)
        result = None
        for i in range(rounds):
            if i:  # the same drift again for each round
                client.write_all(damage)
            started = time.perf_counter()
            result = full_sync(writer, fence, t.image)
            syncs.append(time.perf_counter() - started)
            assert result.fence is not None
            fence = result.fence
        assert result is not None
        read, sync = statistics.median(reads), statistics.median(syncs)
        return {
            "partition_changes": changes,
            "batched_seconds": round(batched, 3),
            "batched_multis": batched_multis,
            "one_multi_per_change_seconds": round(one_by_one, 3),
            "one_multi_per_change_multis": sent,
            "speedup": round(one_by_one / batched, 1),
            "speedup_goal_met": one_by_one / batched >= 20,
            "drifted_states": len(damage),
            "sync_written": len(result.plan.ops),
            "reader_seconds": round(read, 3),
            "full_sync_seconds": round(sync, 3),
            "sync_over_reader": round(sync / read, 3),
            "sync_goal_met": sync <= 1.5 * read,
        }


def report(r: dict[str, Any]) -> None:
    def verdict(met: bool) -> str:
        return "met" if met else "NOT met"

    print(f"ZooKeeper writer, {r['partition_changes']:,} partition-state changes:")
    print(
        f"  one fenced multi per change (Kafka's way): {r['one_multi_per_change_seconds']:8.3f} s "
        f"({r['one_multi_per_change_multis']:,} multis)"
    )
    print(
        f"  batched fenced multis (zk2kraft):          {r['batched_seconds']:8.3f} s "
        f"({r['batched_multis']:,} multis)"
    )
    print(f"  speed-up: {r['speedup']}x (goal >= 20x: {verdict(r['speedup_goal_met'])})")
    print(
        f"full sync after {r['drifted_states']:,} drifted states "
        f"({r['sync_written']:,} ops written): {r['full_sync_seconds']:.3f} s vs reader "
        f"{r['reader_seconds']:.3f} s = {r['sync_over_reader']}x "
        f"(goal <= 1.5x: {verdict(r['sync_goal_met'])})"
    )
