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

from migration.cli.output import EXIT_NOT_READY, EXIT_OK, CliError, exit_codes, print_json
from migration.image.kafka_export import ExportError, export_kafka
from migration.image.log_check import check_log
from migration.kafka_log.directory import KafkaMetadataLog
from migration.kafka_log.files import Unknown
from migration.kafka_log.formats import FORMATS, open_log
from migration.kafka_log.mapping import to_proto
from migration.log.readable import ReadableLog
from migration.observability.progress import for_stream
from migration.records.json_form import record_json

LOG_DIR_HELP = "the log's directory: a metadata.log.dir, or a Kafka controller's"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    lg = sub.add_parser("log", help="a metadata log: dump, verify, export")
    lsub = lg.add_subparsers(dest="log_command", required=True, metavar="COMMAND")

    d = lsub.add_parser("dump", help="print the records of a metadata log")
    d.add_argument("--log-dir", type=Path, required=True, help=LOG_DIR_HELP)
    _format_args(d)
    d.add_argument(
        "--from",
        dest="from_offset",
        type=int,
        metavar="OFFSET",
        help="start at this offset (default: the log's start, snapshot included)",
    )
    d.add_argument("--json", action="store_true", help="one JSON object per record per line")
    d.add_argument(
        "--show-secrets",
        action="store_true",
        help="print SCRAM material and password configs instead of <redacted>",
    )
    d.set_defaults(run=run_dump)

    v = lsub.add_parser("verify", help="check every batch, snapshot and record of a log")
    v.add_argument("--log-dir", type=Path, required=True, help=LOG_DIR_HELP)
    _format_args(v)
    v.add_argument("--json", action="store_true", help="print the check as JSON")
    exit_codes(v, {EXIT_OK: "clean", EXIT_NOT_READY: "corrupt (the file and byte are named)"})
    v.set_defaults(run=run_verify)

    e = lsub.add_parser("export", help="write a log's image as a Kafka metadata directory")
    e.add_argument("--log-dir", type=Path, required=True, help="the log to read (either format)")
    e.add_argument("--format", choices=["kafka"], required=True, help="the format to write")
    e.add_argument("--out", type=Path, required=True, help="a new (or empty) directory")
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
    out = sys.stdout
    log = open_log(args.log_dir, args.format, skip_unknown=args.skip_unknown)
    with closing(log):
        for problem in log.problems:
            print(f"warning: {problem}", file=sys.stderr)
        for obj in _entries(log, args.from_offset, args.show_secrets):
            out.write(json.dumps(obj) if args.json else _text(obj))
            out.write("\n")
        if log.torn_tail is not None:
            print(f"warning: {log.torn_tail} (torn tail, not shown)", file=sys.stderr)
    return EXIT_OK


def _entries(log: ReadableLog, from_offset: int | None, secrets: bool) -> Iterator[dict[str, Any]]:
    if not isinstance(log, KafkaMetadataLog):
        for offset, epoch, record in log.records(from_offset):
            yield record_json(record, offset, epoch, show_secrets=secrets)
        return
    start = log.start_offset if from_offset is None else from_offset
    for at, decoded in log.kafka_batches(start):
        epoch = at.header.leader_epoch
        for offset, r in decoded:
            if offset < start:
                continue
            if isinstance(r, Unknown):
                yield {"offset": offset, "epoch": epoch, "type": "Unknown", "problem": r.problem}
                continue
            obj = record_json(to_proto(r), offset, epoch, show_secrets=secrets)
            obj["version"] = r.version
            if r.value.unknown_tags:
                obj["unknown_tagged_fields"] = {
                    str(tag): raw.hex() for tag, raw in sorted(r.value.unknown_tags.items())
                }
            yield obj


def _text(obj: dict[str, Any]) -> str:
    head = f"{obj.pop('offset'):>10} e{obj.pop('epoch')} {obj.pop('type')}"
    fields = " ".join(f"{k}={json.dumps(v)}" for k, v in obj.items())
    return f"{head} {fields}".rstrip()


def run_verify(args: argparse.Namespace) -> int:
    check = check_log(args.log_dir, args.format, args.skip_unknown)
    if args.json:
        print_json(check.to_json())
    else:
        verdict = "OK" if check.ok else "CORRUPT"
        print(
            f"{check.log_dir}: {verdict}: "
            f"offsets {check.start_offset}..{check.end_offset - 1}, "
            f"{check.records:,} records in {check.batches:,} batches, "
            f"{check.segments} segment(s), {check.snapshots} snapshot(s) ({check.format} format)"
        )
        for e in check.errors:
            print(f"  error: {e}")
        for w in check.warnings:
            print(f"  warning: {w}")
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
