"""``zk2kraft broker-mode`` and ``zk2kraft controller-mode``: a config file rewritten for
the next step of the migration (:mod:`migration.broker.modes`), checked by the same
validation the process runs at start, written whole and atomically through a symlink
to the file it links to, the link kept, the file's permissions kept
(:func:`migration.common.files.replace_contents`); the changes shown (``--json``: ``written``
names the file replaced), ``--dry-run`` writes nothing."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from migration.broker.config import parse_broker_config
from migration.broker.modes import Mode, rewrite, rewrite_controller
from migration.cli.output import EXIT_OK, CliError, print_json, report_config_problems
from migration.common.files import replace_contents
from migration.common.properties import ConfigError, read_properties, render_properties
from migration.controller.config import parse_config

Props = dict[str, str]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    b = sub.add_parser(
        "broker-mode",
        help="rewrite a broker's server.properties for a migration step (zookeeper, "
        "migrating, kraft)",
    )
    b.add_argument("--config", type=Path, required=True, help="server.properties (rewritten)")
    b.add_argument("--to", required=True, choices=[x.value for x in Mode])
    b.add_argument("--zk", metavar="CONNECT", help="zookeeper.connect (to leave KRaft mode)")
    b.add_argument("--controller-quorum-voters", metavar="ID@HOST:PORT,...")
    b.add_argument("--dry-run", action="store_true", help="show the changes; write nothing")
    b.add_argument("--json", action="store_true")
    b.set_defaults(run=run_broker_mode)

    c = sub.add_parser(
        "controller-mode",
        help="rewrite a controller's properties: migrating, or kraft (finalize)",
    )
    c.add_argument("--config", type=Path, required=True, help="controller.properties")
    c.add_argument("--to", required=True, choices=[Mode.MIGRATING.value, Mode.KRAFT.value])
    c.add_argument("--zk", metavar="CONNECT", help="zookeeper.connect (to migrate)")
    c.add_argument("--dry-run", action="store_true", help="show the changes; write nothing")
    c.add_argument("--json", action="store_true")
    c.set_defaults(run=run_controller_mode)


def run_broker_mode(args: argparse.Namespace) -> int:
    return _rewrite_file(
        args,
        "broker",
        lambda p: rewrite(
            p, Mode(args.to), zk_connect=args.zk, voters=args.controller_quorum_voters
        ),
        parse_broker_config,
    )


def run_controller_mode(args: argparse.Namespace) -> int:
    return _rewrite_file(
        args,
        "controller",
        lambda p: rewrite_controller(p, Mode(args.to), zk_connect=args.zk),
        parse_config,
    )


def _rewrite_file(
    args: argparse.Namespace,
    what: str,
    change: Callable[[Props], Props],
    check: Callable[[Props, str], object],
) -> int:
    before = read_properties(args.config)
    try:
        after = change(before)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    try:
        check(after, f"{args.config} as rewritten")
    except ConfigError as exc:
        return report_config_problems(exc, what)
    removed = sorted(k for k in before if k not in after)
    added = {k: v for k, v in after.items() if k not in before}
    changed = {k: v for k, v in after.items() if k in before and before[k] != v}
    written: Path | None = None
    if not args.dry_run:
        text = render_properties(after, f"zk2kraft {what}-mode --to {args.to}")
        written = replace_contents(args.config, text.encode())
    report = {
        "config": str(args.config),
        "written": None if written is None else str(written),
        "mode": args.to,
        "dry_run": args.dry_run,
        "removed": removed,
        "added": added,
        "changed": changed,
    }
    if args.json:
        print_json(report)
    else:
        verb = "Would rewrite" if args.dry_run else "Rewrote"
        linked = args.config.is_symlink()
        through = f" (the file it links to: {args.config.resolve()})" if linked else ""
        print(f"{verb} {args.config}{through} for {args.to} mode")
        for k in removed:
            print(f"  - {k}")
        for k, v in {**added, **changed}.items():
            print(f"  + {k}={v}")
    return EXIT_OK
