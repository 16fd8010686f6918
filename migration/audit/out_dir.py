"""``audit --out DIR``: what the audit writes there, and what it refuses to overwrite.

``DIR`` is a local path or a URI Arrow and Spark write (``hdfs://``, ``s3://``...). The
audit writes ``differences.parquet`` (Spark), ``samples.jsonl`` and ``report.json``.

Rules for a local ``DIR`` (object stores have neither links nor half-written objects):

- ``DIR`` itself may be a symlink (to a volume, say): it is followed.
- Before the audit starts (:func:`check_out`), each name it will write is looked at: a
  symlink there is refused -- the write would land wherever the link points, outside
  ``DIR`` -- and so is anything but what the audit writes there (a regular file; a
  directory for ``differences.parquet``), and a ``report.json`` that is not an audit
  report (:data:`REPORT_START`). The audit overwrites only what an audit wrote;
  :class:`~migration.audit.errors.AuditError` names the path and what to do.
- ``samples.jsonl`` and ``report.json`` are written whole (:func:`write_file`): a
  temporary file in ``DIR`` renamed over the name, never opened for writing in place,
  so a link (or a hard link) put there meanwhile is replaced, not written through.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from pyarrow import fs

from migration.audit.errors import AuditError
from migration.audit.handoff import WorkDir
from migration.common.files import replace_contents

REPORT = "report.json"
SAMPLES = "samples.jsonl"
DIFFERENCES = "differences.parquet"
REPORT_START = b'{\n  "consistent": '
"""How every report.json an audit writes begins (:func:`report_bytes`): the contract's
first key."""


def report_bytes(report: dict[str, Any]) -> bytes:
    """``report.json``'s content: the report's JSON (the contract), indented."""
    return json.dumps(report, indent=2).encode()


def local_dir(out: str) -> Path | None:
    """The local directory ``out`` names (a path or a ``file://`` URI); None for a URI
    of another file system."""
    if "://" not in out:
        return Path(out)
    parsed = urlparse(out)
    return Path(unquote(parsed.path)) if parsed.scheme == "file" else None


def check_out(out: str) -> None:
    """Refuse an ``--out`` whose names the audit would write are not its own to
    overwrite (see the module doc): AuditError naming the path."""
    directory = local_dir(out)
    if directory is None:
        return
    for name, kind in (
        (REPORT, stat.S_ISREG),
        (SAMPLES, stat.S_ISREG),
        (DIFFERENCES, stat.S_ISDIR),
    ):
        path = directory / name
        try:
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            continue
        if stat.S_ISLNK(st.st_mode):
            raise AuditError(
                f"{path} is a symlink (to {os.readlink(path)}): the audit does not write "
                "through links; remove it or choose another --out"
            )
        if not kind(st.st_mode):
            raise AuditError(
                f"{path} exists and is not what an audit writes there: remove it or choose "
                "another --out"
            )
        if name == REPORT and not _starts_with(path, REPORT_START):
            raise AuditError(
                f"{path} exists and is not an audit report: the audit overwrites only its "
                "own; move it or choose another --out"
            )


def _starts_with(path: Path, start: bytes) -> bool:
    with path.open("rb") as f:
        return f.read(len(start)) == start


def write_file(target: WorkDir, name: str, data: bytes) -> None:
    """``data`` as the whole of ``name`` in the --out directory (see the module doc)."""
    if isinstance(target.filesystem, fs.LocalFileSystem):
        replace_contents(Path(target.path) / name, data, through_symlink=False)
        return
    with target.filesystem.open_output_stream(f"{target.path}/{name}") as f:
        f.write(data)
