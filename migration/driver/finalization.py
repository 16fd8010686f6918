"""Finalization, Kafka's way: the first active controller restarted without
``zookeeper.metadata.migration.enable``, in MIGRATION, commits
ZkMigrationStateRecord(POST_MIGRATION); from then on no controller writes ZooKeeper.
Refused while a ZooKeeper-mode broker is still registered (Kafka finalizes anyway and
strands it: docs/field-bugs.md#fb-25)."""

from __future__ import annotations

import logging

from migration.driver.controller_port import ControllerPort, LeadershipLostError
from migration.image.model import ZK_MIGRATION_POST, MetadataImage
from migration.proto.metadata_pb2 import MetadataRecord

log = logging.getLogger(__name__)

FINALIZE_TIMEOUT_S = 30.0


def zk_brokers(image: MetadataImage) -> list[int]:
    """The ZooKeeper-mode brokers registered with the quorum: finalization waits for
    them."""
    return sorted(b for b, r in image.brokers.items() if r.is_migrating_zk_broker)


def refusal(zk_brokers: list[int]) -> str:
    return (
        f"finalization refused: ZooKeeper-mode brokers {zk_brokers} are still registered "
        "(roll them to KRaft mode first)"
    )


def commit_post_migration(port: ControllerPort, epoch: int) -> tuple[bool, str]:
    """Append and wait for POST_MIGRATION in ``epoch``: (committed, the outcome)."""
    record = MetadataRecord()
    record.zk_migration_state_record.zk_migration_state = ZK_MIGRATION_POST
    try:
        offset = port.append(epoch, [record]).result(FINALIZE_TIMEOUT_S)
    except LeadershipLostError as exc:
        return False, f"finalization not committed (leadership lost: {exc})"
    log.info(
        "migration finalized: ZkMigrationStateRecord(POST_MIGRATION) committed at offset %d; "
        "ZooKeeper is no longer written",
        offset,
    )
    return True, (
        f"finalized: POST_MIGRATION committed at offset {offset}; ZooKeeper is no longer written"
    )
