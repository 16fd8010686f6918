"""``zk2kraft audit --pushgateway URL``: the audit's result pushed to a Prometheus
Pushgateway (job ``zk2kraft-audit``) once it is known, so an alert fires on a failed
audit (ZkAuditFailed) or on one that stopped running (ZkAuditNotRun).

Contract: the URL is checked before the audit starts (a bad one is a usage error
naming ``--pushgateway``); the push happens only after the audit has a result: its
report (success when consistent, the differences by kind) or its failure to run
(success 0, no differences). A push that fails is one warning on stderr and never
changes the audit's exit code.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping

from migration.cli.output import CliError
from migration.observability.pushgateway import (
    AUDIT_JOB,
    PushError,
    gateway_url,
    push_audit_result,
)


def add_pushgateway_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pushgateway",
        metavar="URL",
        help=f"push the result to this Prometheus Pushgateway (job {AUDIT_JOB}: "
        "zk2kraft_audit_success, zk2kraft_audit_differences, "
        "zk2kraft_audit_last_run_timestamp_seconds); an unreachable one is a warning",
    )


def checked_gateway(value: str | None) -> str | None:
    """``--pushgateway``'s URL, checked; None when not given. CliError naming the option."""
    if value is None:
        return None
    try:
        return gateway_url(value)
    except ValueError as exc:
        raise CliError(f"--pushgateway: {exc}") from None


def push_result(gateway: str | None, differences: Mapping[str, int] | None) -> None:
    """Push the audit's result (``differences`` None: it could not run); a failed push
    is a warning on stderr."""
    if gateway is None:
        return
    success = differences is not None and not any(differences.values())
    try:
        push_audit_result(gateway, success=success, differences=differences)
    except PushError as exc:
        print(f"warning: the audit's result was not pushed: {exc}", file=sys.stderr)
