"""``zk2kraft preflight``: is the cluster ready to migrate? Exit 0 ready, 1 not ready."""

from __future__ import annotations

import argparse
import sys
import time
from typing import TextIO

from migration.bridge.preflight import Finding, PreflightReport, fix_of, run_preflight
from migration.cli.output import EXIT_NOT_READY, EXIT_OK, exit_codes, print_json, prose
from migration.cli.zk_source import add_zk_argument, open_tree, source_of
from migration.observability.progress import for_stream
from migration.zk.multiread import TreeReader
from migration.zk.reader import read_snapshot


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "preflight",
        help="check a ZooKeeper-based cluster is ready to migrate",
        description=prose(
            """Reads the whole Kafka tree once and reports blockers, warnings and an
            estimate of the copy (records per type, expected time); the findings and the
            --json object: docs/cli.md#preflight-findings."""
        ),
    )
    add_zk_argument(p, offline=True)
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    exit_codes(p, {EXIT_OK: "ready to migrate", EXIT_NOT_READY: "blockers found"})
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    with open_tree(args) as tree:
        report = preflight(tree, show_progress=not args.json)
    if args.json:
        print_json(report.to_json())
    else:
        print_report(report, source_of(args), sys.stdout)
    return EXIT_OK if report.ready else EXIT_NOT_READY


def preflight(tree: TreeReader, show_progress: bool = True) -> PreflightReport:
    """Read ``tree`` (live or offline) once and run every check on it."""
    started = time.monotonic()
    snap = read_snapshot(tree, for_stream(sys.stderr, enabled=show_progress))
    return run_preflight(snap, time.monotonic() - started)


def print_report(report: PreflightReport, zk: str, out: TextIO) -> None:
    verdict = "READY" if report.ready else "NOT READY"
    out.write(
        f"Preflight of {zk}: {verdict} "
        f"({len(report.blockers)} blocker(s), {len(report.warnings)} warning(s))\n"
    )

    def section(title: str, findings: tuple[Finding, ...]) -> None:
        if findings:
            out.write(f"\n{title}\n")
            for f in findings:
                where = f"  [{f.path}]" if f.path else ""
                out.write(f"  {f.code:<30} {f.message}{where}\n")

    section("Blockers", report.blockers)
    section("Warnings", report.warnings)
    found = [*report.blockers, *report.warnings]
    if found:
        out.write("\nWhat to do\n")
        for code in dict.fromkeys(f.code for f in found):
            out.write(f"  {code}: {fix_of(next(f for f in found if f.code == code))}\n")
    est = report.estimate
    out.write("\nEstimate of the copy (records by type)\n")
    for name, count in est["records"].items():
        if count:
            out.write(f"  {name:<30} {count:>10,}\n")
    out.write(f"  {'total':<30} {est['total_records']:>10,}\n")
    out.write(
        f"  read the data of {est['znodes_read']:,} Kafka znode(s) in {est['read_seconds']:.2f}s; "
        f"expected copy time ~{est['expected_copy_seconds']:.1f}s\n"
    )
