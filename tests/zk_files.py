"""Helpers for the tests that read ZooKeeper's data directory offline: a whole-tree walk
(what a reader sees of every znode), a digest of a directory's files, a seeded
Kafka-shaped workload against a real server that is SIGKILLed at random moments, and
ZooKeeper's own SnapshotFormatter as an oracle."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import random
import subprocess
import time
from pathlib import Path

from kazoo.exceptions import KazooException
from kazoo.security import make_acl

from migration.local import seed
from migration.local.zookeeper import EmbeddedZooKeeper, java_binary, zookeeper_classpath
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.model.brokers import render_broker
from migration.zk.multiread import NodeData, ReadOp, TreeReader
from migration.zk.multiwrite import CreateMode, Op, check, create, delete, set_data

Znodes = dict[str, tuple[bytes, int, int, int]]


def walk(reader: TreeReader, root: str = "/") -> Znodes:
    """Every znode under ``root``: (data, version, ephemeral owner, children), read
    level by level with GET_DATA and GET_CHILDREN."""
    found: Znodes = {}
    level = [root]
    while level:
        results = reader.multi_read(
            [(ReadOp.GET_DATA, p) for p in level] + [(ReadOp.GET_CHILDREN, p) for p in level]
        )
        data, kids = results[: len(level)], results[len(level) :]
        next_level = []
        for path, node, names in zip(level, data, kids, strict=True):
            if isinstance(node, NodeData) and isinstance(names, tuple):
                found[path] = (node.data, node.version, node.ephemeral_owner, node.num_children)
                assert node.num_children == len(names), path
                next_level += [f"{path.rstrip('/')}/{name}" for name in names]
        level = next_level
    return found


def dir_digest(directory: Path) -> dict[str, tuple[str, int]]:
    """Every file under ``directory``: its content's SHA-256 and its mtime (ns)."""
    return {
        str(p.relative_to(directory)): (
            hashlib.sha256(p.read_bytes()).hexdigest(),
            p.stat().st_mtime_ns,
        )
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def answering(client: ZkClient, timeout_s: float = 60.0) -> None:
    """Wait until ``client`` is connected again (its session kept) after a restart."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            client.kazoo.sync("/")
            return
        except KazooException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


class KafkaWorkload:
    """Random Kafka-shaped writes under ``client``'s chroot, seeded: topics created
    (null-data parents, JSON states) and deleted, ISR changes (setData), sequential
    config-change notifications, failed multis, setACL, ephemeral registrations of
    sessions that stay open or close; and, at random moments, the server SIGKILLed
    with multis in flight, then restarted."""

    def __init__(
        self, zk: EmbeddedZooKeeper, connect: str, rng: random.Random, dirs: list[Path]
    ) -> None:
        self.zk = zk
        self.dirs = dirs
        self.connect = connect
        self.rng = rng
        self.client = ZkClient(connect)
        self.topics: list[str] = []
        self.counter = 0
        self.registration = b"{}"

    def close(self) -> None:
        self.client.close()

    def seed_cluster(self, holder: ZkClient) -> None:
        """A tiny seeded cluster; its broker registrations are ``holder``'s ephemerals."""
        snap = seed.generate(
            seed.ClusterSpec(brokers=2, topics=3, partitions=6, seed=self.rng.randrange(1000))
        )
        self.client.ensure_chroot()
        seed.ensure_parents(self.client)
        self.registration = render_broker(next(iter(snap.brokers.values())))
        ephemeral = CreateMode.EPHEMERAL
        brokers = snap.brokers.values()
        holder.write_all(
            [create(paths.broker(b.broker_id), render_broker(b), ephemeral) for b in brokers]
        )
        seed.write(self.client, seed.without_registrations(snap))
        self.topics = sorted(snap.topics)

    def _write(self, ops: list[Op]) -> None:
        with contextlib.suppress(Exception):  # refused multis are part of the workload
            self.client.multi_write(ops)

    def step(self) -> None:
        action = self.rng.choices(
            ["topic", "isr", "notify", "delete", "failed", "acl", "ephemeral", "purge"],
            weights=[3, 6, 3, 1, 1, 1, 1, 1],
        )[0]
        getattr(self, f"_{action}")()

    def _topic(self) -> None:
        self.counter += 1
        name = f"t{self.counter}-{self.rng.randrange(10**6)}"
        parts = self.rng.randrange(1, 4)
        assignment = b",".join(b'"%d":[1]' % p for p in range(parts))
        ops = [
            create(paths.topic(name), b'{"version":2,"partitions":{%s}}' % assignment),
            create(paths.topic_partitions(name)),  # null data, as Kafka creates it
        ]
        for p in range(parts):
            ops.append(create(paths.partition(name, p)))
            ops.append(create(paths.partition_state(name, p), self._state()))
        ops.append(create(paths.config_entity("topics", name), b'{"version":1,"config":{}}'))
        self._write(ops)
        self.topics.append(name)

    def _state(self) -> bytes:
        isr = sorted(self.rng.sample([1, 2], self.rng.randrange(1, 3)))
        return b'{"controller_epoch":1,"leader":%d,"version":1,"leader_epoch":%d,"isr":[%s]}' % (
            isr[0],
            self.rng.randrange(100),
            b",".join(b"%d" % b for b in isr),
        )

    def _isr(self) -> None:
        if self.topics:
            self._write(
                [set_data(paths.partition_state(self.rng.choice(self.topics), 0), self._state())]
            )

    def _notify(self) -> None:
        notice = b'{"version":2,"entity_path":"topics/x"}'
        sequential = CreateMode.PERSISTENT_SEQUENTIAL
        self._write([create(f"{paths.CONFIG_CHANGES}/config_change_", notice, sequential)])

    def _delete(self) -> None:
        if not self.topics:
            return
        name = self.topics.pop(self.rng.randrange(len(self.topics)))
        with contextlib.suppress(Exception):
            for child in self.client.kazoo.get_children(paths.topic_partitions(name)):
                partition = paths.partition(name, int(child))
                self._write([delete(f"{partition}/state"), delete(partition)])
            topic = [paths.topic_partitions(name), paths.topic(name)]
            self._write([delete(p) for p in [*topic, paths.config_entity("topics", name)]])

    def _failed(self) -> None:
        """A multi ZooKeeper refuses: an error transaction that must change nothing."""
        if self.topics:
            name = self.rng.choice(self.topics)
            self._write(
                [set_data(paths.partition_state(name, 0), b"{}"), check(paths.topic(name), 999)]
            )

    def _acl(self) -> None:
        if self.topics:
            acl = make_acl("world", "anyone", read=True, write=True, admin=True)
            with contextlib.suppress(Exception):
                self.client.kazoo.set_acls(
                    paths.partition_state(self.rng.choice(self.topics), 0), [acl]
                )

    def _ephemeral(self) -> None:
        """A session that registers a broker (and a znode of null data), then closes."""
        with ZkClient(self.connect) as passing:
            broker = 100 + self.rng.randrange(1000)
            ephemeral = CreateMode.EPHEMERAL
            with contextlib.suppress(Exception):
                passing.multi_write(
                    [
                        create(paths.broker(broker), self.registration, ephemeral),
                        create(f"{paths.ISR_CHANGES}/e{broker}", None, ephemeral),
                    ]
                )

    def _purge(self) -> None:
        with contextlib.suppress(Exception):
            changes = sorted(self.client.kazoo.get_children("/config/changes"))
            self._write([delete(f"/config/changes/{c}") for c in changes[: len(changes) // 2]])

    def crash(self, holders: list[ZkClient], *, restart: bool = True) -> None:
        """SIGKILL the server with a few multis in flight; restart it and wait for the
        clients to be answered again (their sessions outlive the restart)."""
        for _ in range(self.rng.randrange(1, 30)):
            self.counter += 1
            with contextlib.suppress(Exception):
                self.client.multi_write_async(
                    [create(f"/config/changes/inflight_{self.counter}", b"x" * 300)]
                )
        time.sleep(self.rng.random() * 0.02)
        self.zk.kill(1)
        if restart:
            restart_after_crash(self.zk, self.dirs)
            for client in [self.client, *holders]:
                answering(client)


def restart_after_crash(zk: EmbeddedZooKeeper, dirs: list[Path]) -> None:
    """Restart a SIGKILLed server. A kill between creating a log and writing its header
    leaves an empty last log, which ZooKeeper 3.8.0 cannot start with (later releases
    delete it themselves, as the offline reader skips it): it is deleted first."""
    for directory in dirs:
        for log in (directory / "version-2").glob("log.*"):
            if log.stat().st_size == 0:
                log.unlink()
    zk.restart(1)


def snapshot_formatter(snapshot: Path) -> tuple[Znodes, dict[int, int]]:
    """ZooKeeper's own ``SnapshotFormatter -d`` on ``snapshot``: every znode's (data,
    version, ephemeral owner, -1) and the sessions (id -> timeout)."""
    out = subprocess.run(
        [java_binary(), "-cp", zookeeper_classpath(),
         "org.apache.zookeeper.server.SnapshotFormatter", "-d", str(snapshot)],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    znodes: Znodes = {}
    sessions: dict[int, int] = {}
    body, _, tail = out.partition("Session Details (sid, timeout, ephemeralCount):")
    for block in body.split("----\n")[1:]:
        lines = block.splitlines()
        if not lines:
            continue
        fields = {k.strip(): v.strip() for k, _, v in (line.partition("=") for line in lines[1:])}
        owner = int(fields["ephemeralOwner"], 16)  # Long.toHexString: two's complement
        owner -= (1 << 64) if owner >= 1 << 63 else 0
        data = base64.b64decode(fields.get("data", ""))
        znodes[lines[0]] = (data, int(fields["dataVersion"]), owner, -1)
    for line in tail.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3 and parts[0].startswith("0x"):
            sessions[int(parts[0], 16)] = int(parts[1])
    return znodes, sessions


def snapshot_formatter_json(snapshot: Path) -> dict[str, int]:
    """ZooKeeper's ``SnapshotFormatter -json``: every znode's path and data size."""
    out = subprocess.run(
        [java_binary(), "-cp", zookeeper_classpath(),
         "org.apache.zookeeper.server.SnapshotFormatter", "-json", str(snapshot)],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    sizes: dict[str, int] = {}

    def visit(entry: object, parent: str) -> None:
        info, kids = (entry[0], entry[1:]) if isinstance(entry, list) else (entry, [])
        assert isinstance(info, dict)
        name = str(info["name"])
        path = "/" if name == "/" else f"{parent.rstrip('/')}/{name}"
        sizes[path] = int(info["dsize"])
        for kid in kids:
            visit(kid, path)

    visit(json.loads(out)[3], "")
    return sizes
