"""Kafka's integer types on the wire: every id, epoch, count and config value that
crosses one must fit its type (``int32`` epochs and ids, ``int64`` offsets and LONG
configs)."""

from __future__ import annotations

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1

# The largest metadata batch, on disk and on the wire (a Raft fetch carries whole
# batches): a larger length field is corruption, not data.
MAX_BATCH_BYTES = 64 * 1024 * 1024
