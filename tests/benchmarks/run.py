"""``make bench``: the snapshot reader against plain kazoo, the seeder's throughput, and
the metadata log, image and dry-run copy (:mod:`tests.benchmarks.log_bench`), the
ZooKeeper writer (:mod:`tests.benchmarks.writer_bench`), the controller quorum
(:mod:`tests.benchmarks.quorum_bench`) and a controller's metrics scrape
(:mod:`tests.benchmarks.metrics_bench`), the all-topics Metadata answer's encoding
(:mod:`tests.benchmarks.metadata_answer_bench`), a controlled shutdown's steps on the
controller's loop (:mod:`tests.benchmarks.controller_step_bench`), the Spark audit and
what security costs (:mod:`tests.benchmarks.security_bench`), ZooKeeper's data
directory read offline against the live read (:mod:`tests.benchmarks.datadir_bench`), a
Kafka-format snapshot replayed against the own log
(:mod:`tests.benchmarks.kafka_log_bench`), and production's tree copied for a rehearsal
(:mod:`tests.benchmarks.tree_copy_bench`);
``--only-rehearse``: ``zk2kraft rehearse`` end to end on the medium and the large
profile, each phase timed (:mod:`tests.benchmarks.rehearse_bench`);
``--only-kafka-side`` (``make bench-kafka``): the same seeded tree migrated by Apache
Kafka 3.9.2's own brokers and controllers and by zk2kraft in one run, each figure with
how far zk2kraft is ahead (:mod:`tests.benchmarks.kafka_side_bench`).

Everything is measured in this run, on one embedded ZooKeeper (forceSync=no), and
reported as ratios against the baseline measured beside it:

* reader: ``read_snapshot`` (multi-read, pipelined, including JSON decoding) against a
  baseline that fetches the very same znodes with plain kazoo ``get_async`` /
  ``get_children_async``, 1,000 requests in flight on one connection, decoding nothing.
  Goal: reader time <= 0.5 x baseline.
* seeder: znodes per second while seeding the 100,000-partition tree, and the time to
  seed 1,000,000 partitions (goal: under a minute).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

from migration.common.signals import terminated_as_interrupt
from migration.local import seed
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.zk.client import ZkClient
from migration.zk.multiread import ReadOp, ReadResult
from migration.zk.reader import read_snapshot
from tests.benchmarks import (
    audit_bench,
    broker_bench,
    controller_step_bench,
    datadir_bench,
    kafka_log_bench,
    kafka_side,
    kafka_side_bench,
    log_bench,
    metadata_answer_bench,
    metrics_bench,
    migration_bench,
    quorum_bench,
    rehearse_bench,
    security_bench,
    tree_copy_bench,
    writer_bench,
)

TREE = seed.ClusterSpec(
    brokers=12,
    topics=5_000,
    partitions=100_000,
    quota_entities=200,
    scram_users=50,
    acl_resources=500,
    delegation_tokens=50,
)
MILLION = seed.ClusterSpec(
    brokers=30,
    topics=20_000,
    partitions=1_000_000,
    quota_entities=0,
    scram_users=0,
    acl_resources=0,
    delegation_tokens=0,
    topic_config_permille=100,
)


class RecordingClient(ZkClient):
    """A ZkClient that remembers every read the reader sends (for the baseline)."""

    ops: list[tuple[ReadOp, str]]

    def iter_multi_read(
        self, ops: Sequence[tuple[ReadOp, str]], **kw: int
    ) -> Iterator[list[ReadResult]]:
        self.ops.extend(ops)
        return super().iter_multi_read(ops, **kw)


def baseline_read(client: ZkClient, ops: list[tuple[ReadOp, str]], in_flight: int = 1000) -> int:
    """Plain kazoo: one async request per znode, ``in_flight`` outstanding."""
    kz = client.kazoo
    pending: deque[Any] = deque()
    done = 0
    for op, path in ops:
        call = kz.get_async if op == ReadOp.GET_DATA else kz.get_children_async
        pending.append(call(path))
        if len(pending) >= in_flight:
            pending.popleft().wait()  # NoNode is an answer too
            done += 1
    while pending:
        pending.popleft().wait()
        done += 1
    return done


def bench_reader(connect: str, rounds: int) -> dict[str, Any]:
    with RecordingClient(connect) as rec:
        rec.ops = []
        snap = read_snapshot(rec)
        ops = rec.ops
    if len(ops) < snap.partition_count:
        raise RuntimeError(f"recorded {len(ops)} reads for {snap.partition_count} partitions")
    reader_times, baseline_times = [], []
    with ZkClient(connect) as client:
        for _ in range(rounds):
            started = time.perf_counter()
            baseline_read(client, ops)
            baseline_times.append(time.perf_counter() - started)
            started = time.perf_counter()
            read_snapshot(client)
            reader_times.append(time.perf_counter() - started)
    reader, baseline = statistics.median(reader_times), statistics.median(baseline_times)
    return {
        "znodes": len(ops),
        "partitions": snap.partition_count,
        "reader_seconds": round(reader, 3),
        "baseline_seconds": round(baseline, 3),
        "reader_over_baseline": round(reader / baseline, 4),
        "reader_znodes_per_second": round(len(ops) / reader),
        "baseline_znodes_per_second": round(len(ops) / baseline),
        "goal_met": reader <= 0.5 * baseline,
    }


def bench_seed(connect: str, spec: seed.ClusterSpec) -> dict[str, Any]:
    started = time.perf_counter()
    snap = seed.generate(spec)
    generated = time.perf_counter()
    with ZkClient(connect) as client:
        client.ensure_chroot()
        written = seed.write(client, snap)
    finished = time.perf_counter()
    return {
        "partitions": spec.partitions,
        "znodes": written,
        "generate_seconds": round(generated - started, 2),
        "write_seconds": round(finished - generated, 2),
        "total_seconds": round(finished - started, 2),
        "znodes_per_second": round(written / (finished - started)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip-million", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--only-quorum", action="store_true", help="just the controller quorum")
    parser.add_argument("--only-writer", action="store_true", help="just the ZooKeeper writer")
    parser.add_argument(
        "--only-brokers", action="store_true", help="just the ZooKeeper-mode cluster"
    )
    parser.add_argument("--only-migration", action="store_true", help="just the live migration")
    parser.add_argument("--only-metrics", action="store_true", help="just the metrics scrape")
    parser.add_argument(
        "--only-steps",
        action="store_true",
        help="just a controlled shutdown's steps on the controller's loop (in process)",
    )
    parser.add_argument(
        "--only-metadata",
        action="store_true",
        help="just the all-topics Metadata answer's encoding (in process)",
    )
    parser.add_argument("--only-audit", action="store_true", help="just the Spark audit")
    parser.add_argument(
        "--only-kafka-log",
        action="store_true",
        help="just replaying a Kafka-format snapshot against the own log",
    )
    parser.add_argument("--only-security", action="store_true", help="just what security costs")
    parser.add_argument(
        "--only-datadir",
        action="store_true",
        help="just ZooKeeper's data directory read offline against the live read",
    )
    parser.add_argument(
        "--only-tree-copy",
        action="store_true",
        help="just read_tree + load_tree of the large seed profile (100,000 partitions)",
    )
    parser.add_argument(
        "--only-rehearse",
        action="store_true",
        help="just zk2kraft rehearse end to end, each phase timed (--rehearse-profiles)",
    )
    parser.add_argument(
        "--rehearse-profiles",
        default=",".join(rehearse_bench.PROFILES),
        metavar="P[,P...]",
        help="the seed profiles rehearsed (default medium,large: 10,000 and 100,000 partitions)",
    )
    parser.add_argument(
        "--only-kafka-side",
        action="store_true",
        help="just Apache Kafka 3.9.2 beside zk2kraft on the same tree (--kafka-side-profiles)",
    )
    parser.add_argument(
        "--kafka-side-profiles",
        default=",".join(kafka_side_bench.PROFILES),
        metavar="P[,P...]",
        help="the seed profiles migrated by both engines (default medium,large: 10,000 and "
        "100,000 partitions)",
    )
    parser.add_argument(
        "--kafka-side-engines",
        default=",".join(kafka_side_bench.RUN_ORDER),
        metavar="E[,E]",
        help="the engines run, in this order (default %(default)s; one alone reruns its side "
        "on the same seeded tree, without ratios)",
    )
    parser.add_argument(
        "--datadir-partitions",
        metavar="N[,N...]",
        help="the offline read's sizes (default 100000,1000000; 100000 with --skip-million)",
    )
    parser.add_argument(
        "--migration-million",
        action="store_true",
        help="the live migration at 1,000,000 partitions too (about an hour; three "
        "controllers, three brokers and ZooKeeper use ~16 GiB there: docs/proof.md)",
    )
    parser.add_argument(
        "--migration-partitions",
        metavar="N[,N...]",
        help="the live migration's sizes instead (e.g. 10000)",
    )
    parser.add_argument(
        "--migration-copy-only",
        action="store_true",
        help="the live migration up to dual-writing only: the copy and the write pause",
    )
    parser.add_argument(
        "--migration-admin-only",
        action="store_true",
        help="the live migration up to dual-writing, then admin writes through a "
        "ZooKeeper-mode broker (with and without all-topics Metadata beside them)",
    )
    parser.add_argument(
        "--migration-roll-only",
        action="store_true",
        help="the live migration up to dual-writing, then the roll into KRaft mode "
        "(a broker's restart in ZooKeeper mode, then in KRaft mode, each by its steps)",
    )
    args = parser.parse_args()
    sizes: tuple[int, ...] = (
        (10_000, 100_000, 1_000_000) if args.migration_million else (10_000, 100_000)
    )
    if args.migration_partitions:
        sizes = tuple(int(n) for n in args.migration_partitions.split(","))
    audit_sizes = (100_000,) if args.skip_million else (100_000, 1_000_000)
    datadir_sizes = audit_sizes
    if args.datadir_partitions:
        datadir_sizes = tuple(int(n) for n in args.datadir_partitions.split(","))
    if args.only_datadir:
        for size in datadir_sizes:
            datadir_bench.report(datadir_bench.run(size, args.rounds))
        return
    if args.only_security:
        security_bench.report(security_bench.run())
        return
    if args.only_rehearse:
        profiles = [p.strip() for p in args.rehearse_profiles.split(",") if p.strip()]
        done = [rehearse_bench.run(p) for p in profiles]
        if args.json:
            print(json.dumps(done, indent=2))
        else:
            rehearse_bench.report(done)
        return
    if args.only_kafka_side:
        engines = tuple(e.strip() for e in args.kafka_side_engines.split(",") if e.strip())
        if not engines or set(engines) - set(kafka_side.ENGINES):
            parser.error(f"--kafka-side-engines: one or both of {', '.join(kafka_side.ENGINES)}")
        for profile in (p.strip() for p in args.kafka_side_profiles.split(",") if p.strip()):
            kafka_side_bench.report_result(kafka_side_bench.run(profile, engines_run=engines))
        return
    if args.only_tree_copy:
        tree_copy_bench.report(tree_copy_bench.run("large"))
        return
    kafka_log_size = 100_000 if args.skip_million else 1_000_000
    if args.only_kafka_log:
        kafka_log_bench.report(kafka_log_bench.run(kafka_log_size, args.rounds))
        return
    if args.only_audit:
        audit_bench.report(audit_bench.run(audit_sizes))
        return
    if args.only_metrics:
        metrics_bench.report(metrics_bench.run())
        return
    metadata_sizes = audit_sizes
    if args.only_steps:
        controller_step_bench.report([controller_step_bench.run(n) for n in metadata_sizes])
        return
    if args.only_metadata:
        metadata_answer_bench.report([metadata_answer_bench.run(n) for n in metadata_sizes])
        return
    if args.only_migration:
        # 6 GiB: a million partitions' tree (~2.1 million znodes) with room to collect;
        # the JVM grows to its cap lazily, so the cap bounds ZooKeeper's share of memory
        with EmbeddedZooKeeper(heap_mb=6144) as zk:
            done = migration_bench.run_sizes(
                zk,
                sizes,
                0 if args.migration_copy_only else 30,
                admin_only=args.migration_admin_only,
                roll_only=args.migration_roll_only,
            )
        if args.json:
            print(json.dumps(done, indent=2))
        else:
            migration_bench.report(done)
        return
    if args.only_brokers:
        with EmbeddedZooKeeper(heap_mb=4096) as zk:
            broker_bench.report([broker_bench.run(zk.connect_string, n) for n in (10_000, 100_000)])
        return
    if args.only_writer:
        with EmbeddedZooKeeper(heap_mb=4096) as zk:
            tree = f"{zk.connect_string}/bench-100k"
            bench_seed(tree, TREE)
            writer_bench.report(writer_bench.run(tree, args.rounds))
        return
    results: dict[str, Any] = {"quorum": quorum_bench.run(), "metrics": metrics_bench.run()}
    if args.only_quorum:
        quorum_bench.report(results["quorum"])
        return
    with EmbeddedZooKeeper(heap_mb=4096) as zk:
        tree = f"{zk.connect_string}/bench-100k"
        results["seed_100k"] = bench_seed(tree, TREE)
        results["reader_100k"] = bench_reader(tree, args.rounds)
        results["log"] = log_bench.run(tree, args.rounds)
        results["writer_100k"] = writer_bench.run(tree, args.rounds)
        results["brokers"] = [broker_bench.run(zk.connect_string, n) for n in (10_000, 100_000)]
        results["migration"] = migration_bench.run_sizes(zk, sizes)
        if not args.skip_million:
            results["seed_1m"] = bench_seed(f"{zk.connect_string}/bench-1m", MILLION)
            results["seed_1m"]["goal_met"] = results["seed_1m"]["total_seconds"] < 60
    results["audit"] = audit_bench.run(audit_sizes)
    results["metadata_answer"] = [metadata_answer_bench.run(n) for n in metadata_sizes]
    results["controller_steps"] = [controller_step_bench.run(n) for n in metadata_sizes]
    results["security"] = security_bench.run()
    results["kafka_log"] = kafka_log_bench.run(kafka_log_size, args.rounds)
    results["datadir"] = [datadir_bench.run(size, args.rounds) for size in datadir_sizes]
    results["tree_copy"] = tree_copy_bench.run("large")
    if args.json:
        print(json.dumps(results, indent=2))
        return
    r = results["reader_100k"]
    print(
        f"reader, {r['partitions']:,} partitions / {r['znodes']:,} znodes "
        f"(median of {args.rounds}):"
    )
    print(
        f"  baseline (kazoo get_async, 1000 in flight): {r['baseline_seconds']:8.3f} s "
        f"({r['baseline_znodes_per_second']:,} znodes/s)"
    )
    print(
        f"  zk2kraft reader (multi-read + decoding):    {r['reader_seconds']:8.3f} s "
        f"({r['reader_znodes_per_second']:,} znodes/s)"
    )
    print(
        f"  ratio reader/baseline: {r['reader_over_baseline']:.4f} "
        f"(goal <= 0.5: {'met' if r['goal_met'] else 'NOT met'})"
    )
    log_bench.report(results["log"])
    writer_bench.report(results["writer_100k"])
    broker_bench.report(results["brokers"])
    migration_bench.report(results["migration"])
    quorum_bench.report(results["quorum"])
    metrics_bench.report(results["metrics"])
    audit_bench.report(results["audit"])
    metadata_answer_bench.report(results["metadata_answer"])
    controller_step_bench.report(results["controller_steps"])
    security_bench.report(results["security"])
    kafka_log_bench.report(results["kafka_log"])
    for figures in results["datadir"]:
        datadir_bench.report(figures)
    tree_copy_bench.report(results["tree_copy"])
    for key in ("seed_100k", "seed_1m"):
        if key in results:
            s = results[key]
            print(
                f"seeder, {s['partitions']:,} partitions: {s['znodes']:,} znodes in "
                f"{s['total_seconds']} s (generate {s['generate_seconds']} s, write "
                f"{s['write_seconds']} s) = {s['znodes_per_second']:,} znodes/s"
            )
    if "seed_1m" in results:
        print(
            f"  1,000,000 partitions in under a minute: "
            f"{'met' if results['seed_1m']['goal_met'] else 'NOT met'}"
        )


if __name__ == "__main__":
    with terminated_as_interrupt():  # a SIGTERMed bench stops the processes it started
        main()
