"""The demo's last act, after DUAL_WRITE: the brokers restarted one by one into KRaft mode
(Metadata through a ZooKeeper-mode and a KRaft-mode broker compared at each step, offline
partitions counted), MigrationFinished, then either finalization (controllers restarted
without the flag: KRaft) or, with ``--rollback``, the checked way back to ZooKeeper. The
steps are :mod:`migration.rehearse.procedure`'s; this module tells them through the
:class:`~migration.demo.view.DemoView`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from migration.local.cluster import LocalCluster
from migration.local.quorum import LocalQuorum
from migration.rehearse import procedure
from migration.rehearse.copy_log import CopyFigures
from migration.rehearse.procedure import PhaseWatch, RollFigures
from migration.rehearse.procedure_back import brokers_back_from_kraft, rollback_from_active
from migration.zk.client import ZkClient

if TYPE_CHECKING:
    from migration.demo.view import DemoView


def roll_to_kraft(cluster: LocalCluster, watch: PhaseWatch, view: DemoView) -> RollFigures:
    """The brokers rolled into KRaft mode, one at a time."""
    view.say()
    return procedure.roll_to_kraft(cluster, watch, view.say)


def finalize(quorum: LocalQuorum, watch: PhaseWatch, view: DemoView) -> dict[str, Any]:
    """The controllers restarted without the migration flag; the final status report."""
    view.say()
    return procedure.finalize(quorum, watch, view.say)


def go_back(
    cluster: LocalCluster, quorum: LocalQuorum, client: ZkClient, watch: PhaseWatch, view: DemoView
) -> None:
    """The brokers back to ZooKeeper mode, then the rollback from the active migration."""
    view.say("\nthe way back (--rollback):", end=" ")
    brokers_back_from_kraft(cluster, watch, view.say)
    drill = rollback_from_active(cluster, quorum, client, watch, view.say)
    view.say(f"the way back {'went through' if drill.ok else 'FAILED'} in {drill.seconds:.1f} s")


def summary(copy: CopyFigures, roll: RollFigures, report: dict[str, Any], view: DemoView) -> None:
    """The final status and the figures an operator asks about first."""
    view.say("\nzk2kraft migration status")
    view.status(report)
    view.say(
        "\nsummary: "
        f"metadata writes refused for {copy.write_pause_ms:.0f} ms from the claim to "
        f"dual-writing; the copy {copy.copy_ms:.0f} ms ({copy.records:,} records in one "
        "transaction, most of them streamed before the claim); "
        f"write-behind lag at most {roll.max_lag} records; "
        f"partitions offline: {len(roll.offline)}; "
        f"Metadata comparisons {roll.comparisons} "
        f"({roll.disagreements} still converging when sampled)"
    )
