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
    kafka_node_commands,
    log_commands,
    migrate_command,
    migration_commands,
    mode_commands,
    operate_commands,
    preflight_command,
    rehearse_command,
    rollback_command,
    zk_commands,
)
from migration.cli.output import (
    DATA_ERROR,
    ERROR,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    INTERNAL_ERROR,
    INTERRUPTED,
    INVALID_ARGUMENT,
    IO_ERROR,
    NOT_AUTHORIZED,
    NOT_FOUND,
    UNAVAILABLE,
    CliError,
    error,
    errors_as_json,
    json_error,
    print_json,
    report_config_problems,
    wants_json_errors,
)
from migration.cli.parser import (
    JSON,
    CliParser,
    Subparsers,
    UsageError,
    add_common_options,
    finish,
)
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
from migration.zk.tree_copy import TreeCopyError


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
    """The whole command line: every command registered, then completed by
    :func:`migration.cli.parser.finish` (common options, exit codes, command lists)."""
    parser = CliParser(
        prog="zk2kraft",
        description="Migrate a ZooKeeper-based Kafka cluster to KRaft.",
        epilog=f"{_JSON_ERRORS}\n\n'zk2kraft COMMAND --help' shows a command's options "
        "and exit codes.",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"zk2kraft {__version__}",
        help="print the version and exit",
    )
    add_common_options(parser)
    # (its commands' parsers are CliParsers: argparse makes them of the parser's class)
    sub: Subparsers = parser.add_subparsers(  # type: ignore[assignment]
        dest="command", required=True, metavar="COMMAND", help="one of the commands above"
    )
    zk_commands.register(sub)
    preflight_command.register(sub)
    migrate_command.register(sub)
    log_commands.register(sub)
    controller_commands.register(sub)
    admin_commands.register(sub)
    broker_commands.register(sub)
    mode_commands.register(sub)
    cluster_commands.register(sub)
    kafka_node_commands.register(sub)
    migration_commands.register(sub)
    rollback_command.register(sub)
    audit_command.register(sub)
    rehearse_command.register(sub)
    operate_commands.register(sub)
    demo.register(sub)
    finish(parser)
    return parser


_JSON_ERRORS = (
    "With --json (before or after the command), an error is one JSON object on stdout\n"
    "and the exit code is the same as without it:\n"
    '  {"error": {"code": "INVALID_ARGUMENT", "message": "...", "exit_code": 2,\n'
    '             "details": []}}\n'
    "(code: a word for the kind of error, or Kafka's error name for a refused request)."
)


def wants_json(argv: list[str]) -> bool:
    """Whether the command line asks for ``--json`` (before a ``--``): how a usage error,
    raised before the options are known, is reported."""
    words = argv[: argv.index("--")] if "--" in argv else argv
    return JSON in words


def main(argv: list[str] | None = None) -> int:
    """Run one command line; its exit code. Errors are reported once, as ``error: ...``
    on stderr (a usage error as argparse words it) or, under ``--json``, as one
    ``{"error": ...}`` object on stdout (:func:`migration.cli.output.json_error`), with
    the same exit code either way."""
    argv = sys.argv[1:] if argv is None else argv
    errors_as_json(wants_json(argv))
    try:
        args = build_parser().parse_args(argv)
    except UsageError as exc:
        if wants_json_errors():
            error(str(exc), INVALID_ARGUMENT, [exc.usage.strip()])
        else:
            sys.stderr.write(f"{exc.usage}{exc.prog}: error: {exc}\n")
        code = EXIT_ERROR
    else:
        errors_as_json(args.json)
        logging.basicConfig(
            level=args.log_level,
            stream=sys.stderr,
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        )
        code = run(args)
    document = json_error(code)
    if document is not None:
        print_json(document)
    return code


def run(args: argparse.Namespace) -> int:
    """The command's exit code; whatever it raises reported by :func:`error` with the
    ``--json`` code for its kind (a bug: one line, its traceback at DEBUG)."""
    try:
        if args.command_config is not None:
            use_command_config(args.command_config)
        code: int = args.run(args)
        return code
    except BrokenPipeError:  # `zk2kraft log dump | head`: the reader has gone; stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except ZnodeFormatError as exc:  # (before ValueError, which it is)
        error(f"malformed znode {exc.path}: {exc.problem}", DATA_ERROR)
    except CliError as exc:
        error(str(exc), exc.code)
    except ConfigError as exc:
        return report_config_problems(exc)
    except KafkaError as exc:
        error(str(exc), exc.code.name)
    except FileNotFoundError as exc:
        error(str(exc), NOT_FOUND)
    except (ZkConnectError, ZooKeeperUnavailableError) as exc:
        error(str(exc), UNAVAILABLE)
    except ConnectionError as exc:  # (an OSError) no controller or broker answered
        error(_os_error(exc), UNAVAILABLE)
    except (
        CopyError,
        LogError,
        RecordApplyError,
        ZkReadError,
        QuorumStateError,
        TreeCopyError,
    ) as exc:
        error(str(exc), DATA_ERROR)
    except ZkWriteError as exc:
        error(str(exc), ERROR)
    except ValueError as exc:
        error(str(exc), INVALID_ARGUMENT)
    except SessionClosedRequireSaslError:
        error(
            "ZooKeeper requires a SASL login: give --zk-config a file naming the JAAS file "
            "(java.security.auth.login.config) whose Client section holds the login",
            NOT_AUTHORIZED,
        )
    except NoAuthError:
        error(f"ZooKeeper refused the request ({NO_AUTH_REASON})", NOT_AUTHORIZED)
    except OSError as exc:  # a file or socket the command was pointed at
        error(_os_error(exc), IO_ERROR)
    except KeyboardInterrupt:
        if wants_json_errors():
            error("interrupted", INTERRUPTED)
        return EXIT_INTERRUPTED
    except Exception as exc:  # a bug: one line for the user, the traceback at DEBUG
        logging.getLogger(__name__).debug("unexpected error", exc_info=exc)
        error(
            f"internal error: {type(exc).__name__}: {shown(exc, 200)} "
            "(run with --log-level DEBUG for the traceback)",
            INTERNAL_ERROR,
        )
    return EXIT_ERROR


def _os_error(exc: OSError) -> str:
    """An OSError in one line: the file it names, and the system's words for it."""
    where = f"{exc.filename}: " if exc.filename else ""
    return f"{where}{exc.strerror or exc}"


if __name__ == "__main__":
    sys.exit(main())
