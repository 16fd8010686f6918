"""``zk2kraft kafka rollback`` on a real Apache Kafka 3.9.2 cluster (:mod:`tests.kafka_drive`)
driven into the roll to KRaft and taken back to ZooKeeper with a producer and a consumer
group running: broker 1 rolled back from KRaft mode, the controllers stopped once the
audit says ZooKeeper holds everything, ZooKeeper handed back with ``/controller_epoch``
raised above the KRaft controller's epoch and every partition state's, the brokers
rolled without the migration settings, and the cluster verified on ZooKeeper: a
ZooKeeper-mode controller, no ``/migration``, nothing lost. Then ``kafka migrate`` can
start again from the beginning. On the way, finalization asked for with two brokers in
ZooKeeper mode is refused, naming them."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest

from migration.common.properties import read_properties
from migration.local.kafka_cluster import CONTROLLERS
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.operate.edits import values_of
from migration.zk.client import ZkClient
from tests.kafka_drive import (
    DrivenCluster,
    Traffic,
    driven_cluster,
    read_all,
    runbook,
)
from tests.support import zk2kraft

# In make test-long: make test holds the forward migration (test_kafka_drive.py), and
# its budget does not hold a second real cluster's five minutes.
pytestmark = [pytest.mark.timeout(1200), pytest.mark.long]


@pytest.fixture(scope="module")
def cluster(
    zk_server: EmbeddedZooKeeper, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DrivenCluster]:
    with driven_cluster(zk_server, tmp_path_factory.mktemp("driven-back")) as c:
        yield c


def kafka(c: DrivenCluster, command: str, *more: str) -> subprocess.CompletedProcess[str]:
    return zk2kraft("kafka", command, "--inventory", str(c.inventory), "--gate-timeout", "300",
                    *more, timeout=900)  # fmt: skip


def test_rollback_from_the_middle_of_the_roll_into_kraft(cluster: DrivenCluster) -> None:
    c = cluster
    originals = {i: p.read_text() for i, p in c.brokers.items()}
    traffic = Traffic(c.bootstrap).start()
    try:
        halfway = kafka(c, "migrate", "--until", "brokers-kraft.2.edit")
        assert halfway.returncode == 0, halfway.stderr
        assert read_properties(c.brokers[1])["process.roles"] == "broker"
        with ZkClient(c.connect) as zk:
            claim = json.loads(zk.kazoo.get("/controller")[0])
        kraft_epoch = claim["kraftControllerEpoch"]

        # Finalization with brokers 2 and 3 still in ZooKeeper mode (a journal that says
        # they were rolled): refused at once, naming them (Kafka does not check:
        # KAFKA-20960, docs/field-bugs.md#fb-30).
        journal = c.inventory.with_name(c.inventory.name + ".run.json")
        honest = json.loads(journal.read_text())
        forged = [f"brokers-kraft.{b}.{s}" for b in (2, 3) for s in ("edit", "restart", "back")]
        journal.write_text(json.dumps(honest | {"done": honest["done"] + forged}))
        refused = kafka(c, "migrate", "--json")
        assert refused.returncode == 1, refused.stdout + refused.stderr
        outcome = json.loads(refused.stdout)
        assert outcome["step"] == "finalize.brokers", outcome
        assert "[2, 3] still in ZooKeeper mode" in outcome["reason"], outcome
        journal.write_text(json.dumps(honest))

        back = runbook(c, 6)  # the runbook's way back
        assert back.returncode == 0, back.stderr
        assert "set to" in back.stderr  # the epochs compared, said
    finally:
        traffic.stop()

    with ZkClient(c.connect) as zk:
        controller = json.loads(zk.kazoo.get("/controller")[0])
        epoch = int(zk.kazoo.get("/controller_epoch")[0])
        assert zk.kazoo.exists("/migration") is None
    # a ZooKeeper-mode broker's claim: Kafka 3.9 writes kraftControllerEpoch -1 in it
    assert controller.get("kraftControllerEpoch", -1) == -1 and controller["brokerid"] in c.brokers
    assert epoch > kraft_epoch  # the ZooKeeper controller elected after wins
    assert traffic.acked and traffic.acked <= read_all(c.bootstrap)
    for i, path in c.brokers.items():  # every key the migration set is gone again
        assert read_properties(path) == values_of(originals[i])
    for n in CONTROLLERS:  # the metadata set aside, never reused
        assert not any(c.metadata_dir(n).iterdir())
        (aside,) = c.metadata_dir(n).parent.glob("data.rolled-back-*")
        assert (aside / "__cluster_metadata-0").is_dir()
    assert not journal.exists() and list(c.inventory.parent.glob("*.run.json.rolled-back-*"))

    again = zk2kraft("kafka", "plan", "--inventory", str(c.inventory), "--json")
    assert again.returncode == 0, again.stdout  # ready to migrate again
