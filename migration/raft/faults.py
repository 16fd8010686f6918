"""Which errors end a controller process, and how it ends.

Contract (Kafka's, for the metadata log): an I/O failure of the log (a failed write or
fsync), a broken Raft invariant, or a committed record that cannot be applied means
the node can no longer promise what it acknowledges, so it halts at once: the reason
is logged once at CRITICAL and the process exits with :data:`FATAL_EXIT_CODE`. It never
limps on. Whatever escapes an event of the loop is such a fault (a committed record
that cannot be applied escapes from the replay). Bad input in one request is not a
fault of the node: that request gets an error answer (UNKNOWN_SERVER_ERROR when a
handler raised anything :func:`is_fatal` does not name) and the node carries on. A
write the node makes of its own accord (not a request's) that is refused is a fault of
the node too (:class:`InternalWriteRefusedError`): nobody is there to retry it, and a
node that goes on without it (an abort it needed, its bootstrap metadata.version) serves
a log it cannot trust.
"""

from __future__ import annotations

import logging
import os
import sys

from migration.log.errors import LogError

log = logging.getLogger(__name__)

FATAL_EXIT_CODE = 70  # EX_SOFTWARE: the process stopped itself on a fault


class RaftInvariantError(AssertionError):
    """The protocol was about to break one of Raft's guarantees: a bug, never input."""


class InternalWriteRefusedError(RuntimeError):
    """A write the node makes for itself (an abort at activation, its bootstrap
    metadata.version, the migration's copy, fencing) was refused; the message says which
    and why."""


FATAL_ERRORS: tuple[type[BaseException], ...] = (
    RaftInvariantError,
    InternalWriteRefusedError,
    OSError,
    LogError,
    MemoryError,
)


def is_fatal(exc: BaseException) -> bool:
    """Whether ``exc`` must stop the node rather than fail one request."""
    return isinstance(exc, FATAL_ERRORS) or not isinstance(exc, Exception)


def halt(reason: str, exc: BaseException | None = None) -> None:
    """Log ``reason`` once, flush the logs, and end the process without running any
    more of its code (no finally blocks, no atexit: nothing that could write). A refused
    internal write is logged without its traceback: its message is the whole reason."""
    trace = None if isinstance(exc, InternalWriteRefusedError) else exc
    log.critical("halting: %s", reason, exc_info=trace)
    for handler in logging.getLogger().handlers:
        handler.flush()
    sys.stderr.flush()
    os._exit(FATAL_EXIT_CODE)
