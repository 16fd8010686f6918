"""``make fuzz``: the whole fuzz corpus (every served API and version, SEEDS requests of
each, every length field mutated every way) sent to a live ZooKeeper-mode broker and a
live KRaft-mode broker, on each listener type and SASL login state. Prints the count of
frames sent, answered and closed, and exits 1 if any frame went unanswered and unclosed
or a broker stopped serving."""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from migration.common.ports import unused_port
from migration.local.zookeeper import EmbeddedZooKeeper
from tests.broker_harness import eventually, running_cluster
from tests.kafka_fuzz import PASSES, Listeners, Tally, corpus, fuzz, kraft_broker


def _run(
    mode: str, listeners: Listeners, serving: Callable[[], None], log: Path, seeds: int
) -> dict[str, object]:
    totals: dict[str, object] = {"mode": mode, "passes": []}
    frames = 0
    for listener, login in PASSES:
        began = time.monotonic()
        tally: Tally = fuzz(listeners.connect(listener, login), corpus(random.Random(
            f"{mode}-{listener}-{login}"), seeds), serving)  # fmt: skip
        frames += tally.frames
        row = {
            "listener": listener, "login": login, "frames": tally.frames,
            "answered": tally.answered, "closed": tally.closed,
            "failures": tally.failures[:10], "seconds": round(time.monotonic() - began, 1),
        }  # fmt: skip
        totals["passes"].append(row)  # type: ignore[attr-defined]
        print(f"{mode:9} {listener:14} login={login!s:5} {tally.frames:6} frames "
              f"{tally.answered:5} answered {tally.closed:6} closed "
              f"{len(tally.failures)} failures", file=sys.stderr, flush=True)  # fmt: skip
    text = log.read_text()
    totals["frames"] = frames
    totals["crashes"] = int("memory allocation" in text or "Traceback" in text)
    return totals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=3, help="requests per API version")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="zk2kraft-fuzz-") as tmp, EmbeddedZooKeeper() as zk:
        root = Path(tmp)
        listeners = Listeners(root / "zk")
        with running_cluster(zk, root / "zk", [1], **listeners.props) as (cluster, _):
            child = cluster.brokers[1]
            cluster.reconfigure(
                listeners=listeners.listeners_property(child.internal_port, child.port)
            )
            cluster.restart(1)
            cluster.wait_ready(90)
            serving = listeners.serving(lambda: cluster.running() == [1])
            results.append(_run("zookeeper", listeners, serving, child.log, args.seeds))
        listeners = Listeners(root)
        props = {**listeners.props, "listeners": listeners.listeners_property(unused_port())}
        with kraft_broker(root / "kraft", props) as (process, log):
            serving = listeners.serving(lambda: process.poll() is None)
            eventually(lambda: serving() is None, 60, "the KRaft broker lists itself")
            results.append(_run("kraft", listeners, serving, log, args.seeds))
    frames = sum(int(r["frames"]) for r in results)  # type: ignore[call-overload]
    failures = sum(len(p["failures"]) for r in results for p in r["passes"])  # type: ignore[attr-defined]
    crashes = sum(int(r["crashes"]) for r in results)  # type: ignore[call-overload]
    summary = {"frames": frames, "failures": failures, "crashes": crashes, "modes": results}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"{frames} frames sent to 2 brokers: {failures} unanswered, {crashes} crashes")
    return 0 if not failures and not crashes else 1


if __name__ == "__main__":
    sys.exit(main())
