"""``zk2kraft log dump``, ``log verify`` and ``log export``: read a metadata log
directory -- the project's own or a Kafka controller's ``__cluster_metadata`` -- and
write one in Kafka's format.

All open the log read-only (no lock, nothing truncated), so they can inspect the log
of a running controller. ``--format auto`` (the default) tells the two formats apart
by themselves. ``dump --json`` prints the record JSON contract of
:mod:`migration.records.json_form`, one object per line; a Kafka log's records add
``version`` (the record version Kafka wrote) and, when present,
``unknown_tagged_fields`` (tag -> hex); with ``--skip-unknown`` a record this reader
does not know is a ``{"type": "Unknown", "problem": ...}`` line instead of an error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

from migration.cli.output import (
    EXIT_NOT_READY,
    EXIT_OK,
    CliError,
    exit_codes,
    print_json,
    prose,
    warning,
)
from migration.common.text import printable_line
from migration.image.kafka_export import ExportError, export_kafka
from migration.image.log_check import check_log
from migration.kafka_log.directory import KafkaMetadataLog
from migration.kafka_log.files import Unknown
from migration.kafka_log.formats import FORMATS, open_log
from migration.kafka_log.mapping import to_proto
from migration.kafka_log.records import KafkaRecord
from migration.log.errors import CorruptLogError, OffsetOutOfRangeError
from migration.log.readable import ReadableLog
from migration.log.snapshots import SnapshotId
from migration.observability.progress import for_stream
from migration.records.json_form import record_json

LOG_DIR_HELP = "the log's directory: a metadata.log.dir, or a Kafka controller's"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    lg = sub.add_parser("log", help="a metadata log: dump, verify, export")
    lsub = lg.add_subparsers(dest="log_command", required=True, metavar="COMMAND")
    _dump(lsub)
    _verify(lsub)
    _export(lsub)


def _dump(lsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``log dump``: print the records of a metadata log."""
    d = lsub.add_parser(
        "dump",
        help="print the records of a metadata log",
        description=prose(
            """Prints a metadata log's records, the project's or a Kafka controller's
            __cluster_metadata (found by itself; docs/kafka-log.md), control records
            included: the newest snapshot's records first (each marked with the
            snapshot's end offset and epoch), then the segments' records after it.
            --from OFFSET: the segments' records from there when the segments hold it
            (also below the log start offset, where Kafka keeps them until the whole
            segment is deleted), else the snapshot that covers it and what follows; an
            offset neither holds is a bad argument (exit 2). --json: one object per
            record per line (docs/cli.md#the-record-json-log-dump---json).
            --skip-unknown: a record of an unknown type or version is shown and passed
            over instead of stopping the read. Damage stops the dump where it lies, after
            what it could show, and exits 1 naming file and byte; damage elsewhere in the
            log is named too and exits 1."""
        ),
    )
    d.add_argument("--log-dir", type=Path, required=True, metavar="DIR", help=LOG_DIR_HELP)
    _format_args(d)
    d.add_argument(
        "--from",
        dest="from_offset",
        type=int,
        metavar="OFFSET",
        help="start at this offset: the segments' records from there when they hold it, "
        "else the snapshot covering it (default: the newest snapshot, then the segments "
        "after it)",
    )
    d.add_argument("--json", action="store_true", help="one JSON object per record per line")
    d.add_argument(
        "--show-secrets",
        action="store_true",
        help="print SCRAM material and password configs instead of <redacted>",
    )
    exit_codes(
        d,
        {
            EXIT_OK: "the records shown, the log undamaged",
            EXIT_NOT_READY: "damage: where the dump stopped, or elsewhere in the log (the file "
            "and byte are named)",
        },
    )
    d.set_defaults(run=run_dump)


def _verify(lsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``log verify``: check and replay a metadata log."""
    v = lsub.add_parser(
        "verify",
        help="check every batch, snapshot and record of a log, and replay it",
        description=prose(
            """Reports the log start offset, each snapshot (end offset, epoch, records)
            and each segment (offsets, batches, records) apart; reads every snapshot
            whole and checks every batch of every segment -- frame, CRC, records,
            continuity, also the batches below the log start offset or covered by a
            snapshot -- going on past damage, and replays the records from the newest
            whole snapshot on into an image. Each problem names its file, byte and
            region: a snapshot, the segments below the log start offset, the segments a
            snapshot covers, or the log replayed. Read-only: safe on a running
            controller's log. The --json object:
            docs/cli.md#the-record-json-log-dump---json."""
        ),
    )
    v.add_argument("--log-dir", type=Path, required=True, metavar="DIR", help=LOG_DIR_HELP)
    _format_args(v)
    v.add_argument("--json", action="store_true", help="print the check as JSON")
    exit_codes(v, {EXIT_OK: "clean", EXIT_NOT_READY: "corrupt (the file and byte are named)"})
    v.set_defaults(run=run_verify)


def _export(lsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``log export``: write a log's image as a Kafka metadata directory."""
    e = lsub.add_parser(
        "export",
        help="write a log's image as a Kafka metadata directory",
        description=prose(
            """Writes the image of the log (at its end, or at --offset) as a Kafka
            metadata directory: a snapshot in __cluster_metadata-0, bootstrap.checkpoint,
            meta.properties; `kafka-metadata-shell --snapshot` reads the snapshot. --out
            must be new or empty."""
        ),
    )
    e.add_argument(
        "--log-dir", type=Path, required=True, metavar="DIR", help="the log to read (either format)"
    )
    e.add_argument("--format", choices=["kafka"], required=True, help="the format to write")
    e.add_argument(
        "--out", type=Path, required=True, metavar="DIR", help="a new (or empty) directory"
    )
    e.add_argument("--offset", type=int, help="the image at this offset (default: the end)")
    e.add_argument("--cluster-id", help="default: the source's meta.properties")
    e.add_argument("--node-id", type=int, default=1, help="meta.properties' node.id")
    e.add_argument("--json", action="store_true", help="print what was written as JSON")
    e.set_defaults(run=run_export)


def _format_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--format", choices=FORMATS, default="auto", help="the log's format (default: auto)"
    )
    p.add_argument(
        "--skip-unknown",
        action="store_true",
        help="show a record of an unknown type or version and go on, instead of stopping",
    )


def run_dump(args: argparse.Namespace) -> int:
    """The newest snapshot's records, then the segments' after it (``--from``: the
    segments from that offset when they hold it, else the snapshot that covers it).
    Damage stops the dump where it lies, after what was shown, with exit 1; damage
    outside what was shown is named and also exits 1."""
    out = sys.stdout
    log = open_log(args.log_dir, args.format, skip_unknown=args.skip_unknown)
    with closing(log):
        try:
            for obj in _entries(log, args.from_offset, args.show_secrets):
                out.write(json.dumps(obj) if args.json else _text(obj))
                out.write("\n")
        except CorruptLogError as exc:
            out.flush()
            print(
                f"error: {printable_line(str(exc))} "
                "(the dump stops here; `log verify` checks the rest)",
                file=sys.stderr,
            )
            return EXIT_NOT_READY
        except OffsetOutOfRangeError as exc:
            raise CliError(str(exc)) from None
        if log.torn_tail is not None:
            warning(f"{log.torn_tail} (torn tail, not shown)")
        elsewhere = [*log.problems, *_older_snapshots_damage(log)]
        for problem in elsewhere:
            print(
                f"error: {printable_line(str(problem))} (outside what was shown)", file=sys.stderr
            )
    return EXIT_NOT_READY if elsewhere else EXIT_OK


def _older_snapshots_damage(log: ReadableLog) -> Iterator[CorruptLogError]:
    """Damage in the snapshots the dump does not show (all but the newest): a Kafka
    log's are checked by frame and CRC, the project's own read whole."""
    for snapshot in log.snapshots()[:-1]:
        if isinstance(log, KafkaMetadataLog):
            if (damage := log.snapshot_damage(snapshot)) is not None:
                yield damage
            continue
        try:
            for _ in log.read_snapshot(snapshot):
                pass
        except CorruptLogError as exc:
            yield exc


def _entries(log: ReadableLog, from_offset: int | None, secrets: bool) -> Iterator[dict[str, Any]]:
    snapshots = log.snapshots()
    newest = snapshots[-1] if snapshots else None
    start, end = log.start_offset, log.end_offset
    if from_offset is not None and start <= from_offset < end:
        yield from _segment_entries(log, from_offset, secrets)
        return
    if from_offset is not None and not (newest is not None and from_offset < newest.end_offset):
        if from_offset == end:
            return
        held = f"the segments hold [{start}, {end})"
        if newest is not None:
            held += f", the snapshot {newest.file_name} the offsets below {newest.end_offset}"
        raise OffsetOutOfRangeError(f"offset {from_offset} is outside the log: {held}")
    if newest is not None:
        yield from _snapshot_entries(log, newest, secrets)
        start = max(start, newest.end_offset)
    if start < end:
        yield from _segment_entries(log, start, secrets)


def _snapshot_entries(
    log: ReadableLog, snapshot: SnapshotId, secrets: bool
) -> Iterator[dict[str, Any]]:
    """A snapshot's records, each marked with the snapshot's end offset and epoch (a
    snapshot's records have no log offsets of their own)."""
    mark = {"end_offset": snapshot.end_offset, "epoch": snapshot.epoch}
    if isinstance(log, KafkaMetadataLog):
        for _, decoded in log.kafka_snapshot(snapshot):
            for _, r in decoded:
                obj = _kafka_json(r, None, snapshot.epoch, secrets)
                obj["snapshot"] = mark
                yield obj
        return
    for record in log.read_snapshot(snapshot):
        obj = record_json(record, 0, snapshot.epoch, show_secrets=secrets)
        obj.update(offset=None, snapshot=mark)
        yield obj


def _segment_entries(log: ReadableLog, start: int, secrets: bool) -> Iterator[dict[str, Any]]:
    if not isinstance(log, KafkaMetadataLog):
        for offset, epoch, record in log.records(start):
            yield record_json(record, offset, epoch, show_secrets=secrets)
        return
    for at, decoded in log.kafka_batches(start):
        for offset, r in decoded:
            if offset >= start:
                yield _kafka_json(r, offset, at.header.leader_epoch, secrets)


def _kafka_json(
    r: KafkaRecord | Unknown, offset: int | None, epoch: int, secrets: bool
) -> dict[str, Any]:
    """A Kafka record's JSON: the project's form plus the version Kafka wrote and any
    tagged fields this reader does not know (tag -> hex)."""
    if isinstance(r, Unknown):
        return {"offset": offset, "epoch": epoch, "type": "Unknown", "problem": r.problem}
    obj = record_json(to_proto(r), 0, epoch, show_secrets=secrets)
    obj["offset"] = offset
    obj["version"] = r.version
    if r.value.unknown_tags:
        obj["unknown_tagged_fields"] = {
            str(tag): raw.hex() for tag, raw in sorted(r.value.unknown_tags.items())
        }
    return obj


def _text(obj: dict[str, Any]) -> str:
    offset, snapshot = obj.pop("offset"), obj.pop("snapshot", None)
    at = f"<{snapshot['end_offset']}" if snapshot is not None else str(offset)
    head = f"{at:>10} e{obj.pop('epoch')} {obj.pop('type')}"
    fields = " ".join(f"{k}={json.dumps(v)}" for k, v in obj.items())
    return f"{head} {fields}".rstrip()


def run_verify(args: argparse.Namespace) -> int:
    check = check_log(args.log_dir, args.format, args.skip_unknown)
    if args.json:
        print_json(check.to_json())
    else:
        verdict = "OK" if check.ok else "CORRUPT"
        print(
            f"{check.log_dir}: {verdict} ({check.format} format): log start offset "
            f"{check.log_start_offset}, end offset {check.end_offset}"
        )
        for snap in check.snapshot_files:
            state = "" if snap["ok"] else ", DAMAGED"
            print(
                f"  snapshot {snap['file']}: offsets below {snap['end_offset']}, epoch "
                f"{snap['epoch']}, {snap['records']:,} records{state}"
            )
        for seg in check.segment_files:
            held = (
                f"offsets {seg['first_offset']}..{seg['end_offset'] - 1}"
                if seg["batches"]
                else "no whole batch"
            )
            print(
                f"  segment {seg['file']}: {held}, {seg['records']:,} records in "
                f"{seg['batches']:,} batches"
            )
        print(
            f"  in all: {check.records:,} records in {check.batches:,} batches in "
            f"{check.segments} segment(s), {check.snapshots} snapshot(s)"
        )
        for e in check.errors:
            print(f"  error: {printable_line(str(e))}")
        for w in check.warnings:
            print(f"  warning: {printable_line(str(w))}")
    return EXIT_OK if check.ok else EXIT_NOT_READY


def run_export(args: argparse.Namespace) -> int:
    try:
        done = export_kafka(
            args.log_dir,
            args.out,
            offset=args.offset,
            cluster_id=args.cluster_id,
            node_id=args.node_id,
            progress=for_stream(sys.stderr, enabled=not args.json),
        )
    except ExportError as exc:
        raise CliError(str(exc)) from None
    if args.json:
        print_json(
            {
                "out": str(done.out),
                "snapshot": str(done.snapshot),
                "end_offset": done.end_offset,
                "epoch": done.epoch,
                "records": done.records,
                "cluster_id": done.cluster_id,
            }
        )
    else:
        print(
            f"wrote {done.snapshot} ({done.records:,} records, offsets below "
            f"{done.end_offset}, epoch {done.epoch}), bootstrap.checkpoint and meta.properties"
        )
    return EXIT_OK
