"""The shape of the ``zk2kraft`` command line, over what each command registers: the
options every command shares (given before or after the command's name), the exit
codes in every command's help, the operator and development commands listed apart,
and usage errors raised for :func:`migration.cli.main.main` to print as text or JSON.

Contracts:

- The common options (:func:`add_common_options`) are defined once, on the top-level
  parser with their defaults, and copied onto every command with no default
  (``argparse.SUPPRESS``), so a value given before the command's name is never
  overwritten by the copy's default. A command's own ``--json`` (with help saying what
  it prints) keeps its help and loses its default the same way.
- A command with no ``exit codes:`` epilog of its own gets the general one
  (:func:`migration.cli.output.exit_codes`).
- :class:`CliParser` never exits on a usage error: it raises :class:`UsageError`.
"""

from __future__ import annotations

import argparse
import textwrap
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn, TypeAlias

from migration.cli.output import exit_codes

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

# The development commands: local ZooKeeper, brokers and the demo, listed apart from the
# operator commands in the top-level help ("zk start": a command of the "zk" group).
DEVELOPMENT_COMMANDS = ("zk start", "zk seed", "cluster", "kafka-node", "demo")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
JSON = "--json"
HELP_WIDTH = 88  # the raw text of the top-level help (command lists, epilog)

# Each command's one-line help, as its parent's subparsers were given it (kept here:
# :func:`finish` moves the top level's into its description as lists).
_HELP: weakref.WeakKeyDictionary[argparse.ArgumentParser, str] = weakref.WeakKeyDictionary()


class UsageError(Exception):
    """The command line does not parse: ``message`` as argparse words it, ``usage`` the
    usage line of the (sub)command it failed in."""

    def __init__(self, message: str, usage: str, prog: str) -> None:
        super().__init__(message)
        self.usage = usage
        self.prog = prog


class CliParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors raise :class:`UsageError` instead of
    printing and exiting (``--help`` and ``--version`` still print and exit 0). Its
    subcommands' parsers are CliParsers too."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self.format_usage(), self.prog)


def shared_default(value: object, *, copy: bool) -> object:
    """The default of an option a parser shares with the commands under it: ``value`` on
    the parser; none on a command's copy (``argparse.SUPPRESS``), so that a value given
    before the command's name is not overwritten by the copy's default."""
    return argparse.SUPPRESS if copy else value


def add_common_options(parser: argparse.ArgumentParser, *, copy: bool = False) -> None:
    """The options every command takes before or after its name: ``--log-level``,
    ``--command-config``, ``--json``. ``copy``: a command's copy (:func:`shared_default`);
    a ``--json`` the command defines itself is left as it is."""

    def default(value: object) -> object:
        return shared_default(value, copy=copy)

    parser.add_argument(
        "--log-level",
        default=default("WARNING"),
        type=str.upper,
        choices=LOG_LEVELS,
        metavar="LEVEL",
        help=f"the log level on stderr: {', '.join(LOG_LEVELS)} (default WARNING)",
    )
    parser.add_argument(
        "--command-config",
        type=Path,
        default=default(None),
        metavar="FILE",
        help="Kafka's client settings, as its tools take them: security.protocol=SSL and "
        "the ssl.* settings (PEM or PKCS12 stores) reach the controllers over TLS; SASL_SSL with "
        "sasl.mechanism and sasl.jaas.config also logs admin --bootstrap-server in",
    )
    if JSON not in parser._option_string_actions:
        parser.add_argument(
            JSON,
            action="store_true",
            default=default(False),
            help="JSON on stdout: the output, where the command has one, and an error as "
            '{"error": {"code", "message", "exit_code", "details"}}',
        )


def commands(
    parser: argparse.ArgumentParser, prefix: str = ""
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every command under ``parser`` (groups such as ``zk`` too), depth first, with its
    words after the program name (``"zk seed"``)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                words = f"{prefix}{name}"
                yield words, child
                yield from commands(child, f"{words} ")


def command_help(command: argparse.ArgumentParser) -> str:
    """The one-line help ``command`` was registered with ("" when none), also for the
    top level's commands, whose help :func:`finish` lists in the program's description."""
    return _HELP.get(command, "")


def subcommand_help(parser: argparse.ArgumentParser) -> dict[str, str | None]:
    """Each subcommand's name and its one-line help (None when it has none)."""
    out: dict[str, str | None] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            out.update({a.dest: a.help for a in action._choices_actions})
            out.update({name: None for name in action.choices if name not in out})
    return out


def finish(parser: argparse.ArgumentParser) -> None:
    """Complete the tree the commands registered (see the module's contract): the
    common options copied onto every command, a command's own ``--json`` without its
    default, the general exit codes where a command states none, each command's help
    kept for :func:`command_help`, and the top-level help's command lists."""
    for _, command in [("", parser), *commands(parser)]:
        for action in command._actions:
            if isinstance(action, argparse._SubParsersAction):
                for choice in action._choices_actions:
                    _HELP[action.choices[choice.dest]] = choice.help or ""
    for _, command in commands(parser):
        own_json = command._option_string_actions.get(JSON)
        if own_json is not None:
            own_json.default = argparse.SUPPRESS
        add_common_options(command, copy=True)
        if command.epilog is None:
            exit_codes(command)
    lists = _command_lists(parser)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            action._choices_actions.clear()  # listed in the description instead
    parser.description = "\n\n".join([parser.description or "", *lists]).strip()
    parser.formatter_class = argparse.RawDescriptionHelpFormatter


def _command_lists(parser: argparse.ArgumentParser) -> list[str]:
    """The top level's commands in two lists: the operator's, then the development ones
    (:data:`DEVELOPMENT_COMMANDS`); a group holding both is listed command by command."""
    operator: list[tuple[str, str]] = []
    development: list[tuple[str, str]] = []
    children = {words: child for words, child in commands(parser) if " " not in words}
    for name, help_text in subcommand_help(parser).items():
        nested = [c for c in DEVELOPMENT_COMMANDS if c.startswith(f"{name} ")]
        if name in DEVELOPMENT_COMMANDS:
            development.append((name, help_text or ""))
        elif nested:
            for sub_name, sub_help in subcommand_help(children[name]).items():
                words = f"{name} {sub_name}"
                group = development if words in DEVELOPMENT_COMMANDS else operator
                group.append((words, sub_help or ""))
        else:
            operator.append((name, help_text or ""))
    width = max(len(words) for words, _ in operator + development) + 4
    return [
        "\n".join([title, *(_row(words, text, width) for words, text in rows)])
        for title, rows in (
            ("operator commands:", operator),
            (
                "development commands (local ZooKeeper, brokers, the demo; not for production):",
                development,
            ),
        )
    ]


def _row(words: str, text: str, width: int) -> str:
    """One command of a list: its words, then its help wrapped beside them."""
    return textwrap.fill(
        text,
        HELP_WIDTH,
        initial_indent=f"  {words:<{width - 2}}",
        subsequent_indent=" " * width,
    )
