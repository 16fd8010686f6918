"""``python -m tests.chaos``: chaos runs of the whole migration (``make chaos``).

    python -m tests.chaos --runs 50            # seeds from a random first seed, printed
    python -m tests.chaos --seed 1234          # replay one run (make chaos SEED=1234)
    python -m tests.chaos --runs 100 --jobs 2  # two runs at a time, each in its own process

Each run's record (plan, faults with their times, stage timings, acknowledgements, the
audit, the fencing evidence, partitions offline, problems) is written to
``<out>/seed-<seed>/run.json``; a passing run's process logs and data are removed, a
failing run's kept beside it. Exit 0 when every run passed, 1 otherwise; 2, with
nothing run, when a planned fault needs root (``controller-disk-full`` mounts tmpfs)
and this is not root, or when mounts an earlier campaign left under ``--out`` need root
to remove (as root they are unmounted first). With ``--jobs``, a run whose worker
process dies is a failed run and the others go on (:func:`in_pool`); faults are counted
as the runs injected them.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import shutil
import sys
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from tests.chaos.faults import INJECTED
from tests.chaos.history_models import LINEARIZABLE, NOT_LINEARIZABLE, UNDECIDED
from tests.chaos.host_faults import mounts_under, need_root, unmount_stale
from tests.chaos.plan import make_plan
from tests.chaos.run import quiet_logs, run_seed


def injected(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The faults a run injected (kind, stage), from its events (:data:`INJECTED`);
    a record without events (the run never started) counts its plan's."""
    events = record.get("events")
    if events is None:
        return [{"kind": f["kind"], "stage": f["stage"]} for f in record["plan"]["faults"]]
    return [{"kind": e["kind"], "stage": e["stage"]} for e in events if e["event"] == INJECTED]


def faults_by_kind(records: list[dict[str, Any]]) -> dict[str, int]:
    """How many faults of each kind ``records`` injected (:func:`injected`; most first)."""
    counts = Counter(f["kind"] for r in records for f in injected(r))
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _faults(record: dict[str, Any]) -> str:
    stages: dict[str, list[str]] = {}
    for f in injected(record):
        stages.setdefault(f["kind"], []).append(f["stage"])
    shown = [f"{n} {k} ({', '.join(stages[k])})" for k, n in faults_by_kind([record]).items()]
    return "faults: " + (", ".join(shown) or "none")


def history_verdict(record: dict[str, Any]) -> str:
    """The run's history verdict: the worst of its stores' (``not checked`` when the run
    ended before its checks)."""
    verdicts = {h["verdict"] for h in (record.get("history") or {}).values()}
    if not verdicts:
        return "not checked"
    return next(v for v in (NOT_LINEARIZABLE, UNDECIDED, LINEARIZABLE) if v in verdicts)


def _history(record: dict[str, Any]) -> str:
    stores = record.get("history") or {}
    each = "; ".join(f"{s} {h['keys']} keys, {h['ops']} ops" for s, h in stores.items())
    return f"history {history_verdict(record)}" + (f" ({each})" if each else "")


def _line(record: dict[str, Any]) -> str:
    verdict = "ok" if record["ok"] else "FAILED"
    return (
        f"seed {record['seed']}: {verdict} in {record['seconds']} s — "
        f"{record['plan']['ending']}; {_faults(record)}; {_history(record)}; "
        f"acked {record.get('acked', 0)} (unacked {record.get('unacked', 0)}); "
        f"offline partitions seen {record.get('offline_partitions_seen', '?')}" + _caught_up(record)
    )


def _caught_up(record: dict[str, Any]) -> str:
    """The copy's catch-ups: the writes that raced the pre-copy, in records."""
    caught = record.get("copy_caught_up")
    if not caught:
        return ""
    return (
        f"; the copy caught up {caught['before_claim']} records before the claim, "
        f"{caught['after_claim']} after"
    )


def _report(record: dict[str, Any], keep: bool) -> dict[str, Any]:
    """Print the run's line (and, failed, why and its replay command); a passing run
    keeps only its run.json unless ``keep``."""
    print(_line(record), flush=True)
    root = Path(record["root"])
    if record["ok"]:
        if not keep:
            for child in root.iterdir():
                if child.name != "run.json":
                    shutil.rmtree(child) if child.is_dir() else child.unlink()
    else:
        why = record.get("failure") or "; ".join(record.get("problems", []))
        print(f"  {why[:2000]}\n  replay: make chaos SEED={record['seed']}", flush=True)
    return record


def died(seed: int, root: Path, faults: int | None, exc: BaseException) -> dict[str, Any]:
    """The record of a run whose worker process died or whose result never came back:
    its own run.json if it wrote one, else a failed run naming why."""
    written = root / "run.json"
    if written.exists():
        try:
            record: dict[str, Any] = json.loads(written.read_text())
            return record
        except ValueError:
            pass
    record = {
        "seed": seed, "root": str(root), "plan": make_plan(seed, faults).to_json(),
        "ok": False, "seconds": 0.0,
        "failure": f"the run's worker process died or its result was lost: {exc!r}",
    }  # fmt: skip
    root.mkdir(parents=True, exist_ok=True)
    written.write_text(json.dumps(record, indent=2, default=str))
    return record


def in_pool(
    seeds: list[int], roots: dict[int, Path], faults: int | None, jobs: int, keep: bool,
    target: Callable[[int, Path, int | None], dict[str, Any]] = run_seed,
) -> list[dict[str, Any]]:  # fmt: skip
    """Every seed run in ``jobs`` processes, a record each whatever happens to them. A
    worker that dies breaks the pool (BrokenProcessPool for every run not finished):
    the runs that had started (their directory exists) are failed runs (which of them
    killed the worker cannot be told), the others go to a new pool. ``target``: what
    runs a seed (:func:`tests.chaos.run.run_seed`)."""
    spawn = multiprocessing.get_context("spawn")
    records: list[dict[str, Any]] = []
    pending = list(seeds)
    while pending:
        before = len(records)
        with ProcessPoolExecutor(jobs, mp_context=spawn, initializer=quiet_logs) as pool:
            runs = {pool.submit(target, seed, roots[seed], faults): seed for seed in pending}
            pending = []
            for done in as_completed(runs):
                seed = runs[done]
                try:
                    record = done.result()
                except BrokenProcessPool as exc:
                    if not roots[seed].exists():
                        pending.append(seed)  # never started: again, in a new pool
                        continue
                    record = died(seed, roots[seed], faults, exc)
                except Exception as exc:
                    record = died(seed, roots[seed], faults, exc)
                records.append(_report(record, keep))
        if pending and len(records) == before:  # a pool that runs nothing: no more tries
            for seed in pending:
                why = RuntimeError("the process pool broke before the run started")
                records.append(_report(died(seed, roots[seed], faults, why), keep))
            pending = []
    return sorted(records, key=lambda r: int(r["seed"]))


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos", description=__doc__)
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--runs", type=int, default=10, help="how many seeds (default 10)")
    which.add_argument("--seed", type=int, help="replay this one seed")
    parser.add_argument("--first-seed", type=int, help="the seed of the first run")
    parser.add_argument("--faults", type=int, help="faults per run (default: 2-4, seeded)")
    parser.add_argument("--out", type=Path, default=Path("chaos-runs"))
    parser.add_argument("--keep", action="store_true", help="keep passing runs' logs too")
    parser.add_argument(
        "--jobs", type=int, default=1, help="runs at a time, each in its own process (default 1)"
    )
    args = parser.parse_args()
    args.out = args.out.resolve()
    quiet_logs()
    if args.seed is not None:
        seeds = [args.seed]
    else:
        first = args.first_seed if args.first_seed is not None else random.randrange(10**6)
        seeds = list(range(first, first + args.runs))
    planned = {seed: {f.kind for f in make_plan(seed, args.faults).faults} for seed in seeds}
    if (why := need_root(set().union(*planned.values()))) is not None:
        needing = [seed for seed in seeds if need_root(planned[seed])]
        print(f"chaos: host faults need root: {why}; seeds {needing} inject it. "
              "Run as root (e.g. sudo -E make chaos).", file=sys.stderr)  # fmt: skip
        return 2
    print(f"chaos: {len(seeds)} run(s), seeds {seeds[0]}..{seeds[-1]}, records in {args.out}/")
    if args.out.exists() and (stale := mounts_under(args.out)):
        if os.geteuid() != 0:
            print(f"chaos: mounts left under {args.out}/ need root to remove: {stale}")
            return 2
        unmount_stale(args.out)
        print(f"chaos: unmounted what an earlier campaign left: {[str(p) for p in stale]}")
    records: list[dict[str, Any]] = []
    began = time.monotonic()
    roots = {seed: args.out / f"seed-{seed}" for seed in seeds}
    for root in roots.values():
        shutil.rmtree(root, ignore_errors=True)
    if args.jobs == 1:
        for seed in seeds:
            records.append(_report(run_seed(seed, roots[seed], args.faults), args.keep))
    else:  # each run in a process of its own: its client, proxies and checks share no GIL
        records = in_pool(seeds, roots, args.faults, args.jobs, args.keep)
    failed = [r["seed"] for r in records if not r["ok"]]
    summary = {
        "runs": len(records),
        "passed": len(records) - len(failed),
        "failed_seeds": failed,
        "acknowledged_writes": sum(r.get("acked", 0) for r in records),
        "lost_acknowledged_writes": sum(
            sum(p.startswith("not in") for p in r.get("problems", [])) for r in records
        ),
        "audits_consistent": sum(bool((r.get("audit") or {}).get("consistent")) for r in records),
        "faults_planned": sum(len(r["plan"]["faults"]) for r in records),
        "faults": sum(len(injected(r)) for r in records),
        "faults_by_kind": faults_by_kind(records),
        "non_linearizable_histories": sum(
            history_verdict(r) == NOT_LINEARIZABLE for r in records
        ),
        "histories_undecided": sum(history_verdict(r) == UNDECIDED for r in records),
        "histories_linearizable": sum(history_verdict(r) == LINEARIZABLE for r in records),
        "endings": {e: sum(r["plan"]["ending"] == e for r in records) for e in
                    ("finalize", "rollback-active", "rollback-mid-roll")},
        "offline_partitions_seen": sum(r.get("offline_partitions_seen", 0) for r in records),
        "fenced_writes_landed": sum(r.get("fenced_writes_landed", 0) for r in records),
        "deposed_writes_refused": sum(r.get("deposed_writes_refused", 0) for r in records),
        "zk_transactions_read": sum(r.get("zk_transactions", 0) for r in records),
        "minutes": round((time.monotonic() - began) / 60, 1),
    }  # fmt: skip
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    kinds = ", ".join(f"{n} {k}" for k, n in summary["faults_by_kind"].items())
    print(
        f"chaos: {summary['passed']} of {summary['runs']} passed; "
        f"{summary['lost_acknowledged_writes']} lost acknowledged writes, "
        f"{summary['runs'] - summary['audits_consistent']} audits not consistent, "
        f"{summary['non_linearizable_histories']} non-linearizable histories "
        f"({summary['histories_undecided']} undecided), "
        f"{summary['fenced_writes_landed']} fenced writes landed; "
        f"faults: {kinds or 'none'}"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
