"""The dual-write differential, Kafka as the oracle: the same admin operations sent
through the brokers of Kafka 3.9.2's own migration while it dual-writes
(tests/kafka_migration.py, :func:`start_kafka_dual_write`) and through the brokers of
zk2kraft's live migration in DUAL_WRITE (tests/migration_harness.py), each on its own
chroot of the session ZooKeeper; then what each side's dual-write changed in ZooKeeper
(every znode created, changed or deleted, change notifications included) compared znode
by znode, after leaving out what is meant to differ (:func:`normal`).

The two sides run one after the other (each stopped by its own handles before the next
starts), so both clusters never share the two cores; zk2kraft's first, since its
controller places every partition and refuses a manual assignment: Kafka is then given
the replicas zk2kraft chose. Operations, in steps (:data:`STEPS`): topics created (one
with configs) and one deleted, partitions added, topic, broker and cluster-default
broker configs set and deleted, literal and prefixed ACLs created and one deleted, SCRAM
credentials upserted, user, client and user+client quotas; a partition reassigned with
Kafka's own ``kafka-reassign-partitions`` (its leader moved off, a broker added), to its
end; then a broker stopped (its leaderships and ISR places taken away) and another
killed."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from migration.local.kafka_release import kafka_release
from migration.local.seed import ClusterSpec
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.zk.client import ZkClient
from tests.broker_harness import eventually
from tests.kafka_migration import start_kafka_dual_write, wait_for
from tests.migration_harness import MigrationRig, migration_rig, results_of

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

NOT_COMPARED = ("/zookeeper", "/controller", "/controller_epoch", "/migration", "/brokers/ids")
"""Who holds ZooKeeper and who is registered: the two clusters' own processes."""
SEQUENTIAL = re.compile(r"^(.*/(?:config_change_|acl_changes_))\d{10}$")
SCRAM = re.compile(r"^salt=[^,]+,stored_key=[^,]+,server_key=[^,]+,iterations=(\d+)$")
ENCRYPTED = "keyFactoryAlgorithm:"  # Kafka's PasswordEncoder's output

Tree = dict[str, bytes]
Change = tuple[str, str | None, str | None]


def read_tree(zk: ZkClient) -> Tree:
    """Every znode under the client's chroot (paths relative to it) and its data."""
    out: Tree = {}
    pending = ["/"]
    while pending:
        path = pending.pop()
        for child in zk.kazoo.get_children(path):
            full = f"{path.rstrip('/')}/{child}"
            if full.startswith(NOT_COMPARED):
                continue
            data, _ = zk.kazoo.get(full)
            out[full] = data or b""
            pending.append(full)
    return out


def _normal_value(key: str, value: Any) -> Any:
    if key in ("topic_id", "controller_epoch"):
        return f"<{key}>"  # a fresh uuid each side; whose controller epoch
    if isinstance(value, str) and (scram := SCRAM.match(value)):
        return f"salt=<salt>,stored_key=<key>,server_key=<key>,iterations={scram[1]}"
    if isinstance(value, dict):
        return {k: _normal_value(k, v) for k, v in value.items()}
    return value


def normal(data: bytes) -> str:
    """A znode's data as sorted JSON without what is meant to differ (topic ids,
    controller epochs, SCRAM salts and keys); not JSON: the text itself."""
    try:
        parsed = json.loads(data)
    except ValueError:
        return data.decode(errors="replace")
    return json.dumps(_normal_value("", parsed), sort_keys=True)


def _config(data: bytes) -> dict[str, str] | None:
    """An entity config znode's map (None: not one), a password config's ciphertext
    left out: each write of a broker's configs encrypts its passwords again with a
    fresh salt (Kafka's dual-write does so too)."""
    try:
        parsed = json.loads(data)
    except ValueError:
        return None
    if isinstance(parsed, dict) and isinstance(parsed.get("config"), dict):
        return {
            k: "<encrypted>" if str(v).startswith(ENCRYPTED) else str(v)
            for k, v in parsed["config"].items()
        }
    return None


def changes(before: Tree, after: Tree) -> list[Change]:
    """Each znode created, changed or deleted (path with a sequential node's counter
    left out, data before, data after), sorted. An entity config znode written (created
    or changed) is given as the keys written, each with its new value or None when
    deleted, normalized: the two starting trees differ (zk2kraft's seeded cluster has
    broker configs), what each dual-write wrote to them is compared."""
    out: list[Change] = []
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        was = {} if old is None else _config(old)
        now = None if new is None else _config(new)
        if was is not None and now is not None:
            delta = {k: now.get(k) for k in was.keys() | now.keys() if was.get(k) != now.get(k)}
            out.append((path, "<config>", normal(json.dumps(delta).encode())))
            continue
        out.append((
            SEQUENTIAL.sub(r"\1*", path),
            None if old is None else normal(old),
            None if new is None else normal(new),
        ))  # fmt: skip
    return sorted(out, key=lambda c: (c[0], str(c[1]), str(c[2])))


Placement = dict[str, list[list[int]]]
"""Each compared topic's replicas, partition by partition (``diff-a+``: the partition
added)."""


STEPS = ("created", "operations", "reassigned", "fenced", "crashed")
"""The compared steps: the topics created; the other operations (their deletion of
diff-c included); a partition reassigned, to its end; a broker stopped; another broker
killed (fenced once its session expires)."""


@dataclass
class Side:
    """What one migration's dual-write did, step by step (:data:`STEPS`): each step's
    changes to ZooKeeper once its writes were behind it."""

    settle: Callable[[], None]
    read: Callable[[], Tree]
    last: Tree = field(default_factory=dict)
    steps: dict[str, list[Change]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    placement: Placement = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)

    def start(self) -> None:
        self.settle()
        self.last = self.read()

    def mark(self, step: str) -> None:
        """The changes since the last mark, once ZooKeeper caught up with the log."""
        self.settle()
        now = self.read()
        self.steps[step], self.last = changes(self.last, now), now


def apply_operations(
    bootstrap: str, tool: Callable[..., object], placed: Callable[[str, int], list[list[int]]],
    mark: Callable[[str], None], placement: Placement | None = None,
) -> Placement:  # fmt: skip
    """The admin operations, through the brokers at ``bootstrap``: confluent-kafka's
    AdminClient, and Kafka's ConfigCommand (``tool``) for quotas and the cluster default
    broker config. Topics and partitions are placed by the controller, or (``placement``)
    by the replicas given; ``placed(topic, partitions)`` reads the replicas from
    ZooKeeper once written; the placement used is returned. ``mark(step)`` after each
    step."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    shapes = {"diff-a": (2, 2), "diff-b": (1, 1), "diff-c": (1, 2)}
    configs = {"diff-a": {"retention.ms": "7200000", "cleanup.policy": "compact"}}
    results_of(admin.create_topics([
        NewTopic(name, count, replica_assignment=placement[name], config=configs.get(name, {}))
        if placement else NewTopic(name, count, rf, config=configs.get(name, {}))
        for name, (count, rf) in shapes.items()
    ]))  # fmt: skip
    used = {name: placed(name, count) for name, (count, _) in shapes.items()}
    mark("created")
    more = NewPartitions("diff-a", 3, placement["diff-a+"]) if placement else None
    results_of(admin.create_partitions([more or NewPartitions("diff-a", 3)]))
    used["diff-a+"] = placed("diff-a", 3)[2:]
    set_, delete = AlterConfigOpType.SET, AlterConfigOpType.DELETE
    results_of(admin.incremental_alter_configs([
        ConfigResource(ResourceType.TOPIC, "diff-a", incremental_configs=[
            ConfigEntry("retention.ms", "3600000", incremental_operation=set_),
            ConfigEntry("cleanup.policy", None, incremental_operation=delete),
            ConfigEntry("min.insync.replicas", "2", incremental_operation=set_),
        ]),
        ConfigResource(ResourceType.BROKER, "1", incremental_configs=[
            ConfigEntry("message.max.bytes", "2000000", incremental_operation=set_)]),
    ]))  # fmt: skip
    allow = AclPermissionType.ALLOW
    literal, prefixed = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
    results_of(admin.create_acls([
        AclBinding(ResourceType.TOPIC, "diff-a", literal, "User:carol", "*",
                   AclOperation.READ, allow),
        AclBinding(ResourceType.TOPIC, "diff-", prefixed, "User:dave", "*",
                   AclOperation.WRITE, allow),
        AclBinding(ResourceType.GROUP, "g1", literal, "User:carol", "*",
                   AclOperation.READ, allow),
    ]))  # fmt: skip
    results_of(admin.delete_acls([
        AclBindingFilter(ResourceType.GROUP, "g1", literal, "User:carol", "*",
                         AclOperation.READ, allow),
    ]))  # fmt: skip
    results_of(admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion(
            "erin", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"erin-secret"),
        UserScramCredentialUpsertion(
            "frank", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"frank-secret"),
    ]))  # fmt: skip
    for quota in (
        ("--entity-type", "users", "--entity-name", "erin",
         "--add-config", "producer_byte_rate=1024"),
        ("--entity-type", "clients", "--entity-name", "app-9",
         "--add-config", "consumer_byte_rate=2048,request_percentage=50"),
        ("--entity-type", "users", "--entity-name", "erin", "--entity-type", "clients",
         "--entity-name", "app-9", "--add-config", "producer_byte_rate=512"),
        # the cluster default broker config (confluent-kafka cannot name it)
        ("--entity-type", "brokers", "--entity-default",
         "--add-config", "log.retention.ms=604800001"),
    ):  # fmt: skip
        tool("configs", "--bootstrap-server", bootstrap, "--alter", *quota)
    results_of(admin.delete_topics(["diff-c"]))
    mark("operations")
    return used


def reassign(
    bootstrap: str,
    tool: Callable[..., subprocess.CompletedProcess[str]],
    zk: ZkClient,
    placement: Placement,
    work: Path,
) -> None:
    """diff-a's first partition moved (:func:`reassigned_to`) with Kafka's
    ``kafka-reassign-partitions --execute``; returns once ZooKeeper shows the
    reassignment done (the replicas the target, none adding or removing, the ISR the
    target) and Kafka's ``--list`` shows none in flight."""
    target = reassigned_to(placement)
    plan = work / "reassignment.json"
    work.mkdir(parents=True, exist_ok=True)
    plan.write_text(json.dumps(
        {"version": 1, "partitions": [{"topic": "diff-a", "partition": 0, "replicas": target}]}
    ))  # fmt: skip
    tool("reassign-partitions", "--bootstrap-server", bootstrap,
         "--reassignment-json-file", str(plan), "--execute")  # fmt: skip

    def done() -> bool:
        topic = json.loads(zk.kazoo.get("/brokers/topics/diff-a")[0])
        state = json.loads(zk.kazoo.get("/brokers/topics/diff-a/partitions/0/state")[0])
        return (
            topic["partitions"]["0"] == target
            and "0" not in topic.get("adding_replicas", {})
            and "0" not in topic.get("removing_replicas", {})
            and sorted(state["isr"]) == sorted(target)
        )

    eventually(done, 60, "the reassignment done in ZooKeeper")
    listed = tool("reassign-partitions", "--bootstrap-server", bootstrap, "--list")
    assert "No partition reassignments found" in listed.stdout, listed.stdout


def placed_in(zk: ZkClient) -> Callable[[str, int], list[list[int]]]:
    """``placed`` of :func:`apply_operations` for the tree ``zk`` reads (a hang guard
    until the topic has its ``partitions`` in ZooKeeper)."""

    def placed(topic: str, partitions: int) -> list[list[int]]:
        def read() -> list[list[int]]:  # empty until written
            if zk.kazoo.exists(f"/brokers/topics/{topic}") is None:
                return []
            raw, _ = zk.kazoo.get(f"/brokers/topics/{topic}")
            replicas = json.loads(raw)["partitions"]
            if len(replicas) < partitions:
                return []
            return [replicas[str(p)] for p in range(partitions)]

        return eventually(read, 60, f"{topic}'s {partitions} partitions in ZooKeeper")

    return placed


def fenced_everywhere(zk: ZkClient, fenced: int) -> bool:
    """No partition of the compared topics led by the broker ``fenced`` or (but for a
    partition it alone replicates) with it in the ISR."""
    for topic in ("diff-a", "diff-b"):
        for pid in zk.kazoo.get_children(f"/brokers/topics/{topic}/partitions"):
            raw, _ = zk.kazoo.get(f"/brokers/topics/{topic}/partitions/{pid}/state")
            state = json.loads(raw)
            if state["leader"] == fenced or (fenced in state["isr"] and len(state["isr"]) > 1):
                return False
    return True


def manual_assignments_refused(bootstrap: str) -> dict[str, str]:
    """What zk2kraft's brokers answer a manual replica assignment, by request."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    out = {}
    for name, futures in (
        (
            "CreateTopics",
            admin.create_topics([NewTopic("diff-manual", 1, replica_assignment=[[1]])]),
        ),
        ("CreatePartitions", admin.create_partitions([NewPartitions("diff-a", 4, [[2, 3]])])),
    ):
        try:
            results_of(futures)
            out[name] = "accepted"
        except KafkaException as exc:
            out[name] = exc.args[0].name()
    return out


def reassigned_to(placement: Placement) -> list[int]:
    """Where :func:`reassign` moves diff-a's first partition: off its first replica (its
    leader) onto the broker it lacks."""
    old = placement["diff-a"][0]
    return [*old[1:], *sorted({1, 2, 3} - set(old))]


def fenced_broker(placement: Placement) -> int:
    """The broker stopped: the leader of diff-a's first partition once reassigned."""
    return reassigned_to(placement)[0]


def crashed_broker(placement: Placement) -> int:
    """The broker killed next: the other replica of that partition, its only ISR member
    once the first is stopped (so the crash leaves it leaderless)."""
    return reassigned_to(placement)[1]


def kafka_side(zk_server: EmbeddedZooKeeper, base: Path, placement: Placement) -> Side:
    clock = time.monotonic()
    m = start_kafka_dual_write(zk_server, base)
    try:
        zk = m.zk()
        with zk:
            side = Side(lambda: (m.wait_written_behind(), None)[1], lambda: read_tree(zk))
            side.seconds["dual-write"] = time.monotonic() - clock
            side.start()
            tool = lambda *a: m.release.run_tool(*a, work_dir=base / "tools")  # noqa: E731
            apply_operations(m.bootstrap, tool, placed_in(zk), side.mark, placement)
            reassign(m.bootstrap, tool, zk, placement, base / "tools")
            side.mark("reassigned")
            fenced = fenced_broker(placement)
            m.brokers[fenced].stop()
            controllers = list(m.controllers.values())
            wait_for("the broker fenced", lambda: fenced_everywhere(zk, fenced), controllers)
            side.mark("fenced")
            crashed = crashed_broker(placement)
            m.brokers[crashed].kill()
            wait_for("the crash fenced", lambda: fenced_everywhere(zk, crashed), controllers)
            side.mark("crashed")
    finally:
        m.stop()
    side.seconds["total"] = time.monotonic() - clock
    return side


def _caught_up(rig: MigrationRig) -> None:
    eventually(
        lambda: rig.status()["zk_write_behind_lag"] == 0, 60, "ZooKeeper caught up with the log"
    )


def zk2kraft_side(zk_server: EmbeddedZooKeeper, base: Path) -> Side:
    clock = time.monotonic()
    spec = ClusterSpec(topics=0, partitions=0, quota_entities=0, scram_users=0,
                       acl_resources=0, delegation_tokens=0)  # fmt: skip
    release = kafka_release("3.9.2")
    with migration_rig(zk_server, base, spec, broker_ids=[1, 2, 3]) as rig:
        side = Side(lambda: _caught_up(rig), lambda: read_tree(rig.zk))
        rig.wait_phase("DUAL_WRITE")
        side.seconds["dual-write"] = time.monotonic() - clock
        side.start()
        tool = lambda *a: release.run_tool(*a, work_dir=base / "tools")  # noqa: E731
        bootstrap = rig.cluster.bootstrap
        side.placement = apply_operations(bootstrap, tool, placed_in(rig.zk), side.mark)
        side.refused = manual_assignments_refused(bootstrap)
        reassign(bootstrap, tool, rig.zk, side.placement, base / "tools")
        side.mark("reassigned")
        fenced = fenced_broker(side.placement)
        rig.cluster.signal(fenced, signal.SIGTERM)
        rig.cluster.wait_exit(fenced)
        eventually(lambda: fenced_everywhere(rig.zk, fenced), 60, "the broker fenced")
        side.mark("fenced")
        crashed = crashed_broker(side.placement)
        rig.cluster.kill(crashed)
        rig.cluster.wait_exit(crashed)
        eventually(lambda: fenced_everywhere(rig.zk, crashed), 60, "the crash fenced")
        side.mark("crashed")
    side.seconds["total"] = time.monotonic() - clock
    return side


@pytest.fixture(scope="module")
def sides(
    zk_server: EmbeddedZooKeeper, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Side, Side]]:
    # zk2kraft first: its controller places the topics, Kafka's are given the same
    # replicas (zk2kraft's brokers refuse a manual assignment, docs/kafka-log.md)
    ours = zk2kraft_side(zk_server, tmp_path_factory.mktemp("zk2kraft-dual-write"))
    kafka = kafka_side(zk_server, tmp_path_factory.mktemp("kafka-dual-write"), ours.placement)
    print("seconds", {"kafka": kafka.seconds, "zk2kraft": ours.seconds})
    for name, side in (("kafka", kafka), ("zk2kraft", ours)):
        print(name, json.dumps(side.steps))
    yield kafka, ours


def differences(kafka: list[Change], ours: list[Change]) -> list[str]:
    """Every change one side made and the other did not, named by side."""
    out = [f"kafka only: {c}" for c in kafka if c not in ours]
    return out + [f"zk2kraft only: {c}" for c in ours if c not in kafka]


@pytest.mark.parametrize("step", STEPS)
def test_each_step_writes_the_same_znodes(sides: tuple[Side, Side], step: str) -> None:
    kafka, ours = sides
    print("\n".join(str(c) for c in kafka.steps[step]))
    assert kafka.steps[step], "Kafka's dual-write changed nothing"
    assert differences(kafka.steps[step], ours.steps[step]) == []


def test_zk2kraft_refuses_a_manual_replica_assignment(sides: tuple[Side, Side]) -> None:
    """A difference named in docs/kafka-log.md: Kafka's controller takes the replicas
    a client gives, zk2kraft's places every partition itself and refuses an assignment
    (CreatePartitions too, rather than placing the partitions elsewhere)."""
    _, ours = sides
    assert ours.refused == {
        "CreateTopics": "INVALID_REPLICA_ASSIGNMENT",
        "CreatePartitions": "INVALID_REPLICA_ASSIGNMENT",
    }
