"""The live migration, the Kafka way: a ZooKeeper-mode cluster of three real broker
processes, a quorum of three real controller processes formatted with ZooKeeper's
cluster id and started with the migration flag; the brokers are restarted one by one
with the flag, and the active controller fences the ZooKeeper controller, copies the
tree into the log in one transaction, syncs, tells the brokers, and dual-writes every
change a real Kafka client makes through any broker."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest
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

from migration.bridge.sync import compare
from migration.image.model import MetadataImage
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.records.uuids import uuid_text
from migration.zk import paths
from migration.zk.model.cluster import parse_controller, parse_migration
from migration.zk.reader import read_snapshot
from migration.zk.tree_read import ZkSnapshot
from tests.broker_harness import eventually, leaders
from tests.browser import HEIGHT, WIDTH, png_size
from tests.migration_harness import MigrationRig, admin_via, migration_rig, replay_log, results_of
from tests.page_checks import Seen, later, page_url, see, see_standby
from tests.support import zk2kraft

BROKERS = [1, 2, 3]
PHASES = [
    "WAIT_FOR_BROKERS", "BECOME_CONTROLLER", "ZK_MIGRATION", "SYNC_KRAFT_TO_ZK",
    "KRAFT_CONTROLLER_TO_BROKER_COMM", "DUAL_WRITE",
]  # fmt: skip


class StateWatcher(threading.Thread):
    """Polls ``migration status`` and keeps every distinct cluster state it saw."""

    def __init__(self, rig: MigrationRig) -> None:
        super().__init__(daemon=True)
        self.rig = rig
        self.seen: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.05):
            try:
                state = self.rig.status()["state"]
            except Exception:
                continue
            if state == "Unknown":  # a controller that has replayed nothing yet
                continue
            if not self.seen or self.seen[-1] != state:
                self.seen.append(state)


@pytest.fixture(scope="module")
def migrated(
    zk_server: EmbeddedZooKeeper, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[MigrationRig, dict[str, Any]]]:
    """Brokers first without the flag (the driver waits, naming them), then restarted
    one by one with it: the migration runs when the last one registers."""
    tmp = tmp_path_factory.mktemp("live")
    flag = "zookeeper.metadata.migration.enable"
    with migration_rig(zk_server, tmp, broker_props={flag: "false"}, metrics=True) as rig:
        facts: dict[str, Any] = {}
        watcher = StateWatcher(rig)
        watcher.start()
        rig.wait_phase("WAIT_FOR_BROKERS")
        facts["waiting"] = eventually(
            lambda: (s := rig.status())["outcome"].startswith("waiting for brokers") and s,
            what="the driver names the brokers it waits for",
        )
        # Chromium's views, asserted by a test of their own (without Chromium: that test
        # skips, the others run)
        facts["page_eligible"] = later(lambda: see(rig, "MigrationEligible"))
        facts["controller_before"] = rig.zk.get(paths.CONTROLLER)[0]
        facts["before"] = read_snapshot(rig.zk)
        rig.cluster.reconfigure(**{flag: "true"})
        # left by an earlier run in KRaft mode (before a rollback): discarded at start
        stale = rig.cluster.brokers[1].config.parent / "data" / "__cluster_metadata-0"
        stale.mkdir(parents=True)
        (stale / "00000000000000000000.log").write_bytes(b"old records")
        facts["stale"] = stale
        for b in BROKERS:
            rig.cluster.restart(b)
            rig.cluster.wait_ready(90)
        facts["done"] = rig.wait_phase("DUAL_WRITE")
        facts["page_active"] = later(lambda: see(rig, "MigrationActive"))
        facts["page_standby"] = later(lambda: see_standby(rig))
        watcher.stop.set()
        watcher.join()
        if not watcher.seen or watcher.seen[-1] != facts["done"]["state"]:
            watcher.seen.append(facts["done"]["state"])  # the last answer is a sample too
        facts["states"] = watcher.seen
        yield rig, facts


def test_the_live_page_shows_eligible_then_dual_write_in_a_browser(
    migrated: tuple[MigrationRig, dict[str, Any]],
) -> None:
    rig, facts = migrated
    eligible: Seen = facts["page_eligible"].get()
    assert 'id="state">MigrationEligible<' in eligible.dom
    assert 'id="phase">WAIT_FOR_BROKERS<' in eligible.dom
    assert eligible.broker_modes() == dict.fromkeys(BROKERS, "zookeeper")
    assert "Enable the migration on the brokers" in eligible.dom  # what now
    assert 'From "controllers provisioned"' in eligible.dom  # the way back
    assert "live · updated" in eligible.dom  # the page's refresh ran and swapped <main>
    assert eligible.json["driver_phase"] == "WAIT_FOR_BROKERS"
    assert eligible.json["next_step"]["runbook"].startswith("runbooks/migration.md#3-")

    active: Seen = facts["page_active"].get()
    assert 'id="state">MigrationActive<' in active.dom and 'id="phase">DUAL_WRITE<' in active.dom
    assert active.broker_modes() == dict.fromkeys(BROKERS, "migrating")
    assert "Restart the brokers into KRaft mode" in active.dom
    assert "stop the controllers, hand ZooKeeper back" in active.dom
    model = active.json
    assert [b["fenced"] for b in model["brokers"]] == [False] * 3
    assert [v["node_id"] for v in model["voters"]] == rig.quorum.ids
    assert all(v["log_end_offset"] > 0 for v in model["voters"])
    assert model["migration_znode"]["kraft_metadata_offset"] > 0
    assert model["migration_znode"]["kraft_controller_id"] == model["node_id"]
    phases = [t["driver_phase"] for t in model["timeline"]]
    assert "DUAL_WRITE" in phases and "WAIT_FOR_BROKERS" in phases
    assert model["write_behind"]["samples"]
    assert png_size(active.screenshot) == (WIDTH, HEIGHT)

    leader, standby = facts["page_standby"].get()
    assert standby.json["is_active"] is False and standby.json["active_controller"] == leader
    link = page_url(rig, leader)
    assert standby.json["active_page"] == link
    assert f'<a id="active-link" href="{link}">' in standby.dom
    assert f'id="active">{leader}<' in standby.dom


def _caught_up(rig: MigrationRig) -> dict[str, Any]:
    return eventually(
        lambda: (
            (s := rig.status())["zk_write_behind_lag"] == 0
            and s["driver_phase"] == "DUAL_WRITE"
            and s
        ),
        what="ZooKeeper caught up with the log",
    )


def _image(rig: MigrationRig) -> MetadataImage:
    active = rig.status()["active_controller"]
    return replay_log(rig.quorum.root / f"log{active}")


def _zk_equals_log(rig: MigrationRig) -> None:
    """ZooKeeper holds exactly what the log's committed image says (the full sync's own
    comparison finds nothing to write)."""
    status = _caught_up(rig)
    image = _image(rig)
    planned = compare(
        rig.zk, image, status["zk_controller_epoch"], rig.quorum.extra["password.encoder.secret"]
    ).plan
    assert [f"{op.kind.name} {op.path}" for op in planned.ops] == []


def test_the_cluster_reaches_migration_active_state_by_state(
    migrated: tuple[MigrationRig, dict[str, Any]],
) -> None:
    rig, facts = migrated
    waiting = facts["waiting"]
    assert waiting["state"] == "MigrationEligible"
    assert waiting["zk_migration_state"] == "PRE_MIGRATION"
    assert waiting["driver_phase"] == "WAIT_FOR_BROKERS"
    assert "brokers [1, 2, 3] have not registered" in waiting["outcome"]
    assert b"kraftControllerEpoch" not in facts["controller_before"]  # untouched meanwhile

    done = facts["done"]
    assert done["state"] == "MigrationActive" and done["state_code"] == 4
    assert done["zk_migration_state"] == "MIGRATION" and done["zk_migration_state_code"] == 1
    assert done["zk_brokers"] == BROKERS and done["kraft_brokers"] == []
    seen = facts["states"]
    assert seen == sorted(seen, key=["ZooKeeper", "MigrationEligible", "MigrationReady",
                                     "MigrationActive"].index)  # fmt: skip
    assert {"MigrationEligible", "MigrationActive"} <= set(seen)

    active = done["active_controller"]
    output = rig.quorum.output(active)
    order = [output.index(f"migration driver [{p}]") for p in PHASES]
    assert order == sorted(order), "phases out of order in the active controller's log"
    assert "Completed migration of metadata from Zookeeper to KRaft" in output

    # the legacy ZooKeeper controller noticed the claim and stopped
    assert any("resigns as controller" in rig.cluster.brokers[b].log.read_text() for b in BROKERS)
    assert not facts["stale"].exists()
    assert "discarding the stale local metadata log" in rig.cluster.brokers[1].log.read_text()
    assert all("metadata type 2 (dual)" in rig.cluster.brokers[b].log.read_text() for b in BROKERS)

    # /controller: persistent, the KRaft controller and its epoch
    raw, stat = rig.zk.kazoo.get(paths.CONTROLLER)
    owner = parse_controller(paths.CONTROLLER, raw)
    assert stat.ephemeralOwner == 0
    assert (owner.broker_id, owner.kraft_controller_epoch) == (active, done["kraft_epoch"])
    # /controller_epoch: one above the last ZooKeeper controller's
    elected = [
        int(m)
        for b in BROKERS
        for m in re.findall(
            r"won the controller election \(epoch (\d+)\)", rig.cluster.brokers[b].log.read_text()
        )
    ]
    assert int(rig.zk.get(paths.CONTROLLER_EPOCH)[0]) == max(elected) + 1
    assert done["zk_controller_epoch"] == max(elected) + 1

    # /migration: written at the copy's End record, then kept at the committed offset
    copied = re.search(r"offsets up to (\d+)\); /migration written", output)
    assert copied is not None
    end = int(copied.group(1))
    status = _caught_up(rig)
    migration = parse_migration(paths.MIGRATION, rig.zk.get(paths.MIGRATION)[0])
    assert migration.kraft_metadata_offset >= end
    assert migration.kraft_metadata_offset == status["migration_znode"]["kraft_metadata_offset"]
    assert (migration.kraft_controller_id, migration.kraft_controller_epoch) == (
        active,
        done["kraft_epoch"],
    )

    # the log holds the tree read before: every topic (ids, assignments), config, quota,
    # SCRAM credential, ACL and token
    _log_holds(_image(rig), facts["before"])
    _zk_equals_log(rig)

    # every broker answers Metadata the same way, naming a live broker as controller
    for b in BROKERS:
        m: Any = rig.cluster.metadata(b)
        assert m.controller_id in BROKERS


def _log_holds(image: MetadataImage, snap: ZkSnapshot) -> None:
    for name, topic in snap.topics.items():
        if name in snap.pending_deletions:
            assert image.topic(name) is None
            continue
        mine = image.topic(name)
        assert mine is not None, name
        assert uuid_text(mine.topic_id) == topic.assignment.topic_id
        assert {p: list(s.replicas) for p, s in mine.partitions.items()} == {
            p: list(r) for p, r in topic.assignment.partitions.items()
        }
    counts = image.counts()
    assert counts["acl_entries"] == sum(len(r.entries) for r in snap.acls)
    assert counts["scram_credentials"] == sum(len(c) for c in snap.scram.values())
    assert counts["quota_entities"] == len(snap.quotas)
    assert counts["delegation_tokens"] == len(snap.delegation_tokens)
    for name, config in snap.topic_configs.items():
        if name in snap.topics and name not in snap.pending_deletions:
            assert dict(image.config(2, name)) == config


def test_admin_changes_of_every_kind_through_any_broker_are_dual_written(
    migrated: tuple[MigrationRig, dict[str, Any]],
) -> None:
    rig, _ = migrated
    zk = rig.zk
    through = {b: admin_via(rig, b) for b in BROKERS}

    results_of(through[1].create_topics([NewTopic("after-migration", 6, 3)]))
    results_of(through[2].create_partitions([NewPartitions("after-migration", 8)]))
    topic = json.loads(zk.get(paths.topic("after-migration"))[0])
    assert sorted(topic["partitions"], key=int) == [str(p) for p in range(8)]
    state = json.loads(zk.get(paths.partition_state("after-migration", 7))[0])
    assert state["controller_epoch"] == rig.status()["zk_controller_epoch"]

    resource = ConfigResource(
        ResourceType.TOPIC,
        "after-migration",
        incremental_configs=[
            ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    results_of(through[3].incremental_alter_configs([resource]))
    broker_config = ConfigResource(
        ResourceType.BROKER,
        "2",
        incremental_configs=[
            ConfigEntry("log.cleaner.threads", "2", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    results_of(through[1].incremental_alter_configs([broker_config]))
    binding = AclBinding(
        ResourceType.TOPIC, "after-migration", ResourcePatternType.LITERAL, "User:zoe", "*",
        AclOperation.WRITE, AclPermissionType.ALLOW,
    )  # fmt: skip
    results_of(through[2].create_acls([binding]))
    upsert = UserScramCredentialUpsertion(
        "zoe", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"pw", b"salty"
    )
    results_of(through[3].alter_user_scram_credentials([upsert]))
    quota = zk2kraft(
        "admin", "--bootstrap-server", rig.cluster.bootstrap, "alter-config", "--entity-type",
        "users", "--entity-name", "zoe", "--add-config", "consumer_byte_rate=2048",
    )  # fmt: skip
    assert quota.returncode == 0, quota.stderr
    results_of(through[1].create_topics([NewTopic("short-lived", 2, 2)]))
    results_of(through[2].delete_topics(["short-lived"]))

    # committed in the log
    image = _image(rig)
    assert len(image.topic("after-migration").partitions) == 8  # type: ignore[union-attr]
    assert image.topic("short-lived") is None
    assert image.config(2, "after-migration")["retention.ms"] == "7200000"
    assert image.config(4, "2")["log.cleaner.threads"] == "2"
    assert any(a.principal == "User:zoe" for a in image.acls.values())
    assert ("zoe", 2) in image.scram
    # ... and in ZooKeeper, in Kafka's formats, exactly
    _zk_equals_log(rig)
    assert json.loads(zk.get(paths.config_entity("users", "zoe"))[0])["config"][
        "consumer_byte_rate"
    ] in ("2048", "2048.0")
    assert zk.kazoo.exists(paths.topic("short-lived")) is None
    acl = json.loads(zk.get(paths.acl_resource(False, "Topic", "after-migration"))[0])
    assert acl["acls"] == [
        {"principal": "User:zoe", "permissionType": "Allow", "operation": "Write", "host": "*"}
    ]

    # every ZooKeeper broker's own view, through ZooKeeper's notifications
    for b, admin in through.items():
        eventually(
            lambda a=admin: (
                _config(a, ResourceType.TOPIC, "after-migration").get("retention.ms") == "7200000"
            ),
            what=f"broker {b} sees the topic config",
        )
        any_acl = AclBindingFilter(
            ResourceType.TOPIC, "after-migration", ResourcePatternType.ANY, None, None,
            AclOperation.ANY, AclPermissionType.ANY,
        )  # fmt: skip
        eventually(
            lambda a=admin, f=any_acl: len(a.describe_acls(f).result(timeout=30)) == 1,
            what=f"broker {b} sees the ACL",
        )
        eventually(lambda x=b: len(leaders(rig.cluster, x, "after-migration")) == 8)
        eventually(lambda x=b: leaders(rig.cluster, x, "short-lived") == {})
    # Metadata identical through every broker
    views = {b: json.dumps(leaders(rig.cluster, b, "after-migration")) for b in BROKERS}
    assert len(set(views.values())) == 1, views


def _config(admin: AdminClient, kind: ResourceType, name: str) -> dict[str, str | None]:
    (result,) = results_of(admin.describe_configs([ConfigResource(kind, name)])).values()
    return {k: v.value for k, v in result.items()}


def test_migration_status_speaks_json_and_text(
    migrated: tuple[MigrationRig, dict[str, Any]],
) -> None:
    rig, _ = migrated
    bootstrap = ",".join(rig.quorum.bootstrap)
    out = zk2kraft("migration", "status", "--bootstrap-controller", bootstrap, "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert {
        "state", "state_code", "zk_migration_state", "zk_migration_state_code", "driver_phase",
        "outcome", "active_controller", "kraft_epoch", "zk_controller_epoch", "migration_znode",
        "high_watermark", "zk_write_behind_lag", "zk_brokers", "kraft_brokers",
        "metadata_version",
    } <= set(report)  # fmt: skip
    assert report["state"] == "MigrationActive" and report["driver_phase"] == "DUAL_WRITE"
    assert report["migration_znode"]["kraft_controller_id"] == report["active_controller"]
    text = zk2kraft("migration", "status", "--bootstrap-controller", bootstrap)
    assert text.returncode == 0 and "MigrationActive" in text.stdout and "DUAL_WRITE" in text.stdout
    down = zk2kraft("migration", "status", "--bootstrap-controller", "127.0.0.1:1")
    assert down.returncode == 2 and "no controller answered" in down.stderr
    caught_up = zk2kraft(
        "migration", "status", "--bootstrap-controller", bootstrap,
        "--wait-for", "ZkCaughtUp", "--timeout", "60", "--json",
    )  # fmt: skip
    assert caught_up.returncode == 0, caught_up.stderr
    waited = json.loads(caught_up.stdout)
    assert (waited["driver_phase"], waited["zk_write_behind_lag"]) == ("DUAL_WRITE", 0)
    unknown = zk2kraft(
        "migration", "status", "--bootstrap-controller", bootstrap, "--wait-for", "Up"
    )
    assert unknown.returncode != 0 and "ZkCaughtUp" in unknown.stderr


def test_a_zookeeper_broker_restarted_while_dual_writing_goes_through_the_kraft_controller(
    migrated: tuple[MigrationRig, dict[str, Any]],
) -> None:
    """SIGTERM: its controlled shutdown moves leadership away through the KRaft
    controller; restarted, it registers again, is told everything (UpdateMetadata and
    LeaderAndIsr FULL), and the leaders ask the KRaft controller (AlterPartition) to take
    it back into their ISRs, each change with a new leader epoch."""
    rig, _ = migrated
    topic = next(iter(rig.seeded.topics))
    before = {p: v for p, v in leaders(rig.cluster, 1, topic).items()}
    rig.cluster.restart(2)
    log = rig.cluster.brokers[2].log.read_text()
    assert "controlled shutdown through the KRaft controller complete" in log
    rig.cluster.wait_ready(90)

    def healed() -> bool:
        now = {b: leaders(rig.cluster, b, topic) for b in BROKERS}
        if len({json.dumps(v) for v in now.values()}) != 1:
            return False
        replicas = {p: list(r) for p, r in rig.seeded.topics[topic].assignment.partitions.items()}
        return all(sorted(isr) == sorted(replicas[p]) for p, (_, isr) in now[1].items())

    eventually(healed, timeout_s=90, what="every ISR whole again, the same through every broker")
    image = _image(rig)
    grown = [
        p
        for p, part in image.topic(topic).partitions.items()  # type: ignore[union-attr]
        if 2 in part.replicas
    ]
    assert grown and all(
        image.topic(topic).partitions[p].leader_epoch > 0
        for p in grown  # type: ignore[union-attr]
    )
    assert before  # the topic was led before the restart too
    _zk_equals_log(rig)
