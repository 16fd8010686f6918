"""``zk2kraft``: the command line entry point."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import sys
from pathlib import Path

from kazoo.exceptions import NoAuthError, SessionClosedRequireSaslError

from migration import __version__
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
from migration.common.kafka_errors import KafkaError
from migration.common.properties import ConfigError, read_properties
from migration.common.text import shown

COMMANDS: dict[str, str] = {
    "zk": "zk_commands",
    "preflight": "preflight_command",
    "migrate": "migrate_command",
    "log": "log_commands",
    "controller": "controller_commands",
    "quorum": "controller_commands",
    "features": "controller_commands",
    "admin": "admin_commands",
    "broker": "broker_commands",
    "broker-mode": "mode_commands",
    "controller-mode": "mode_commands",
    "cluster": "cluster_commands",
    "kafka-node": "kafka_node_commands",
    "storage": "migration_commands",
    "migration": "migration_commands",
    "rollback": "rollback_command",
    "audit": "audit_command",
    "rehearse": "rehearse_command",
    "kafka": "operate_commands",
    "demo": "demo",
}
"""Each top-level command and the module of :mod:`migration.cli` that registers it, in
the order the top-level help lists them. A command line that names a command imports
that module alone (:func:`build_parser`): a command starts without loading what the
others need (the servers, gRPC, Spark's and ZooKeeper's clients)."""


def use_command_config(path: Path) -> None:
    """``--command-config``: Kafka's client settings for the whole command. Its TLS is
    used on the gRPC channels to the controllers too (``SSL`` or ``SASL_SSL``); a SASL
    login only on Kafka listeners (``admin --bootstrap-server``)."""
    from migration.common import rpc  # noqa: PLC0415 - gRPC: see COMMANDS
    from migration.kafka.client import ClientSecurity, KafkaConnection  # noqa: PLC0415 - kio: see migration.cli

    problems: list[str] = []
    security = ClientSecurity.from_properties(read_properties(path), problems)
    if problems:
        raise ConfigError(str(path), problems)
    KafkaConnection.default_security = security
    rpc.use_tls(security.tls)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line: the commands of :data:`COMMANDS` registered (only the module
    that registers ``command`` when it is one of them, else every module), then completed
    by :func:`migration.cli.parser.finish` (common options, exit codes, command lists)."""
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
    modules = [COMMANDS[command]] if command in COMMANDS else dict.fromkeys(COMMANDS.values())
    for module in modules:
        importlib.import_module(f"{__package__}.{module}").register(sub)
    finish(parser)
    return parser


def named_command(argv: list[str]) -> str | None:
    """The command a command line names: its first word that is one of :data:`COMMANDS`,
    None when a help option or ``--`` comes first. A word taken for the command that is
    not (an option's value) only costs :func:`parse` a second parse with every command."""
    for word in argv:
        if word in ("-h", "--help", "--"):
            return None
        if word in COMMANDS:
            return word
    return None


def parse(argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed by the command's own module alone (:func:`named_command`); when that
    fails, by every command, so that a usage error is the whole command line's."""
    command = named_command(argv)
    if command is not None:
        with contextlib.suppress(UsageError):
            return build_parser(command).parse_args(argv)
    return build_parser().parse_args(argv)


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
        args = parse(argv)
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
    except KeyboardInterrupt:
        if wants_json_errors():
            error("interrupted", INTERRUPTED)
        return EXIT_INTERRUPTED
    except Exception as exc:
        return report(exc)


def report(exc: Exception) -> int:
    """Report ``exc``, raised by a command, by :func:`error` with the ``--json`` code for
    its kind (a bug: one line, its traceback at DEBUG); the exit code. The error classes
    of the packages a command may not have loaded are imported here, on an error only."""
    from migration.bridge.translate import CopyError  # noqa: PLC0415
    from migration.image.delta import RecordApplyError  # noqa: PLC0415
    from migration.local.zookeeper import ZooKeeperUnavailableError  # noqa: PLC0415
    from migration.log.errors import LogError  # noqa: PLC0415
    from migration.raft.quorum_state_store import QuorumStateError  # noqa: PLC0415
    from migration.zk.client import NO_AUTH_REASON, ZkConnectError, ZkWriteError  # noqa: PLC0415
    from migration.zk.errors import ZnodeFormatError  # noqa: PLC0415
    from migration.zk.reader import ZkReadError  # noqa: PLC0415
    from migration.zk.tree_copy import TreeCopyError  # noqa: PLC0415

    data_errors = (CopyError, LogError, RecordApplyError, ZkReadError, QuorumStateError,
                   TreeCopyError)  # fmt: skip
    if isinstance(exc, ZnodeFormatError):  # (before ValueError, which it is)
        error(f"malformed znode {exc.path}: {exc.problem}", DATA_ERROR)
    elif isinstance(exc, CliError):
        error(str(exc), exc.code)
    elif isinstance(exc, ConfigError):
        return report_config_problems(exc)
    elif isinstance(exc, KafkaError):
        error(str(exc), exc.code.name)
    elif isinstance(exc, FileNotFoundError):
        error(str(exc), NOT_FOUND)
    elif isinstance(exc, ZkConnectError | ZooKeeperUnavailableError):
        error(str(exc), UNAVAILABLE)
    elif isinstance(exc, ConnectionError):  # (an OSError) no controller or broker answered
        error(_os_error(exc), UNAVAILABLE)
    elif isinstance(exc, data_errors):
        error(str(exc), DATA_ERROR)
    elif isinstance(exc, ZkWriteError):
        error(str(exc), ERROR)
    elif isinstance(exc, ValueError):
        error(str(exc), INVALID_ARGUMENT)
    elif isinstance(exc, SessionClosedRequireSaslError):
        error(
            "ZooKeeper requires a SASL login: give --zk-config a file naming the JAAS file "
            "(java.security.auth.login.config) whose Client section holds the login",
            NOT_AUTHORIZED,
        )
    elif isinstance(exc, NoAuthError):
        error(f"ZooKeeper refused the request ({NO_AUTH_REASON})", NOT_AUTHORIZED)
    elif isinstance(exc, OSError):  # a file or socket the command was pointed at
        error(_os_error(exc), IO_ERROR)
    else:  # a bug: one line for the user, the traceback at DEBUG
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
