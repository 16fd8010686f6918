"""Kafka's integer types on the wire: every id, epoch, count and config value that
crosses one must fit its type (``int32`` epochs and ids, ``int64`` offsets and LONG
configs)."""

from __future__ import annotations

INT16_MAX = 2**15 - 1
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
PORT_MAX = 2**16 - 1  # Kafka's uint16 ports
STRING_MAX_BYTES = INT16_MAX  # Kafka's strings: an int16 length, then UTF-8

# The largest metadata batch, on disk and on the wire (a Raft fetch carries whole
# batches): a larger length field is corruption, not data.
MAX_BATCH_BYTES = 64 * 1024 * 1024

# The records of one batch once decompressed: Kafka's Raft writes batches of at most
# 8 MiB (KafkaRaftClient's MAX_BATCH_SIZE_BYTES) and leaves its metadata log
# uncompressed, so a compressed batch that inflates past the bound on a whole batch is a
# decompression bomb, not data.
MAX_DECOMPRESSED_BATCH_BYTES = MAX_BATCH_BYTES

# A ZooKeeper snapshot's decompressed stream: at most this many times its file (Kafka's
# trees compress 5-20x: paths, JSON and 60-byte stats of distinct zxids and times; deflate
# reaches 1032x only on runs no tree holds) and never past a fixed budget. ZooKeeper keeps
# its whole tree in one JVM heap, so real snapshots are MBs to a few hundred MB; the
# stream is held in memory while its tree is parsed, which takes a few times more again.
MAX_SNAPSHOT_EXPANSION = 256
MAX_SNAPSHOT_STREAM_BYTES = 4 * 1024**3
