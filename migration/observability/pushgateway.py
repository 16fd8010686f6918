"""A batch job's result pushed to a Prometheus Pushgateway, for the one zk2kraft process
Prometheus cannot scrape: the audit, run by a CronJob that exits when it is done.

Contract: :func:`push_audit_result` replaces the group of job :data:`AUDIT_JOB` (an HTTP
PUT, prometheus_client's ``push_to_gateway``) with the three ``zk2kraft_audit_*``
gauges of the catalog: when the audit finished, whether it found ZooKeeper and the log
consistent, and its differences by kind (absent when the audit could not run). A
gateway that cannot be reached or refuses the push raises :class:`PushError` naming
the gateway; the caller decides what that means (the audit: a warning, never its exit
code). :func:`gateway_url` checks the option first, so a mistyped URL fails before the
audit spends its time; a URL carrying credentials is refused, so none can reach a
message.
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Iterator, Mapping

from prometheus_client import push_to_gateway
from prometheus_client.core import Metric

from migration.common.text import shown
from migration.observability import catalog as c
from migration.observability.exposition import gauge, labelled

AUDIT_JOB = "zk2kraft-audit"
PUSH_TIMEOUT_S = 10.0


class PushError(Exception):
    """The push did not reach the gateway, or the gateway refused it."""


def gateway_url(text: str) -> str:
    """A Pushgateway's address, ``http[s]://host[:port][/path]`` or ``host:port`` (then
    http). ValueError saying what is wrong."""
    value = text.strip()
    parsed = urllib.parse.urlsplit(value if "://" in value else f"http://{value}")
    if parsed.scheme not in ("http", "https"):
        raise ValueError(f"{shown(parsed.scheme)} is not http or https")
    if parsed.username is not None or parsed.password is not None:
        raise ValueError("credentials in the URL are not supported (they would be logged)")
    try:
        parsed.port  # noqa: B018  # a port that is not a number raises here
    except ValueError:
        raise ValueError(f"{shown(value)} has a port that is not a number") from None
    if not parsed.hostname or parsed.query or parsed.fragment:
        raise ValueError(f"{shown(value)} is not http[s]://host[:port][/path]")
    return urllib.parse.urlunsplit((parsed.scheme, parsed.netloc, parsed.path, "", ""))


class _AuditResult:
    """The pushed families, built from the catalog's specs."""

    def __init__(
        self, finished_at: float, success: bool, differences: Mapping[str, int] | None
    ) -> None:
        self.finished_at = finished_at
        self.success = success
        self.differences = differences

    def collect(self) -> Iterator[Metric]:
        yield gauge(c.AUDIT_LAST_RUN, self.finished_at)
        yield gauge(c.AUDIT_SUCCESS, 1.0 if self.success else 0.0)
        if self.differences is not None:
            rows = (((kind,), float(n)) for kind, n in sorted(self.differences.items()))
            yield labelled(c.AUDIT_DIFFERENCES, rows)


def push_audit_result(
    gateway: str,
    *,
    success: bool,
    differences: Mapping[str, int] | None,
    finished_at: float | None = None,
    timeout_s: float = PUSH_TIMEOUT_S,
) -> None:
    """Replace job :data:`AUDIT_JOB`'s group on ``gateway`` (from :func:`gateway_url`)
    with this result; ``finished_at`` defaults to now (seconds since the epoch).
    PushError naming the gateway when it fails."""
    result = _AuditResult(time.time() if finished_at is None else finished_at, success, differences)
    try:
        push_to_gateway(gateway, job=AUDIT_JOB, registry=result, timeout=timeout_s)
    except (OSError, ValueError) as exc:  # URLError, HTTPError, timeouts, refusals
        raise PushError(f"Pushgateway {gateway}: {type(exc).__name__}: {exc}") from None
