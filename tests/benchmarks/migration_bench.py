"""The live migration (``make bench``), with real processes: three ZooKeeper-mode brokers
configured for the migration over a seeded tree, three controllers formatted with its
cluster id.

* Controller unavailability: from the claim (the ZooKeeper controller fenced) to the last
  broker having applied the KRaft controller's full UpdateMetadata (DUAL_WRITE, brokers
  told), from the processes' own log timestamps; beside the reader's time on the same
  tree, measured before (goal: <= 1.5x read time, growing linearly).
* An admin write's latency (CreateTopics, 3 partitions x 3 replicas) forwarded through a
  ZooKeeper broker (Kafka's protocol) against the same write straight to the active
  controller (gRPC): p50/p99.
* The rolling restart into KRaft mode: a broker's restart until it serves again, in KRaft
  mode (it fetches and replays the log as an observer, then is unfenced) beside the same
  broker restarted in ZooKeeper mode first (baseline), each restart by its steps
  (:func:`_restart`: the stop, the image loaded, serving, the others seeing it); and
  all-topics Metadata through a KRaft-mode broker beside the same request through a
  ZooKeeper-mode broker (p50).
* Write-behind lag under 1,000 changes/s (topic config changes, offered open-loop): from
  ``migration status`` samples, the time since the log's high watermark passed what
  ``/migration`` holds; p50/p99 (goal p99 <= 1 s).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import grpc
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from migration.broker.modes import Mode
from migration.controller.client import ControllerClient
from migration.kafka.admin_client import KafkaAdminClient
from migration.local import seed
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.proto import controller_pb2 as cpb
from migration.proto import controller_pb2_grpc
from migration.zk.reader import read_snapshot
from tests.benchmarks import log_times, migration_scale
from tests.benchmarks.broker_bench import percentiles
from tests.migration_harness import MigrationRig, migration_rig

RATE = 1000  # changes offered per second
LOAD_SECONDS = 10.0


def _spec(partitions: int) -> seed.ClusterSpec:
    return seed.ClusterSpec(brokers=3, topics=max(1, partitions // 20), partitions=partitions)


def _first(text: str, needle: str, after: float = 0.0) -> float:
    found = log_times.first(text, needle, after)
    assert found is not None, needle
    return found


def _wait(check: Any, timeout_s: float) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            found = check()
        except (OSError, KeyError):
            found = None
        if found:
            return found
        if time.monotonic() > deadline:
            raise TimeoutError("the migration did not converge")
        time.sleep(0.1)


def _progress(partitions: int, what: str) -> None:
    """Long runs show where they are (stderr: the report stays clean)."""
    print(f"[{time.strftime('%H:%M:%S')}] {partitions:,} partitions: {what}", file=sys.stderr)


def run(
    zk: EmbeddedZooKeeper,
    partitions: int,
    latency_rounds: int = 30,
    *,
    admin_only: bool = False,
    roll_only: bool = False,
    **rig_options: Any,
) -> dict[str, Any]:
    """The migration's figures at ``partitions`` (``latency_rounds`` 0: the copy only;
    ``admin_only``: the copy, then the admin writes' latencies, nothing after them;
    ``roll_only``: the copy, then the roll into KRaft mode and the processes' peaks);
    ``rig_options`` go to the rig (a secured cluster's settings). A failed (or
    interrupted) run prints the figures it had measured, keeps its processes' logs and
    says where; so does every run with ``ZK2KRAFT_BENCH_KEEP`` set."""
    tmp = Path(tempfile.mkdtemp(prefix=f"zk2kraft-migration-bench-{partitions}-"))
    out: dict[str, Any] = {"partitions": partitions}
    try:
        with migration_scale.MemoryPeak() as machine:
            stages = (latency_rounds, admin_only, roll_only)
            _run(zk, partitions, stages, tmp, rig_options, out)
        out.update(machine.figures())
    except BaseException:
        out.update(machine.figures())
        print(
            f"the {partitions:,}-partition run failed; its logs are in {tmp}; measured "
            f"before: {json.dumps(out)}",
            file=sys.stderr,
        )
        raise
    if os.environ.get("ZK2KRAFT_BENCH_KEEP"):  # the processes' logs, to read after a run
        print(f"the {partitions:,}-partition run's files are kept in {tmp}", file=sys.stderr)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def run_sizes(
    zk: EmbeddedZooKeeper,
    sizes: tuple[int, ...],
    latency_rounds: int = 30,
    *,
    admin_only: bool = False,
    roll_only: bool = False,
) -> list[dict[str, Any]]:
    """:func:`run` at each size, smallest first (``latency_rounds`` 0: the copy and its
    pause only); each result is also printed to stderr as one JSON line when it is in,
    so a failure at a larger size keeps the smaller ones."""
    results = []
    for n in sizes:
        results.append(run(zk, n, latency_rounds, admin_only=admin_only, roll_only=roll_only))
        print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    return results


def _run(
    zk: EmbeddedZooKeeper,
    partitions: int,
    stages: tuple[int, bool, bool],
    tmp: Path,
    rig_options: dict[str, Any],
    out: dict[str, Any],
) -> None:
    """Fills ``out`` a stage at a time (a failure keeps what came before); ``stages``:
    the admin writes timed (0: none, nor anything after them) and whether to stop there,
    and whether to go straight from the copy to the roll (nothing else timed)."""
    latency_rounds, admin_only, roll_only = stages
    timeout = max(300.0, partitions / 1000)
    # Kafka's own quorum timeouts at every size (controller.quorum.fetch.timeout.ms 2 s,
    # election 1 s): no override
    controller_props = {
        **migration_scale.PERFORMANCE_PROPS,
        **rig_options.pop("controller_props", {}),
    }
    _progress(partitions, "seeding ZooKeeper, starting the ZooKeeper-mode brokers")
    with migration_rig(
        zk,
        tmp,
        _spec(partitions),
        start_quorum=False,
        ready_timeout_s=timeout,
        controller_props=controller_props,
        **rig_options,
    ) as rig:
        _progress(partitions, "brokers serving; timing the reader")
        reads = []
        for _ in range(3):
            t0 = time.perf_counter()
            read_snapshot(rig.zk)
            reads.append(time.perf_counter() - t0)
        reader = statistics.median(reads)
        _progress(partitions, "starting the controllers: the migration")
        rig.quorum.start_all()
        _wait(lambda: rig.status()["driver_phase"] == "DUAL_WRITE", timeout)
        told = _wait(lambda: _full_applied(rig), timeout)
        output = "\n".join(rig.quorum.output(node) for node in rig.quorum.ids)
        claims = sorted(
            log_times.at(line) for line in output.splitlines() if "]: claimed ZooKeeper" in line
        )
        claimed = claims[0]  # the ZooKeeper controller is fenced from the first claim on
        copied = _first(output, "Completed migration of metadata")
        synced = log_times.first(output, "ZooKeeper synced with the log", claimed) or 0.0
        dual = log_times.first(output, "migration driver [DUAL_WRITE]", claimed) or 0.0
        unavailable = told - claimed
        out.update({
            "claims": len(claims),  # more than one: leaders changed during the migration
            "reader_s": round(reader, 3),
            "unavailable_s": round(unavailable, 3),
            "unavailable_over_reader": round(unavailable / reader, 3),
            # the controllers' write pause: the claim to writes accepted again
            "write_pause_s": round(dual - claimed, 3),
            "write_pause_over_reader": round((dual - claimed) / reader, 3),
            "copy_s": round(copied - claimed, 3),  # the claim to the copy committed
            "sync_s": round(synced - copied, 3),  # the copy committed to ZooKeeper synced
            **migration_scale.copy_rate(output),
        })  # fmt: skip
        admin = bool(latency_rounds) and not roll_only
        whole = admin and not admin_only
        if admin:
            _progress(partitions, "dual-writing; admin write latencies, then lag under load")
            out.update(_latencies(rig, latency_rounds))
        if whole:
            out.update(_lag_under_load(rig))
            _progress(partitions, "memory, then the Spark audit")
            out.update(migration_scale.memory(rig, partitions))
            out.update(migration_scale.audit(rig, timeout))
        if whole or roll_only:
            _progress(partitions, "rolling the brokers into KRaft mode")
            # an all-topics Metadata answer takes seconds at 1,000,000 partitions: fewer rounds
            _roll_to_kraft(rig, timeout, 20 if partitions <= 100_000 else 5, out)
            out["leaders_elected"] = _leaders_elected(rig)  # 1: no leader change to here
        if whole:
            # last: a failover in MigrationFinished (the new leader still syncs ZooKeeper)
            _progress(partitions, "failing the active controller over: the full sync")
            out.update(migration_scale.full_sync(rig, _wait, timeout))
        out.update(migration_scale.process_peaks(rig, zk, out.get("failover_killed")))
        outputs = [rig.quorum.output(node) for node in rig.quorum.ids]
        out.update(migration_scale.slowest_event(outputs))
        # nothing is measured after this: a graceful stop would be three more controlled
        # shutdowns (minutes each at 1,000,000 partitions)
        for broker in rig.cluster.running():
            rig.cluster.kill(broker)


def _restart(rig: MigrationRig, broker: int, timeout_s: float) -> dict[str, float | None]:
    """One broker's restart until every broker serves again, by its steps (seconds):
    ``stop``, SIGTERM until it exited (its controlled shutdown, then its close);
    ``image``, its start until it loaded its image from a snapshot (KRaft mode: its own,
    or the one fetched from the leader; None when it loaded none); ``serving``, its start
    until it served clients (in KRaft mode the log replayed, caught up and unfenced);
    ``others``, from then until every broker answered Metadata listing all of them (by
    its own log's clock: the rest of ``total``); ``total``."""
    t0 = time.perf_counter()
    rig.cluster.stop_one(broker)
    stop_s = time.perf_counter() - t0
    began = time.time()
    rig.cluster.start(broker)
    rig.cluster.wait_ready(timeout_s, expected=rig.cluster.broker_ids)
    total_s = time.perf_counter() - t0
    text = rig.cluster.brokers[broker].log.read_text(errors="replace")
    image_at = log_times.first(text, "metadata image loaded from the snapshot", after=began)
    serving_at = _first(text, "serving Kafka clients", began)
    return {
        "stop": round(stop_s, 3),
        "image": None if image_at is None else round(image_at - began, 3),
        "serving": round(serving_at - began, 3),
        "others": round(total_s - stop_s - (serving_at - began), 3),
        "total": round(total_s, 3),
    }


def _leaders_elected(rig: MigrationRig) -> int:
    """How many times a controller became the quorum's leader (from their logs)."""
    return sum(rig.quorum.output(node).count(": leader in epoch ") for node in rig.quorum.ids)


def _metadata_p50(rig: MigrationRig, broker: int, rounds: int) -> float:
    """All-topics Metadata as ``broker`` answers it: from the request sent to the
    answer's last byte, not decoded (a Python client's decoding of a million partitions
    alone takes ~10 s; librdkafka's figure is :func:`_librdkafka_metadata_s`)."""
    times = []
    with rig.cluster.connect(broker, timeout_s=120) as conn:
        for _ in range(rounds):
            t0 = time.perf_counter()
            conn.metadata_frame()
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _librdkafka_metadata_s(rig: MigrationRig, rounds: int = 3) -> float | str:
    """A real Kafka client's all-topics metadata (confluent-kafka's ``list_topics``,
    librdkafka decoding; it picks the broker), the median of ``rounds``; or what
    librdkafka said when it gave up (a lost figure, not a lost run: the roll's restarts
    are measured after it)."""
    port = rig.cluster.brokers[rig.cluster.broker_ids[0]].port
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        try:
            answer = admin.list_topics(timeout=120)
        except KafkaException as exc:
            return f"failed after {time.perf_counter() - t0:.0f} s: {exc.args[0].str()}"
        times.append(time.perf_counter() - t0)
        assert answer.topics, "librdkafka saw no topic"
    return round(statistics.median(times), 4)


def _roll_to_kraft(rig: MigrationRig, timeout_s: float, rounds: int, out: dict[str, Any]) -> None:
    """The roll's figures into ``out``, each restart as soon as it is measured."""
    ids = rig.cluster.broker_ids
    zk_steps = _restart(rig, ids[-1], timeout_s)  # the baseline: ZooKeeper mode
    zk_restart = zk_steps["total"] or 0.0
    out["zk_restart_s"] = zk_restart
    out["zk_restart_steps"] = zk_steps
    zk_metadata = _metadata_p50(rig, ids[0], rounds)
    out["zk_metadata_p50_s"] = round(zk_metadata, 4)
    out["zk_metadata_librdkafka_s"] = _librdkafka_metadata_s(rig)
    kraft: list[float] = []
    steps: list[dict[str, float | None]] = []
    out["kraft_restart_each_s"] = kraft  # in roll order
    out["kraft_restart_steps"] = steps
    for broker in ids:
        rig.cluster.set_mode(broker, Mode.KRAFT)
        steps.append(_restart(rig, broker, timeout_s))
        kraft.append(steps[-1]["total"] or 0.0)
    kraft_restart = statistics.median(kraft)
    kraft_metadata = _metadata_p50(rig, ids[0], rounds)
    out.update({
        "kraft_restart_s": round(kraft_restart, 3),
        "kraft_over_zk_restart": round(kraft_restart / zk_restart, 2),
        "kraft_metadata_p50_s": round(kraft_metadata, 4),
        "kraft_over_zk_metadata": round(kraft_metadata / zk_metadata, 2),
        "kraft_metadata_librdkafka_s": _librdkafka_metadata_s(rig),
    })  # fmt: skip


def _full_applied(rig: MigrationRig) -> float | None:
    """When the last broker applied the KRaft controller's full UpdateMetadata."""
    times = []
    for child in rig.cluster.brokers.values():
        text = child.log.read_text(errors="replace")
        if "full metadata from KRaft controller" not in text:
            return None
        times.append(_first(text, "full metadata from KRaft controller"))
    return max(times)


def _create(name: str) -> cpb.CreateTopicsRequest:
    return cpb.CreateTopicsRequest(
        topics=[cpb.CreatableTopic(name=name, num_partitions=3, replication_factor=3)]
    )


def _latencies(rig: MigrationRig, rounds: int) -> dict[str, Any]:
    through_broker = KafkaAdminClient(f"127.0.0.1:{rig.cluster.brokers[1].port}", 120)
    direct = ControllerClient(rig.quorum.bootstrap, 120)
    forwarded, straight = [], []
    for i in range(rounds):
        t0 = time.perf_counter()
        through_broker.call("CreateTopics", _create(f"bench-forwarded-{i}"))
        forwarded.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        direct.call("CreateTopics", _create(f"bench-direct-{i}"))
        straight.append(time.perf_counter() - t0)
    direct.close()
    f50, f99 = percentiles(forwarded)
    d50, d99 = percentiles(straight)
    beside, answers = _forwarded_beside_metadata(rig, through_broker, rounds)
    b50, b99 = percentiles(beside)
    return {
        "forwarded_p50_s": round(f50, 4),
        "forwarded_p99_s": round(f99, 4),
        "direct_p50_s": round(d50, 4),
        "direct_p99_s": round(d99, 4),
        "forwarded_over_direct_p50": round(f50 / d50, 2),
        # the same writes while another client asks the same broker for every topic
        "forwarded_beside_metadata_p50_s": round(b50, 4),
        "forwarded_beside_metadata_p99_s": round(b99, 4),
        "metadata_answers_beside": answers,
    }


def _forwarded_beside_metadata(
    rig: MigrationRig, through_broker: KafkaAdminClient, rounds: int
) -> tuple[list[float], int]:
    """Forwarded CreateTopics through broker 1 while one connection asks it for every
    topic's Metadata back to back; the writes' latencies and the answers counted."""
    stop = threading.Event()
    answers = [0]

    def ask() -> None:
        with rig.cluster.connect(1, timeout_s=120) as conn:
            while not stop.is_set():
                conn.metadata_frame()
                answers[0] += 1

    asker = threading.Thread(target=ask, name="all-topics-metadata", daemon=True)
    asker.start()
    times = []
    try:
        for i in range(rounds):
            t0 = time.perf_counter()
            through_broker.call("CreateTopics", _create(f"bench-beside-{i}"))
            times.append(time.perf_counter() - t0)
    finally:
        stop.set()
        asker.join(180)
    return times, answers[0]


def _lag_under_load(rig: MigrationRig) -> dict[str, Any]:
    """RATE changes/s offered to the active controller (gRPC futures: no client-side
    queueing), ``migration status`` sampled beside them."""
    client = ControllerClient(rig.quorum.bootstrap, 60)
    client.call("CreateTopics", _create("bench-lag"))
    client.close()
    active = rig.status()["active_controller"]
    stop = threading.Event()
    sent: list[Any] = []

    def offer() -> None:
        with grpc.insecure_channel(rig.quorum.endpoint(active)) as channel:
            stub = controller_pb2_grpc.ControllerStub(channel)
            started = time.monotonic()
            while not stop.is_set():
                due = int((time.monotonic() - started) * RATE)
                while len(sent) < due:
                    request = cpb.IncrementalAlterConfigsRequest()
                    resource = request.resources.add(resource_type=2, resource_name="bench-lag")
                    resource.configs.add(
                        name="retention.ms", config_operation=0, value=str(1000 + len(sent))
                    )
                    sent.append(stub.IncrementalAlterConfigs.future(request, timeout=60))
                time.sleep(0.001)
            for future in sent:
                future.exception()  # waits; failures are not the point here

    offering = threading.Thread(target=offer, daemon=True)
    offering.start()
    high: list[tuple[float, int]] = []  # (when, high watermark) as the samples saw it
    lags: list[float] = []
    started = time.monotonic()
    while time.monotonic() - started < LOAD_SECONDS:
        s = rig.status()
        now = time.monotonic()
        high.append((now, s["high_watermark"]))
        zk_offset = (s["migration_znode"] or {}).get("kraft_metadata_offset", -1)
        # since when has the log held something ZooKeeper does not?
        behind = next((t for t, hw in high if hw - 1 > zk_offset), now)
        lags.append(now - behind)
        time.sleep(0.05)
    rate = len(sent) / (time.monotonic() - started)  # offered while sampled
    stop.set()
    offering.join(timeout=120)
    p50, p99 = percentiles(lags)
    return {
        "load_changes_per_s": round(rate, 1),
        "lag_p50_s": round(p50, 3),
        "lag_p99_s": round(p99, 3),
        "lag_goal_met": p99 <= 1.0,
    }


def report(results: list[dict[str, Any]]) -> None:
    for r in results:
        print(f"live migration, 3 brokers, 3 controllers, {r['partitions']:,} partitions:")
        print(
            f"  controllers' write pause (claim -> dual-writing): {r['write_pause_s']:8.3f} s "
            f"(claim -> copy committed {r['copy_s']:.3f} s, -> ZooKeeper synced "
            f"{r['sync_s']:.3f} s more); reader on the same tree {r['reader_s']:.3f} s "
            f"(ratio {r['write_pause_over_reader']:.2f}, goal <= 1.5)"
        )
        print(
            f"  until every broker applied the full metadata: {r['unavailable_s']:8.3f} s "
            f"(ratio {r['unavailable_over_reader']:.2f}); the whole copy, before and after "
            f"the claim: {r['copy_records']:,} records in {r['copy_whole_s']:.3f} s "
            f"({r['copy_records_per_s']:,}/s)"
        )
        if "forwarded_p50_s" in r:
            print(
                f"  CreateTopics through a ZooKeeper broker (forwarded): p50 "
                f"{r['forwarded_p50_s']:.4f} s, p99 {r['forwarded_p99_s']:.4f} s; straight to "
                f"the controller: p50 {r['direct_p50_s']:.4f} s, p99 {r['direct_p99_s']:.4f} s "
                f"(ratio p50 {r['forwarded_over_direct_p50']:.2f}); forwarded while another "
                f"client asks that broker for every topic: p50 "
                f"{r['forwarded_beside_metadata_p50_s']:.4f} s, p99 "
                f"{r['forwarded_beside_metadata_p99_s']:.4f} s (goal p99 <= 1 s; "
                f"{r['metadata_answers_beside']} all-topics answers meanwhile)"
            )
        if "kraft_restart_s" in r:
            print(
                f"  restart until serving: KRaft mode {r['kraft_restart_s']:.3f} s (median; "
                f"each broker in roll order {r['kraft_restart_each_s']} s), "
                f"ZooKeeper mode {r['zk_restart_s']:.3f} s (ratio "
                f"{r['kraft_over_zk_restart']:.2f}); all-topics Metadata p50 through a "
                f"KRaft-mode broker {r['kraft_metadata_p50_s']:.4f} s, ZooKeeper-mode "
                f"{r['zk_metadata_p50_s']:.4f} s (ratio {r['kraft_over_zk_metadata']:.2f}; "
                f"librdkafka's list_topics {r['kraft_metadata_librdkafka_s']} / "
                f"{r['zk_metadata_librdkafka_s']} s); "
                f"quorum leaders elected up to the roll's end: {r['leaders_elected']}"
            )
            print("  each restart's steps, s (stop / image loaded / serving / the others / total):")
            for name, steps in [
                ("ZooKeeper mode", r["zk_restart_steps"]),
                *((f"KRaft mode #{i}", s) for i, s in enumerate(r["kraft_restart_steps"], 1)),
            ]:
                shown = " / ".join("-" if v is None else f"{v:.1f}" for v in steps.values())
                print(f"    {name}: {shown}")
        if "load_changes_per_s" in r:  # not with --migration-roll-only
            print(
                f"  write-behind lag at {r['load_changes_per_s']} changes/s: p50 "
                f"{r['lag_p50_s']:.3f} s, p99 {r['lag_p99_s']:.3f} s (goal p99 <= 1 s: "
                f"{'met' if r['lag_goal_met'] else 'NOT met'})"
            )
    migration_scale.report(results)
