"""The controller quorum on loopback (``make bench``): admin-write commit latency one at a
time and pipelined, records committed per second with batching, SIGKILL of the leader
to the first committed write on the new one; all on three real controller processes,
with a single-controller quorum measured in the same run as the baseline (the same code
without replication). Also one-at-a-time latency with 20 observers each holding a fetch
at the leader (the KRaft brokers to come) against the same quorum without them, and the
Raft simulation's speed."""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from migration.common.kafka_errors import KafkaError
from migration.controller.client import BrokerSession, ControllerClient
from migration.proto import controller_pb2 as cpb
from tests.quorum_harness import Observer, Quorum
from tests.simulation.runner import run_seed


def _create(client: ControllerClient, name: str, partitions: int = 1, rf: int = 1) -> None:
    request = cpb.CreateTopicsRequest()
    request.topics.add(name=name, num_partitions=partitions, replication_factor=rf)
    result = client.call("CreateTopics", request).topics[0]
    if result.error_code:
        raise RuntimeError(f"{name}: {result.error_message}")


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _latencies(q: Quorum, prefix: str, count: int, threads: int) -> dict[str, Any]:
    samples: list[float] = []
    lock = threading.Lock()

    def worker(t: int) -> None:
        client = q.client()
        mine = []
        for i in range(count // threads):
            started = time.perf_counter()
            _create(client, f"{prefix}-{t}-{i}")
            mine.append((time.perf_counter() - started) * 1000)
        with lock:
            samples.extend(mine)
        client.close()

    started = time.perf_counter()
    pool = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    elapsed = time.perf_counter() - started
    return {
        "writes": len(samples),
        "p50_ms": round(statistics.median(samples), 2),
        "p99_ms": round(_pct(samples, 0.99), 2),
        "writes_per_second": round(len(samples) / elapsed),
    }


def _records_per_second(q: Quorum, threads: int = 16, per_thread: int = 20) -> dict[str, Any]:
    partitions = 20  # one TopicRecord + 20 PartitionRecords per write

    def worker(t: int) -> None:
        client = q.client()
        for i in range(per_thread):
            _create(client, f"bulk-{t}-{i}", partitions=partitions, rf=3)
        client.close()

    started = time.perf_counter()
    pool = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    elapsed = time.perf_counter() - started
    records = threads * per_thread * (1 + partitions)
    return {
        "records": records,
        "seconds": round(elapsed, 3),
        "records_per_second": round(records / elapsed),
    }


def _failover(q: Quorum, runs: int) -> dict[str, Any]:
    times = []
    for run in range(runs):
        leader = q.wait_leader()
        client = ControllerClient(q.bootstrap, timeout_s=1.0)
        killed = time.perf_counter()
        q.kill(leader)
        while True:
            try:
                _create(client, f"failover-{run}")
                break
            except KafkaError:
                continue
        times.append(time.perf_counter() - killed)
        client.close()
        q.start(leader)
        q.wait_leader()
        time.sleep(1.0)
    return {
        "runs": runs,
        "median_seconds": round(statistics.median(times), 3),
        "all_seconds": [round(t, 3) for t in times],
    }


def _with_brokers(q: Quorum, count: int) -> list[BrokerSession]:
    q.wait_leader()
    client = q.client()
    sessions = [BrokerSession(client, b, interval_s=1.0).start() for b in range(1, count + 1)]
    for s in sessions:
        s.wait_unfenced()
    return sessions


def run(sequential: int = 200, pipelined: int = 800, failovers: int = 5) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        single = Quorum(Path(tmp) / "one", size=1).start_all()
        try:
            brokers = _with_brokers(single, 3)
            results["baseline_sequential"] = _latencies(single, "s", sequential, 1)
            results["baseline_pipelined"] = _latencies(single, "p", pipelined, 16)
            for b in brokers:
                b.stop()
        finally:
            single.stop_all()
        three = Quorum(Path(tmp) / "three", size=3).start_all()
        try:
            brokers = _with_brokers(three, 3)
            results["sequential"] = _latencies(three, "s", sequential, 1)
            results["pipelined"] = _latencies(three, "p", pipelined, 16)
            results["batching"] = _records_per_second(three)
            observers = [Observer(three, 2000 + i) for i in range(20)]
            for o in observers:
                o.start()
            while len(three.describe().observers) < len(observers):
                time.sleep(0.1)
            results["with_observers"] = _latencies(three, "o", sequential, 1)
            for o in observers:
                o.stop()
            for b in brokers:
                b.stop()
            results["failover"] = _failover(three, failovers)
        finally:
            three.stop_all()
    started = time.perf_counter()
    seeds = 100
    failures = sum(run_seed(seed) is not None for seed in range(50_000, 50_000 + seeds))
    elapsed = time.perf_counter() - started
    results["simulation"] = {
        "seeds": seeds,
        "failures": failures,
        "seeds_per_second": round(seeds / elapsed, 1),
    }
    for kind in ("sequential", "pipelined"):
        results[kind]["p50_over_baseline"] = round(
            results[kind]["p50_ms"] / results[f"baseline_{kind}"]["p50_ms"], 2
        )
    results["with_observers"]["p50_over_without"] = round(
        results["with_observers"]["p50_ms"] / results["sequential"]["p50_ms"], 2
    )
    return results


def report(r: dict[str, Any]) -> None:
    print("controller quorum on loopback (3 processes; baseline: a 1-controller quorum):")
    for kind, label in (("sequential", "one at a time"), ("pipelined", "16 clients")):
        q, b = r[kind], r[f"baseline_{kind}"]
        print(
            f"  CreateTopics commit latency, {label}: p50 {q['p50_ms']} ms, "
            f"p99 {q['p99_ms']} ms, {q['writes_per_second']} writes/s"
        )
        print(
            f"    baseline p50 {b['p50_ms']} ms, p99 {b['p99_ms']} ms, "
            f"{b['writes_per_second']}/s; p50 ratio {q['p50_over_baseline']}"
        )
    o = r["with_observers"]
    print(
        f"  with 20 observers holding fetches, one at a time: p50 {o['p50_ms']} ms, "
        f"p99 {o['p99_ms']} ms; p50 ratio to none {o['p50_over_without']}"
    )
    bt = r["batching"]
    print(
        f"  records committed with batching: {bt['records_per_second']:,}/s "
        f"({bt['records']:,} in {bt['seconds']} s)"
    )
    f = r["failover"]
    print(
        f"  SIGKILL of the leader -> first committed write: median {f['median_seconds']} s "
        f"over {f['runs']} runs {f['all_seconds']}"
    )
    s = r["simulation"]
    print(
        f"  simulation: {s['seeds_per_second']} seeds/s "
        f"({s['seeds']} seeds, {s['failures']} failed)"
    )


if __name__ == "__main__":
    report(run())
