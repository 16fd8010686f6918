"""Files an operator points zk2kraft at, written and created safely -- symlinks included.

Rules (one implementation each):

- :func:`replace_contents` writes a file whole and atomically: a temporary file beside
  the real file, fsynced, renamed over it, the directory fsynced. A symlink is written
  *through*: the file it ends at is replaced and the link stays (configuration
  managers link ``server.properties`` into place; replacing the link with a plain file
  would leave the real file stale). The file keeps its permission bits and, where the
  process may, its owner and group (a warning says so where it may not); a config
  holding secrets stays 0600. The previous content may be kept beside it (``.bak``).
- :func:`write_private` writes a file that holds (or may hold) a secret: the same atomic
  replacement, the new file 0600 whatever the umask and whatever mode an earlier version
  had, the secret never in a file anyone else may read, not even for a moment.
- :func:`ensure_dir` creates a directory and its parents, but refuses a symlink to
  nothing on the way (:class:`DanglingSymlinkError`, naming the link and its target)
  instead of following it: creating the target would put data wherever the link's
  volume is not (an unmounted volume's mount point is on the root disk).
- :func:`open_regular` and :func:`read_regular` read only regular files, within a size
  (:class:`UnreadableFileError` otherwise): a FIFO named like a config or a segment would
  block a reader for ever, and a file of gigabytes costs nothing to refuse.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from collections.abc import Iterable
from pathlib import Path

_log = logging.getLogger(__name__)


class UnreadableFileError(ValueError):
    """A file refused before it is read: not a regular file, or longer than allowed."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def open_regular(path: Path, flags: int) -> int:
    """``os.open`` that refuses anything but a regular file before reading from it:
    UnreadableFileError (OSError when it cannot be opened at all)."""
    fd = os.open(path, flags | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UnreadableFileError(path, "not a regular file")
    os.set_blocking(fd, True)
    return fd


def read_regular(path: Path, max_bytes: int) -> bytes:
    """The whole content of a regular file (see :func:`open_regular`) of at most
    ``max_bytes``; a longer one is UnreadableFileError naming the limit, and is not read
    past it."""
    fd = open_regular(path, os.O_RDONLY)
    try:
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise UnreadableFileError(path, f"more than {max_bytes:,} bytes")
    return data


class DanglingSymlinkError(NotADirectoryError):
    """A symlink whose target does not exist where a directory must be."""

    def __init__(self, link: Path) -> None:
        target = os.readlink(link)
        super().__init__(
            f"{link} is a symlink to {target}, which does not exist (a volume not mounted?): "
            "create the target directory or fix the link; refusing to create it through "
            "the link"
        )
        self.link = link


def dangling_symlink(path: Path) -> Path | None:
    """The first of ``path`` and its parents that is a symlink to nothing, if any."""
    for p in (path, *path.parents):
        if p.is_symlink() and not p.exists():
            return p
        if p.exists():
            return None
    return None


def ensure_dir(directory: Path) -> None:
    """``directory`` and its parents, created as needed (see the module doc)."""
    link = dangling_symlink(directory)
    if link is not None:
        raise DanglingSymlinkError(link)
    directory.mkdir(parents=True, exist_ok=True)


class ChangedSinceReadError(OSError):
    """The file is no longer what the caller read (someone else wrote it meanwhile)."""


def replace_contents(
    path: Path,
    data: bytes,
    through_symlink: bool = True,
    backup: str | None = None,
    expected: bytes | None = None,
    *,
    mode: int | None = None,
) -> Path:
    """Make ``data`` the whole content of the file ``path`` names, atomically (see the
    module doc); returns the file written (``path``, or the end of its symlinks). A new
    file gets 0666 less the umask. ``through_symlink=False``: the name ``path`` itself
    is replaced, whatever it is (a symlink there is replaced, never followed).
    ``backup`` (a suffix such as ``.bak``): the file's previous content is first kept
    beside it under its name plus the suffix, as atomically, with its mode and owner
    (whatever was there under that name is replaced). ``expected``: what the caller read
    and edited; a file that now holds anything else is left alone
    (:class:`ChangedSinceReadError`), so an edit never drops a change made meanwhile.
    ``mode``: the new file's permission bits, whatever the old file's (the temporary file
    has them before any data is written).
    Any failure before the rename leaves the file as it was, and no temporary file
    behind; a failed fsync of the directory after it leaves the new content in place."""
    target = Path(os.path.realpath(path)) if through_symlink else path
    try:
        old: os.stat_result | None = os.stat(target, follow_symlinks=False)
    except FileNotFoundError:
        old = None
    if old is not None and not stat.S_ISREG(old.st_mode):
        old = None  # nothing of it is kept
    previous = None
    if old is not None and (backup is not None or expected is not None):
        with open(target, "rb") as f:
            previous = f.read()
    if expected is not None and previous != expected:
        raise ChangedSinceReadError(
            errno.ESTALE, "changed since it was read (written meanwhile): run again", str(target)
        )
    if backup is not None and previous is not None and old is not None:
        _install(target.with_name(target.name + backup), previous, old)
    _install(target, data, old, mode)
    fsync_dir(target.parent)
    return target


def write_synced(fd: int, chunks: Iterable[bytes], sync_every: int | None = None) -> None:
    """Every byte of ``chunks`` written to ``fd`` (a short write is followed by one that
    says why, ENOSPC), then fsynced. ``sync_every``: also fdatasync each time that many
    bytes were written since the last, so a large file never leaves much unsynced data
    for the final fsync (on a journalled file system another file's fsync waits behind
    it: a 40 MB snapshot's held the metadata log's fsync, on the Raft loop, 0.8 s)."""
    unsynced = 0
    for chunk in chunks:
        view = memoryview(chunk)
        while view:
            view = view[os.write(fd, view) :]
        unsynced += len(chunk)
        if sync_every is not None and unsynced >= sync_every:
            os.fdatasync(fd)
            unsynced = 0
    os.fsync(fd)


def _install(
    target: Path, data: bytes, like: os.stat_result | None, mode: int | None = None
) -> None:
    """``data`` written to a temporary file beside ``target``, fsynced, with ``like``'s
    owner and mode (``mode``, when given, instead of ``like``'s), and renamed over
    ``target`` (the directory is the caller's to fsync)."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    if mode is None and like is not None:
        mode = stat.S_IMODE(like.st_mode)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else 0o600)
    try:
        if like is not None:
            _keep_owner(fd, like, target)
        if mode is not None:
            os.fchmod(fd, mode)  # after fchown, which clears set-id bits
        write_synced(fd, (data,))
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    try:
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


PRIVATE_MODE = 0o600


def write_private(path: Path, text: str) -> Path:
    """``text`` (ASCII or UTF-8) as the whole content of the file named ``path``, mode
    :data:`PRIVATE_MODE` (read and write by its owner only) whether it is new or rewritten:
    for any file that holds a secret (a config with ``password.encoder.secret``, a JAAS
    file's passwords). Atomic as :func:`replace_contents`; the name ``path`` itself is
    replaced (a symlink there is not followed). Returns ``path``."""
    return replace_contents(path, text.encode(), through_symlink=False, mode=PRIVATE_MODE)


def _keep_owner(fd: int, like: os.stat_result, target: Path) -> None:
    """The open file ``fd`` given ``like``'s owner and group where this process may (root
    may; an owner may change the group to one of its own); a warning naming ``target``
    where it may not."""
    now = os.fstat(fd)
    if (now.st_uid, now.st_gid) == (like.st_uid, like.st_gid):
        return
    try:
        os.fchown(fd, like.st_uid, like.st_gid)
    except PermissionError:
        _log.warning(
            "%s: not permitted to keep its owner and group %d:%d; the new file's are %d:%d",
            target,
            like.st_uid,
            like.st_gid,
            now.st_uid,
            now.st_gid,
        )


def fsync_dir(directory: Path) -> None:
    """Make a rename or a new name in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
