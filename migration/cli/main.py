"""``zk2kraft``: the command line entry point."""

from __future__ import annotations

import argparse
import logging
import sys

from migration import __version__
from migration.cli import demo, preflight_command, zk_commands
from migration.cli.output import EXIT_ERROR, CliError, error
from migration.zk.client import ZkConnectError, ZkWriteError
from migration.zk.embedded import ZooKeeperUnavailableError
from migration.zk.errors import ZnodeFormatError
from migration.zk.reader import ZkReadError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="zk2kraft", description="Migrate a ZooKeeper-based Kafka cluster to KRaft."
    )
    parser.add_argument("--version", action="version", version=f"zk2kraft {__version__}")
    parser.add_argument("--log-level", default="WARNING", help="Python log level (default WARNING)")
    sub = parser.add_subparsers(dest="command", required=True)
    zk_commands.register(sub)
    preflight_command.register(sub)
    demo.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        code: int = args.run(args)
        return code
    except (
        CliError,
        ZkConnectError,
        ZkReadError,
        ZkWriteError,
        ZnodeFormatError,
        ZooKeeperUnavailableError,
        ValueError,
    ) as exc:
        error(str(exc))
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
