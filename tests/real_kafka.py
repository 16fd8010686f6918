"""Data written by real Apache Kafka (the releases `make kafka` installs), for the tests
that read what Kafka leaves behind rather than what the project writes.

- :func:`build_metadata_log`: a single-node KRaft Kafka (broker and controller in one
  process) run until its ``__cluster_metadata-0`` has been through Kafka's own snapshot
  retention: several ``.checkpoint`` files, segments rolled every few seconds, the oldest
  snapshots and segments deleted and the log start offset moved (the leader-epoch
  checkpoint truncated from its start). Kafka cleans the metadata log on a fixed 60 s
  timer (``KafkaRaftClient``, not configurable), so one build takes about 70 s; the
  session builds each release once, all releases at the same time (:class:`MetadataLogs`).
  A 3.9.2 build's ``__cluster_metadata-0`` (offsets vary by a few from run to run;
  4.1.2's is alike, with one more snapshot, written as Kafka 4 shuts down)::

      00000000000000000287.log  .index .timeindex .snapshot   first batch 287 < log start
      00000000000000000289-0000000001.checkpoint              the oldest kept = log start
      00000000000000000295-0000000001.checkpoint
      00000000000000000302.log  .index .timeindex .snapshot
      00000000000000000336-0000000001.checkpoint
      00000000000000000338.log  .index .timeindex .snapshot   the open segment, to 427
      00000000000000000340-0000000001.checkpoint              the newest snapshot
      00000000000000000428.snapshot                           producer state at shutdown
      leader-epoch-checkpoint   "0\n1\n1 289\n": epoch 1 truncated from its start (was 0)
      partition.metadata  quorum-state

  About 100 ``*.deleted`` files (the segments and snapshots below the log start) are
  left out.
- :func:`start_zk_mode_cluster`: ZooKeeper-mode Kafka 3.9.2 brokers (no migration flag)
  on a chroot of the tests' ZooKeeper, with topics, configs and an ACL made by Kafka's own
  tools (TopicCommand, ConfigCommand, AclCommand).
- :func:`copy_zk_data_dir`: ZooKeeper's own files (``version-2/``: snapshots and
  transaction logs) copied out of a running server, for ``--zk-data-dir``.

The fixtures (imported by ``tests/conftest.py``): ``kafka_metadata_logs`` (session: the
builds), ``kafka39_metadata_log`` / ``kafka41_metadata_log`` (a test's own copy of one
build, a :class:`BuiltMetadataLog`), ``zk_mode_cluster`` (module: a running
:class:`ZkModeCluster` of two brokers), ``zk_data_dir_copy`` (a copy of the tests'
ZooKeeper's files, taken when the test asks).
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kafka.admin import (
    ACL,
    ACLOperation,
    ACLPermissionType,
    ConfigResource,
    ConfigResourceType,
    KafkaAdminClient,
    NewTopic,
    ResourcePattern,
    ResourceType,
)

from migration.local.kafka import KafkaGroup, KafkaNode
from migration.local.kafka_release import (
    KAFKA_VERSIONS,
    KafkaRelease,
    kafka_release,
    random_cluster_id,
)
from migration.local.zookeeper import EmbeddedZooKeeper

CLEAN_WAIT_S = 120.0  # Kafka's first metadata-log clean comes 60 s after the start
_CHECKPOINT = re.compile(r"(\d{20})-(\d{10})\.checkpoint")
_SEGMENT = re.compile(r"(\d{20})\.log")


def snapshot_heavy(release: KafkaRelease, metadata_dir: Path) -> dict[str, str]:
    """Settings that make a KRaft node snapshot, roll and delete its metadata log quickly:
    a snapshot every 2 s (the controller's NoOp records every 500 ms give it something
    to cover) or every 4 KiB, a segment every 3 s or 16 KiB, and retention so small that
    each clean keeps only the newest snapshot. ``metadata.log.dir`` apart from the data
    partitions, as a controller's is. The StandardAuthorizer (everyone a super user) so
    ACLs can be created."""
    segment = (
        {"metadata.log.segment.bytes": "16384", "metadata.log.segment.min.bytes": "1024"}
        if release.major < 4
        else {"internal.metadata.log.segment.bytes": "16384"}
    )
    return segment | {
        "metadata.log.dir": str(metadata_dir),
        "metadata.log.segment.ms": "3000",
        "metadata.log.max.record.bytes.between.snapshots": "4096",
        "metadata.log.max.snapshot.interval.ms": "2000",
        "metadata.max.retention.ms": "1000",
        "metadata.max.retention.bytes": "1",
        "num.partitions": "1",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:ANONYMOUS",
    }


@dataclass(frozen=True)
class MetadataLogShape:
    """What a ``__cluster_metadata-0`` directory holds, from its file names and its
    ``leader-epoch-checkpoint`` (Kafka's text form: version, count, ``epoch offset``)."""

    partition: Path
    checkpoints: list[tuple[int, int]]  # (end offset, epoch), oldest first
    segments: list[int]  # base offsets, oldest first
    leader_epochs: list[tuple[int, int]]  # (epoch, start offset)

    @classmethod
    def of(cls, partition: Path) -> MetadataLogShape:
        names = sorted(p.name for p in partition.iterdir())
        checkpoints = [(int(m[1]), int(m[2])) for n in names if (m := _CHECKPOINT.fullmatch(n))]
        segments = [int(m[1]) for n in names if (m := _SEGMENT.fullmatch(n))]
        lines = (partition / "leader-epoch-checkpoint").read_text().split("\n")
        epochs = [(int(a), int(b)) for a, b in (line.split() for line in lines[2:] if line)]
        return cls(partition, checkpoints, segments, epochs)

    def listing(self) -> str:
        """``ls -l`` of the directory: name and size, one a line."""
        return "\n".join(
            f"{p.stat().st_size:>10}  {p.name}" for p in sorted(self.partition.iterdir())
        )


@dataclass(frozen=True)
class BuiltMetadataLog:
    """A stopped Kafka's ``metadata.log.dir`` (``meta.properties``,
    ``bootstrap.checkpoint``, ``__cluster_metadata-0``), as Kafka left it but for the
    files it had renamed ``*.deleted`` (still waiting out Kafka's 60 s delete delay),
    which are left out of ``log_dir``."""

    version: str
    log_dir: Path
    node_dir: Path  # the node's directory: server.properties, server.log
    topics: list[str]
    deleted: list[str]  # the ``*.deleted`` names left out
    seconds: float

    @property
    def partition(self) -> Path:
        return self.log_dir / "__cluster_metadata-0"

    def copy_to(self, dest: Path) -> Path:
        """A copy of ``log_dir`` at ``dest`` (a test's own, to change at will)."""
        shutil.copytree(self.log_dir, dest)
        return dest


def _alter(admin: KafkaAdminClient, resource: ConfigResource) -> None:
    done = admin.alter_configs([resource], raise_on_unknown=False)
    results = [r for by_name in done.values() for r in by_name.values()]
    assert results == ["OK"], f"{resource}: {done}"


def _admin_workload(admin: KafkaAdminClient, first: int, count: int) -> list[str]:
    """Topics (some with configs, every fifth altered afterwards), an ACL per tenth topic,
    a broker config; every third topic of an earlier batch deleted."""
    names = [f"topic-{i:03d}" for i in range(first, first + count)]
    for i, name in enumerate(names):
        configs = {"retention.ms": str(3_600_000 + i)} if i % 2 else {}
        admin.create_topics([NewTopic(name, 1 + i % 3, 1, topic_configs=configs)])
        if i % 5 == 0:
            res = ConfigResource(
                ConfigResourceType.TOPIC, name, configs={"max.message.bytes": "2000000"}
            )
            _alter(admin, res)
        if i % 10 == 0:
            pattern = ResourcePattern(ResourceType.TOPIC, name)
            acl = ACL(f"User:reader-{i}", "*", ACLOperation.READ, ACLPermissionType.ALLOW, pattern)
            admin.create_acls([acl])
    broker = ConfigResource(ConfigResourceType.BROKER, "1", configs={"log.cleaner.threads": "2"})
    _alter(admin, broker)
    return names


def _wait_for(what: str, check: Callable[[], bool], timeout_s: float, node: KafkaNode) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if not node.running or time.monotonic() > deadline:
            raise TimeoutError(f"{what} not seen in {timeout_s:g}s:\n{node.log_tail()}")
        time.sleep(0.25)


def build_metadata_log(version: str, work: Path) -> BuiltMetadataLog:
    """Run a single-node KRaft Kafka ``version`` in ``work`` until its metadata log holds
    snapshots and segments past a retention clean (see the module doc), stop it, and
    return the result with ``*.deleted`` left out (``work/log``)."""
    started = time.monotonic()
    release = kafka_release(version)
    node_dir = work / "node"
    metadata = node_dir / "metadata"
    node = KafkaNode.kraft(release, node_dir, extra=snapshot_heavy(release, metadata))
    node.format(random_cluster_id())
    partition = node.metadata_dir
    with KafkaGroup() as group:
        group.start(node)
        admin = KafkaAdminClient(bootstrap_servers=node.bootstrap, client_id="real-kafka")
        try:
            topics = _admin_workload(admin, 0, 40)
            admin.delete_topics(topics[::3])
            # Kafka's clean: log start offset moved, the first segment renamed .deleted
            gone = partition / "00000000000000000000.log"
            _wait_for("the metadata log's clean", lambda: not gone.exists(), CLEAN_WAIT_S, node)
            topics += _admin_workload(admin, 40, 10)
            after = {p.name for p in partition.glob("*.checkpoint")}

            def newer() -> bool:
                now = {p.name for p in partition.glob("*.checkpoint")}
                return len(now - after) >= 2

            _wait_for("two snapshots after the clean", newer, 30.0, node)
        finally:
            admin.close()
    deleted = sorted(p.name for p in partition.glob("*.deleted"))
    log_dir = work / "log"
    shutil.copytree(metadata, log_dir, ignore=shutil.ignore_patterns("*.deleted"))
    live = sorted(set(topics) - set(topics[:40:3]))
    return BuiltMetadataLog(version, log_dir, node_dir, live, deleted, time.monotonic() - started)


@dataclass
class MetadataLogs:
    """One build per release per session, every release built at once on the first
    request (most of a build is Kafka's 60 s wait)."""

    root: Path
    _builds: dict[str, Future[BuiltMetadataLog]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, version: str) -> BuiltMetadataLog:
        with self._lock:
            if not self._builds:
                for v in KAFKA_VERSIONS:
                    self._builds[v] = self._start(v)
        return self._builds[version].result()

    def close(self) -> None:
        """Wait for every build started (each stops its Kafka when it ends, failed or
        not): no Kafka outlives the session."""
        for future in self._builds.values():
            future.exception()

    def _start(self, version: str) -> Future[BuiltMetadataLog]:
        future: Future[BuiltMetadataLog] = Future()

        def run() -> None:
            try:
                future.set_result(build_metadata_log(version, self.root / f"kafka-{version}"))
            except BaseException as exc:  # handed to the test that asks for it
                future.set_exception(exc)

        threading.Thread(target=run, name=f"kafka-{version}-log").start()
        return future


@dataclass
class ZkModeCluster:
    """ZooKeeper-mode Kafka brokers on ``connect`` (the chroot included)."""

    connect: str
    chroot: str
    brokers: list[KafkaNode]
    group: KafkaGroup
    topics: dict[str, int]  # name -> partitions
    seconds: float = 0.0

    def stop_brokers(self) -> None:
        """Stop every broker (SIGTERM: each shuts down in order), the last started first."""
        self.group.stop()


def start_zk_mode_cluster(
    zk_server: EmbeddedZooKeeper, base_dir: Path, brokers: int = 2, version: str = "3.9.2"
) -> ZkModeCluster:
    """``brokers`` ZooKeeper-mode brokers on a chroot of their own of ``zk_server``
    (Kafka creates it), the AclAuthorizer on (everyone a super user); then, by Kafka's
    own tools: topic ``orders`` (3 partitions, 2 replicas when there are two brokers,
    two configs), ``events`` (2 partitions) given a config by ConfigCommand, an ACL by
    AclCommand. The caller stops the brokers (:meth:`ZkModeCluster.stop_brokers`)."""
    started = time.monotonic()
    release = kafka_release(version)
    chroot = f"/real-kafka/{uuid.uuid4().hex[:8]}"
    connect = zk_server.connect_string + chroot
    extra = {
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:ANONYMOUS",
        "num.partitions": "1",
        # the last broker's controlled shutdown cannot move its leaders anywhere: retry
        # soon, not 3 times 5 s
        "controlled.shutdown.retry.backoff.ms": "200",
    }
    group = KafkaGroup()
    try:
        nodes = [
            group.start(
                KafkaNode.zookeeper_broker(
                    release, base_dir / f"broker{i}", i, connect, extra=extra
                )
            )
            for i in range(1, brokers + 1)
        ]
        bootstrap = ",".join(n.bootstrap for n in nodes)
        tools = base_dir / "tools"

        def tool(name: str, *args: str) -> None:
            release.run_tool(name, "--bootstrap-server", bootstrap, *args, work_dir=tools)

        rf = str(min(2, brokers))
        tool("topics", "--create", "--topic", "orders", "--partitions", "3",
             "--replication-factor", rf, "--config", "retention.ms=86400000",
             "--config", "cleanup.policy=compact")  # fmt: skip
        tool("topics", "--create", "--topic", "events", "--partitions", "2")
        tool("configs", "--alter", "--entity-type", "topics", "--entity-name", "events",
             "--add-config", "max.message.bytes=2000000")  # fmt: skip
        tool("acls", "--add", "--allow-principal", "User:reader", "--operation", "Read",
             "--topic", "orders")  # fmt: skip
    except BaseException:
        group.stop()
        raise
    topics = {"orders": 3, "events": 2}
    return ZkModeCluster(connect, chroot, nodes, group, topics, time.monotonic() - started)


def copy_zk_data_dir(zk_server: EmbeddedZooKeeper, dest: Path) -> Path:
    """ZooKeeper's ``version-2/`` (its snapshot files and transaction logs, the
    preallocated tail of the open log included) copied from the running standalone
    server into ``dest/version-2``; ``dest`` is what ``--zk-data-dir`` takes. The server
    is the tests' shared one: the copy holds every test's chroot."""
    source = zk_server.servers[0].data_dir / "version-2"
    shutil.copytree(source, dest / "version-2")
    return dest


def zk_files(data_dir: Path) -> Iterator[tuple[str, int]]:
    """``(name, size)`` of each file in ``data_dir/version-2``."""
    for path in sorted((data_dir / "version-2").iterdir()):
        yield path.name, path.stat().st_size


@pytest.fixture(scope="session")
def kafka_metadata_logs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MetadataLogs]:
    logs = MetadataLogs(tmp_path_factory.mktemp("real-kafka-logs"))
    yield logs
    logs.close()


def _copy(built: BuiltMetadataLog, dest: Path) -> BuiltMetadataLog:
    return dataclasses.replace(built, log_dir=built.copy_to(dest))


@pytest.fixture
def kafka39_metadata_log(kafka_metadata_logs: MetadataLogs, tmp_path: Path) -> BuiltMetadataLog:
    """Kafka 3.9.2's metadata log after a retention clean; ``log_dir`` is this test's copy."""
    return _copy(kafka_metadata_logs.get("3.9.2"), tmp_path / "kafka-3.9.2")


@pytest.fixture
def kafka41_metadata_log(kafka_metadata_logs: MetadataLogs, tmp_path: Path) -> BuiltMetadataLog:
    """Kafka 4.1.2's metadata log after a retention clean; ``log_dir`` is this test's copy."""
    return _copy(kafka_metadata_logs.get("4.1.2"), tmp_path / "kafka-4.1.2")


@pytest.fixture(scope="module")
def zk_mode_cluster(
    zk_server: EmbeddedZooKeeper, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ZkModeCluster]:
    """Two running ZooKeeper-mode Kafka 3.9.2 brokers (see :func:`start_zk_mode_cluster`),
    stopped when the module ends (a test may stop them earlier)."""
    cluster = start_zk_mode_cluster(zk_server, tmp_path_factory.mktemp("zk-mode-kafka"))
    try:
        yield cluster
    finally:
        cluster.stop_brokers()


@pytest.fixture
def zk_data_dir_copy(zk_server: EmbeddedZooKeeper, tmp_path: Path) -> Path:
    """A copy of the tests' ZooKeeper's ``dataDir`` (``version-2/``), for ``--zk-data-dir``."""
    return copy_zk_data_dir(zk_server, tmp_path / "zk-data")
