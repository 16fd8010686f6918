"""The audit, end to end: read both stores at the same offset, hand the rows to Spark,
diff, report.

1. ZooKeeper is read once with the project's reader, ``/migration`` just before and just
   after: its offset says which log offset ZooKeeper holds (without ``/migration``, a
   dry run: the whole log). If it moved during the read, the changes in between are in
   flight (:mod:`.in_flight`), not drift.
2. The image at exactly that offset: replayed from a controller's ``--log-dir``, or from
   the quorum's log copied into the work directory (``--bootstrap-controller``).
3. Both sides' entities, with digests, written as Parquet; Spark joins them, the driver
   writes the fields of the entities whose digests differ, Spark joins those.
4. The producer-id block is checked by its own rule (:func:`producer_ids_difference`).

Steps 1 and 2 are :mod:`.sides`; the options, :mod:`.options`.

Spark starts on a thread while ZooKeeper is read; the quorum's log is fetched (gRPC)
only once Spark's JVM has been launched (:func:`.sides._from_quorum`). The driver holds the
snapshot and the image (it reads them); only digests and differing fields go to Spark,
and only counts and a sample come back. Nothing is written to ZooKeeper or to the log.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from migration.audit.errors import AuditError
from migration.audit.handoff import (
    ENTITY_SCHEMA,
    FIELD_SCHEMA,
    WorkDir,
    check_location,
    check_shared,
    is_local_master,
)
from migration.audit.options import AuditOptions
from migration.audit.out_dir import (
    DIFFERENCES,
    REPORT,
    SAMPLES,
    check_out,
    report_bytes,
    write_file,
)
from migration.audit.report import AuditReport
from migration.audit.rows import Exporter
from migration.audit.sides import Sides, read_sides
from migration.common.gc_pause import gc_paused
from migration.common.text import shown
from migration.image.at_offset import check_log_dir
from migration.image.model import MetadataImage
from migration.observability.progress import NullProgress, Progress
from migration.zk import paths
from migration.zk.tree_read import ZkSnapshot

log = logging.getLogger(__name__)


JVM_LOG_LINES = 5
"""How much of the output of a Spark JVM that did not start the audit's error quotes."""


def producer_ids_difference(snap: ZkSnapshot, image: MetadataImage) -> dict[str, Any] | None:
    """The producer-id block's rule: ZooKeeper's next block must start at or above
    KRaft's next producer id, so that a ZooKeeper controller after a rollback never
    hands out an id KRaft already did (ZooKeeper may be ahead: it is never lowered)."""
    ids = image.producer_ids
    if ids is None:
        return None
    block = snap.producer_id_block
    zk_next = block.next_producer_id if block is not None else None
    if zk_next is not None and zk_next >= ids.next_producer_id:
        return None
    return {
        "kind": "producer_ids",
        "entity": paths.PRODUCER_ID_BLOCK.removeprefix("/"),
        "field": "next_producer_id",
        "zookeeper": None if zk_next is None else str(zk_next),
        "kraft": str(ids.next_producer_id),
        "difference": "only_in_kraft" if zk_next is None else "value_differs",
    }


def run_audit(options: AuditOptions, progress: Progress | None = None) -> AuditReport:
    """Audit ZooKeeper against the metadata log (see the module doc). Raises AuditError,
    ZooKeeper, log and Spark errors when it cannot compare. Spark's JVM writes to a file
    in the temporary directory unless INFO logging is on."""
    progress = progress or NullProgress()
    started = time.monotonic()
    check_shared(_master(options), options.work_dir)  # before anything is read
    if options.work_dir:
        check_location(options.work_dir, "--work-dir")
    if options.out:  # before anything is read: an --out it may not write fails at once
        check_out(options.out)
    if options.log_dir is not None:  # before Spark starts: a wrong path fails at once
        check_log_dir(options.log_dir)
    with (
        # the driver's own (a fetched log: SCRAM keys, encrypted passwords; the JVM's log)
        tempfile.TemporaryDirectory(prefix="zk2kraft-audit-") as tmp,
        # what the executors read and write: on --work-dir when it is a local path
        tempfile.TemporaryDirectory(
            prefix="zk2kraft-audit-", dir=_local_work_dir(options)
        ) as shared,
        ThreadPoolExecutor(1, thread_name_prefix="spark-start") as pool,
    ):
        quiet = not log.isEnabledFor(logging.INFO)
        jvm_log = Path(tmp) / "spark-jvm.log" if quiet else None
        rows_ready, jvm_launched = threading.Event(), threading.Event()
        scratch = (Path(shared) / "warm-up").as_uri()
        spark_started = pool.submit(
            _timed_session, options, jvm_log, rows_ready, scratch, jvm_launched
        )
        try:
            # under spark-submit its JVM runs already: this process forks nothing
            launching = None if options.spark_master is None else jvm_launched
            sides = read_sides(options, progress, Path(tmp), launching)
            rows_ready.set()
            location = (
                f"{options.work_dir.rstrip('/')}/audit-{os.getpid()}-{int(time.time())}"
                if options.work_dir and "://" in options.work_dir
                else f"{shared}/rows"
            )
            work = WorkDir.of(location)
            try:
                report = _compare(options, progress, spark_started, sides, work)
            finally:
                if "://" in location:
                    work.remove()
        finally:
            rows_ready.set()
            if options.spark_master is not None and spark_started.exception() is None:
                spark_started.result()[0].stop()
    report.seconds["total"] = time.monotonic() - started
    report.seconds = {k: round(v, 3) for k, v in report.seconds.items()}
    if options.out:
        write_file(WorkDir.of(options.out), REPORT, report_bytes(report.to_json()))
    return report


def _timed_session(
    options: AuditOptions,
    jvm_log: Path | None,
    rows_ready: threading.Event,
    scratch: str,
    jvm_launched: threading.Event,
) -> tuple[Any, float, float]:
    """The session, its start time, and the time spent warming it up: on a local master,
    and only while the driver is still reading (a small audit's rows are ready first and
    wait for no warm-up). ``jvm_launched`` is set once Spark's JVM has been launched, or
    its launch failed."""
    from migration.audit import spark_diff as sd  # noqa: PLC0415 - starts PySpark

    master = options.spark_master
    t = time.monotonic()
    try:
        spark = sd.start_session(master, jvm_log, jvm_launched)
    except Exception as exc:  # the JVM's own words say why; its log goes with the tmp dir
        said = _last_lines(jvm_log)
        if not said:
            raise
        raise AuditError(f"Spark did not start ({exc}); its JVM said: {said}") from exc
    finally:
        jvm_launched.set()
    started = time.monotonic() - t
    t = time.monotonic()
    local = master is not None and is_local_master(master)  # scratch: the driver's disk
    if local and not rows_ready.is_set():
        sd.warm_up(spark, scratch)
    return spark, started, time.monotonic() - t


def _master(options: AuditOptions) -> str:
    """The master the audit runs on: ``--spark-master``, or spark-submit's ``--master``."""
    if options.spark_master is not None:
        return options.spark_master
    from migration.audit.spark_diff import submitted_master  # noqa: PLC0415 - PySpark

    return submitted_master()


def _last_lines(path: Path | None, lines: int = JVM_LOG_LINES) -> str:
    """The last ``lines`` non-blank lines of ``path`` on one line ('' without any)."""
    if path is None or not path.exists():
        return ""
    tail = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
    return shown(" | ".join(tail[-lines:]), 1000)


def _local_work_dir(options: AuditOptions) -> str | None:
    """A local ``--work-dir``, made and absolute (Spark and Arrow take file URIs)."""
    if options.work_dir and "://" not in options.work_dir:
        local = Path(options.work_dir).resolve()
        local.mkdir(parents=True, exist_ok=True)
        return str(local)
    return None


def _entity_rows(exporter: Exporter, counted: list[int]) -> Iterator[tuple[str, str, int]]:
    for kind, key, digest, fields in exporter.digests():
        counted[0] += fields
        yield kind, key, digest


def _compare(
    options: AuditOptions,
    progress: Progress,
    spark_started: Future[tuple[Any, float, float]],
    sides: Sides,
    work: WorkDir,
) -> AuditReport:
    from migration.audit import spark_diff as sd  # noqa: PLC0415 - PySpark, once started

    at, timings = sides.at, sides.timings
    snap, since = sides.read.snapshot, sides.read.since
    report = AuditReport(
        offset=at.image.offset,
        offset_source="/migration" if sides.read.offset is not None else "log end (no /migration)",
        offset_window=(at.image.offset if since is None else since, at.image.offset),
        log_end_offset=at.log_end_offset,
    )
    t = time.monotonic()
    for side, exporter, name in (
        ("zookeeper", sides.zk, sd.ZK_ENTITIES),
        ("kraft", sides.kraft, sd.KRAFT_ENTITIES),
    ):
        progress.stage(f"exporting {side}", 0)
        fields = [0]
        with gc_paused():  # millions of short-lived tuples beside two large trees
            rows = _entity_rows(exporter, fields)
            report.rows[side] = work.write(name, ENTITY_SCHEMA, rows, progress)
        report.fields[side] = fields[0]
    progress.done()
    work.write(sd.IN_FLIGHT, ENTITY_SCHEMA, sides.in_flight)
    timings["hand_off"] = time.monotonic() - t

    t = time.monotonic()
    progress.stage("diffing on Spark", 0)
    spark, timings["spark_start"], timings["spark_warm_up"] = spark_started.result()
    timings["spark_wait"] = time.monotonic() - t
    t = time.monotonic()
    entities = sd.diff_entities(spark, work, bool(sides.in_flight))
    for (kind, cls), n in entities.counts.items():
        if cls in (sd.ONLY_IN_ZOOKEEPER, sd.ONLY_IN_KRAFT):
            report.count(kind, cls, n)
    by_field = None
    if entities.count(sd.BOTH):
        expand = [(r["kind"], r["entity"]) for r in entities.both_sides().toLocalIterator()]
        for name, exporter in ((sd.ZK_FIELDS, sides.zk), (sd.KRAFT_FIELDS, sides.kraft)):
            work.write(
                name,
                FIELD_SCHEMA,
                ((k, e, f, v) for k, e in expand for f, v in exporter.fields(k, e) or ()),
            )
        by_field = sd.field_differences(spark, work).cache()
        for row in by_field.groupBy("kind", "difference").count().collect():
            report.count(row["kind"], row["difference"], row["count"])
    diffs = sd.differences(entities, by_field)
    if any(report.differences.values()):
        ordered = diffs.orderBy("kind", "entity", "field").limit(options.samples)
        report.samples = [r.asDict() for r in ordered.collect()]
    producer = producer_ids_difference(snap, at.image)
    if producer is not None:
        report.count("producer_ids", producer["difference"], 1)
        report.samples.insert(0, producer)
    report.in_flight = entities.count(sd.IN_FLIGHT_CLASS)
    if options.out:
        _write_out(options.out, spark, diffs, producer, report)
    progress.done()
    timings["spark_diff"] = time.monotonic() - t
    report.not_compared = {
        "broker_registrations": len(snap.brokers),
        "legacy_consumer_offsets": len(snap.legacy_offsets),
        "topics_pending_deletion": len(sides.excluded),
    }
    gated = sides.zk.excluded_kinds
    if "scram_credential" in gated:
        report.not_compared["scram_credentials"] = sum(len(c) for c in snap.scram.values())
    if "delegation_token" in gated:
        report.not_compared["delegation_tokens"] = len(snap.delegation_tokens)
    report.seconds = timings
    return report


def _write_out(
    out: str, spark: Any, diffs: Any, producer: dict[str, Any] | None, report: AuditReport
) -> None:
    """``out``: every difference as Parquet (``differences.parquet``), a sample as JSON
    lines (``samples.jsonl``) and the report (``report.json``), by the rules of
    :mod:`.out_dir`."""
    from migration.audit.spark_diff import DIFFERENCE_COLUMNS  # noqa: PLC0415

    target = WorkDir.of(out)
    everything = diffs
    if producer is not None:
        extra = spark.createDataFrame(
            [tuple(producer[c] for c in DIFFERENCE_COLUMNS)], diffs.schema
        )
        everything = diffs.unionByName(extra)
    everything.write.mode("overwrite").parquet(target.spark_path(DIFFERENCES))
    report.out = target.uri
    write_file(target, SAMPLES, "".join(json.dumps(s) + "\n" for s in report.samples).encode())
