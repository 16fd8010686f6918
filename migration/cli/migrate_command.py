"""``zk2kraft migrate --dry-run``: copy a live ZooKeeper into a fresh local log.

The live migration is not started from here: as in Kafka, it starts by configuration
and restart (controllers formatted with ``storage format`` and started with
``zookeeper.metadata.migration.enable=true``, then the brokers restarted with it; see
``migration status``). The dry run proves the data converts and measures how long the real
copy will hold the active controller.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from migration.cli.output import EXIT_OK, CliError, print_json, prose
from migration.cli.shared_options import (
    add_password_encoder_secret_argument,
    password_encoder_secret,
)
from migration.cli.zk_source import add_zk_argument, open_tree, source_of
from migration.controller.config import DEFAULT_MIN_BATCH_SIZE
from migration.driver.copy import DEFAULT_BATCH_BYTES, CopyManifest, dry_run
from migration.observability.progress import for_stream


def positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return value


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "migrate",
        help="with --dry-run (required): copy ZooKeeper's metadata into a fresh local "
        "metadata log, as the migration will, and prove it converts",
        description=prose(
            """Only a dry run: the live migration starts by configuration and restart
            (controllers formatted with `storage format` and started with
            zookeeper.metadata.migration.enable=true, then the brokers restarted with
            it; `migration status` follows it), so without --dry-run this is refused.

            Copies the live Kafka tree into a fresh local metadata log as the migration
            will (one transaction, batches of --min-batch-size records bounded by
            bytes), replays it to prove it converts, and prints a manifest: records per
            type, batches, bytes, read / write / verify time, the ZooKeeper brokers (not
            copied: each registers itself with the controller). Broker password configs,
            which Kafka keeps in ZooKeeper encrypted with password.encoder.secret, are
            decrypted with the secret read from --password-encoder-secret-file FILE;
            without it (or with the wrong one) the copy stops, naming the config: a
            password is never copied as ciphertext. Writes nothing to ZooKeeper; on any
            error leaves no log behind."""
        ),
    )
    add_zk_argument(p, offline=True)
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="copy into a fresh local log; write nothing to ZooKeeper",
    )
    p.add_argument(
        "--log-dir", type=Path, required=True, metavar="DIR", help="where the log is written"
    )
    p.add_argument(
        "--batch-bytes",
        type=positive_int,
        default=DEFAULT_BATCH_BYTES,
        metavar="N",
        help=f"largest record batch (default {DEFAULT_BATCH_BYTES})",
    )
    p.add_argument(
        "--min-batch-size",
        type=positive_int,
        default=DEFAULT_MIN_BATCH_SIZE,
        metavar="N",
        help="records a batch, as the controllers' zookeeper.metadata.migration.min.batch.size "
        f"(default {DEFAULT_MIN_BATCH_SIZE})",
    )
    add_password_encoder_secret_argument(
        p,
        "which encrypts password configs in ZooKeeper (read from FILE, never given on the "
        "command line)",
    )
    p.add_argument("--json", action="store_true", help="print the manifest as JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if not args.dry_run:
        raise CliError(
            "the live migration starts by configuration and restart: controllers formatted "
            "(zk2kraft storage format) and started with zookeeper.metadata.migration.enable=true, "
            "then the brokers restarted with it; `zk2kraft migration status` follows it. "
            "This command only runs a --dry-run"
        )
    secret = password_encoder_secret(args)
    with open_tree(args) as tree:
        manifest = dry_run(
            tree,
            args.log_dir,
            batch_bytes=args.batch_bytes,
            min_batch_size=args.min_batch_size,
            progress=for_stream(sys.stderr, enabled=not args.json),
            password_encoder_secret=secret,
        )
    if args.json:
        print_json(manifest.to_json())
    else:
        print_manifest(manifest, source_of(args), sys.stdout)
    return EXIT_OK


def print_manifest(m: CopyManifest, zk: str, out: TextIO) -> None:
    t = m.transaction
    out.write(
        f"Dry-run copy of {zk} into {m.log_dir}: {m.total_records:,} records in "
        f"{m.batches:,} batches ({m.bytes / 1048576:.1f} MiB), one transaction "
        f"(offsets {t['begin_offset']}..{t['end_offset']})\n"
    )
    out.write(f"  read    the data of {m.znodes_read:,} Kafka znode(s) in {m.read_seconds:.2f}s\n")
    out.write(f"  write   {m.write_seconds:.2f}s (translate + append, fsync per batch)\n")
    out.write(f"  verify  {m.verify_seconds:.2f}s (replayed into an image)\n")
    out.write(f"  metadata.version {m.metadata_version} (from {m.metadata_version_source})\n")
    out.write(
        f"  ZooKeeper brokers {', '.join(map(str, m.zk_brokers)) or 'none'} (not copied: "
        "each registers itself with the controller)\n"
    )
    out.write("\nRecords by type\n")
    for name, count in sorted(m.records.items(), key=lambda kv: -kv[1]):
        out.write(f"  {name:<30} {count:>10,}\n")
    skipped = {k: v for k, v in m.skipped.items() if v}
    if skipped:
        out.write("\nLeft out\n")
        for name, count in skipped.items():
            out.write(f"  {name.replace('_', ' '):<30} {count:>10,}\n")
