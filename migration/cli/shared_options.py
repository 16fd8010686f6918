"""Options several commands define alike, each defined once here with what reads it:
``--password-encoder-secret-file FILE``."""

from __future__ import annotations

import argparse

from migration.cli.output import read_secret_file

PASSWORD_ENCODER_SECRET_FILE = "--password-encoder-secret-file"
# --password-encoder-secret-file's use when a command only compares password configs.
TO_COMPARE_PASSWORDS = "to compare password configs (without it only their presence is compared)"


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
