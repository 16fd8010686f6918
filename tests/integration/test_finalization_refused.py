"""Finalization asked for while ZooKeeper-mode brokers are still registered: refused, and
a controller that cannot keep dual-writing (no ``zookeeper.connect``) renounces its
leadership until one that can leads; ZooKeeper stays the way back."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

from confluent_kafka.admin import NewTopic

from migration.local.zookeeper import EmbeddedZooKeeper
from migration.zk import paths
from tests.broker_harness import eventually
from tests.migration_harness import admin_via, migration_rig, results_of

FLAG = "zookeeper.metadata.migration.enable"


def test_a_controller_without_zookeeper_renounces_to_one_that_can_dual_write(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    with migration_rig(zk_server, tmp_path) as rig:
        rig.wait_phase("DUAL_WRITE")
        *others, capable = rig.quorum.ids
        # finalization asked for, with every broker still in ZooKeeper mode: the flag off
        # everywhere, zookeeper.connect left only on the last controller
        for node in others:
            rig.quorum.reconfigure(node, **{FLAG: "false", "zookeeper.connect": None})
            rig.quorum.restart(node)
            eventually(lambda: rig.status()["active_controller"] >= 0, 60, "an active controller")
        rig.quorum.reconfigure(capable, **{FLAG: "false"})
        rig.quorum.kill(capable, signal.SIGTERM)  # the others must lead meanwhile
        eventually(
            lambda: any("renouncing leadership" in rig.quorum.output(n) for n in others),
            120,
            "a controller without zookeeper.connect renouncing",
        )
        rig.quorum.start(capable)

        def settled() -> dict[str, Any] | None:
            s = rig.status()
            ok = s["active_controller"] == capable and "dual-writing goes on" in s["outcome"]
            return s if ok else None

        status = eventually(settled, 180, f"controller {capable} leading and dual-writing")
        assert status["outcome"].startswith("finalization refused: ZooKeeper-mode brokers")
        assert status["zk_migration_state"] == "MIGRATION"  # not finalized
        assert status["state"] == "MigrationActive"
        # ZooKeeper is still the way back: still claimed by KRaft, still written
        assert rig.zk.kazoo.exists(paths.MIGRATION) is not None
        admin = admin_via(rig)
        results_of(admin.create_topics([NewTopic("while-refused", 2, 3)]))
        eventually(lambda: rig.zk.kazoo.exists(paths.topic("while-refused")), 60, "dual-written")
