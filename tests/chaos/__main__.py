"""``python -m tests.chaos``: chaos runs of the whole migration (``make chaos``).

    python -m tests.chaos --runs 50            # seeds from a random first seed, printed
    python -m tests.chaos --seed 1234          # replay one run (make chaos SEED=1234)

Each run's record (plan, faults with their times, stage timings, acknowledgements, the
audit, the fencing evidence, partitions offline, problems) is written to
``<out>/seed-<seed>/run.json``; a passing run's process logs and data are removed, a
failing run's kept beside it. Exit 0 when every run passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from tests.chaos.run import run_seed


def _line(record: dict[str, Any]) -> str:
    faults = ", ".join(f"{f['kind']}@{f['stage']}" for f in record["plan"]["faults"])
    verdict = "ok" if record["ok"] else "FAILED"
    return (
        f"seed {record['seed']}: {verdict} in {record['seconds']} s — "
        f"{record['plan']['ending']}; {faults}; acked {record.get('acked', 0)} "
        f"(unacked {record.get('unacked', 0)}); offline partitions seen "
        f"{record.get('offline_partitions_seen', '?')}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos", description=__doc__)
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--runs", type=int, default=10, help="how many seeds (default 10)")
    which.add_argument("--seed", type=int, help="replay this one seed")
    parser.add_argument("--first-seed", type=int, help="the seed of the first run")
    parser.add_argument("--faults", type=int, help="faults per run (default: 2-4, seeded)")
    parser.add_argument("--out", type=Path, default=Path("chaos-runs"))
    parser.add_argument("--keep", action="store_true", help="keep passing runs' logs too")
    args = parser.parse_args()
    args.out = args.out.resolve()
    logging.getLogger("kazoo").setLevel(logging.ERROR)  # reconnects are the faults at work
    if args.seed is not None:
        seeds = [args.seed]
    else:
        first = args.first_seed if args.first_seed is not None else random.randrange(10**6)
        seeds = list(range(first, first + args.runs))
    print(f"chaos: {len(seeds)} run(s), seeds {seeds[0]}..{seeds[-1]}, records in {args.out}/")
    records = []
    began = time.monotonic()
    for seed in seeds:
        root = args.out / f"seed-{seed}"
        shutil.rmtree(root, ignore_errors=True)
        record = run_seed(seed, root, args.faults)
        records.append(record)
        print(_line(record), flush=True)
        if record["ok"]:
            if not args.keep:
                for child in root.iterdir():
                    if child.name != "run.json":
                        shutil.rmtree(child) if child.is_dir() else child.unlink()
        else:
            why = record.get("failure") or "; ".join(record.get("problems", []))
            print(f"  {why[:2000]}\n  replay: make chaos SEED={seed}", flush=True)
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
        "faults": sum(len(r["plan"]["faults"]) for r in records),
        "endings": {e: sum(r["plan"]["ending"] == e for r in records) for e in
                    ("finalize", "rollback-active", "rollback-mid-roll")},
        "offline_partitions_seen": sum(r.get("offline_partitions_seen", 0) for r in records),
        "minutes": round((time.monotonic() - began) / 60, 1),
    }  # fmt: skip
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
