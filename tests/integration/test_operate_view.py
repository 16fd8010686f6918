"""A driven migration's view of the cluster read from a real ZooKeeper: whole, and without
the topics, as the gates polled every second and ``kafka status`` read it (every
partition's state znode left unread). The gates' rules: tests/unit/test_operate_gates.py."""

from __future__ import annotations

from pathlib import Path

from migration.local import seed
from migration.operate.gates import out_of_sync, read_view, refusal
from migration.operate.inventory import Broker, Command, Controller, Inventory
from migration.zk.client import ConnectString, ZkClient

NO_COMMAND = Command("", ())


def _inventory(connect: str, home: Path, brokers: tuple[int, ...]) -> Inventory:
    client_config = home / "zookeeper-client.properties"
    client_config.write_text("")
    return Inventory(
        path=home / "inventory.toml",
        version="3.9.2",
        kafka_home=str(home),
        zookeeper_connect=ConnectString.parse(connect),
        zookeeper_client_config=client_config,
        brokers=tuple(
            Broker(i, "127.0.0.1", home / f"broker{i}.properties", NO_COMMAND, None)
            for i in brokers
        ),
        controllers=(  # refuses connections: the quorum part names its error
            Controller(
                3000,
                "127.0.0.1",
                1,
                home / "c.properties",
                home / "m3000",
                NO_COMMAND,
                NO_COMMAND,
                NO_COMMAND,
                None,
            ),
        ),
    )


def test_a_view_without_the_topics_reads_the_rest(zk_connect: str, tmp_path: Path) -> None:
    spec = seed.PROFILES["small"]
    with ZkClient(zk_connect) as client:
        seed.write(client, seed.generate(spec), ephemeral=True)
        inv = _inventory(zk_connect, tmp_path, tuple(range(1, spec.brokers + 1)))
        whole = read_view(inv, None)
        light = read_view(inv, None, topics=False)
    assert whole.snap is not None and light.snap is not None, (whole.zk_error, light.zk_error)
    assert whole.topics_read and len(whole.snap.topics) == spec.topics
    assert out_of_sync(whole.snap)  # the seeded tree has some; the light view cannot say
    assert not light.topics_read and light.snap.topics == {}
    # each topic's znode and each partition's state znode: the reads left out
    assert whole.snap.znodes_read - light.snap.znodes_read == spec.topics + spec.partitions
    assert light.snap.brokers == whole.snap.brokers
    assert light.snap.cluster_id == whole.snap.cluster_id
    assert light.snap.controller == whole.snap.controller
    assert refusal(inv, light) == "ZooKeeper's topics not read in this view"
