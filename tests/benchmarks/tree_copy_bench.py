"""Copying production's tree for a rehearsal: ``read_tree`` then ``load_tree`` of a seed
profile (``make bench``, or ``python -m tests.benchmarks.tree_copy_bench [--profile
large]``; ``large`` is the 100,000-partition tree).

One embedded ZooKeeper (forceSync=no): the profile seeded under ``/prod`` with its
registrations and ``/controller`` as ephemerals of a session kept open (as in
production), then, timed:

* ``read_tree`` live over a :class:`ZkClient` on ``/prod``;
* ``read_tree`` from ZooKeeper's files (``open_data_dir`` timed apart);
* ``load_tree`` of the live copy into the empty ``/rehearsal`` chroot.

Checked, not timed: the copy read back from ``/rehearsal`` equals the live copy, znode
for znode, and the offline copy holds the same paths and data. Every figure is this
machine's, measured in this run.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from migration.local import seed
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.zk.client import ZkClient
from migration.zk.tree_copy import load_tree, read_tree
from migration.zkfiles.datadir import open_data_dir

SOURCE, TARGET = "/prod", "/rehearsal"


def run(profile: str = "large") -> dict[str, Any]:
    spec = seed.PROFILES[profile]
    with EmbeddedZooKeeper(heap_mb=4096) as zk:
        with ZkClient(zk.connect_string + SOURCE) as prod:
            prod.ensure_chroot()
            seed.write(prod, seed.generate(spec), ephemeral=True)
            started = time.perf_counter()
            live = read_tree(prod)
            read_s = time.perf_counter() - started

            started = time.perf_counter()
            files = open_data_dir([zk.servers[0].data_dir], SOURCE)
            open_s = time.perf_counter() - started
            started = time.perf_counter()
            offline = read_tree(files)
            offline_s = time.perf_counter() - started
            del files
            assert [(n.path, n.data) for n in offline.nodes] == [
                (n.path, n.data) for n in live.nodes
            ], "the offline copy differs from the live one"
            assert offline.registrations == live.registrations
            del offline

        with ZkClient(zk.connect_string + TARGET) as rehearsal:
            started = time.perf_counter()
            written = load_tree(rehearsal, live)
            load_s = time.perf_counter() - started
            back = read_tree(rehearsal)
        assert back.nodes == live.nodes, "the loaded copy differs from the source"
    return {
        "profile": profile,
        "partitions": spec.partitions,
        "znodes": live.znodes,
        "bytes": live.bytes,
        "ephemerals_skipped": len(live.skipped),
        "registrations": len(live.registrations),
        "read_s": round(read_s, 3),
        "read_znodes_per_second": round(live.znodes / read_s),
        "offline_open_s": round(open_s, 3),
        "offline_read_s": round(offline_s, 3),
        "load_s": round(load_s, 3),
        "load_znodes_per_second": round(written / load_s),
        "read_plus_load_s": round(read_s + load_s, 3),
    }


def report(r: dict[str, Any]) -> None:
    print(
        f"tree copy, {r['profile']} profile ({r['partitions']:,} partitions, "
        f"{r['znodes']:,} znodes, {r['bytes']:,} bytes, {r['ephemerals_skipped']} "
        f"ephemerals skipped):"
    )
    print(f"  read_tree live:     {r['read_s']:8.3f} s ({r['read_znodes_per_second']:,} znodes/s)")
    print(
        f"  read_tree offline:  {r['offline_read_s']:8.3f} s "
        f"(+ open_data_dir {r['offline_open_s']:.3f} s)"
    )
    print(f"  load_tree:          {r['load_s']:8.3f} s ({r['load_znodes_per_second']:,} znodes/s)")
    print(f"  read + load:        {r['read_plus_load_s']:8.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--profile", default="large", choices=sorted(seed.PROFILES))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args.profile)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        report(result)


if __name__ == "__main__":
    main()
