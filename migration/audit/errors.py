"""The audit's own error."""

from __future__ import annotations


class AuditError(Exception):
    """The audit cannot compare (not a difference): names what is missing."""
