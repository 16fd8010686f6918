"""Shared output helpers: JSON on stdout, errors on stderr (or, under ``--json``, as one
JSON object on stdout), the exit codes and the help that lists them."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import textwrap
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from migration.common.files import UnreadableFileError, read_regular
from migration.common.gc_pause import keep_full_walks_short
from migration.common.limits import INT32_MAX
from migration.common.properties import ConfigError
from migration.common.text import printable_line, shown
from migration.raft.faults import FATAL_EXIT_CODE

if TYPE_CHECKING:
    from migration.common.tls import TlsSettings

EXIT_OK = 0
EXIT_NOT_READY = 1  # the command ran; its answer is "no" (preflight blockers)
EXIT_ERROR = 2  # bad arguments, unreachable ZooKeeper, bad data
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, as a shell reports it)

# Every exit code of the command line and its general meaning: the one table each
# command's help lists its codes from (:func:`exit_codes`).
EXIT_CODES: dict[int, str] = {
    EXIT_OK: "done",
    EXIT_NOT_READY: "the command ran and its answer is no",
    EXIT_ERROR: "an error: bad arguments or input, an unreachable ZooKeeper or controller",
    FATAL_EXIT_CODE: "halted on a fault",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
}
# The codes every command can return, listed in every command's help.
ALWAYS = (EXIT_OK, EXIT_ERROR, EXIT_INTERRUPTED)
EPILOG_WIDTH = 80

# Each command's exit codes as :func:`exit_codes` declared them (code -> meaning): what
# its help's epilog lists and what docs/cli.md is generated from (migration.cli.reference).
_DECLARED: weakref.WeakKeyDictionary[argparse.ArgumentParser, dict[int, str]] = (
    weakref.WeakKeyDictionary()
)


def exit_codes(parser: argparse.ArgumentParser, meanings: Mapping[int, str] | None = None) -> None:
    """Declare the exit codes of ``parser`` (one command) and give it its ``exit
    codes:`` epilog: the codes of :data:`ALWAYS` plus those of ``meanings``, each with
    the command's own meaning from ``meanings`` or else the general one of
    :data:`EXIT_CODES`, wrapped to :data:`EPILOG_WIDTH`; :func:`declared_exit_codes`
    returns them. ValueError for a code that table does not hold (a new code goes into
    the table first)."""
    meanings = dict(meanings or {})
    unknown = sorted(set(meanings) - set(EXIT_CODES))
    if unknown:
        raise ValueError(f"exit codes {unknown} are not in EXIT_CODES")
    declared = {
        code: " ".join(meanings.get(code, EXIT_CODES[code]).split())  # wrapped here, not by hand
        for code in sorted({*ALWAYS, *meanings})
    }
    _DECLARED[parser] = declared
    lines = [
        textwrap.fill(text, EPILOG_WIDTH, initial_indent=f"  {code:<4} ", subsequent_indent=" " * 7)
        for code, text in declared.items()
    ]
    parser.epilog = "\n".join(["exit codes:", *lines])
    parser.formatter_class = argparse.RawDescriptionHelpFormatter


def prose(text: str) -> str:
    """A command's description as its help shows it (raw: see :func:`exit_codes`) from
    ``text``: paragraphs apart by a blank line, a line that begins ``- `` a list item;
    each paragraph and item wrapped to :data:`EPILOG_WIDTH` here, so the source need not
    be wrapped by hand. docs/cli.md joins them again (migration.cli.reference)."""
    out = []
    for block in textwrap.dedent(text).strip().split("\n\n"):
        items, current = [], ""
        for line in block.splitlines():
            if line.startswith("- ") and current:
                items.append(current)
                current = line
            else:
                current = f"{current} {line.strip()}".strip()
        items.append(current)
        out.append(
            "\n".join(
                textwrap.fill(
                    " ".join(item.split()),
                    EPILOG_WIDTH,
                    subsequent_indent="  " if item.startswith("- ") else "",
                    break_on_hyphens=False,
                    break_long_words=False,
                )
                for item in items
            )
        )
    return "\n\n".join(out)


def declared_exit_codes(parser: argparse.ArgumentParser) -> dict[int, str]:
    """The exit codes :func:`exit_codes` declared for ``parser``, in order, each with its
    meaning (one line); {} for a parser it was never given."""
    return dict(_DECLARED.get(parser, {}))


# The ``code`` of a ``--json`` error: stable words a script may branch on. An error
# Kafka answered with is named by Kafka's own error name instead (TOPIC_ALREADY_EXISTS).
INVALID_ARGUMENT = "INVALID_ARGUMENT"  # the command line, or a value given on it
CONFIG_ERROR = "CONFIG_ERROR"  # a configuration file's problems
NOT_FOUND = "NOT_FOUND"  # a file or directory that is not there
UNAVAILABLE = "UNAVAILABLE"  # ZooKeeper, a controller or a broker did not answer
TIMED_OUT = "TIMED_OUT"  # waited for something that did not happen in time
NOT_AUTHORIZED = "NOT_AUTHORIZED"  # ZooKeeper refused the login or the request
DATA_ERROR = "DATA_ERROR"  # what was read is malformed or does not convert
IO_ERROR = "IO_ERROR"  # a file or socket failed
INTERRUPTED = "INTERRUPTED"
INTERNAL_ERROR = "INTERNAL_ERROR"  # a bug
ERROR = "ERROR"  # none of the above


class CliError(Exception):
    """An error to print as one line and exit with :data:`EXIT_ERROR`; ``code`` is its
    ``--json`` code."""

    def __init__(self, message: str, code: str = INVALID_ARGUMENT) -> None:
        super().__init__(message)
        self.code = code


def read_secret_file(path: str, option: str) -> str:
    """A secret (a password, password.encoder.secret) from a file: UTF-8 text, one line,
    at most 64 KiB. CliError names the option and file -- never the content."""
    source = f"{option} {path}"
    try:
        raw = read_regular(Path(path), 64 * 1024)  # a FIFO or a device is refused unread
    except UnreadableFileError as exc:
        raise CliError(f"{source}: {exc.reason}; not a secret file") from None
    except OSError as exc:
        raise CliError(f"{source}: cannot read: {exc.strerror}") from None
    try:
        secret = raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        raise CliError(f"{source}: not UTF-8 text (a binary file?)") from None
    if not secret:
        raise CliError(f"{source}: the file is empty")
    return secret


def int32(text: str) -> int:
    """An argparse type: a whole number that fits Kafka's int32 (the option is named by
    argparse in the error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a whole number") from None
    if not -(2**31) <= value <= INT32_MAX:
        raise argparse.ArgumentTypeError(f"{shown(value)} does not fit an int32")
    return value


def print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


def print_json_line(obj: Any) -> None:
    """One compact JSON line, flushed (for a long-running command's scripted reader)."""
    print(json.dumps(obj, separators=(",", ":")), flush=True)


# Under --json, the errors of this run, held for :func:`json_error`; None: printed.
_json_errors: list[tuple[str, str, Sequence[str]]] | None = None


def errors_as_json(enabled: bool) -> None:
    """From now on, :func:`error` holds errors for :func:`json_error` (``--json``) instead
    of printing them on stderr; or prints them again."""
    global _json_errors  # noqa: PLW0603 - one command line per process
    _json_errors = [] if enabled else None


def wants_json_errors() -> bool:
    """Whether :func:`error` holds errors for ``--json`` (:func:`errors_as_json`)."""
    return _json_errors is not None


def error(message: str, code: str = ERROR, details: Sequence[str] = ()) -> None:
    """Report an error: ``error: message`` and a ``  - detail`` line each on stderr, or,
    under ``--json``, held for :func:`json_error` with its ``code``. The backstop for
    input quoted raw somewhere: message and details are bounded and their control
    characters escaped (:func:`.text.printable_line`), printed or held."""
    message = printable_line(message)
    details = [printable_line(d) for d in details]
    if _json_errors is not None:
        _json_errors.append((code, message, tuple(details)))
        return
    print(f"error: {message}{':' if details else ''}", file=sys.stderr)
    for detail in details:
        print(f"  - {detail}", file=sys.stderr)


def warning(message: str) -> None:
    """``warning: message`` on stderr, bounded and escaped as :func:`error` prints."""
    print(f"warning: {printable_line(message)}", file=sys.stderr)


def json_error(exit_code: int) -> dict[str, Any] | None:
    """The errors held under ``--json`` as the one object printed for them, None when
    there were none: ``{"error": {"code", "message", "exit_code", "details"}}``; the
    first error gives code and message, later ones are appended to ``details``."""
    if not _json_errors:
        return None
    (code, message, details), *later = _json_errors
    return {
        "error": {
            "code": code,
            "message": message,
            "exit_code": exit_code,
            "details": [*details, *(m for _, m, _ in later)],
        }
    }


def report_config_problems(exc: ConfigError, what: str = "") -> int:
    """Report every problem of a configuration file (``what``: whose, e.g. "broker");
    the exit code to return (2)."""
    whose = f"{what} " if what else ""
    error(f"{exc.source}: invalid {whose}configuration", CONFIG_ERROR, exc.problems)
    return EXIT_ERROR


# How long a thread holds the GIL while another waits for it (Python's default 5 ms). A
# serving process's event loop releases the GIL at every write, send and fsync of an
# event; with a bulk thread running (a snapshot written, ZooKeeper dual-written) it
# waits up to the interval each time to get it back, so an event of a hundred batch
# writes (a follower appending a fetch) could wait half a second for nothing.
SWITCH_INTERVAL_S = 0.001


def serving(grpc_tls: TlsSettings | None) -> None:
    """What a process that serves (a broker, a controller) sets before it starts: its log
    at INFO at least, the TLS of every gRPC channel and server it opens, and
    :data:`SWITCH_INTERVAL_S`, and the collector's full walks kept short
    (:func:`~migration.common.gc_pause.keep_full_walks_short`)."""
    from migration.common import rpc  # noqa: PLC0415 - gRPC: not for the commands that do not serve

    sys.setswitchinterval(SWITCH_INTERVAL_S)
    keep_full_walks_short()
    if logging.getLogger().level > logging.INFO:
        logging.getLogger().setLevel(logging.INFO)
    rpc.use_tls(grpc_tls)
