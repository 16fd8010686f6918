"""Bad znodes a long-running process has already reported, so each is logged once.

A broker or controller that meets a znode it cannot parse skips it and goes on; the
operator must hear of it, but once, not on every re-read. :class:`ReportedZnodes`
remembers, per path, the content that was reported (any key that changes when the
data does: the stat's ``mzxid``, or the problem found); the same path with the same
content is not logged again, a changed one is. A znode read fine again, or gone, is
forgotten, so breaking it later is reported anew.

Not thread-safe: each owner calls it from one thread (or under its own lock).
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Iterable

from migration.zk.errors import ZnodeFormatError


class ReportedZnodes:
    """What ``log`` was told about bad znodes, at ``level``, each line saying ``what``
    happens to them (e.g. "the controller ignores it")."""

    def __init__(self, log: logging.Logger, level: int, what: str) -> None:
        self._log = log
        self._level = level
        self._what = what
        self._reported: dict[str, Hashable] = {}

    def report(self, error: ZnodeFormatError, content: Hashable) -> bool:
        """Log ``error`` unless its path was reported with this ``content`` already;
        True when it was logged."""
        if self._reported.get(error.path, _NONE) == content:
            return False
        self._reported[error.path] = content
        self._log.log(
            self._level, "malformed znode %s (%s): %s", error.path, self._what, error.problem
        )
        return True

    def forget(self, path: str) -> None:
        """``path`` was read fine, or is gone: a later problem is reported anew."""
        self._reported.pop(path, None)

    def keep_only(self, paths: Iterable[str]) -> None:
        """Forget every path not in ``paths`` (those still bad after a full re-read)."""
        still = set(paths)
        for path in [p for p in self._reported if p not in still]:
            del self._reported[path]

    def __contains__(self, path: object) -> bool:
        return path in self._reported


_NONE = object()
