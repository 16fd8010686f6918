"""Shared output helpers: JSON on stdout, errors on stderr, Kafka-style exit codes."""

from __future__ import annotations

import json
import sys
from typing import Any

EXIT_OK = 0
EXIT_NOT_READY = 1  # the command ran; its answer is "no" (preflight blockers)
EXIT_ERROR = 2  # bad arguments, unreachable ZooKeeper, bad data


class CliError(Exception):
    """An error to print as one line and exit with :data:`EXIT_ERROR`."""


def print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


def error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
