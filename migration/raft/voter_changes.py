"""The leader's voter changes (KIP-853 lite): pinning the static set, and the operator's
AddRaftVoter / RemoveRaftVoter (``zk2kraft quorum add-controller`` / ``remove-controller``).

Rules (the single-server change of Raft's dissertation, with its fix):

- one voter change at a time: a change is appended only when the log's latest
  VotersRecord is committed and no other change is in flight, and only once the leader
  has committed in its own epoch (a new leader may hold an uncommitted change of its
  predecessor's); replacing a voter is a remove, then an add -- never both in one step,
  whose old and new majorities need not overlap;
- a VotersRecord takes effect when appended, committed or not (the high watermark and
  the votes of the new set count from then on); a truncation below it reverts it;
- **pin**: while the set is static, the leader appends a VotersRecord naming every voter
  with its directory id as soon as it has heard all of them (its own included), so from
  then on a replaced disk of any voter counts for nothing;
- **remove** names the voter by id and directory id; never the leader itself;
- **add** takes a replica with an address in ``controller.quorum.voters``, not a voter
  already (remove its old directory first), fetching as an observer with that
  directory id and caught up with the leader's log within the fetch timeout.

The operator's request is answered once the change is committed (NONE), or with the
reason it was refused, or NOT_LEADER_OR_FOLLOWER if leadership is lost first.
"""

from __future__ import annotations

from migration.common.kafka_errors import ErrorCode
from migration.proto import raft_pb2 as pb
from migration.raft.core import NodeCore, Reply, log
from migration.raft.roles import ReplicaProgress, Role
from migration.raft.voters import VoterSet, voters_record
from migration.records.uuids import uuid_bytes

Refusal = tuple[ErrorCode, str]


def _valid(directory_id: str) -> bool:
    try:
        uuid_bytes(directory_id)
    except ValueError:
        return False
    return True


class VoterChangeRole(NodeCore):
    def _maybe_pin(self) -> None:
        if self.voter_history.latest() is not None or self._change_blocked() is not None:
            return
        directories = self._static_directories()
        if directories is not None:
            self._append_voter_set(directories, "pinning the voter set with directory ids")

    def _static_directories(self, leaving: int | None = None) -> dict[int, str] | None:
        """Every static voter's directory id as heard (``leaving`` aside); None while
        one is not known (never heard, or a directory formatted without one)."""
        state = self._leader()
        found = {self.node_id: self.config.directory_id}
        found.update({v: p.directory_id for v, p in state.progress.items() if v != leaving})
        return found if all(_valid(d) for d in found.values()) else None

    def _change_blocked(self) -> Refusal | None:
        state = self._leader()
        latest = self.voter_history.latest()
        if state.pending_change is not None or (
            latest is not None and latest.offset >= self.high_watermark
        ):
            return ErrorCode.REQUEST_TIMED_OUT, "the previous voter change is not committed yet"
        if self.high_watermark <= state.epoch_start_offset:
            return ErrorCode.REQUEST_TIMED_OUT, "the leader has not committed in its epoch yet"
        if not self.own_appends_allowed():
            return ErrorCode.REQUEST_TIMED_OUT, "the active controller has writes queued"
        return None

    def _append_voter_set(
        self, voters: dict[int, str], why: str, reply: Reply | None = None
    ) -> None:
        state = self._leader()
        offset = self.log.end_offset
        framed = voters_record(voters)
        self.voter_history.add(VoterSet(offset, dict(voters)))  # durable before the log
        header = self.log.append_framed([framed], self.epoch)
        self._needs_flush = True
        self.metrics.appended(header.last_offset, header.count, self._clock())
        state.pending_change = (offset, reply or (lambda _: None))
        pinned = self.pinned_voters() or {}
        progress: dict[int, ReplicaProgress] = {}
        for voter in self._other_voters():
            old, seen = state.progress.get(voter), state.observers.get(voter)
            if old is not None and old.directory_id == pinned[voter]:
                progress[voter] = old
            elif seen is not None and seen.directory_id == pinned[voter]:
                progress[voter] = state.observers.pop(voter)  # an added replica
            else:
                progress[voter] = ReplicaProgress(directory_id=pinned[voter])
        state.progress = progress
        state.begin_acked &= set(progress)
        self._voter_set_changed(f"{why} (offset {offset})")
        self._maybe_advance_high_watermark()

    def _on_voter_change(
        self, req: pb.AddRaftVoterRequest | pb.RemoveRaftVoterRequest, reply: Reply
    ) -> None:
        adding = isinstance(req, pb.AddRaftVoterRequest)
        what = f"{'add' if adding else 'remove'} voter {req.voter_id}:{req.voter_directory_id}"
        if self.role is not Role.LEADER:
            reply(self._error(pb.RaftVoterChangeResponse, ErrorCode.NOT_LEADER_OR_FOLLOWER))
            return
        refusal = self._change_refusal(req.voter_id, req.voter_directory_id, adding)
        if refusal == (ErrorCode.NONE, ""):
            log.info("node %d: %s: done already (a retried request)", self.node_id, what)
            reply(self._error(pb.RaftVoterChangeResponse, ErrorCode.NONE))
            return
        if isinstance(refusal, tuple):
            code, why = refusal
            log.warning("node %d: refused to %s: %s", self.node_id, what, why)
            response = self._error(pb.RaftVoterChangeResponse, code)
            response.error_message = why
            reply(response)
            return
        log.info("node %d: %s (the operator's request)", self.node_id, what)
        self._append_voter_set(refusal, what, reply)

    def _change_refusal(
        self, voter: int, directory_id: str, adding: bool
    ) -> Refusal | dict[int, str]:
        """The voter set after the change, or why it must not be made."""
        if not _valid(directory_id):
            return ErrorCode.INVALID_REQUEST, f"{directory_id!r} is not a directory id"
        blocked = self._change_blocked()
        if blocked is not None:
            return blocked
        pinned = self.pinned_voters()
        if pinned is not None and (
            pinned.get(voter) == directory_id
            if adding
            else voter not in pinned and self.voter_history.ever_held(voter, directory_id)
        ):
            return ErrorCode.NONE, ""  # committed already: an operator's retry
        if adding:
            current = pinned if pinned is not None else self._static_directories()
            if voter not in self.config.voters:
                return ErrorCode.INVALID_REQUEST, (
                    f"node {voter} is not in controller.quorum.voters (no address for it)"
                )
            if voter in self.voter_ids:
                return ErrorCode.DUPLICATE_VOTER, (
                    f"node {voter} is a voter already: remove its old directory first "
                    "(one voter change at a time)"
                )
            seen = self._leader().observers.get(voter)
            now = self._clock()
            if (
                seen is None
                or seen.directory_id != directory_id
                or now - seen.last_caught_up_ms > self.config.fetch_timeout_ms
            ):
                return ErrorCode.REQUEST_TIMED_OUT, (
                    f"replica {voter}:{directory_id} is not an observer caught up with the "
                    "leader's log: start it (formatted with --no-initial-controllers) and retry"
                )
            assert current is not None  # pinned: a static set has every id already
            return {**current, voter: directory_id}
        if voter == self.node_id:
            return ErrorCode.INVALID_REQUEST, "the active controller does not remove itself"
        if pinned is None:
            heard = self._leader().progress.get(voter)
            if heard is None or heard.directory_id not in ("", directory_id):
                return ErrorCode.VOTER_NOT_FOUND, f"{voter}:{directory_id} is not a voter"
            rest = self._static_directories(leaving=voter)
            if rest is None:
                return ErrorCode.REQUEST_TIMED_OUT, (
                    "the directory id of a remaining voter is not known yet (it has not "
                    "fetched from this leader)"
                )
            rest.pop(voter, None)
            return rest
        if pinned.get(voter) != directory_id:
            return ErrorCode.VOTER_NOT_FOUND, f"{voter}:{directory_id} is not a voter"
        del pinned[voter]
        return pinned
