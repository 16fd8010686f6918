"""Options several commands define alike, each defined once here with what reads it:
``--config FILE`` (a node's properties file, read before the command runs) and
``--password-encoder-secret-file FILE``."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from migration.cli.output import read_secret_file, report_config_problems
from migration.common.properties import ConfigError

C = TypeVar("C")

PASSWORD_ENCODER_SECRET_FILE = "--password-encoder-secret-file"
# --password-encoder-secret-file's use when a command only compares password configs.
TO_COMPARE_PASSWORDS = "to compare password configs (without it only their presence is compared)"


def add_config_argument(parser: argparse.ArgumentParser, file_name: str) -> None:
    """``--config FILE``, required; ``file_name``: the file's usual name, its help
    (controller.properties, server.properties). Read by :func:`with_config`."""
    parser.add_argument("--config", type=Path, required=True, metavar="FILE", help=file_name)


def with_config(
    load: Callable[[Path], C], what: str
) -> Callable[[Callable[[argparse.Namespace, C], int]], Callable[[argparse.Namespace], int]]:
    """A command's run function, given ``--config``'s file read by ``load``; on any
    problem of the file, every one printed (:func:`report_config_problems`, ``what``:
    whose configuration, e.g. "broker") and the command not run: EXIT_ERROR."""

    def wrap(body: Callable[[argparse.Namespace, C], int]) -> Callable[[argparse.Namespace], int]:
        def run(args: argparse.Namespace) -> int:
            try:
                config = load(args.config)
            except ConfigError as exc:
                return report_config_problems(exc, what)
            return body(args, config)

        run.__doc__ = body.__doc__
        return run

    return wrap


def add_password_encoder_secret_argument(parser: argparse.ArgumentParser, use: str) -> None:
    """``--password-encoder-secret-file FILE``; ``use``: what the command does with the
    secret, the rest of its help. Read by :func:`password_encoder_secret`."""
    parser.add_argument(
        PASSWORD_ENCODER_SECRET_FILE,
        metavar="FILE",
        help=f"the brokers' password.encoder.secret, {use}",
    )


def password_encoder_secret(args: argparse.Namespace) -> str | None:
    """The secret in ``--password-encoder-secret-file``'s file, None without the option
    (CliError for a file that is not one line of text, :func:`read_secret_file`)."""
    path: str | None = args.password_encoder_secret_file
    return read_secret_file(path, PASSWORD_ENCODER_SECRET_FILE) if path else None
