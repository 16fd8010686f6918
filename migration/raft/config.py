"""Quorum settings, with Kafka's property names and defaults."""

from __future__ import annotations

from dataclasses import dataclass

from migration.common.limits import INT32_MAX
from migration.common.ports import host_problem
from migration.common.text import shown

DEFAULT_ELECTION_TIMEOUT_MS = 1000
DEFAULT_FETCH_TIMEOUT_MS = 2000
DEFAULT_ELECTION_BACKOFF_MAX_MS = 1000


@dataclass(frozen=True, slots=True)
class Address:
    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def parse_voters(text: str) -> dict[int, Address]:
    """``controller.quorum.voters``: ``id@host:port,...`` (IPv6 hosts in brackets).
    Raises ValueError naming the bad entry."""
    voters: dict[int, Address] = {}
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            raise ValueError(f"controller.quorum.voters: empty entry in {shown(text)}")
        node, at, hostport = entry.partition("@")
        host, colon, port = hostport.rpartition(":")
        host = host.removeprefix("[").removesuffix("]")
        if not (at and colon and host and node.isdigit() and port.isdigit()):
            raise ValueError(f"controller.quorum.voters: {shown(entry)} is not id@host:port")
        if not 0 < int(port) < 65536:
            raise ValueError(
                f"controller.quorum.voters: port {shown(port)} in {shown(entry)} is out of "
                "range (1-65535)"
            )
        if int(node) > INT32_MAX:
            raise ValueError(
                f"controller.quorum.voters: node id {shown(node)} is above {INT32_MAX}"
            )
        problem = host_problem(host)
        if problem:
            raise ValueError(f"controller.quorum.voters: {problem} in {shown(entry)}")
        if int(node) in voters:
            raise ValueError(f"controller.quorum.voters: node {node} is listed twice")
        voters[int(node)] = Address(host, int(port))
    return voters


@dataclass(frozen=True, slots=True)
class RaftConfig:
    """One node's view of the quorum.

    ``election_timeout_ms`` is randomised per election in [t, 2t); a follower that has
    not heard from its leader for ``fetch_timeout_ms`` starts an election (an observer
    looks for the leader again); a leader that has not heard from a majority for 1.5x
    ``fetch_timeout_ms`` resigns. Failed elections back off up to
    ``election_backoff_max_ms``. A leader holds a fetch for up to ``fetch_max_wait_ms``
    waiting for new data (long poll). A fetch carries up to ``fetch_max_bytes`` (always
    one whole batch): the follower appends and checks it in one event of its loop, and
    8 MiB (Kafka's size) took that event up to 0.62 s at a million partitions on two
    shared cores (docs/proof.md); 1 MiB keeps it to tens of milliseconds, and a follower
    far behind asks again at once.

    ``voters`` are the ids of ``controller.quorum.voters`` (every controller this node can
    reach); the voter set itself is the node's (:mod:`.voters`): these ids, refined by
    the log's VotersRecords. ``directory_id`` is this node's metadata directory id
    (``meta.properties``; "" for a directory formatted without one). ``joining``: the
    directory was formatted with ``--no-initial-controllers`` (never a voter of a
    static set).
    """

    node_id: int
    voters: frozenset[int]
    cluster_id: str = ""
    directory_id: str = ""
    joining: bool = False
    election_timeout_ms: int = DEFAULT_ELECTION_TIMEOUT_MS
    fetch_timeout_ms: int = DEFAULT_FETCH_TIMEOUT_MS
    election_backoff_max_ms: int = DEFAULT_ELECTION_BACKOFF_MAX_MS
    fetch_max_wait_ms: int = 500
    fetch_max_bytes: int = 1024 * 1024
    snapshot_chunk_bytes: int = 1024 * 1024
    retry_backoff_ms: int = 50
