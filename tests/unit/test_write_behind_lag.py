"""The write-behind lag counts what the controller committed, not only what reached the
driver: a write acknowledged once committed but still on its way through the publisher
is lag; control records (replayed and published like any change, their offset recorded
in /migration with it) never hold it above 0."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from migration.controller.config import parse_config
from migration.driver.driver import MigrationDriver
from migration.driver.states import Phase
from migration.driver.write_behind import WriteBehind
from migration.image.loader import MetadataLoader
from migration.image.model import MetadataImage
from migration.image.publishing import ImageChange, LoadManifest
from migration.proto import metadata_pb2 as mpb


def _change(offset: int) -> ImageChange:
    image = replace(MetadataImage.EMPTY, offset=offset)
    return ImageChange(MetadataImage.EMPTY, image, None, LoadManifest(offset, offset, 2))


def test_the_lag_counts_up_to_the_newer_of_the_published_and_the_committed_image() -> None:
    behind = WriteBehind()
    behind.publish(_change(33887))
    behind.zk_offset = 33887
    assert behind.lag(True) == 0
    assert behind.lag(True, committed=33887) == 0
    assert behind.lag(True, committed=33888) == 1  # committed, not yet published here
    assert behind.lag(True, committed=33880) == 0  # a stale read of the committed image
    assert behind.lag(False, committed=33888) == 0  # not writing
    behind.zk_offset = -1
    assert behind.lag(True, committed=33888) == 0  # no claim


class _Port:
    """An active controller's port as the status reads it: the committed image's offset."""

    committed = -1

    def committed_offset(self) -> int:
        return self.committed

    def refuse_admin_writes(self, why: str | None) -> None:
        pass


def test_the_status_reports_a_committed_change_the_driver_has_not_received(
    tmp_path: Path,
) -> None:
    config = parse_config(
        {
            "node.id": "1", "process.roles": "controller", "controller.quorum.voters": "1@h:9093",
            "listeners": "CONTROLLER://h:9093", "metadata.log.dir": str(tmp_path),
        },
        "t",
    )  # fmt: skip
    port = _Port()
    driver = MigrationDriver(config, "cluster", port)  # type: ignore[arg-type]
    driver._phase = Phase.DUAL_WRITE  # never started: the poll thread does not run
    driver.publish(_change(33887))
    driver._behind.zk_offset = 33887
    port.committed = 33887
    assert driver.status().zk_write_behind_lag == 0
    port.committed = 33888  # acknowledged; its change still queued for the driver
    assert driver.status().zk_write_behind_lag == 1
    driver.publish(_change(33888))
    driver._behind.zk_offset = 33888  # written: /migration holds 33888
    assert driver.status().zk_write_behind_lag == 0
    driver._phase = Phase.INACTIVE
    port.committed = 33890  # another leader's, say: not this driver's business
    assert driver.status().zk_write_behind_lag == 0


def test_trailing_control_records_are_in_the_published_image_offset() -> None:
    published: list[ImageChange] = []
    loader = MetadataLoader(hooks=[published.append])
    config = mpb.MetadataRecord()
    config.config_record.resource_type = 4
    config.config_record.resource_name = "2"
    config.config_record.name = "leader.replication.throttled.rate"
    leader = mpb.MetadataRecord()
    leader.leader_change_message.leader_id = 3000
    noop = mpb.MetadataRecord()
    noop.no_op_record.SetInParent()
    loader.replay_all([(0, 2, config), (1, 2, leader), (2, 2, noop)])
    assert [c.manifest.last_offset for c in published] == [2]
    assert loader.image.offset == 2  # what the driver writes to /migration with the change
    loader.replay_all([(3, 3, leader)])  # a control record alone: published all the same
    assert [c.manifest.last_offset for c in published] == [2, 3]
