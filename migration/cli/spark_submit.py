"""The audit as a Spark application: ``spark-submit [--master URL] [--conf ...]
.../migration/cli/spark_submit.py --zk CONNECT (--log-dir DIR | --bootstrap-controller
HOST:PORT) [--json] [--out DIR] [--work-dir DIR] [--command-config FILE]``, the
arguments of ``zk2kraft audit``; Spark's settings are spark-submit's. The ``migration``
package must be importable by the driver's Python (installed in the image; locally, the
virtualenv's python as ``PYSPARK_PYTHON``). A ``--master`` other than ``local[N]`` needs
``--work-dir`` on storage every executor reads (docs/audit.md). spark-submit merges the
driver's stderr into its stdout: with ``--json`` the audit's progress lines are off there,
and a failed ``--pushgateway`` push's warning comes before the report."""

import sys

from migration.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["audit", *sys.argv[1:]]))
