"""The demo's last act, after DUAL_WRITE: the brokers restarted one by one into KRaft mode
(Metadata through a ZooKeeper-mode and a KRaft-mode broker compared at each step, offline
partitions counted), MigrationFinished, then either finalization (controllers restarted
without the flag: KRaft) or, with ``--rollback``, the checked way back to ZooKeeper. The
steps are :mod:`migration.rehearse.procedure`'s; this module prints them."""

from __future__ import annotations

from typing import Any

from migration.cli.demo_migration import say
from migration.cli.migration_commands import print_status
from migration.local.cluster import LocalCluster
from migration.local.quorum import LocalQuorum
from migration.rehearse import procedure
from migration.rehearse.copy_log import CopyFigures
from migration.rehearse.procedure import PhaseWatch, RollFigures
from migration.rehearse.procedure_back import brokers_back_from_kraft, rollback_from_active
from migration.zk.client import ZkClient


def roll_to_kraft(cluster: LocalCluster, watch: PhaseWatch) -> RollFigures:
    print()
    return procedure.roll_to_kraft(cluster, watch, say)


def finalize(quorum: LocalQuorum, watch: PhaseWatch) -> dict[str, Any]:
    print()
    return procedure.finalize(quorum, watch, say)


def go_back(
    cluster: LocalCluster, quorum: LocalQuorum, client: ZkClient, watch: PhaseWatch
) -> None:
    print("\nthe way back (--rollback):", end=" ")
    brokers_back_from_kraft(cluster, watch, say)
    drill = rollback_from_active(cluster, quorum, client, watch, say)
    print(f"the way back {'went through' if drill.ok else 'FAILED'} in {drill.seconds:.1f} s")


def summary(copy: CopyFigures, roll: RollFigures, report: dict[str, Any]) -> None:
    print("\nzk2kraft migration status")
    print_status(report)
    print(
        "\nsummary: "
        f"metadata writes paused for the copy {copy.copy_ms:.0f} ms "
        f"({copy.records:,} records in one transaction; writes refused for "
        f"{copy.write_pause_ms:.0f} ms from the claim to dual-writing); "
        f"write-behind lag at most {roll.max_lag} records; "
        f"partitions offline: {len(roll.offline)}; "
        f"Metadata comparisons {roll.comparisons} "
        f"({roll.disagreements} still converging when sampled)"
    )
