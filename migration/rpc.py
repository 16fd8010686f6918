"""gRPC settings every channel and server of zk2kraft shares.

gRPC refuses messages over 4 MiB by default, and a refused Raft Fetch answer is not an
error the leader sees: the follower just never catches up (a leader appending a large
copy then loses its quorum). Fetch answers carry up to ``fetch_max_bytes`` (8 MiB) and at
least one whole batch, and a full UpdateMetadata of a large cluster runs to tens of MiB
(about 60 bytes a partition): the limits are set far above both.

TLS: a process's gRPC is TLS everywhere or nowhere. :func:`use_tls` (called once, at
start, before any channel or server exists) makes every channel :func:`channel` opens
verify its peer against the trust store and present the process's key store, and every
port :func:`add_port` opens require TLS (mutual with ``ssl.client.auth=required``: a
peer without a certificate the trust store signs is refused in the handshake).
"""

from __future__ import annotations

from typing import Any

import grpc

from migration.tls import TlsSettings

MAX_MESSAGE_BYTES = 512 * 1024 * 1024
GRPC_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
]

_tls: TlsSettings | None = None


def use_tls(tls: TlsSettings | None) -> None:
    """The process's gRPC TLS (None: plaintext)."""
    global _tls  # noqa: PLW0603 - one setting per process, fixed at start
    _tls = tls


def channel(target: str, options: list[tuple[str, Any]] | None = None) -> grpc.Channel:
    """A channel to ``target`` (host:port), TLS when the process uses it."""
    options = GRPC_OPTIONS if options is None else options
    if _tls is None:
        return grpc.insecure_channel(target, options=options)
    return grpc.secure_channel(target, _tls.grpc_channel_credentials(), options=options)


def add_port(server: Any, address: str) -> int:
    """Open ``address`` on a gRPC server (sync or asyncio); the port bound, 0 if none."""
    if _tls is None:
        return int(server.add_insecure_port(address))
    return int(server.add_secure_port(address, _tls.grpc_server_credentials()))
