"""Opening the log directory's files safely: :mod:`migration.common.files`' rules, a
refusal reported as the log's corruption (CorruptLogError naming the file)."""

from __future__ import annotations

from pathlib import Path

from migration.common import files
from migration.common.files import UnreadableFileError
from migration.log.errors import CorruptLogError


def require_dir(path: Path) -> None:
    """FileNotFoundError naming what ``path`` is when it is not a directory."""
    if not path.is_dir():
        what = "not a directory" if path.exists() else "no such log directory"
        raise FileNotFoundError(f"{path}: {what}")


def open_regular(path: Path, flags: int) -> int:
    """:func:`migration.common.files.open_regular`; a refusal is CorruptLogError."""
    try:
        return files.open_regular(path, flags)
    except UnreadableFileError as exc:
        raise CorruptLogError(path, None, exc.reason) from None


def read_regular(path: Path, max_bytes: int) -> bytes:
    """:func:`migration.common.files.read_regular`; a refusal is CorruptLogError."""
    try:
        return files.read_regular(path, max_bytes)
    except UnreadableFileError as exc:
        raise CorruptLogError(path, None, exc.reason) from None
