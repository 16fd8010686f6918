"""The roles of a Raft node and the state each one keeps.

A node holds exactly one role state object at a time, created when it enters the role
and dropped when it leaves it, so no role's fields outlive a role change. What lasts
across roles lives on the node: the persisted election state, the log, the high
watermark, the election timer.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from migration.log.snapshots import SnapshotId
from migration.proto import raft_pb2 as pb


class Role(StrEnum):
    UNATTACHED = "Unattached"
    VOTED = "Voted"
    PROSPECTIVE = "Prospective"
    CANDIDATE = "Candidate"
    FOLLOWER = "Follower"
    LEADER = "Leader"
    RESIGNED = "Resigned"


@dataclass(slots=True)
class ReplicaProgress:
    end_offset: int = -1
    last_fetch_ms: float = -math.inf
    last_caught_up_ms: float = -math.inf
    directory_id: str = ""  # as its fetches say ("" not heard)


@dataclass(slots=True)
class ParkedFetch:
    request: pb.FetchRequest
    reply: Callable[[Any], None]
    deadline: float


@dataclass(slots=True)
class SnapshotDownload:
    snapshot_id: SnapshotId
    data: bytearray = field(default_factory=bytearray)


@dataclass(slots=True)
class LeaderState:
    epoch_start_offset: int  # the offset of this leader's leader-change record
    became_leader_ms: float
    progress: dict[int, ReplicaProgress]  # the other voters
    observers: dict[int, ReplicaProgress] = field(default_factory=dict)
    begin_acked: set[int] = field(default_factory=set)
    parked: list[ParkedFetch] = field(default_factory=list)  # held fetches (long poll)
    next_resend_ms: float = -math.inf
    # The voter change appended in this epoch and not yet committed: its offset and the
    # operator's reply, answered once the high watermark passes it.
    pending_change: tuple[int, Callable[[Any], None]] | None = None
    # A voter change decided but waiting for the state machine's queued records to be
    # appended first (voters, why, reply): appended at the next quiet moment.
    queued_change: tuple[dict[int, str], str, Callable[[Any], None]] | None = None


@dataclass(slots=True)
class CandidacyState:
    """Prospective (pre-vote) and Candidate."""

    granted: set[int]
    answered: set[int] = field(default_factory=set)
    named_leader: int | None = None  # a live leader a refused pre-vote named
    backoff_until: float | None = None
    next_resend_ms: float = -math.inf


@dataclass(slots=True)
class FollowerState:
    """``last_fetch_ok_ms``: where the leader's silence is counted from (the fetch
    timeout runs from it): the last good answer, moved on to the next ask when this node
    asks late. ``asked_since_answer``: a fetch went out after that answer; until one
    has, the leader is not late (this node's own work between an answer and its next
    ask, applying a fetch's worth of records at a million partitions, took 1-2 s and
    ran the timeout out while the leader was waiting to be asked)."""

    last_fetch_ok_ms: float
    asked_since_answer: bool = True
    leader_contact_ms: float = -math.inf  # last answer from the leader itself
    leader_resigned: bool = False
    leader_high_watermark: int = -1  # the leader's, as its last fetch answer said (-1: none yet)


@dataclass(slots=True)
class Fetcher:
    """Fetches in flight: followers, and observers looking for the leader."""

    inflight: pb.FetchRequest | pb.FetchSnapshotRequest | None = None
    next_fetch_ms: float = -math.inf
    snapshot: SnapshotDownload | None = None


RoleState = LeaderState | CandidacyState | FollowerState | None
