"""Rows handed to Spark as Parquet files (columnar, written through Arrow: no pickled
Python rows cross into the JVM), in a work directory Spark's executors can read.

The work directory is a local path (``local[N]``, or a mount every executor shares) or
any URI Arrow's filesystems speak (``hdfs://``, ``s3://``, ``gs://``); Spark reads the
same location (map ``s3://`` to ``s3a://`` in Spark's configuration). The driver writes
each file once; nothing is appended later.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs

from migration.observability.progress import NullProgress, Progress

ENTITY_SCHEMA = pa.schema([("kind", pa.string()), ("entity", pa.string()), ("digest", pa.int64())])
FIELD_SCHEMA = pa.schema(
    [("kind", pa.string()), ("entity", pa.string()), ("field", pa.string()), ("value", pa.string())]
)
CHUNK_ROWS = 250_000


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
