"""Rows handed to Spark as Parquet files (columnar, written through Arrow: no pickled
Python rows cross into the JVM), in a work directory Spark's executors can read.

The work directory is a local path (``local[N]``, or a volume mounted at the same path
on every node) or a URI of a filesystem Arrow writes -- ``hdfs://`` (libhdfs and
Hadoop's ``CLASSPATH``), ``s3://``, ``gs://``, ``abfs://`` -- that Spark reads under the
same URI (``s3://`` needs Spark's ``fs.s3.impl`` mapped to S3A: Arrow knows no
``s3a://``). The driver writes each file once; nothing is appended later.

On a master other than ``local``/``local[N]``/``local[*]`` the executors may run on
other hosts: the rows must go to such a shared location, never the driver's temporary
directory (:func:`check_shared`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs

from migration.audit.errors import AuditError
from migration.observability.progress import NullProgress, Progress

ENTITY_SCHEMA = pa.schema([("kind", pa.string()), ("entity", pa.string()), ("digest", pa.int64())])
FIELD_SCHEMA = pa.schema(
    [("kind", pa.string()), ("entity", pa.string()), ("field", pa.string()), ("value", pa.string())]
)
CHUNK_ROWS = 250_000

_USERINFO = re.compile(r"(?<=://)[^?#]*@")
_LOCAL_MASTER = re.compile(r"local(\[(\*|[1-9][0-9]*)(,[1-9][0-9]*)?\])?")
SHARED_STORAGE = (
    "a volume mounted at the same path on every Spark node (NFS, a Kubernetes "
    "ReadWriteMany PVC), or an hdfs:// or s3:// URI that both Arrow and Spark's Hadoop "
    "are configured for"
)
"""What ``--work-dir`` must be on a cluster, in the words of the audit's errors."""


def is_local_master(master: str) -> bool:
    """``local``, ``local[N]``, ``local[*]`` (and their ``[N,F]`` forms): the driver
    and the executors are one JVM on one host, so its temporary directory serves."""
    return _LOCAL_MASTER.fullmatch(master) is not None


def check_shared(master: str, work_dir: str | None) -> None:
    """Refuse a master whose executors may run on other hosts without a ``--work-dir``:
    the rows would go to the driver's temporary directory, which they cannot read.
    AuditError naming ``--work-dir`` and the storage that serves."""
    if work_dir is None and not is_local_master(master):
        raise AuditError(
            f"Spark's master {without_credentials(master)} runs executors that may be on "
            "other hosts: they cannot read the driver's temporary directory; give "
            f"--work-dir DIR, {SHARED_STORAGE}"
        )


def check_location(location: str, option: str) -> None:
    """Refuse, before anything is read, a URI ``location`` no Arrow filesystem writes
    (an unknown scheme, ``s3a://``, ``hdfs://`` without libhdfs), or one with a query or
    fragment (the run's own directory is a path segment added after it: a query would
    leave it out, and the clean-up would then remove the directory named): AuditError
    naming ``option``. Local paths are left to :meth:`WorkDir.of`."""
    if "://" not in location:
        return
    if "?" in location or "#" in location:
        raise AuditError(
            f"{option} {without_credentials(location)}: a URI with a query or fragment is not "
            "taken (set the filesystem's options in Arrow's and Spark's own configuration)"
        )
    try:
        fs.FileSystem.from_uri(location)
    except (pa.ArrowException, OSError, ValueError) as exc:
        shown = without_credentials(location)
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        hint = "; Arrow knows s3:// (map it to S3A in Spark)" if location.startswith("s3a:") else ""
        raise AuditError(
            f"{option} {shown}: Arrow cannot write there ({reason.replace(location, shown)}){hint}"
        ) from None


def without_credentials(uri: str) -> str:
    """``uri`` as it may be shown: whatever stands between ``://`` and the last ``@``
    (a user, a key -- even one with an unescaped ``/``) and any query (where Arrow's
    URIs may carry keys) replaced by ``<redacted>``."""
    base, query, _ = uri.partition("?")
    return _USERINFO.sub("<redacted>@", base) + ("?<redacted>" if query else "")


@dataclass(frozen=True)
class WorkDir:
    """Where the rows go: ``uri`` for Spark, ``filesystem`` + ``path`` for Arrow."""

    uri: str
    filesystem: fs.FileSystem
    path: str

    @classmethod
    def of(cls, location: str) -> WorkDir:
        uri = location if "://" in location else Path(location).resolve().as_uri()
        filesystem, path = fs.FileSystem.from_uri(uri)
        filesystem.create_dir(path, recursive=True)
        return cls(uri.rstrip("/"), filesystem, path.rstrip("/"))

    def spark_path(self, name: str) -> str:
        return f"{self.uri}/{name}"

    def write(
        self,
        name: str,
        schema: pa.Schema,
        rows: Iterable[tuple[object, ...]],
        progress: Progress | None = None,
    ) -> int:
        """Write ``rows`` (tuples in ``schema``'s column order) as ``name``; returns the
        row count. Rows are converted a chunk at a time, so memory stays bounded."""
        progress = progress or NullProgress()
        count = 0
        rows = iter(rows)
        with pq.ParquetWriter(f"{self.path}/{name}", schema, filesystem=self.filesystem) as out:
            while True:
                chunk = list(islice(rows, CHUNK_ROWS))
                columns = list(zip(*chunk, strict=True)) if chunk else [()] * len(schema)
                out.write_table(
                    pa.table(
                        [pa.array(c, t) for c, t in zip(columns, schema.types, strict=True)],
                        schema=schema,
                    )
                )
                count += len(chunk)
                progress.advance(len(chunk))
                if len(chunk) < CHUNK_ROWS:
                    break
        return count

    def remove(self) -> None:
        self.filesystem.delete_dir(self.path)
