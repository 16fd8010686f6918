"""What a chaos run must show afterwards, each check returning its problems as lines
(none: the run passed it):

* the Spark audit (``zk2kraft audit``): ZooKeeper against the log, 0 differences;
* every acknowledged change in the log's image and, for the changes acknowledged
  before finalization, in ZooKeeper (read back with the project's reader);
* ZooKeeper's transaction logs: ``/migration``'s fencing values never went back (a
  write by a fenced controller would carry an older epoch), and while the migration
  owned ZooKeeper every write to Kafka's metadata came in a multi fenced on
  ``/migration`` (none from the fenced ZooKeeper controller, none unfenced); and after
  each KRaft controller's claim of ZooKeeper, no write of an older epoch and none from
  a deposed claimant landed (:func:`claim_evidence`); a run that reached the copy with
  no claim in the logs fails (:func:`unclaimed`);
* the client's history (:mod:`.history`): linearizable per key against KRaft's image and,
  as of the phases it was written in, ZooKeeper's (:func:`linearizable`); a key the
  search could not decide within its budget fails the run too;
* partitions seen offline while the run went on (measured, reported).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from migration.image.model import MetadataImage
from migration.zk import paths
from migration.zk.model.cluster import parse_controller, parse_migration
from tests.chaos.history import as_of, check
from tests.chaos.history_models import READS
from tests.chaos.sampler import OfflineSampler
from tests.chaos.txnlog import CHECK, CREATES, DELETE, SET_DATA, Txn, ensemble_history
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
    kraft = replay_log(log_dir)
    lost = [f"not in KRaft: {line}" for line in ledger.missing(kraft)]
    zk_image = read_back(run.rig.zk, secret)
    lost += [f"not in ZooKeeper: {line}" for line in ledger.missing(zk_image, zk_phases)]
    return lost + linearizable(
        run, ledger, {"KRaft": (kraft, None), "ZooKeeper": (zk_image, zk_phases)}
    )


def linearizable(
    run: Run, ledger: Ledger, stores: dict[str, tuple[MetadataImage, set[str] | None]]
) -> list[str]:
    """The client's history checked per key (:func:`tests.chaos.history.check`) with
    each store's image as a read after everything: all of it for a store written to the
    end (phases None), as of ``phases`` for one that stopped being written after them
    (ZooKeeper after finalization). ``run.facts["history"]``: per store, keys, ops,
    verdict; a key that is not linearizable is a problem, with its offending ops, and so
    is a key left undecided (the search's budget spent)."""
    ops = list(ledger.history)
    problems: list[str] = []
    for store, (image, phases) in stores.items():
        history = ops if phases is None else as_of(ops, phases)
        final = {key: e.read(image) for key, e in list(ledger.entities.items())}
        ledger.finals[store] = {
            "phases": None if phases is None else sorted(phases),
            "final": final,
        }
        report = check(store, history, final, t0=run.started)
        run.facts.setdefault("history", {})[store] = report.facts()
        problems += report.problems()
    return problems


def keep_history(ledger: Ledger, root: Path) -> None:
    """The client's history beside the run's record (``history.jsonl``, one op a line;
    ``history-final.json``, each store's final states) to check again with
    ``python -m tests.chaos.history <run dir>``."""
    lines = (json.dumps(op.to_json(), default=str) for op in list(ledger.history))
    (root / "history.jsonl").write_text("\n".join(lines) + "\n")
    (root / "history-final.json").write_text(json.dumps(ledger.finals, default=str))


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


@dataclass
class ClaimEvidence:
    problems: list[str]
    claims: list[tuple[int, int, int]]  # (zxid, KRaft controller, its epoch), in order
    checked: int  # /migration writes landed after a claim, each of the claimed epoch or later
    refused: int  # writes of a deposed controller's session that ZooKeeper refused
    refusals: list[tuple[int, int | None, int]] = field(default_factory=list)
    """Each refused deposed write: (zxid, its controller if known, the latest claim's
    epoch then)."""


def claim_evidence(history: list[Txn], chroot: str) -> ClaimEvidence:
    """No deposed controller's write lands, from ZooKeeper's history. A claim is the
    committed create of ``/controller`` naming a KRaft controller and its epoch E. A
    controller's write is a transaction on ``/controller_epoch`` (every fenced multi
    checks it), ``/controller`` or ``/migration``. A session belongs to a controller:
    the one its ``/controller`` create names, or the KRaft controller its ``/migration``
    writes name (``kraft_controller_id``). A write is deposed when its session wrote in
    an earlier claim than the latest, or when its controller made a KRaft claim and is
    not the latest claimant: a deposed controller that reconnects with a new session is
    still deposed (its ``/migration`` write names it). After a claim: every landed
    ``/migration`` write (each dual-write multi sets it, with its writer's epoch)
    carries an epoch >= E; no deposed controller write lands (ZooKeeper refuses them:
    counted, the ZooKeeper-mode controller's included); and a later claim names a later
    epoch."""
    controller, migration = chroot + paths.CONTROLLER, chroot + paths.MIGRATION
    fence = (controller, migration, chroot + paths.CONTROLLER_EPOCH)
    problems: list[str] = []
    claims: list[tuple[int, int, int]] = []
    era: dict[int, int] = {}  # session -> how many claims there were at its last write
    owner: dict[int, int] = {}  # session -> its controller
    claimants: set[int] = set()  # controllers that made a KRaft claim
    refusals: list[tuple[int, int | None, int]] = []
    checked = 0
    for txn in history:
        ours = [op for op in txn.ops if op.path.startswith(chroot)]
        for op in (o for o in ours if o.path == migration and o.data is not None):
            writer = parse_migration(paths.MIGRATION, op.data).kraft_controller_id
            if writer is not None and writer >= 0:
                owner.setdefault(txn.session, writer)
        who = owner.get(txn.session)
        deposed = era.get(txn.session, len(claims)) < len(claims) or (
            who in claimants and claims[-1][1] != who
        )
        if deposed and txn.refused:
            refusals.append((txn.zxid, who, claims[-1][2] if claims else -1))
        for op in (o for o in ours if o.path == controller and o.kind in CREATES and o.data):
            parsed = parse_controller(paths.CONTROLLER, op.data)
            owner[txn.session] = parsed.broker_id
            epoch = parsed.kraft_controller_epoch
            if epoch is None:
                continue  # a ZooKeeper-mode controller (before the migration, or after it)
            if claims and epoch <= claims[-1][2]:
                problems.append(f"zxid {txn.zxid:#x}: claim in epoch {epoch} after {claims[-1]}")
            claims.append((txn.zxid, parsed.broker_id, epoch))
            claimants.add(parsed.broker_id)
            deposed = False
        if any(op.path in fence for op in ours):
            if deposed:
                paths_ = [op.path for op in ours][:3]
                problems.append(f"zxid {txn.zxid:#x}: a deposed controller's write landed after "
                                f"the claim {claims[-1]}: {paths_}")  # fmt: skip
            era[txn.session] = len(claims)
        for op in (o for o in ours if o.path == migration and o.data is not None and claims):
            epoch = parse_migration(paths.MIGRATION, op.data).kraft_controller_epoch
            checked += 1
            if epoch < claims[-1][2]:
                problems.append(f"zxid {txn.zxid:#x}: /migration written in epoch {epoch} "
                                f"after the claim {claims[-1]}")  # fmt: skip
    return ClaimEvidence(problems, claims, checked, len(refusals), refusals)


def held_partitions(run: Run, claims: ClaimEvidence) -> list[dict[str, Any]]:
    """Each ``partition-active-from-voters`` with ``zk_held`` 1: whether a write of the
    partitioned (deposed) controller was refused by ZooKeeper after the new claim
    (``exercised``; not exercised: the old leader sent nothing while held)."""
    out = []
    for e in run.events:
        if e["event"] != "new leader claimed ZooKeeper" or not e.get("zk_held"):
            continue
        refused = sum(
            1 for _, who, epoch in claims.refusals if who == e["old"] and epoch >= e["epoch"]
        )
        out.append({"old": e["old"], "claim_epoch": e["epoch"], "deposed_writes_refused": refused,
                    "exercised": refused > 0})  # fmt: skip
    return out


def unclaimed(claims: ClaimEvidence, reached_copy: bool) -> list[str]:
    """A run that reached the copy (a KRaft controller took ZooKeeper over) must show a
    KRaft claim in ZooKeeper's logs: without one, :func:`claim_evidence` checked
    nothing."""
    if not reached_copy or claims.claims:
        return []
    return [
        "no KRaft controller's claim of ZooKeeper (/controller) in ZooKeeper's "
        "transaction logs although the run reached the copy: nothing to check"
    ]


def fencing(run: Run) -> list[str]:
    """:func:`fencing_evidence` and :func:`claim_evidence` from the run's ensemble
    (every server's logs). A run that reached the copy must show a KRaft controller's
    claim: without one the claim evidence checks nothing (a problem)."""
    chroot = run.rig.zk_connect[len(run.ensemble.connect_string) :]
    history = ensemble_history(s.data_dir for s in run.ensemble.servers)
    evidence = fencing_evidence(history, chroot)
    run.facts["zk_transactions"] = evidence.transactions
    run.facts["fenced_metadata_writes"] = evidence.fenced_writes
    claims = claim_evidence(history, chroot)
    run.facts["zk_claims"] = [{"zxid": z, "controller": c, "epoch": e} for z, c, e in claims.claims]
    run.facts["migration_writes_after_claims"] = claims.checked
    run.facts["deposed_writes_refused"] = claims.refused
    run.facts["zk_held_partitions"] = held_partitions(run, claims)
    vacuous = unclaimed(claims, reached_copy="copy" in run.stages)
    run.facts["claim_problems"] = len(claims.problems) + len(vacuous)
    run.facts["fenced_writes_landed"] = len(evidence.problems) + len(claims.problems)
    return evidence.problems + claims.problems + vacuous


def _fenced(txn: Txn, migration: str) -> bool:
    return txn.multi and any(
        op.path == migration and op.kind in (CHECK, SET_DATA) for op in txn.ops
    )


def after_finalization(run: Run, ledger: Ledger, root: Path) -> list[str]:
    active = run.status()["active_controller"]
    problems = audit(run, root, "--bootstrap-controller", ",".join(run.rig.quorum.bootstrap))
    problems += acknowledged(run, ledger, run.rig.quorum.log_dir(active), BEFORE_FINALIZATION)
    keep_history(ledger, root)
    return problems + fencing(run)


def before_hand_back(run: Run, ledger: Ledger, root: Path) -> list[str]:
    """The quorum stopped and the rollback's checks passed (``--dry-run``): ZooKeeper as
    it is handed back. The longest log is the one every acknowledged change is in."""
    logs = [run.rig.quorum.log_dir(n) for n in run.rig.quorum.ids]
    longest = max(logs, key=lambda d: replay_log(d).offset)
    problems = audit(run, root, "--log-dir", str(longest))
    problems += acknowledged(run, ledger, longest, BEFORE_FINALIZATION | {"rollback"})
    keep_history(ledger, root)
    return problems + fencing(run)


def hand_back(run: Run, dry_run: bool = False) -> list[dict[str, Any]]:
    """``zk2kraft rollback`` (``--dry-run``: its checks only) with every controller's log;
    the findings that refused it (none: it passed, and without ``dry_run`` ZooKeeper was
    handed back). RuntimeError when it could not even answer."""
    logs = [a for n in run.rig.quorum.ids for a in ("--log-dir", str(run.rig.quorum.log_dir(n)))]
    done = zk2kraft(
        "rollback", "--zk", run.rig.zk_connect, "--bootstrap-controller",
        ",".join(run.rig.quorum.bootstrap), *logs, "--settle-s", "1", "--json",
        *(["--dry-run"] if dry_run else []),
    )  # fmt: skip
    try:
        report = json.loads(done.stdout)
    except ValueError:
        report = None
    if done.returncode not in (0, 1) or report is None:
        raise RuntimeError(f"rollback failed ({done.returncode}): {done.stdout}{done.stderr}")
    refused = [f for f in report["findings"] if not f["ok"]]
    if done.returncode == 0 and not dry_run:
        run.note("ZooKeeper handed back", ops=[op["path"] for op in report["ops"]])
    if done.returncode == 0:
        return []
    return refused or [{"code": "refused", "ok": False, "message": f"phase {report['phase']}"}]


PRE_CLAIM_CAUGHT_UP = re.compile(r"catch-up rounds before the claim appended (\d+) records")
AFTER_CLAIM_CAUGHT_UP = re.compile(r"entities read again, (\d+) records appended")


def copy_catch_ups(outputs: Iterable[str]) -> dict[str, int]:
    """How many records the copies' catch-ups appended (every leader's that copied),
    before the claim and after it: the admin writes that raced the pre-copy."""
    texts = list(outputs)
    return {
        "before_claim": sum(int(n) for t in texts for n in PRE_CLAIM_CAUGHT_UP.findall(t)),
        "after_claim": sum(int(n) for t in texts for n in AFTER_CLAIM_CAUGHT_UP.findall(t)),
    }


def summary(workload: Workload, sampler: OfflineSampler) -> dict[str, Any]:
    ledger = workload.ledger
    return {
        "acked": ledger.acked,
        "unacked": ledger.unacked,
        "acked_by_kind": ledger.by_kind,
        "last_refusals": workload.errors[-3:],
        "history_ops": len(ledger.history),
        "history_reads": sum(op.f in READS for op in ledger.history),
        "offline_partitions_seen": len(sampler.seen),
        "offline_partitions_seen_after_broker_kill": len(sampler.seen_uncontrolled),
        "offline_partitions_most_at_once": sampler.most,
        "offline_samples": sampler.samples,
    }
