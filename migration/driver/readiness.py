"""What must hold before the migration may claim ZooKeeper: pure checks, each returning
the sentence the driver shows (None when satisfied). Inputs are immutable values read
by the caller: a ZkSnapshot, the committed image, MigrationCheck answers."""

from __future__ import annotations

from collections.abc import Mapping

from migration.bridge.preflight import run_preflight
from migration.image.model import MetadataImage
from migration.proto import broker_pb2 as bpb
from migration.records import versions
from migration.zk import paths
from migration.zk.model.cluster import MigrationZnode
from migration.zk.tree_read import ZkSnapshot

MIN_MIGRATION_LEVEL = versions.IBP_3_6_IV1  # the copy is one metadata transaction (KIP-868)
ROLLBACK_HINT = (
    "if no KRaft quorum depends on it, delete it as Kafka's rollback does "
    "(zookeeper-shell <zookeeper.connect> delete /migration) and restart this controller"
)


def metadata_version_problem(image: MetadataImage) -> str | None:
    level = image.features.get(versions.METADATA_VERSION)
    if level is None or level < MIN_MIGRATION_LEVEL:
        shown = "none" if level is None else versions.name(level)
        return (
            f"metadata.version is {shown}; a migration needs at least "
            f"{versions.name(MIN_MIGRATION_LEVEL)} (format the storage with "
            "--release-version 3.6 or later)"
        )
    return None


def quorum_problem(answers: Mapping[int, bool | str]) -> str | None:
    """Every voter that answers must be configured for the migration, and a majority of
    them must have answered so (a voter down now is checked by its own driver when it
    leads: it refuses to drive a migration it is not configured for)."""
    disabled = sorted(v for v, a in answers.items() if a is False)
    if disabled:
        return (
            f"waiting for the controller quorum: controllers {disabled} are not configured "
            "for the migration (zookeeper.metadata.migration.enable=false)"
        )
    enabled = [v for v, a in answers.items() if a is True]
    if len(enabled) <= len(answers) // 2:
        silent = "; ".join(
            f"controller {v} {a}" for v, a in sorted(answers.items()) if a is not True
        )
        return f"waiting for the controller quorum: {silent}"
    return None


def quorum_note(answers: Mapping[int, bool | str]) -> str:
    silent = sorted(v for v, a in answers.items() if isinstance(a, str))
    return f" (controllers {silent} did not answer; a majority is ready)" if silent else ""


def cluster_id_problem(ours: str, zk_cluster_id: str | None) -> str | None:
    if zk_cluster_id is None:
        return f"ZooKeeper has no {paths.CLUSTER_ID}: no ZooKeeper-mode cluster to migrate there"
    if zk_cluster_id != ours:
        return (
            f"this quorum's cluster id is {ours} but ZooKeeper's {paths.CLUSTER_ID} is "
            f"{zk_cluster_id}: refusing to migrate another cluster (format the storage with "
            f"--cluster-id={zk_cluster_id})"
        )
    return None


def stale_migration_problem(migration: MigrationZnode | None) -> str | None:
    """PRE_MIGRATION in the log but ``/migration`` says a copy finished: left over from
    an earlier attempt; copying would overwrite ZooKeeper with a stale log's view."""
    if migration is None or not migration.copy_done:
        return None
    return (
        f"refusing to migrate: {paths.MIGRATION} says a copy finished (offset "
        f"{migration.kraft_metadata_offset}, epoch {migration.kraft_metadata_epoch}, "
        f"controller {migration.kraft_controller_id}) but this quorum's log holds no "
        f"migration (PRE_MIGRATION): it is left from an earlier attempt; {ROLLBACK_HINT}"
    )


def preflight_problem(snap: ZkSnapshot) -> str | None:
    report = run_preflight(snap)
    if report.ready:
        return None
    first = report.blockers[0]
    more = f" (and {len(report.blockers) - 1} more blockers)" if len(report.blockers) > 1 else ""
    return f"preflight blocker {first.code}: {first.message}{more}"


def expected_brokers(snap: ZkSnapshot) -> set[int]:
    """Every broker registered in ZooKeeper and every broker an assignment names."""
    named = {r for t in snap.topics.values() for rs in t.assignment.partitions.values() for r in rs}
    return set(snap.brokers) | named


def broker_problem(
    snap: ZkSnapshot,
    image: MetadataImage,
    checks: Mapping[int, bpb.MigrationCheckResponse | str],
    cluster_id: str,
) -> str | None:
    """Whether every expected broker registered as a migrating ZooKeeper broker (and is
    unfenced), and answered MigrationCheck for this cluster with the flag set. ``checks``
    maps broker id to its answer or why there is none."""
    expected = expected_brokers(snap)
    if not snap.brokers:
        return f"no broker is registered in {paths.BROKER_IDS}"
    unregistered, not_migrating, fenced, unchecked = [], [], [], []
    for b in sorted(expected):
        reg = image.brokers.get(b)
        if reg is None:
            unregistered.append(b)
        elif not reg.is_migrating_zk_broker:
            not_migrating.append(b)
        elif reg.fenced:
            fenced.append(b)
        else:
            answer = checks.get(b)
            if answer is None:
                unchecked.append(f"{b} (no answer)")
            elif isinstance(answer, str):
                unchecked.append(f"{b} ({answer})")
            elif answer.cluster_id != cluster_id:
                unchecked.append(f"{b} (cluster id {answer.cluster_id}, not {cluster_id})")
            elif not answer.config_enabled:
                unchecked.append(f"{b} (zookeeper.metadata.migration.enable is not true)")
    parts = []
    if unregistered:
        parts.append(
            f"brokers {unregistered} have not registered with the KRaft controller (restart "
            "them with zookeeper.metadata.migration.enable=true, controller.quorum.voters and "
            "controller.listener.names)"
        )
    if not_migrating:
        parts.append(f"brokers {not_migrating} registered as KRaft brokers, not ZooKeeper ones")
    if fenced:
        parts.append(f"brokers {fenced} are fenced (no heartbeat)")
    if unchecked:
        parts.append(f"MigrationCheck failed for brokers {', '.join(unchecked)}")
    return "waiting for brokers: " + "; ".join(parts) if parts else None
