"""``zk2kraft``: the command line entry point."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from kazoo.exceptions import NoAuthError, SessionClosedRequireSaslError

from migration import __version__
from migration.bridge.translate import CopyError
from migration.cli import (
    admin_commands,
    audit_command,
    broker_commands,
    cluster_commands,
    controller_commands,
    demo,
    log_commands,
    migrate_command,
    migration_commands,
    mode_commands,
    preflight_command,
    rollback_command,
    zk_commands,
)
from migration.cli.output import EXIT_ERROR, EXIT_OK, CliError, error
from migration.common import rpc
from migration.common.kafka_errors import KafkaError
from migration.common.properties import ConfigError, read_properties
from migration.common.text import shown
from migration.image.delta import RecordApplyError
from migration.local.zookeeper import ZooKeeperUnavailableError
from migration.log.errors import LogError
from migration.raft.quorum_state_store import QuorumStateError
from migration.zk.client import NO_AUTH_REASON, ZkConnectError, ZkWriteError
from migration.zk.errors import ZnodeFormatError
from migration.zk.reader import ZkReadError


def use_command_config(path: Path) -> None:
    """``--command-config``: Kafka's client settings for the whole command. Its TLS is
    used on the gRPC channels to the controllers too (``SSL`` or ``SASL_SSL``); a SASL
    login only on Kafka listeners (``admin --bootstrap-server``)."""
    from migration.kafka.client import ClientSecurity, KafkaConnection  # noqa: PLC0415 - kio: see migration.cli

    problems: list[str] = []
    security = ClientSecurity.from_properties(read_properties(path), problems)
    if problems:
        raise ConfigError(str(path), problems)
    KafkaConnection.default_security = security
    rpc.use_tls(security.tls)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="zk2kraft", description="Migrate a ZooKeeper-based Kafka cluster to KRaft."
    )
    parser.add_argument("--version", action="version", version=f"zk2kraft {__version__}")
    parser.add_argument(
        "--log-level",
        default="WARNING",
        type=str.upper,
        choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
        help="log level (default WARNING)",
    )
    parser.add_argument(
        "--command-config",
        type=Path,
        metavar="FILE",
        help="Kafka's client settings, as its tools take them: security.protocol=SSL and "
        "the ssl.* PEM settings reach the controllers over TLS; SASL_SSL with sasl.mechanism "
        "and sasl.jaas.config also logs admin --bootstrap-server in",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    zk_commands.register(sub)
    preflight_command.register(sub)
    migrate_command.register(sub)
    log_commands.register(sub)
    controller_commands.register(sub)
    admin_commands.register(sub)
    broker_commands.register(sub)
    mode_commands.register(sub)
    cluster_commands.register(sub)
    migration_commands.register(sub)
    rollback_command.register(sub)
    audit_command.register(sub)
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
        if args.command_config is not None:
            use_command_config(args.command_config)
        code: int = args.run(args)
        return code
    except BrokenPipeError:  # `zk2kraft log dump | head`: the reader has gone; stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except ZnodeFormatError as exc:  # (before ValueError, which it is)
        error(f"malformed znode {exc.path}: {exc.problem}")
        return EXIT_ERROR
    except (
        CliError,
        ConfigError,
        CopyError,
        LogError,
        RecordApplyError,
        FileNotFoundError,
        ZkConnectError,
        ZkReadError,
        ZkWriteError,
        ZooKeeperUnavailableError,
        ValueError,
        KafkaError,
        QuorumStateError,
    ) as exc:
        error(str(exc))
        return EXIT_ERROR
    except SessionClosedRequireSaslError:
        error(
            "ZooKeeper requires a SASL login: give --zk-config a file naming the JAAS file "
            "(java.security.auth.login.config) whose Client section holds the login"
        )
        return EXIT_ERROR
    except NoAuthError:
        error(f"ZooKeeper refused the request ({NO_AUTH_REASON})")
        return EXIT_ERROR
    except OSError as exc:  # a file or socket the command was pointed at
        where = f"{exc.filename}: " if exc.filename else ""
        error(f"{where}{exc.strerror or exc}")
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug: one line for the user, the traceback at DEBUG
        logging.getLogger(__name__).debug("unexpected error", exc_info=exc)
        error(
            f"internal error: {type(exc).__name__}: {shown(exc, 200)} "
            "(run with --log-level DEBUG for the traceback)"
        )
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
