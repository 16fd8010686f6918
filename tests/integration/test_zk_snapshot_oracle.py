"""ZooKeeper's own SnapshotFormatter (``-d`` and ``-json``) and the snapshot parser agree
on real snapshots, plain, gzip and snappy: every path, data, version, ephemeral owner
and data size, and the sessions."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from migration.local.zookeeper import EmbeddedZooKeeper
from migration.zk.client import ZkClient
from migration.zk.multiwrite import CreateMode, create
from migration.zkfiles.datafiles import compression_of, decompressed, find_data_files, mapped
from migration.zkfiles.snapfile import SnapshotError, parse_snapshot
from tests.zk_files import KafkaWorkload, snapshot_formatter, snapshot_formatter_json


@pytest.mark.parametrize("compression", ["", "gz", "snappy"])
def test_snapshot_formatter_agrees_with_the_parser(tmp_path: Path, compression: str) -> None:
    method = {"zookeeper.snapshot.compression.method": compression}
    with EmbeddedZooKeeper(
        base_dir=tmp_path, extra_config={"snapCount": "30"}, jvm_properties=method
    ) as zk:
        connect = zk.connect_string + "/kafka"
        workload = KafkaWorkload(zk, connect, random.Random(7), [zk.servers[0].data_dir])
        with ZkClient(connect) as holder:
            workload.seed_cluster(holder)
            holder.multi_write([create("/binary", bytes(range(256)), CreateMode.EPHEMERAL)])
            for _ in range(60):
                workload.step()
            workload.close()
            session = holder.kazoo.client_id[0]
            zk.kill(1)  # no snapshot is being written while they are compared
            compared = 0
            for _, snapshot in find_data_files([zk.servers[0].data_dir]).snapshots:
                assert compression_of(snapshot.name) == compression
                with mapped(snapshot) as raw:
                    try:
                        contents = parse_snapshot(decompressed(snapshot, raw))
                    except (SnapshotError, ValueError):
                        continue  # one the kill cut short: ZooKeeper skips it too
                ours = {
                    path.decode() or "/": (node, 0, 0) if isinstance(node, bytes) else node
                    for path, node in contents.nodes.items()
                }
                theirs, sessions = snapshot_formatter(snapshot)
                assert {p: z[:3] for p, z in theirs.items()} == ours, snapshot.name
                assert sessions == contents.sessions, snapshot.name
                sizes = snapshot_formatter_json(snapshot)
                assert sizes == {p: len(z[0]) for p, z in ours.items()}, snapshot.name
                compared += 1
                if compared == 2:
                    break
            assert compared == 2
            assert any(owner == session for _, _, owner in ours.values())
