"""gRPC settings every channel and server of zk2kraft shares.

Message sizes. A receiver takes in and parses any message under its limit, so a limit
far above what any peer legitimately sends lets one hostile message cost several times
its size (under the old 512 MiB limit a 300 MiB message took a controller's peak memory
from 63 to 965 MiB and left it at 322 MiB; refused by its length, it costs nothing
measurable). Too low a limit is no better: gRPC's default 4 MiB would refuse a Raft
Fetch answer, and a refused answer is not an error the leader sees -- the follower just
never catches up. So each receiver takes what its largest legitimate message needs, and
no more:

- :data:`CONTROLLER_RECEIVE_BYTES` (32 MiB), a controller's server (the Raft and
  Controller services, :data:`CONTROLLER_SERVER_OPTIONS`). Raft's requests are small
  (a Fetch asks; its answer is what is large). The Controller service's largest are
  admin requests, and a request the controller accepts makes at most 10,000 records
  (Kafka's limit per user operation, ``MAX_RECORDS_PER_USER_OP``): at 1 KiB a record,
  generous for a topic, a partition or a config, that is 10 MiB. Brokers send
  AlterPartition 10,000 partitions at a time at most.
- :data:`BROKER_CONTROL_RECEIVE_BYTES` (256 MiB), a broker's BrokerControl server
  (:data:`BROKER_CONTROL_SERVER_OPTIONS`). A full UpdateMetadata names every partition
  of the cluster, about 46 bytes each plus its topic's name; measured with the project's
  builder (:mod:`migration.zkcontroller.state_requests`) at 1,000,000 partitions with the
  benchmarks' 14-character names: 58.7 MB, the largest LeaderAndIsr (three brokers,
  each holding every partition) the same. 256 MiB takes 1,000,000 partitions whose
  topic names average up to ~220 characters (Kafka allows 249). A larger one is refused
  loudly: RESOURCE_EXHAUSTED, which the controller's channel logs at ERROR.
- :data:`RESPONSE_RECEIVE_BYTES` (65 MiB), every channel :func:`channel` opens
  (answers, :data:`CHANNEL_OPTIONS`). A Raft Fetch answer holds up to
  ``fetch_max_bytes`` (1 MiB) of batches but always one whole batch, and a batch is at
  most :data:`~migration.common.limits.MAX_BATCH_BYTES` (64 MiB); snapshot chunks are 1 MiB
  (8 MiB for the log copier); the Controller's largest answer, Metadata for every topic,
  measured 24 MB at 1,000,000 partitions. One MiB over the batch bound leaves room for
  the answer's other fields.

A message over a receiver's limit is refused with RESOURCE_EXHAUSTED and the receiver
goes on serving. Sends are not limited here: what a process sends, it built itself.

Reconnects. A channel whose connection was lost or refused tries again after a backoff
that starts at :data:`RECONNECT_BACKOFF_MS` and grows (x1.6, jittered) up to
:data:`RECONNECT_BACKOFF_MAX_MS`: Kafka's ``reconnect.backoff.ms`` and
``reconnect.backoff.max.ms`` (50 ms, 1 s). With gRPC's own (1 s growing to 120 s) a
channel cut off for 10 s reconnected up to 7 s after the network came back (and a
longer cut, up to 2 minutes after); with these, within about a second (measured
through the chaos suite's proxy).

TLS: a process's gRPC is TLS everywhere or nowhere. :func:`use_tls` (called once, at
start, before any channel or server exists) makes every channel :func:`channel` opens
verify its peer against the trust store and present the process's key store, and every
port :func:`add_port` opens require TLS (mutual with ``ssl.client.auth=required``: a
peer without a certificate the trust store signs is refused in the handshake).
"""

from __future__ import annotations

from typing import Any

import grpc

from migration.common.limits import MAX_BATCH_BYTES
from migration.common.tls import TlsSettings

MIB = 1024 * 1024
CONTROLLER_RECEIVE_BYTES = 32 * MIB
BROKER_CONTROL_RECEIVE_BYTES = 256 * MIB
RESPONSE_RECEIVE_BYTES = MAX_BATCH_BYTES + MIB

CONTROLLER_SERVER_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.max_receive_message_length", CONTROLLER_RECEIVE_BYTES)
]
BROKER_CONTROL_SERVER_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.max_receive_message_length", BROKER_CONTROL_RECEIVE_BYTES)
]
RECONNECT_BACKOFF_MS = 50
RECONNECT_BACKOFF_MAX_MS = 1000
CHANNEL_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.max_receive_message_length", RESPONSE_RECEIVE_BYTES),
    ("grpc.initial_reconnect_backoff_ms", RECONNECT_BACKOFF_MS),
    ("grpc.max_reconnect_backoff_ms", RECONNECT_BACKOFF_MAX_MS),
]

_tls: TlsSettings | None = None


def use_tls(tls: TlsSettings | None) -> None:
    """The process's gRPC TLS (None: plaintext)."""
    global _tls  # noqa: PLW0603 - one setting per process, fixed at start
    _tls = tls


def channel(target: str, options: list[tuple[str, Any]] | None = None) -> grpc.Channel:
    """A channel to ``target`` (host:port), TLS when the process uses it."""
    options = CHANNEL_OPTIONS if options is None else options
    if _tls is None:
        return grpc.insecure_channel(target, options=options)
    return grpc.secure_channel(target, _tls.grpc_channel_credentials(), options=options)


def add_port(server: Any, address: str) -> int:
    """Open ``address`` on a gRPC server (sync or asyncio); the port bound, 0 if none."""
    if _tls is None:
        return int(server.add_insecure_port(address))
    return int(server.add_secure_port(address, _tls.grpc_server_credentials()))
