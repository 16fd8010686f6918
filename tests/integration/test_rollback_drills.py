"""Rollback drills, one per phase before finalization, with ``zk2kraft rollback`` and real
processes: controllers provisioned (nothing copied); MigrationActive with ZooKeeper
brokers; MigrationFinished with the KRaft brokers rolled back to ZooKeeper mode first.
Afterwards a ZooKeeper controller is elected, every change committed during the
migration is in ZooKeeper, the cluster works the ZooKeeper way, and a second migration
copies afresh (ZooKeeper is never wiped)."""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path
from typing import Any

from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from migration.bridge.sync import compare
from migration.broker.modes import Mode
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.zk import paths
from tests.broker_harness import eventually, leaders
from tests.migration_harness import (
    MigrationRig,
    admin_via,
    format_storage,
    migration_rig,
    replay_log,
    results_of,
    zk_controller_elected,
)
from tests.support import zk2kraft

BROKERS = [1, 2, 3]
FLAG = "zookeeper.metadata.migration.enable"


def topic_config(rig: MigrationRig, broker: int, topic: str) -> dict[str, str]:
    """DescribeConfigs of ``topic`` through ``broker``."""
    admin = admin_via(rig, broker)
    described = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)])
    entries = next(iter(described.values())).result(timeout=30)
    return {k: e.value for k, e in entries.items()}


def rollback(rig: MigrationRig, *options: str) -> tuple[int, dict[str, Any]]:
    logs = [a for n in rig.quorum.ids for a in ("--log-dir", str(rig.quorum.log_dir(n)))]
    done = zk2kraft(
        "rollback", "--zk", rig.zk_connect, "--bootstrap-controller",
        ",".join(rig.quorum.bootstrap), *logs, "--settle-s", "1", "--json", *options,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def codes(report: dict[str, Any], ok: bool) -> set[str]:
    return {f["code"] for f in report["findings"] if f["ok"] == ok}


def make_topic(
    admin: AdminClient, name: str, partitions: int, config: tuple[str, str], principal: str
) -> None:
    """A topic, one topic config and one ACL on it, through ``admin``."""
    results_of(admin.create_topics([NewTopic(name, partitions, 3)]))
    resource = ConfigResource(ResourceType.TOPIC, name)
    resource.add_incremental_config(
        ConfigEntry(*config, incremental_operation=AlterConfigOpType.SET)
    )
    results_of(admin.incremental_alter_configs([resource]))
    acl = AclBinding(
        ResourceType.TOPIC, name, ResourcePatternType.LITERAL, principal, "*",
        AclOperation.READ, AclPermissionType.ALLOW,
    )  # fmt: skip
    results_of(admin.create_acls([acl]))


def changes_during_migration(rig: MigrationRig, broker: int, name: str) -> None:
    """A topic, a topic config and an ACL made through ``broker`` (forwarded)."""
    make_topic(admin_via(rig, broker), name, 3, ("retention.ms", "4242"), "User:drill")


def zk_holds_the_log(rig: MigrationRig) -> None:
    """With the quorum stopped: ZooKeeper holds exactly the log's committed image."""
    image = max((replay_log(rig.quorum.log_dir(n)) for n in rig.quorum.ids), key=lambda i: i.offset)
    epoch = int(rig.zk.get(paths.CONTROLLER_EPOCH)[0])
    planned = compare(rig.zk, image, epoch, rig.quorum.extra["password.encoder.secret"]).plan
    assert [f"{op.kind.name} {op.path}" for op in planned.ops] == []


def stop_quorum(rig: MigrationRig) -> None:
    rig.quorum.stop_all(signal.SIGTERM)


def hand_back(rig: MigrationRig) -> dict[str, Any]:
    """``rollback --dry-run`` then ``rollback``: the dry run shows the write it does."""
    code, dry = rollback(rig, "--dry-run")
    assert code == 0 and not dry["written"] and not codes(dry, False), dry
    code, done = rollback(rig)
    assert code == 0 and done["written"], done
    assert done["ops"] == dry["ops"]
    return done


def zookeeper_works(rig: MigrationRig, topic: str, before: int) -> None:
    """A ZooKeeper controller elected (epoch above ``before``); a new topic gets
    leaders; a config and an ACL made through one broker reach another via ZooKeeper."""
    owner = zk_controller_elected(rig)
    assert owner.broker_id in BROKERS
    assert int(rig.zk.get(paths.CONTROLLER_EPOCH)[0]) > before
    other = admin_via(rig, 2)
    make_topic(admin_via(rig, 1), topic, 4, ("cleanup.policy", "compact"), "User:back")
    eventually(lambda: len(leaders(rig.cluster, 3, topic)) == 4, 60, "leaders elected")
    assert all(leader in BROKERS for leader, _ in leaders(rig.cluster, 3, topic).values())

    def seen() -> bool:
        found = AclBindingFilter(
            ResourceType.TOPIC, topic, ResourcePatternType.ANY, None, None,
            AclOperation.ANY, AclPermissionType.ANY,
        )  # fmt: skip
        acls = other.describe_acls(found).result(timeout=30)
        compact = topic_config(rig, 2, topic).get("cleanup.policy") == "compact"
        return compact and len(acls) == 1

    eventually(seen, 60, "the config and the ACL through another broker")
    assert json.loads(rig.zk.get(paths.topic(topic))[0])["partitions"]


def migrate_again(rig: MigrationRig, expect_topic: str) -> None:
    """A second attempt: fresh controller storage, the flagged brokers, a fresh copy
    that holds what was made after the rollback."""
    for node in rig.quorum.ids:
        shutil.rmtree(rig.quorum.log_dir(node))
        formatted = format_storage(rig.quorum, node, rig.cluster_id)
        assert formatted.returncode == 0, formatted.stderr
    rig.quorum.start_all()
    done = rig.wait_phase("DUAL_WRITE")
    copies = sum(
        rig.quorum.output(n).count("Completed migration of metadata from Zookeeper to KRaft")
        for n in rig.quorum.ids
    )
    assert copies == 2  # one per attempt
    assert replay_log(rig.quorum.log_dir(done["active_controller"])).topic(expect_topic)


def test_rollback_when_controllers_are_provisioned_needs_no_zookeeper_change(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    with migration_rig(zk_server, tmp_path, broker_props={FLAG: "false"}) as rig:
        rig.wait_phase("WAIT_FOR_BROKERS")
        before = rig.zk.get(paths.CONTROLLER)
        code, report = rollback(rig, "--dry-run")
        assert code == 0 and report["phase"] == "ZooKeeper" and report["ops"] == [], report
        assert "Nothing was copied" in report["steps"][0]
        stop_quorum(rig)
        code, report = rollback(rig)
        assert code == 0 and not report["written"]
        assert rig.zk.get(paths.CONTROLLER) == before  # the ZooKeeper controller all along
        zookeeper_works(rig, "after-provisioned", 0)

        rig.cluster.reconfigure(**{FLAG: "true"})
        for b in BROKERS:
            rig.cluster.restart(b)
            rig.cluster.wait_ready(90)
        for node in rig.quorum.ids:  # never formatted again: it copied nothing
            rig.quorum.start(node)
        done = rig.wait_phase("DUAL_WRITE")
        assert replay_log(rig.quorum.log_dir(done["active_controller"])).topic("after-provisioned")


def test_rollback_from_migration_active_hands_zookeeper_back(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    with migration_rig(zk_server, tmp_path) as rig:
        rig.wait_phase("DUAL_WRITE")
        changes_during_migration(rig, 2, "during-migration")

        code, refused = rollback(rig, "--dry-run")
        assert code == 1 and refused["refused"] and refused["phase"] == "MigrationActive"
        assert "kraft-controller-active" in codes(refused, False)
        eventually(lambda: rig.status()["zk_write_behind_lag"] == 0, 60, "lag 0")
        stop_quorum(rig)
        zk_holds_the_log(rig)
        # Kafka's incident (its KRaft writer put its own epoch there): a partition state
        # with a controller epoch above the one the next ZooKeeper controller would get
        state_path = paths.partition_state("during-migration", 0)
        raw, version = rig.zk.get(state_path)
        state = {**json.loads(raw), "controller_epoch": 977}
        rig.zk.kazoo.set(state_path, json.dumps(state).encode(), version=version)
        done = hand_back(rig)
        assert {"kraft-controller-inactive", "write-behind-lag", "kraft-brokers-remain"} <= codes(
            done, True
        )
        assert [op["path"] for op in done["ops"]] == [
            paths.CONTROLLER_EPOCH,
            paths.CONTROLLER,
            paths.MIGRATION,
        ]
        assert done["max_partition_state_controller_epoch"] == 977
        assert int(rig.zk.get(paths.CONTROLLER_EPOCH)[0]) >= 977
        assert not rig.zk.kazoo.exists(paths.MIGRATION)
        zookeeper_works(rig, "after-rollback", 977)
        for b in (1, 2):  # the changes made during the migration, through ZooKeeper
            assert topic_config(rig, b, "during-migration")["retention.ms"] == "4242"

        # the brokers leave migration mode, one at a time; the cluster keeps working
        for b in BROKERS:
            rig.cluster.set_mode(b, Mode.ZOOKEEPER)
            rig.cluster.restart(b)
            rig.cluster.wait_ready(90)
        eventually(lambda: len(leaders(rig.cluster, 1, "after-rollback")) == 4)

        for b in BROKERS:  # and, some day, migrate again
            rig.cluster.set_mode(b, Mode.MIGRATING)
            rig.cluster.restart(b)
            rig.cluster.wait_ready(90)
        migrate_again(rig, "after-rollback")


def test_rollback_from_migration_finished_rolls_kraft_brokers_back_first(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    with migration_rig(zk_server, tmp_path) as rig:
        rig.wait_phase("DUAL_WRITE")
        for b in BROKERS:
            rig.cluster.set_mode(b, Mode.KRAFT)
            rig.cluster.restart(b)
            rig.cluster.wait_ready(90, expected=BROKERS)
        eventually(lambda: rig.status()["state"] == "MigrationFinished", 60, "finished")
        changes_during_migration(rig, 1, "while-kraft")

        code, refused = rollback(rig, "--dry-run")
        assert code == 1 and refused["phase"] == "KRaftBrokers"
        assert {"kraft-controller-active", "kraft-brokers-remain"} <= codes(refused, False)
        assert "Roll the KRaft-mode brokers back to ZooKeeper mode" in refused["steps"][0]

        for b in BROKERS:  # back to ZooKeeper mode, still migrating, controllers up
            rig.cluster.set_mode(b, Mode.MIGRATING)
            rig.cluster.restart(b)
            rig.cluster.wait_ready(90, expected=BROKERS)
        eventually(
            lambda: (
                (s := rig.status())["zk_brokers"] == BROKERS and s["state"] == "MigrationActive"
            ),
            60,
            "every broker back in ZooKeeper mode",
        )
        for b in BROKERS:
            log = rig.cluster.brokers[b].log.read_text()
            assert "discarding the stale local metadata log" in log
        eventually(lambda: rig.status()["zk_write_behind_lag"] == 0, 60, "lag 0")
        stop_quorum(rig)
        zk_holds_the_log(rig)
        hand_back(rig)
        zookeeper_works(rig, "after-kraft-rollback", 0)
        assert topic_config(rig, 3, "while-kraft")["retention.ms"] == "4242"
        migrate_again(rig, "after-kraft-rollback")
