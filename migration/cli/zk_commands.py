"""``zk2kraft zk ...``: start a real ZooKeeper, seed a Kafka cluster, export offsets."""

from __future__ import annotations

import argparse
import csv
import signal
import sys
import threading
import time
from dataclasses import fields, replace
from pathlib import Path
from typing import TextIO

from migration.bridge.sync import MigrationStateMismatchError, check_migration_state, compare
from migration.cli.output import (
    EXIT_INTERRUPTED,
    EXIT_NOT_READY,
    EXIT_OK,
    CliError,
    exit_codes,
    print_json,
    prose,
)
from migration.cli.shared_options import (
    TO_COMPARE_PASSWORDS,
    add_password_encoder_secret_argument,
    password_encoder_secret,
)
from migration.cli.zk_source import (
    add_zk_argument,
    connect,
    open_tree,
    source_of,
    source_phrase,
)
from migration.image.log_check import check_log
from migration.local import seed
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.observability.progress import for_stream
from migration.zk.errors import ZnodeFormatError
from migration.zk.reader import read_snapshot

# The seeder's knobs (seed.ClusterSpec's fields), each an option on top of --profile.
SEED_OPTIONS = {
    "brokers": "registered brokers",
    "topics": "topics",
    "partitions": "partitions in all, spread over the topics with a skew",
    "replication_factor": "replicas per partition",
    "offline_partitions": "partitions left without a leader",
    "isr_shrunk_permille": "per mille of partitions whose ISR lost a replica",
    "topic_config_permille": "per mille of topics with config overrides",
    "quota_entities": "client quota entities (users, client ids, IPs)",
    "scram_users": "users with SCRAM credentials",
    "acl_resources": "resources with ACLs",
    "delegation_tokens": "delegation tokens",
    "pending_deletions": "topics queued for deletion (/admin/delete_topics)",
    "reassignment": "leave a partition reassignment in flight (/admin/reassign_partitions)",
    "legacy_consumer_groups": "consumer groups with offsets in ZooKeeper (/consumers)",
    "legacy_brokers": "brokers registered without a migration-capable metadata.version",
    "generated_broker_ids": "broker ids above reserved.broker.max.id, as Kafka generates them",
    "seed": "the random seed: the same seed writes the same cluster",
}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    zk = sub.add_parser("zk", help="ZooKeeper tools: start, seed, export-offsets, diff")
    zsub = zk.add_subparsers(dest="zk_command", required=True, metavar="COMMAND")
    _start(zsub)
    _seed(zsub)
    _export_offsets(zsub)
    _diff(zsub)


def _start(zsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``zk start``: run a real ZooKeeper server."""
    start = zsub.add_parser(
        "start",
        help="run a real ZooKeeper server (Ctrl-C stops it)",
        description=prose(
            """Runs a real ZooKeeper (standalone or an ensemble) on free loopback ports
            until Ctrl-C or SIGTERM, and prints its connect string."""
        ),
    )
    start.add_argument(
        "--nodes", type=int, default=1, choices=(1, 3, 5), help="1: standalone; 3, 5: an ensemble"
    )
    start.add_argument(
        "--data-dir", type=Path, metavar="DIR", help="keep data here (default: a temp dir)"
    )
    start.add_argument("--force-sync", action="store_true", help="fsync the transaction log")
    start.add_argument(
        "--json", action="store_true", help="print connect, nodes and data_dir as JSON"
    )
    exit_codes(
        start,
        {
            EXIT_OK: "stopped (Ctrl-C or SIGTERM)",
            EXIT_INTERRUPTED: "interrupted before it could start",
        },
    )
    start.set_defaults(run=run_start)


def _seed(zsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``zk seed``: write a realistic Kafka cluster into ZooKeeper."""
    s = zsub.add_parser(
        "seed",
        help="write a realistic Kafka cluster in Kafka's formats",
        description=prose(
            """Writes a realistic Kafka cluster into ZooKeeper in Kafka's exact formats: a
            profile's size, or the seeder's own (a handful of everything), with each knob
            below on top of it. --hold registers the brokers ephemerally and keeps them
            alive until Ctrl-C, as live brokers do; --no-registrations leaves /brokers/ids
            and /controller to real brokers (`cluster start --broker-ids` with the
            broker_ids it prints)."""
        ),
    )
    add_zk_argument(s)
    s.add_argument(
        "--profile", choices=sorted(seed.PROFILES), help="a preset size (default: the seeder's own)"
    )
    for name, help_text in SEED_OPTIONS.items():
        flag = "--" + name.replace("_", "-")
        if isinstance(getattr(seed.ClusterSpec, name), bool):
            s.add_argument(flag, action="store_true", default=None, help=help_text)
        else:
            s.add_argument(flag, type=int, metavar="N", help=help_text)
    s.add_argument(
        "--hold",
        action="store_true",
        help="register brokers ephemerally and hold them until Ctrl-C, as live brokers do",
    )
    s.add_argument(
        "--no-registrations",
        action="store_true",
        help="leave /brokers/ids and /controller to real broker processes (then: zk2kraft "
        "cluster start --broker-ids with the ids this prints)",
    )
    s.add_argument("--json", action="store_true", help="print the summary as JSON")
    s.set_defaults(run=run_seed)


def _export_offsets(zsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``zk export-offsets``: dump legacy consumer offsets."""
    e = zsub.add_parser(
        "export-offsets",
        help="dump legacy ZooKeeper-stored consumer offsets (CSV or JSON)",
        description=prose(
            """Prints the legacy consumer offsets ZooKeeper stores (/consumers), as CSV
            `group,topic,partition,offset` or with --json a JSON array: they are not
            metadata, are not migrated, and disappear with ZooKeeper."""
        ),
    )
    add_zk_argument(e, offline=True)
    e.add_argument("--json", action="store_true", help="print the offsets as a JSON array")
    e.set_defaults(run=run_export_offsets)


def _diff(zsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``zk diff``: what a full sync would change in ZooKeeper."""
    d = zsub.add_parser(
        "diff",
        help="what a full sync would change to make ZooKeeper equal a metadata log "
        "(writes nothing; exit 1 when they differ)",
        description=prose(
            """What a full sync would change to make ZooKeeper hold exactly what the
            metadata log holds, per kind (topics, partitions, configs with quotas and
            SCRAM, the producer-id block, ACLs, delegation tokens, pending deletions,
            missing persistent parents) and action (create / set / delete). Writes
            nothing. Password configs are compared in clear with the secret, by presence
            without it. Also says when a sync would be refused (a /migration that claims
            more than the log holds)."""
        ),
    )
    add_zk_argument(d, offline=True)
    d.add_argument(
        "--log-dir", type=Path, required=True, metavar="DIR", help="the metadata log to compare"
    )
    add_password_encoder_secret_argument(d, TO_COMPARE_PASSWORDS)
    d.add_argument("--json", action="store_true", help="print the changes as JSON")
    exit_codes(d, {EXIT_OK: "in sync", EXIT_NOT_READY: "ZooKeeper and the log differ"})
    d.set_defaults(run=run_diff)


def run_start(args: argparse.Namespace) -> int:
    stop = _stop_on_signal()
    with EmbeddedZooKeeper(
        nodes=args.nodes, base_dir=args.data_dir, force_sync=args.force_sync
    ) as zk:
        info = {"connect": zk.connect_string, "nodes": args.nodes, "data_dir": str(zk.base_dir)}
        if args.json:
            print_json(info)
        else:
            print(f"ZooKeeper serving at {zk.connect_string} (data in {zk.base_dir}); Ctrl-C stops")
        sys.stdout.flush()
        stop.wait()
    return EXIT_OK


def _stop_on_signal() -> threading.Event:
    """An event SIGINT/SIGTERM set; install it before telling anyone the process is up."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    return stop


def spec_from_args(args: argparse.Namespace) -> seed.ClusterSpec:
    spec = seed.PROFILES[args.profile] if args.profile else seed.ClusterSpec()
    overrides = {
        f.name: getattr(args, f.name)
        for f in fields(seed.ClusterSpec)
        if f.name in SEED_OPTIONS and getattr(args, f.name, None) is not None
    }
    try:
        return replace(spec, **overrides)
    except ValueError as exc:
        raise CliError(f"bad cluster size: {exc}") from None


def run_seed(args: argparse.Namespace) -> int:
    spec = spec_from_args(args)
    stop = _stop_on_signal() if args.hold else None
    started = time.monotonic()
    snap = seed.generate(spec)
    broker_ids = sorted(snap.brokers)
    if args.no_registrations:
        if args.hold:
            raise CliError("--hold and --no-registrations exclude each other")
        snap = seed.without_registrations(snap)
    with connect(args) as client:
        written = seed.write(
            client,
            snap,
            ephemeral=args.hold,
            progress=for_stream(sys.stderr, enabled=not args.json),
        )
        elapsed = time.monotonic() - started
        summary = {
            "zk": args.zk,
            "znodes": written,
            "seconds": round(elapsed, 3),
            "znodes_per_second": round(written / elapsed) if elapsed else None,
            "broker_ids": broker_ids,
            **snap.counts(),
        }
        if args.json:
            print_json(summary)
        else:
            print(
                f"seeded {written:,} znodes in {elapsed:.2f}s "
                f"({summary['znodes_per_second']:,}/s): {snap.counts()}"
            )
        if stop is not None:
            print("holding the brokers' registrations; Ctrl-C releases them", file=sys.stderr)
            stop.wait()
    return EXIT_OK


def run_export_offsets(args: argparse.Namespace) -> int:
    with open_tree(args) as tree:
        snap = read_snapshot(tree)
    rows = [
        {"group": o.group, "topic": o.topic, "partition": o.partition, "offset": o.offset}
        for o in snap.legacy_offsets
    ]
    if args.json:
        print_json(rows)
    else:
        writer = csv.DictWriter(sys.stdout, fieldnames=["group", "topic", "partition", "offset"])
        writer.writeheader()
        writer.writerows(rows)
    return EXIT_OK


DIFF_SHOWN = 10
"""Entities named per kind and action in the text report (``--json`` lists them all)."""


def run_diff(args: argparse.Namespace) -> int:
    check = check_log(args.log_dir)
    if not check.ok:
        raise CliError(f"{args.log_dir}: not a readable metadata log: {check.errors[0]}")
    secret = password_encoder_secret(args)
    image = check.metadata
    with open_tree(args) as tree:
        try:
            result = compare(tree, image, None, secret, for_stream(sys.stderr, enabled=False))
        except ZnodeFormatError as exc:
            raise CliError(f"ZooKeeper holds malformed data: {exc}") from None
    try:
        check_migration_state(result.snapshot, image)
        refusal = None
    except MigrationStateMismatchError as exc:
        refusal = str(exc)
    changes = result.plan.nonempty_changes()
    if args.json:
        print_json(
            {
                "zk": source_of(args),
                "log_dir": str(args.log_dir),
                "image_offset": image.offset,
                "image_epoch": image.epoch,
                "in_sync": result.plan.in_sync(),
                "operations": len(result.plan.ops),
                "sync_refused": refusal,
                "changes": changes,
            }
        )
    else:
        print(f"{source_phrase(args)} vs log {args.log_dir} (offset {image.offset}):")
        print_changes(changes, sys.stdout)
        if refusal:
            print(f"  a full sync would be refused: {refusal}")
    return EXIT_OK if result.plan.in_sync() else EXIT_NOT_READY


def print_changes(changes: dict[str, dict[str, list[str]]], out: TextIO) -> None:
    """What a full sync would change, a line per kind and action, naming a few."""
    if not changes:
        print("  in sync: a full sync would write nothing", file=out)
    elif set(changes) == {"parents"}:
        print("  in sync: a full sync would only create Kafka's empty parents", file=out)
    for kind, by_action in changes.items():
        for action, keys in by_action.items():
            more = f" (+{len(keys) - DIFF_SHOWN} more)" if len(keys) > DIFF_SHOWN else ""
            shown_keys = ", ".join(keys[:DIFF_SHOWN])
            print(f"  {kind:<18} {action:<7} {len(keys):>7}: {shown_keys}{more}", file=out)
