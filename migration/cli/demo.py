"""``zk2kraft demo [--rollback] [--kafka]``: the command, and the demo shown on the
terminal. The story itself -- a seeded cluster on local processes, the preflight, a
dry-run copy, the live migration, finalization or the way back -- is
:mod:`migration.demo`'s; this module wires the options and supplies the
:class:`~migration.demo.view.DemoView` that prints it, with the reports the commands it
names print."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from migration.cli.kafka_status import print_kafka_status
from migration.cli.migrate_command import print_manifest
from migration.cli.migration_commands import print_status
from migration.cli.output import EXIT_NOT_READY, EXIT_OK, exit_codes, prose
from migration.cli.preflight_command import preflight, print_report
from migration.cli.zk_commands import print_changes
from migration.local import seed
from migration.observability.progress import Progress, for_stream

if TYPE_CHECKING:
    from migration.driver.copy import CopyManifest
    from migration.zk.client import ZkClient


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    d = sub.add_parser(
        "demo",
        help="the whole migration on a seeded local cluster: preflight, a dry-run copy, the "
        "live migration, finalization (--rollback: the way back; --kafka: on Apache Kafka)",
        description=prose(
            """The demo `make demo` runs: a seeded local cluster taken through preflight,
            a dry-run copy, the live migration and finalization (--rollback: the checked
            way back instead; --kafka: on real Apache Kafka 3.9.2 processes, driven from
            an inventory, as `make demo KAFKA=1`)."""
        ),
    )
    d.add_argument(
        "--profile",
        choices=sorted(seed.PROFILES),
        default="medium",
        help="the seeded cluster's size (default medium)",
    )
    d.add_argument(
        "--rollback",
        action="store_true",
        help="after the brokers are in KRaft mode, go back to ZooKeeper instead of finalizing",
    )
    d.add_argument(
        "--kafka",
        action="store_true",
        help="the story on real Apache Kafka 3.9.2 processes, driven from an inventory "
        "(kafka plan, kafka migrate; with --rollback, kafka rollback from dual-write)",
    )
    exit_codes(
        d,
        {
            EXIT_OK: "the story told to its end",
            EXIT_NOT_READY: "with --kafka: the driven run stopped (the reason is printed)",
        },
    )
    d.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """The story on Apache Kafka (``--kafka``: exit 1 when its run stopped on the way) or
    on zk2kraft's own processes."""
    if args.kafka:
        from migration.demo.kafka_story import run_kafka_demo  # noqa: PLC0415 - kio: see migration.cli

        return EXIT_OK if run_kafka_demo(args.rollback, PrintedDemo()) else EXIT_NOT_READY
    from migration.demo.story import run_demo  # noqa: PLC0415 - kio: see migration.cli

    run_demo(args.profile, args.rollback, PrintedDemo())
    return EXIT_OK


class PrintedDemo:
    """The demo on the terminal (a :class:`~migration.demo.view.DemoView`): the story on
    stdout, each piece flushed at once; progress bars on stderr; the reports as the
    commands print them."""

    def say(self, text: str = "", *, end: str = "\n") -> None:
        print(text, end=end, flush=True)

    def progress(self) -> Progress:
        return for_stream(sys.stderr)

    def preflight(self, client: ZkClient, connect: str) -> None:
        print_report(preflight(client), connect, sys.stdout)

    def manifest(self, manifest: CopyManifest, connect: str) -> None:
        print_manifest(manifest, connect, sys.stdout)

    def changes(self, changes: dict[str, dict[str, list[str]]]) -> None:
        print_changes(changes, sys.stdout)

    def status(self, report: dict[str, Any]) -> None:
        print_status(report)

    def kafka_status(self, report: dict[str, Any]) -> None:
        print_kafka_status(report)
