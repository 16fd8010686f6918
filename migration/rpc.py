"""gRPC settings every channel and server of zk2kraft shares.

gRPC refuses messages over 4 MiB by default, and a refused Raft Fetch answer is not an
error the leader sees: the follower just never catches up (a leader appending a large
copy then loses its quorum). Fetch answers carry up to ``fetch_max_bytes`` (8 MiB) and at
least one whole batch, and a full UpdateMetadata of a large cluster runs to tens of MiB
(about 60 bytes a partition): the limits are set far above both.
"""

from __future__ import annotations

MAX_MESSAGE_BYTES = 512 * 1024 * 1024
GRPC_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
]
