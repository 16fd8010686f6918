"""``zk2kraft log dump`` and ``zk2kraft log verify``: read a metadata log directory.

Both open the log read-only (no lock, nothing truncated), so they can inspect the
log of a running controller. ``dump --json`` prints the record JSON contract of
:mod:`migration.records.json_form`, one object per line.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from migration.cli.output import EXIT_NOT_READY, EXIT_OK, print_json
from migration.image.log_check import check_log
from migration.log.metadata_log import MetadataLog
from migration.records.json_form import record_json


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    lg = sub.add_parser("log", help="inspect a metadata log: dump, verify")
    lsub = lg.add_subparsers(dest="log_command", required=True)

    d = lsub.add_parser("dump", help="print the records of a metadata log")
    d.add_argument("--log-dir", type=Path, required=True)
    d.add_argument("--from", dest="from_offset", type=int, metavar="OFFSET")
    d.add_argument("--json", action="store_true", help="one JSON object per record per line")
    d.add_argument(
        "--show-secrets",
        action="store_true",
        help="print SCRAM material and password configs instead of <redacted>",
    )
    d.set_defaults(run=run_dump)

    v = lsub.add_parser("verify", help="check every batch, snapshot and record of a log")
    v.add_argument("--log-dir", type=Path, required=True)
    v.add_argument("--json", action="store_true")
    v.set_defaults(run=run_verify)


def run_dump(args: argparse.Namespace) -> int:
    out = sys.stdout
    with MetadataLog(args.log_dir, read_only=True) as log:
        for problem in log.problems:
            print(f"warning: {problem}", file=sys.stderr)
        for offset, epoch, record in log.records(args.from_offset):
            obj = record_json(record, offset, epoch, show_secrets=args.show_secrets)
            out.write(json.dumps(obj) if args.json else _text(obj))
            out.write("\n")
        if log.torn_tail is not None:
            print(f"warning: {log.torn_tail} (torn tail, not shown)", file=sys.stderr)
    return EXIT_OK


def _text(obj: dict[str, Any]) -> str:
    head = f"{obj.pop('offset'):>10} e{obj.pop('epoch')} {obj.pop('type')}"
    fields = " ".join(f"{k}={json.dumps(v)}" for k, v in obj.items())
    return f"{head} {fields}".rstrip()


def run_verify(args: argparse.Namespace) -> int:
    check = check_log(args.log_dir)
    if args.json:
        print_json(check.to_json())
    else:
        verdict = "OK" if check.ok else "CORRUPT"
        print(
            f"{check.log_dir}: {verdict}: offsets {check.start_offset}..{check.end_offset - 1}, "
            f"{check.records:,} records in {check.batches:,} batches, "
            f"{check.segments} segment(s), {check.snapshots} snapshot(s)"
        )
        for e in check.errors:
            print(f"  error: {e}")
        for w in check.warnings:
            print(f"  warning: {w}")
    return EXIT_OK if check.ok else EXIT_NOT_READY
