"""The audit's summary left with the controllers it read the log from (``ReportAudit``),
for their live migration page: consistent or not, how many differences, the log offset
compared, when it finished and how long it took.

Contract: best-effort. Sent to every controller of ``--bootstrap-controller`` (each keeps
the last one; the active one shows it), each call bounded by :data:`TELL_TIMEOUT_S`. When
no controller took it: one warning on stderr; the audit's exit code never changes.
"""

from __future__ import annotations

import sys
import time

import grpc

from migration.audit.report import AuditReport
from migration.common import rpc
from migration.proto import controller_pb2 as cpb
from migration.proto import controller_pb2_grpc

TELL_TIMEOUT_S = 2.0


def summary(report: AuditReport, finished_ms: int) -> cpb.ReportAuditRequest:
    return cpb.ReportAuditRequest(
        consistent=report.consistent,
        differences=sum(report.differences.values()),
        offset=report.offset,
        log_end_offset=report.log_end_offset,
        finished_ms=finished_ms,
        seconds=float(report.seconds.get("total", 0.0)),
    )


def tell_controllers(bootstrap: list[str] | None, report: AuditReport) -> list[int]:
    """Send the summary; the ids of the controllers that kept it (a warning when none)."""
    if not bootstrap:
        return []
    request = summary(report, int(time.time() * 1000))
    kept, problems = [], []
    for endpoint in bootstrap:
        try:
            with rpc.channel(endpoint, []) as channel:
                answer = controller_pb2_grpc.ControllerStub(channel).ReportAudit(
                    request, timeout=TELL_TIMEOUT_S
                )
        except grpc.RpcError as exc:
            problems.append(f"{endpoint}: {exc.code().name}")
            continue
        if answer.error.error_code:
            problems.append(f"{endpoint}: {answer.error.error_message}")
        else:
            kept.append(answer.node_id)
    if not kept:
        print(
            "warning: the audit's summary did not reach the controllers' migration page ("
            + "; ".join(problems)
            + ")",
            file=sys.stderr,
        )
    return kept
