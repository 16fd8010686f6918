"""``zk2kraft audit``: ZooKeeper against the metadata log at the offset ZooKeeper holds,
diffed on Spark. Exit 0 consistent, 1 differences found, 2 the audit could not run.

Run by ``spark-submit`` (``migration/cli/spark_submit.py``), the master and the rest of
Spark's settings are spark-submit's; run directly, ``--spark-master`` (default
``local[2]``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from migration.cli.audit_push import add_pushgateway_argument, checked_gateway, push_result
from migration.cli.output import (
    EXIT_ERROR,
    EXIT_NOT_READY,
    EXIT_OK,
    CliError,
    exit_codes,
    print_json,
    prose,
)
from migration.cli.shared_options import (
    TO_COMPARE_PASSWORDS,
    add_password_encoder_secret_argument,
    password_encoder_secret,
)
from migration.cli.zk_source import add_zk_argument, offline_dirs, zk_security_of
from migration.common.text import shown
from migration.controller.client import parse_bootstrap
from migration.observability.progress import for_stream

LOCAL_MASTER = "local[2]"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    a = sub.add_parser(
        "audit",
        help="compare ZooKeeper with the metadata log at /migration's offset, on Spark "
        "(exit 1 when they differ)",
        description=prose(
            """ZooKeeper against the metadata log at the offset /migration says ZooKeeper
            holds, diffed on Spark (see docs/audit.md). With --pushgateway the result is
            pushed to a Prometheus Pushgateway once known (job zk2kraft-audit, what the
            ZkAuditFailed and ZkAuditNotRun alerts read)."""
        ),
    )
    add_zk_argument(a, offline=True)
    log = a.add_mutually_exclusive_group(required=True)
    log.add_argument("--log-dir", type=Path, help="a controller's metadata log directory")
    log.add_argument(
        "--bootstrap-controller",
        metavar="HOST:PORT[,...]",
        help="fetch the log from the quorum instead",
    )
    a.add_argument(
        "--spark-master",
        metavar="URL",
        help=f"Spark's master (default {LOCAL_MASTER}; under spark-submit: its "
        "`spark-submit --master`)",
    )
    a.add_argument(
        "--out",
        metavar="DIR",
        help="write every difference (Parquet), a sample "
        "(JSON lines) and the report here (a path or a URI Spark can write)",
    )
    a.add_argument(
        "--work-dir",
        metavar="DIR",
        help="where the rows are handed to Spark's executors (default: a temporary "
        "directory, local masters only; required on any other master: a path mounted on "
        "every node, or hdfs://, s3://...)",
    )
    add_password_encoder_secret_argument(a, TO_COMPARE_PASSWORDS)
    a.add_argument(
        "--samples",
        type=int,
        default=20,
        metavar="N",
        help="differences shown (default 20; --out has them all)",
    )
    a.add_argument("--json", action="store_true", help="print the report as JSON")
    add_pushgateway_argument(a)
    exit_codes(
        a,
        {
            EXIT_OK: "consistent",
            EXIT_NOT_READY: "differences found",
            EXIT_ERROR: "could not compare (also an --out DIR refused)",
        },
    )
    a.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    # PyArrow and PySpark (the audit extra) are imported only by the command that needs them.
    from migration.audit.errors import AuditError  # noqa: PLC0415
    from migration.audit.job import run_audit  # noqa: PLC0415
    from migration.audit.options import AuditOptions  # noqa: PLC0415
    from migration.cli.audit_report_page import tell_controllers  # noqa: PLC0415

    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit's PythonRunner sets it
    if args.samples < 0:
        raise CliError(f"--samples: {args.samples} is negative")
    gateway = checked_gateway(args.pushgateway)
    options = AuditOptions(
        zk=args.zk or "",
        log_dir=args.log_dir,
        bootstrap=parse_bootstrap(args.bootstrap_controller) if args.bootstrap_controller else None,
        spark_master=args.spark_master or (None if under_submit else LOCAL_MASTER),
        out=args.out,
        work_dir=args.work_dir,
        password_encoder_secret=password_encoder_secret(args),
        samples=args.samples,
        zk_timeout_s=args.zk_timeout_ms / 1000,
        zk_security=zk_security_of(args),
        zk_data_dirs=offline_dirs(args),
        zk_chroot=args.zk_chroot,
    )
    try:
        # off a terminal (a CronJob) progress lines go to stderr, beside --json's stdout;
        # but spark-submit's PythonRunner merges the driver's stderr into its stdout
        progress_on = not args.json or not (sys.stderr.isatty() or under_submit)
        report = run_audit(options, for_stream(sys.stderr, progress_on))
    except AuditError as exc:
        push_result(gateway, None)
        raise CliError(str(exc)) from None
    except Exception as exc:  # Spark's (PySparkException, Py4JJavaError): one line
        push_result(gateway, None)  # whatever stopped it: the audit did not run
        if type(exc).__module__.split(".")[0] in ("pyspark", "py4j"):
            raise CliError(f"Spark: {type(exc).__name__}: {shown(str(exc).strip(), 300)}") from None
        raise
    # pushed first: a failed push's warning (stderr, which spark-submit merges into
    # stdout) then comes before the report, never after it
    push_result(gateway, report.differences)
    tell_controllers(options.bootstrap, report)  # for the migration page; best-effort
    if args.json:
        print_json(report.to_json())
    else:
        report.print_text(sys.stdout)
    return EXIT_OK if report.consistent else EXIT_NOT_READY
