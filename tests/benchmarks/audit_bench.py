"""The Spark audit (``make bench``, ``run.py --only-audit``): a seeded tree and the log
of a dry-run copy of it, audited on ``local[2]``.

Split as the job runs: reading ZooKeeper, replaying the log, handing the rows to Spark
(digests written as Parquet through Arrow), Spark's session start (on a thread, during
the reads) and the diff; each size in a fresh process, so Spark's JVM starts cold, as it
does for ``zk2kraft audit``. Beside them, in the same process after the audit: the
baseline "just read both stores" (the same reader and replay, no Spark running), and a
plain-Python dict diff of the same entity rows. Goals at 1,000,000 partitions: Spark's
part (start + diff; the warm-up runs while the driver reads, and what it takes from the
reads shows in the audit's total) <= 30 s; the whole audit <= 2x the baseline.
"""

from __future__ import annotations

import multiprocessing
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from migration.audit.job import run_audit
from migration.audit.options import AuditOptions
from migration.audit.sides import read_sides
from migration.driver.copy import dry_run
from migration.local import seed
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.observability.progress import NullProgress
from migration.zk.client import ZkClient

SIZES = {
    100_000: seed.ClusterSpec(
        brokers=12, topics=5_000, partitions=100_000, quota_entities=200, scram_users=50,
        acl_resources=500, delegation_tokens=50,
    ),
    1_000_000: seed.ClusterSpec(
        brokers=30, topics=20_000, partitions=1_000_000, quota_entities=0, scram_users=0,
        acl_resources=0, delegation_tokens=0, topic_config_permille=100,
    ),
}  # fmt: skip


def _baselines(options: AuditOptions, work: Path) -> dict[str, Any]:
    """Without Spark, after the audit: just reading both stores (the reader and the
    replay the audit uses; warm caches, so the ratio against it is conservative), then
    the same entity rows diffed as plain-Python dicts."""
    sides = read_sides(options, NullProgress(), work)
    t = time.monotonic()
    maps = [{(k, e): d for k, e, d, _ in x.digests()} for x in (sides.zk, sides.kraft)]
    exported = time.monotonic() - t
    t = time.monotonic()
    zk, kraft = maps
    differing = sum(1 for k in zk.keys() | kraft.keys() if zk.get(k) != kraft.get(k))
    return {
        "read_both": sides.timings["read_zookeeper"] + sides.timings["replay_log"],
        "export": exported,
        "dict_diff": time.monotonic() - t,
        "differing": differing,
    }


def run_size(zk_connect: str, partitions: int) -> dict[str, Any]:
    """One size, in a process of its own (a cold JVM, as a command line audit has)."""
    connect = f"{zk_connect}/audit-{partitions}"
    work = Path(tempfile.mkdtemp(prefix="zk2kraft-audit-bench-"))
    try:
        with ZkClient(connect) as client:
            client.ensure_chroot()
            seed.write(client, seed.generate(SIZES[partitions]))
            dry_run(client, work / "log", password_encoder_secret=seed.SEED_PASSWORD_ENCODER_SECRET)
        options = AuditOptions(
            zk=connect,
            log_dir=work / "log",
            password_encoder_secret=seed.SEED_PASSWORD_ENCODER_SECRET,
            work_dir=str(work),
        )
        report = run_audit(options)
        s = report.seconds
        spark_part = s["spark_start"] + s["spark_diff"]  # the warm-up hides under the reads
        base = _baselines(options, work)
        read_both = base["read_both"]
        return {
            "partitions": partitions,
            "entities": report.rows,
            "fields": report.fields,
            "consistent": report.consistent and base["differing"] == 0,
            **{f"{k}_seconds": v for k, v in s.items()},
            "read_both_seconds": round(read_both, 3),
            "spark_part_seconds": round(spark_part, 3),
            "total_over_read_both": round(s["total"] / read_both, 2),
            "python_export_seconds": round(base["export"], 3),
            "python_dict_diff_seconds": round(base["dict_diff"], 3),
            "spark_goal_met": partitions < 1_000_000 or spark_part <= 30,
            "total_goal_met": partitions < 1_000_000 or s["total"] <= 2 * read_both,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(sizes: tuple[int, ...] = (100_000, 1_000_000)) -> list[dict[str, Any]]:
    spawn = multiprocessing.get_context("spawn")
    with EmbeddedZooKeeper(heap_mb=8192) as zk:
        results = []
        for n in sizes:
            with spawn.Pool(1) as pool:
                results.append(pool.apply(run_size, (zk.connect_string, n)))
        return results


def report(results: list[dict[str, Any]]) -> None:
    for r in results:
        print(
            f"audit, {r['partitions']:,} partitions ({r['entities']['zookeeper']:,} entities, "
            f"{r['fields']['zookeeper']:,} fields a side), local[2]: "
            f"{'consistent' if r['consistent'] else 'DIFFERENCES'}"
        )
        print(f"  read ZooKeeper:          {r['read_zookeeper_seconds']:8.2f} s")
        print(f"  replay the log:          {r['replay_log_seconds']:8.2f} s")
        print(f"  hand off (Parquet):      {r['hand_off_seconds']:8.2f} s")
        print(
            f"  Spark start + warm-up:   {r['spark_start_seconds']:8.2f} s + "
            f"{r['spark_warm_up_seconds']:.2f} s (during the reads; then waited "
            f"{r['spark_wait_seconds']:.2f} s)"
        )
        print(f"  Spark diff:              {r['spark_diff_seconds']:8.2f} s")
        print(f"  whole audit:             {r['total_seconds']:8.2f} s")
        print(f"  baseline, just reading both stores (no Spark): {r['read_both_seconds']:.2f} s")
        print(
            f"  plain-Python dict diff of the same rows: export {r['python_export_seconds']:.2f}"
            f" s + diff {r['python_dict_diff_seconds']:.2f} s"
        )
        if r["partitions"] >= 1_000_000:
            print(
                f"  Spark's part (start + diff; the warm-up ran under the reads, its cost is in "
                f"their times) {r['spark_part_seconds']:.2f} s (goal <= 30 s: "
                f"{'met' if r['spark_goal_met'] else 'NOT met'}); whole audit / reading both "
                f"stores = {r['total_over_read_both']} (goal <= 2: "
                f"{'met' if r['total_goal_met'] else 'NOT met'})"
            )
        else:
            print(f"  whole audit / reading both stores = {r['total_over_read_both']}")
