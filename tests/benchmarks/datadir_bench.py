"""Reading ZooKeeper's data directory offline against reading the live server
(``make bench``, or ``python -m tests.benchmarks.datadir_bench --partitions N``).

One embedded ZooKeeper, one Kafka tree of ``partitions`` partitions seeded under a
chroot (the seeder's million-partition shape, scaled), then in one run:

* live: ``read_snapshot`` over a :class:`ZkClient` (median of ``rounds``), and
  ``list_trees`` of the whole chroot (every znode listed, nothing decoded);
* files, logs: ``open_data_dir`` while the tree is still mostly in transaction logs
  (whatever snapshots ZooKeeper took while the seed ran, the rest replayed);
* files, one snapshot: the server restarted first (ZooKeeper snapshots its whole tree
  at start-up), then ``open_data_dir``, ``read_snapshot`` and ``list_trees`` over it.

Every offline read is checked against the live one (equal snapshots, equal listings).
Reported: each time, and live over files for ``read_snapshot`` end to end (open +
read), for opening the files alone, and for the listing. ``read_snapshot`` decodes
every znode's JSON either way, which bounds the end-to-end ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import replace
from typing import Any

from migration.local import seed
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.zk.client import ZkClient
from migration.zk.multiread import TreeReader
from migration.zk.reader import read_snapshot
from migration.zk.tree import list_trees
from migration.zk.tree_read import ZkSnapshot
from migration.zkfiles.datadir import open_data_dir

CHROOT = "/bench"
ROOTS = ("/brokers", "/config", "/admin", "/cluster")


def spec_for(partitions: int) -> seed.ClusterSpec:
    """The million-partition shape of :mod:`tests.benchmarks.run`, scaled."""
    return seed.ClusterSpec(
        brokers=30,
        topics=max(1, partitions // 50),
        partitions=partitions,
        quota_entities=0,
        scram_users=0,
        acl_resources=0,
        delegation_tokens=0,
        topic_config_permille=100,
    )


def _timed(fn: Any, *args: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - started, result


def _same(snap: ZkSnapshot) -> ZkSnapshot:
    return replace(snap, znodes_read=0)


def _offline(zk: EmbeddedZooKeeper, live: ZkSnapshot, listing: Any) -> dict[str, Any]:
    open_s, tree = _timed(open_data_dir, [zk.servers[0].data_dir], CHROOT)
    read_s, snap = _timed(read_snapshot, tree)
    list_s, listed = _timed(list_trees, tree, ROOTS)
    assert _same(snap) == _same(live), "the offline read differs from the live one"
    assert listed == listing, "the offline listing differs from the live one"
    return {
        "source": tree.source,
        "warnings": list(tree.warnings),
        "znodes": tree.znode_count,
        "open_s": round(open_s, 3),
        "read_snapshot_s": round(read_s, 3),
        "total_s": round(open_s + read_s, 3),
        "list_trees_s": round(list_s, 3),
    }


def run(partitions: int, rounds: int = 3) -> dict[str, Any]:
    heap = 6144 if partitions > 200_000 else 2048
    with EmbeddedZooKeeper(heap_mb=heap) as zk:
        connect = zk.connect_string + CHROOT
        snap = seed.generate(spec_for(partitions))
        with ZkClient(connect) as client:
            client.ensure_chroot()
            seed_s, written = _timed(seed.write, client, snap)
            reader: TreeReader = client
            times = []
            for _ in range(rounds):
                seconds, live = _timed(read_snapshot, reader)
                times.append(seconds)
            live_list_s, listing = _timed(list_trees, reader, ROOTS)
        result: dict[str, Any] = {
            "partitions": partitions,
            "znodes_written": written,
            "seed_s": round(seed_s, 1),
            "live_read_snapshot_s": round(statistics.median(times), 3),
            "live_list_trees_s": round(live_list_s, 3),
            "from_logs": _offline(zk, live, listing),
        }
        zk.restart(1, timeout_s=900)  # ZooKeeper snapshots the whole tree as it starts
        result["from_snapshot"] = _offline(zk, live, listing)
    live_s = result["live_read_snapshot_s"]
    for key in ("from_logs", "from_snapshot"):
        files = result[key]
        files["live_over_files"] = round(live_s / files["total_s"], 2)
        files["live_over_open"] = round(live_s / files["open_s"], 2)
        files["listing_live_over_files"] = round(
            result["live_list_trees_s"] / (files["open_s"] + files["list_trees_s"]), 2
        )
    return result


def report(result: dict[str, Any]) -> None:
    print(
        f"data directory read offline, {result['partitions']:,} partitions "
        f"({result['znodes_written']:,} znodes seeded in {result['seed_s']} s):"
    )
    print(
        f"  live: read_snapshot {result['live_read_snapshot_s']:.3f} s, "
        f"list_trees {result['live_list_trees_s']:.3f} s"
    )
    for key, what in (("from_logs", "files, mostly logs"), ("from_snapshot", "files, snapshot")):
        f = result[key]
        print(
            f"  {what}: open_data_dir {f['open_s']:.3f} s + read_snapshot "
            f"{f['read_snapshot_s']:.3f} s = {f['total_s']:.3f} s; list_trees "
            f"{f['list_trees_s']:.3f} s  [{f['source']}]"
        )
        print(
            f"    live / files: read_snapshot end to end {f['live_over_files']}x, "
            f"open_data_dir alone {f['live_over_open']}x, whole listing "
            f"{f['listing_live_over_files']}x"
        )
        for warning in f["warnings"]:
            print(f"    warning: {warning}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args.partitions, args.rounds)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        report(result)


if __name__ == "__main__":
    main()
