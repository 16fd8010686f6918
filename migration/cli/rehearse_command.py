"""``zk2kraft rehearse (--zk CONNECT | --zk-data-dir DIR [--zk-chroot P]) --out DIR [--json]
[--keep]``: the whole migration rehearsed on a local copy of production's metadata
(:mod:`migration.rehearse.run`), production only read, once.

Exit 0 when the rehearsal went through cleanly, 1 when it names problems (a preflight
blocker on production's tree, an audit difference, a failed drill or phase: each on
stderr, and in the report), 2 on an error (production could not be read, bad
arguments). Progress lines on stderr; the reports in ``--out``; a short summary on
stdout, or with ``--json`` report.json's object. Ctrl-C and SIGTERM stop the local
processes and remove the local directories (``--keep`` leaves them, and says where),
the report (once production was read) written with the problem ``interrupted``, before
the command exits 130.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from migration.cli.output import (
    EXIT_ERROR,
    EXIT_NOT_READY,
    EXIT_OK,
    CliError,
    exit_codes,
    print_json,
    prose,
)
from migration.cli.shared_options import (
    add_password_encoder_secret_argument,
    password_encoder_secret,
)
from migration.cli.zk_source import add_zk_argument, offline_dirs, open_tree, source_of
from migration.common.signals import terminated_as_interrupt
from migration.local.kafka_cluster import VERSION as KAFKA_VERSION
from migration.local.kafka_release import KafkaUnavailableError, kafka_release
from migration.observability.progress import for_stream
from migration.rehearse.report import Report, to_json
from migration.zk.client import ZkClient

if TYPE_CHECKING:
    from migration.rehearse.run import Outcome


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "rehearse",
        help="rehearse the whole migration on a local copy of production's metadata "
        "(production only read) and report what production will see",
        description=prose(
            """Rehearses the whole migration on a local copy of production's tree (read
            once, read-only): local brokers with production's broker ids, three
            controllers (see --engine), the brokers rolled with the flag, the copy,
            dual-write under a synthetic admin workload, the audit, a rollback drill from
            MigrationActive, a second migration, the roll into KRaft mode, finalization;
            writes report.json and a self-contained report.html into DIR (see
            docs/operations.md#rehearsing-on-productions-copy). Progress on stderr; a
            summary on stdout, or report.json's object with --json. The local cluster's
            directories are removed at the end (also on Ctrl-C/SIGTERM) unless --keep."""
        ),
    )
    add_zk_argument(p, offline=True)
    p.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="DIR",
        help="where report.json and report.html are written (created if missing)",
    )
    p.add_argument(
        "--keep",
        action="store_true",
        help="leave the local cluster's directories (ZooKeeper, brokers, controllers and "
        "their logs; mode 0700: with --password-encoder-secret-file their properties hold "
        "the secret) for inspection, and print where",
    )
    add_password_encoder_secret_argument(
        p,
        "when production's ZooKeeper holds encrypted password configs (the copy decrypts "
        "them; read from FILE, written only into the local cluster's properties)",
    )
    p.add_argument(
        "--workload-seconds",
        type=float,
        default=10.0,
        metavar="S",
        help="how long the synthetic admin workload runs while dual-writing (default 10)",
    )
    p.add_argument(
        "--engine",
        choices=("auto", "kafka", "zk2kraft"),
        default="auto",
        help="what runs the local cluster: kafka (Apache Kafka 3.9.2's own brokers and "
        "controllers, driven as `zk2kraft kafka migrate` drives production), zk2kraft (its "
        "own), or auto (default: kafka when installed -- make kafka -- and production has at "
        "most 6 brokers); report.json's engine says which ran, and why",
    )
    p.add_argument("--json", action="store_true", help="print report.json's object on stdout")
    exit_codes(
        p,
        {
            EXIT_OK: "the rehearsal went through cleanly",
            EXIT_NOT_READY: "the rehearsal named problems (a preflight blocker, an audit "
            "difference, a failed drill or phase): see stderr and the report",
            EXIT_ERROR: "an error (production unreadable, bad arguments, --engine kafka "
            "without Kafka, an --out that cannot be written)",
        },
    )
    p.set_defaults(run=run)


def _say(line: str) -> None:
    print(f"rehearse: {line.strip()}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    from migration.rehearse.run import Options, rehearse  # noqa: PLC0415 - kio: see migration.cli

    if args.engine == "kafka":  # refused now, before production is read
        try:
            kafka_release(KAFKA_VERSION)
        except KafkaUnavailableError as exc:
            raise CliError(f"--engine kafka: {exc}") from None

    secret_file = args.password_encoder_secret_file
    secret = password_encoder_secret(args)
    try:  # refused now, not after the rehearsal
        args.out.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=args.out, prefix=".rehearse-")  # noqa: SIM115
        probe.close()
    except OSError as exc:
        raise CliError(f"--out {args.out}: cannot write there ({exc.strerror})") from None
    progress = for_stream(sys.stderr)
    with terminated_as_interrupt():
        tree = open_tree(args, progress)  # the rehearsal closes it, right after its read
        options = Options(
            source=tree,
            source_kind="files" if offline_dirs(args) else "zookeeper",
            source_name=str(tree.connect_string) if isinstance(tree, ZkClient) else source_of(args),
            out=args.out,
            keep=args.keep,
            secret=secret,
            secret_file=Path(secret_file).resolve() if secret_file else None,
            workload_s=args.workload_seconds,
            engine=args.engine,
            progress=progress,
            say=_say,
        )
        outcome = rehearse(options)
    if args.json:
        print_json(to_json(outcome.report))
    else:
        print_summary(outcome)
    for problem in outcome.report.problems:
        print(f"problem: {problem}", file=sys.stderr)
    if outcome.kept is not None:
        kept = f"rehearse: the local cluster's directories are kept in {outcome.kept}"
        if secret is not None:  # written into every broker's and controller's properties
            kept += (
                " (mode 0700: its brokers' and controllers' properties files hold "
                "production's password.encoder.secret; remove it when done)"
            )
        print(kept, file=sys.stderr)
    return EXIT_OK if outcome.report.ok else EXIT_NOT_READY


def print_summary(outcome: Outcome) -> None:
    r: Report = outcome.report
    verdict = "WENT THROUGH" if r.ok else f"{len(r.problems)} PROBLEM(S)"
    source = r.source.name if r.source else "production"
    print(f"Rehearsal of {source}: {verdict}")
    if r.engine is not None:
        print(f"  engine: {r.engine.name} {r.engine.version} ({r.engine.why})")
    for phase in r.phases:
        mark = "ok" if phase.ok else "FAILED"
        print(f"  {phase.name:<18} {phase.seconds:>8.1f} s  {mark:<6} {phase.detail}")
    if r.enable_migration is not None and r.enable_migration.restart:
        step = r.enable_migration
        print(
            f"step 3 restarts brokers {', '.join(map(str, step.restart))} with "
            + ", ".join(f"{x.name}={x.value}" for x in step.settings)
        )
    if r.copy is not None:
        print(
            f"copy: {r.copy.records:,} records in {r.copy.copy_ms:.0f} ms; metadata writes "
            f"paused {r.copy.write_pause_ms:.0f} ms (this machine)"
        )
    if r.dual_write is not None:
        print(
            f"dual-write: {r.dual_write.changes:,} changes, {r.dual_write.errors} error(s), "
            f"write-behind lag at most {r.dual_write.max_lag}"
        )
    if r.estimate is not None:
        print(str(r.estimate.get("summary", "")))
    print(f"reports: {outcome.json_path} and {outcome.html_path}")
