"""``python -m tests.simulation [--seed N | --seeds N [--first K]]``: replay one seed
(with the protocol's log on stderr) or soak many; prints seeds/s and exits 1 on a failure."""

from __future__ import annotations

import argparse
import logging
import sys
import time

from tests.simulation.runner import run_seed


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.simulation")
    parser.add_argument("--seed", type=int, help="replay this seed, with the protocol's log")
    parser.add_argument("--seeds", type=int, default=2000)
    parser.add_argument("--first", type=int, default=0)
    args = parser.parse_args()
    if args.seed is not None:
        logging.basicConfig(level=logging.INFO, format="%(message)s")
        failure = run_seed(args.seed)
        print(failure or f"seed {args.seed}: every invariant held")
        return 1 if failure else 0
    start = time.monotonic()
    failures = 0
    for i, seed in enumerate(range(args.first, args.first + args.seeds), 1):
        failure = run_seed(seed)
        if failure:
            failures += 1
            print(failure, flush=True)
        if i % 500 == 0:
            print(
                f"{i} seeds, {failures} failed, {i / (time.monotonic() - start):.1f} seeds/s",
                flush=True,
            )
    elapsed = time.monotonic() - start
    print(
        f"{args.seeds} seeds in {elapsed:.1f} s ({args.seeds / elapsed:.1f} seeds/s), "
        f"{failures} failed"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
