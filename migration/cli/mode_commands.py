"""``zk2kraft broker-mode`` and ``zk2kraft controller-mode``: the operator's config file
rewritten for the next step of the migration (:mod:`migration.broker.modes`).

Contracts:

- the result is checked by the same validation the process runs at start; a problem
  is reported and nothing is written;
- the file is kept: only the lines of the keys that change are touched, comments,
  blank lines, order and every other line stay as they were
  (:mod:`migration.common.properties_edit`);
- the write is atomic, through a symlink to the file it links to (the link kept), with
  the file's mode, owner and group; the previous file is kept as ``FILE.bak`` (beside
  the file written) with the same mode (:func:`migration.common.files.replace_contents`);
  a failure leaves the file as it was, and the error says whether it did;
- a file already in the mode is not written; ``--dry-run`` writes nothing;
- the change is shown as a unified diff (``--json``: an object with ``diff``); the lines
  of password-type configs show ``<redacted>``, never their values.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from migration.broker.config import parse_broker_config
from migration.broker.modes import Mode, rewrite, rewrite_controller
from migration.cli.output import (
    EXIT_ERROR,
    EXIT_OK,
    INTERNAL_ERROR,
    IO_ERROR,
    CliError,
    exit_codes,
    print_json,
    prose,
    report_config_problems,
)
from migration.common.files import (
    ChangedSinceReadError,
    UnreadableFileError,
    read_regular,
    replace_contents,
)
from migration.common.properties import (
    PROPERTIES_MAX_BYTES,
    ConfigError,
    PropertiesFile,
    kafka_value,
    load_properties,
    parse_properties,
)
from migration.common.properties_edit import edited_properties
from migration.controller.config import parse_config
from migration.operate.edits import shown_diff
from migration.records.secrets import REDACTED, is_sensitive_config

Props = dict[str, str]
BACKUP = ".bak"
_EXIT_CODES = {
    EXIT_OK: "rewritten, already in the mode, or (--dry-run) the change shown",
    EXIT_ERROR: "bad arguments, a config that cannot be read, rewritten or validated, "
    "or a failed write: the file is left as it was",
}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    b = sub.add_parser(
        "broker-mode",
        help="rewrite a broker's server.properties for a migration step (zookeeper, "
        "migrating, kraft)",
        description=prose(
            f"""Rewrites a broker's server.properties for a step of the migration (the
            migration settings added or removed; KRaft mode's process.roles and node.id
            in place of broker.id and every ZooKeeper setting; back again with --zk),
            checked by the broker's own validation. Only the changed keys' lines are
            touched (comments, order and every other line kept, new keys appended),
            written atomically with the file's mode, owner and group (a symlinked config
            is written through to the file it links to, the link kept), the previous
            file kept as FILE{BACKUP}; prints the unified diff (--dry-run: the diff only,
            nothing written; --json: an object with `diff`)."""
        ),
    )
    _config_option(b, "the broker's server.properties")
    b.add_argument(
        "--to",
        required=True,
        choices=[x.value for x in Mode],
        help="the step: zookeeper (no migration settings), migrating (the migration flag "
        "and the controller quorum added) or kraft (process.roles=broker, node.id, the "
        "ZooKeeper settings removed)",
    )
    b.add_argument(
        "--zk",
        metavar="CONNECT",
        help="zookeeper.connect, when leaving kraft mode and the file no longer has it",
    )
    b.add_argument(
        "--controller-quorum-voters",
        metavar="ID@HOST:PORT,...",
        help="controller.quorum.voters, when moving to migrating or kraft and the file "
        "does not have it",
    )
    _output_options(b)
    exit_codes(b, _EXIT_CODES)
    b.set_defaults(run=run_broker_mode)

    c = sub.add_parser(
        "controller-mode",
        help="rewrite a controller's properties: migrating, or kraft (finalize)",
        description=prose(
            f"""Rewrites a KRaft controller's properties as broker-mode rewrites a
            broker's: migrating (the migration flag and zookeeper.connect) or kraft
            (finalizing: zookeeper.metadata.migration.enable=false, zookeeper.connect
            removed), touching only the lines of the keys that change; the previous file
            is kept as FILE{BACKUP}."""
        ),
    )
    _config_option(c, "the controller's controller.properties")
    c.add_argument(
        "--to",
        required=True,
        choices=[Mode.MIGRATING.value, Mode.KRAFT.value],
        help="the step: migrating, or kraft (finalize the migration)",
    )
    c.add_argument(
        "--zk",
        metavar="CONNECT",
        help="zookeeper.connect, when moving to migrating and the file does not have it",
    )
    _output_options(c)
    exit_codes(c, _EXIT_CODES)
    c.set_defaults(run=run_controller_mode)


def _config_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--config",
        type=Path,
        required=True,
        metavar="FILE",
        help=f"{what}, rewritten in place (through a symlink, the file it links to)",
    )


def _output_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the unified diff of what would change and write nothing",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object: config, written, backup, mode, dry_run, removed, "
        "added, changed and diff",
    )


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
    config: Path = args.config
    source = load_properties(config)
    before = source.kafka_values()
    try:
        after = change(before)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    try:
        check(after, f"{config} as rewritten")
    except ConfigError as exc:
        return report_config_problems(exc, what)
    removed = sorted(k for k in before if k not in after)
    added = {k: v for k, v in after.items() if k not in before}
    changed = {k: v for k, v in after.items() if k in before and before[k] != v}
    changes: dict[str, str | None] = {**dict.fromkeys(removed), **added, **changed}
    text = edited_properties(source.text, changes)
    if {k: kafka_value(v) for k, v in parse_properties(text).items()} != after:
        raise CliError(  # a bug in the edit: the checked config is what must be written
            f"{config}: the edited file would not read back as the checked configuration; "
            "nothing written",
            INTERNAL_ERROR,
        )
    diff = shown_diff(source.text, text, str(config), f"{config} ({args.to} mode)")
    written: Path | None = None
    if changes and not args.dry_run:
        try:
            written = replace_contents(
                config,
                text.encode("latin-1"),
                backup=BACKUP,
                expected=source.text.encode("latin-1"),
            )
        except ChangedSinceReadError as exc:
            raise CliError(f"{config}: {exc.strerror}; nothing written", IO_ERROR) from None
        except OSError as exc:
            raise CliError(_write_failed(source, exc), IO_ERROR) from None
    if args.json:
        shown = {"removed": removed, "added": _redacted(added), "changed": _redacted(changed)}
        backup = None if written is None else written.with_name(written.name + BACKUP)
        print_json(
            {
                "config": str(config),
                "written": None if written is None else str(written),
                "backup": None if backup is None else str(backup),
                "mode": args.to,
                "dry_run": args.dry_run,
                **shown,
                "diff": diff,
            }
        )
    else:
        _print_text(config, args.to, bool(changes), diff, written)
    return EXIT_OK


def _write_failed(source: PropertiesFile, exc: OSError) -> str:
    """The error of a failed rewrite, saying whether the file is as it was (a failure
    after the rename, syncing the directory, leaves it rewritten)."""
    where = f" ({exc.filename})" if exc.filename else ""
    try:
        unchanged = read_regular(source.path, PROPERTIES_MAX_BYTES) == source.text.encode("latin-1")
    except (OSError, UnreadableFileError):
        unchanged = False
    state = "the file is unchanged" if unchanged else "check the file: it may be rewritten"
    return f"{source.path}: cannot write the rewritten file: {exc.strerror or exc}{where}; {state}"


def _redacted(values: Props) -> Props:
    return {k: REDACTED if is_sensitive_config(k) else v for k, v in values.items()}


def _print_text(config: Path, mode: str, changes: bool, diff: str, written: Path | None) -> None:
    if not changes:
        print(f"{config} is already in {mode} mode: nothing to change")
        return
    through = f" (the file it links to: {config.resolve()})" if config.is_symlink() else ""
    if written is None:
        print(f"Would rewrite {config}{through} for {mode} mode:")
    else:
        backup = written.with_name(written.name + BACKUP)
        print(f"Rewrote {config}{through} for {mode} mode; the previous file is {backup}:")
    print(diff, end="")
