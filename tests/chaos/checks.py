"""What a chaos run must show afterwards, each check returning its problems as lines
(none: the run passed it):

* the Spark audit (``zk2kraft audit``): ZooKeeper against the log, 0 differences;
* every acknowledged change in the log's image and, for the changes acknowledged
  before finalization, in ZooKeeper (read back with the project's reader);
* ZooKeeper's transaction logs: ``/migration``'s fencing values never went back (a
  write by a fenced controller would carry an older epoch), and while the migration
  owned ZooKeeper every write to Kafka's metadata came in a multi fenced on
  ``/migration`` (none from the fenced ZooKeeper controller, none unfenced);
* partitions seen offline while the run went on (measured, reported).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from migration.zk import paths
from migration.zk.model.cluster import parse_migration
from tests.chaos.sampler import OfflineSampler
from tests.chaos.txnlog import CHECK, DELETE, SET_DATA, Txn, ensemble_history
from tests.chaos.workload import Ledger, Workload
from tests.migration_harness import replay_log
from tests.support import zk2kraft
from tests.zk_timeline import read_back

if TYPE_CHECKING:
    from tests.chaos.context import Run

BEFORE_FINALIZATION = {"", "zookeeper", "copy", "dual-write", "roll", "roll-back", "finished"}
METADATA = (
    paths.TOPICS, paths.CONFIG + "/", paths.ACL_LITERAL, paths.ACL_PREFIXED,
    paths.ACL_CHANGES, paths.ACL_EXTENDED_CHANGES, "/delegation_token/",
    paths.DELETE_TOPICS, paths.PRODUCER_ID_BLOCK,
)  # fmt: skip
"""Where Kafka's metadata lives in ZooKeeper (below the chroot): only fenced writes
while the migration owns ZooKeeper."""


def _secret_file(run: Run, root: Path) -> Path:
    path = root / "password-encoder.secret"
    path.touch(mode=0o600)
    path.write_text(run.rig.quorum.extra["password.encoder.secret"])
    return path


def audit(run: Run, root: Path, *source: str) -> list[str]:
    """``zk2kraft audit`` of ZooKeeper against ``source`` (a log dir or the quorum)."""
    done = zk2kraft(
        "audit", "--zk", run.rig.zk_connect, *source, "--work-dir", str(root / "audit"),
        "--password-encoder-secret-file", str(_secret_file(run, root)), "--json",
    )  # fmt: skip
    run.note("audited", code=done.returncode)
    if done.returncode == 2 or not done.stdout.strip():
        return [f"audit could not compare: {done.stderr.strip()[-500:]}"]
    report = json.loads(done.stdout)
    run.facts["audit"] = {k: report[k] for k in ("consistent", "offset", "rows", "seconds")}
    if not report["consistent"]:
        return [f"audit: differences {report['by_difference']}, samples {report['samples'][:5]}"]
    return []


def acknowledged(run: Run, ledger: Ledger, log_dir: Path, zk_phases: set[str]) -> list[str]:
    """Every acknowledged change in the log (``log_dir``'s committed image) and, for the
    changes acknowledged in ``zk_phases``, in ZooKeeper."""
    secret = run.rig.quorum.extra["password.encoder.secret"]
    lost = [f"not in KRaft: {line}" for line in ledger.missing(replay_log(log_dir))]
    zk_image = read_back(run.rig.zk, secret)
    lost += [f"not in ZooKeeper: {line}" for line in ledger.missing(zk_image, zk_phases)]
    return lost


@dataclass
class FencingEvidence:
    problems: list[str]
    transactions: int  # in the ensemble's history
    fenced_writes: int  # multis that checked or set /migration while it was held


def fencing_evidence(history: list[Txn], chroot: str) -> FencingEvidence:
    """Fenced writes in ZooKeeper's history (see the module doc): ``/migration``'s
    (epoch, offset) never goes back; while ``/migration`` exists, every write to
    Kafka's metadata is a multi that checks or sets it."""
    migration = chroot + paths.MIGRATION
    guarded = tuple(chroot + p for p in METADATA)
    problems: list[str] = []
    last: tuple[int, int] | None = None
    held, fenced = False, 0
    for txn in history:
        ours = [op for op in txn.ops if op.path.startswith(chroot)]
        on_migration = [op for op in ours if op.path == migration]
        for op in on_migration:
            if op.kind == DELETE:
                held = False
            elif op.data is not None:
                m = parse_migration(paths.MIGRATION, op.data)
                now = (m.kraft_controller_epoch, m.kraft_metadata_offset)
                if last is not None and now < last:
                    problems.append(f"zxid {txn.zxid:#x}: /migration went back {last} -> {now}")
                last, held = max(now, last or now), True
        written = [op.path for op in ours if op.kind != CHECK and op.path.startswith(guarded)]
        if held and written:
            if _fenced(txn, migration):
                fenced += 1
            else:
                problems.append(f"zxid {txn.zxid:#x}: unfenced write to {written[:3]}")
    return FencingEvidence(problems, len(history), fenced)


def fencing(run: Run) -> list[str]:
    """:func:`fencing_evidence` from the run's ensemble (every server's logs)."""
    chroot = run.rig.zk_connect[len(run.ensemble.connect_string) :]
    evidence = fencing_evidence(ensemble_history(s.data_dir for s in run.ensemble.servers), chroot)
    run.facts["zk_transactions"] = evidence.transactions
    run.facts["fenced_metadata_writes"] = evidence.fenced_writes
    return evidence.problems


def _fenced(txn: Txn, migration: str) -> bool:
    return txn.multi and any(
        op.path == migration and op.kind in (CHECK, SET_DATA) for op in txn.ops
    )


def after_finalization(run: Run, ledger: Ledger, root: Path) -> list[str]:
    active = run.status()["active_controller"]
    problems = audit(run, root, "--bootstrap-controller", ",".join(run.rig.quorum.bootstrap))
    problems += acknowledged(run, ledger, run.rig.quorum.log_dir(active), BEFORE_FINALIZATION)
    return problems + fencing(run)


def before_hand_back(run: Run, ledger: Ledger, root: Path) -> list[str]:
    """The quorum stopped: the longest log is the one every acknowledged change is in."""
    logs = [run.rig.quorum.log_dir(n) for n in run.rig.quorum.ids]
    longest = max(logs, key=lambda d: replay_log(d).offset)
    problems = audit(run, root, "--log-dir", str(longest))
    problems += acknowledged(run, ledger, longest, BEFORE_FINALIZATION | {"rollback"})
    return problems + fencing(run)


def hand_back(run: Run) -> None:
    logs = [a for n in run.rig.quorum.ids for a in ("--log-dir", str(run.rig.quorum.log_dir(n)))]
    done = zk2kraft(
        "rollback", "--zk", run.rig.zk_connect, "--bootstrap-controller",
        ",".join(run.rig.quorum.bootstrap), *logs, "--settle-s", "1", "--json",
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"rollback refused ({done.returncode}): {done.stdout}{done.stderr}")
    run.note("ZooKeeper handed back", ops=[op["path"] for op in json.loads(done.stdout)["ops"]])


def summary(workload: Workload, sampler: OfflineSampler) -> dict[str, Any]:
    ledger = workload.ledger
    return {
        "acked": ledger.acked,
        "unacked": ledger.unacked,
        "acked_by_kind": ledger.by_kind,
        "last_refusals": workload.errors[-3:],
        "offline_partitions_seen": len(sampler.seen),
        "offline_partitions_seen_after_broker_kill": len(sampler.seen_uncontrolled),
        "offline_partitions_most_at_once": sampler.most,
        "offline_samples": sampler.samples,
    }
