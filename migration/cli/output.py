"""Shared output helpers: JSON on stdout, errors on stderr, Kafka-style exit codes."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from migration.common import rpc
from migration.common.limits import INT32_MAX
from migration.common.properties import ConfigError
from migration.common.text import shown
from migration.common.tls import TlsSettings

EXIT_OK = 0
EXIT_NOT_READY = 1  # the command ran; its answer is "no" (preflight blockers)
EXIT_ERROR = 2  # bad arguments, unreachable ZooKeeper, bad data


class CliError(Exception):
    """An error to print as one line and exit with :data:`EXIT_ERROR`."""


def read_secret_file(path: str, option: str) -> str:
    """A secret (a password, password.encoder.secret) from a file: UTF-8 text, one line,
    at most 64 KiB. CliError names the option and file -- never the content."""
    source = f"{option} {path}"
    try:
        with open(path, "rb") as f:
            raw = f.read(64 * 1024 + 1)
    except OSError as exc:
        raise CliError(f"{source}: cannot read: {exc.strerror}") from None
    if len(raw) > 64 * 1024:
        raise CliError(f"{source}: larger than 64 KiB; not a secret file")
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


def error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


def report_config_problems(exc: ConfigError, what: str) -> int:
    """Print every problem of a configuration file; the exit code to return (2)."""
    error(f"{exc.source}: invalid {what} configuration:")
    for problem in exc.problems:
        print(f"  - {problem}", file=sys.stderr)
    return EXIT_ERROR


C = TypeVar("C")


def load_config_file(load: Callable[[Path], C], path: Path, what: str) -> C | None:
    """``--config``'s file read by ``load``; on any problem, every one printed
    (:func:`report_config_problems`) and None: the command exits EXIT_ERROR."""
    try:
        return load(path)
    except ConfigError as exc:
        report_config_problems(exc, what)
        return None


def serving(grpc_tls: TlsSettings | None) -> None:
    """What a process that serves (a broker, a controller) sets before it starts: its log
    at INFO at least, and the TLS of every gRPC channel and server it opens."""
    if logging.getLogger().level > logging.INFO:
        logging.getLogger().setLevel(logging.INFO)
    rpc.use_tls(grpc_tls)
