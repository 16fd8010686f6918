"""The three views of where a migration is, all visible in ``migration status``:

- the driver's phase on the active controller (Kafka's MigrationDriverState);
- the ZkMigrationState persisted in the log (Kafka's numbering: NONE 0, MIGRATION 1,
  PRE_MIGRATION 2, POST_MIGRATION 3; a ZooKeeper-mode controller reports ZK 4);
- the design's cluster state, 1 ZooKeeper .. 6 KRaft, derived from the other two.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum

from migration.image.model import (
    ZK_MIGRATION_MIGRATION,
    ZK_MIGRATION_NONE,
    ZK_MIGRATION_POST,
    ZK_MIGRATION_PRE,
    ZK_MIGRATION_ZK,
)


class Phase(StrEnum):
    """Kafka's MigrationDriverState; only the last two write to ZooKeeper as dual-writes."""

    INACTIVE = "INACTIVE"  # not the active controller, or nothing to migrate (NONE, POST)
    WAIT_FOR_CONTROLLER_QUORUM = "WAIT_FOR_CONTROLLER_QUORUM"
    WAIT_FOR_BROKERS = "WAIT_FOR_BROKERS"
    BECOME_CONTROLLER = "BECOME_CONTROLLER"
    ZK_MIGRATION = "ZK_MIGRATION"
    SYNC_KRAFT_TO_ZK = "SYNC_KRAFT_TO_ZK"
    KRAFT_CONTROLLER_TO_BROKER_COMM = "KRAFT_CONTROLLER_TO_BROKER_COMM"
    DUAL_WRITE = "DUAL_WRITE"


ZK_MIGRATION_STATE_NAMES = {
    ZK_MIGRATION_NONE: "NONE",
    ZK_MIGRATION_MIGRATION: "MIGRATION",
    ZK_MIGRATION_PRE: "PRE_MIGRATION",
    ZK_MIGRATION_POST: "POST_MIGRATION",
    ZK_MIGRATION_ZK: "ZK",
}


class ClusterState(IntEnum):
    """The design's six states of the whole cluster."""

    ZooKeeper = 1
    MigrationEligible = 2
    MigrationReady = 3
    MigrationActive = 4
    MigrationFinished = 5
    KRaft = 6


def known_state(code: int) -> ClusterState | None:
    """The state a DescribeMigration ``state_code`` names; None for 0 (not known yet) and
    for a code this version does not know (a newer controller's)."""
    return ClusterState(code) if code in ClusterState._value2member_map_ else None


def state_name(code: int) -> str:
    """A ``state_code``'s name, ``"Unknown"`` for 0 and for a code this version does not
    know: what ``migration status``, its ``--json`` and the migration page show."""
    state = known_state(code)
    return "Unknown" if state is None else state.name


_READY = {Phase.BECOME_CONTROLLER, Phase.ZK_MIGRATION}


def cluster_state(zk_migration_state: int, phase: Phase, zk_brokers_left: bool) -> ClusterState:
    """PRE_MIGRATION is ZooKeeper until the quorum is ready, Eligible while brokers are
    awaited, Ready once they all are (the claim and the copy); MIGRATION is Active while
    any ZooKeeper-mode broker remains, Finished after; POST_MIGRATION is KRaft, and so is
    NONE (a quorum formatted for KRaft). Only for an image that holds the bootstrap
    records: before that, nothing is known (``migration status`` says Unknown)."""
    if zk_migration_state == ZK_MIGRATION_PRE:
        if phase in _READY:
            return ClusterState.MigrationReady
        if phase == Phase.WAIT_FOR_BROKERS:
            return ClusterState.MigrationEligible
        return ClusterState.ZooKeeper
    if zk_migration_state == ZK_MIGRATION_MIGRATION:
        return ClusterState.MigrationActive if zk_brokers_left else ClusterState.MigrationFinished
    if zk_migration_state == ZK_MIGRATION_ZK:
        return ClusterState.ZooKeeper
    return ClusterState.KRaft
