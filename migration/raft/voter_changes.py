"""The leader's voter changes (KIP-853 lite): the operator's upgrade to kraft.version 1
(``zk2kraft features upgrade --feature kraft.version=1``, pinning the static set), and
AddRaftVoter / RemoveRaftVoter (``zk2kraft quorum add-controller`` /
``remove-controller``), which need it.

Rules (the single-server change of Raft's dissertation, with its fix):

- one voter change at a time: a change is appended only when the log's latest
  VotersRecord is committed and no other change is in flight, and only once the leader
  has committed in its own epoch (a new leader may hold an uncommitted change of its
  predecessor's); replacing a voter is a remove, then an add -- never both in one step,
  whose old and new majorities need not overlap;
- a VotersRecord takes effect when appended, committed or not (the high watermark and
  the votes of the new set count from then on); a truncation below it reverts it;
- a change decided while the state machine has records queued at offsets it has handed
  out is queued itself and appended at the next quiet moment (the controller's flush or
  the next tick), never refused for load;
- **upgrade** (never automatic, one way): the leader appends a KRaftVersionRecord(1)
  and a VotersRecord naming every voter of ``controller.quorum.voters`` with its
  directory id, once it has heard all of them (its own included); refused, naming the
  voters not heard, before that; from then on a replaced disk of any voter counts for
  nothing until the operator's remove and add;
- **remove** names the voter by id and directory id; never the leader itself;
- **add** takes a replica with an address in ``controller.quorum.voters``, not a voter
  already (remove its old directory first), fetching as an observer with that
  directory id and caught up with the leader's log within the fetch timeout.

The operator's request is answered once the change is committed (NONE), or with the
reason it was refused, or NOT_LEADER_OR_FOLLOWER if leadership is lost first.
"""

from __future__ import annotations

from migration.common.kafka_errors import ErrorCode
from migration.common.text import shown
from migration.proto import raft_pb2 as pb
from migration.raft.core import NodeCore, Reply, log
from migration.raft.roles import ReplicaProgress, Role
from migration.raft.voters import (
    PINNED_KRAFT_VERSION,
    VoterSet,
    kraft_version_record,
    valid_directory_id,
    voters_record,
)

Refusal = tuple[ErrorCode, str]


class VoterChangeRole(NodeCore):
    def append_queued_change(self) -> None:
        """The state machine has appended what it had queued (its flush): a voter change
        waiting for that goes to the log now."""
        self._maybe_queued_change()

    def _maybe_queued_change(self) -> None:
        if self.role is not Role.LEADER:
            return
        state = self._leader()
        if state.queued_change is not None and self.own_appends_allowed():
            voters, why, reply = state.queued_change
            state.queued_change = None
            self._append_voter_set(voters, why, reply)

    def _on_update_kraft_version(self, req: pb.UpdateKRaftVersionRequest, reply: Reply) -> None:
        if self.role is not Role.LEADER:
            reply(self._error(pb.RaftVoterChangeResponse, ErrorCode.NOT_LEADER_OR_FOLLOWER))
            return
        refusal = self._upgrade_refusal(req.kraft_version)
        if refusal == (ErrorCode.NONE, ""):
            reply(self._error(pb.RaftVoterChangeResponse, ErrorCode.NONE))
            return
        if isinstance(refusal, tuple):
            self._refuse(f"upgrade kraft.version to {req.kraft_version}", refusal, reply)
            return
        log.info(
            "node %d: upgrading kraft.version to 1 (the operator's request): pinning %s",
            self.node_id,
            refusal,
        )
        self._decided(refusal, "kraft.version upgraded to 1: the voter set pinned", reply)

    def _upgrade_refusal(self, level: int) -> Refusal | dict[int, str]:
        latest = self.voter_history.latest()
        if level != PINNED_KRAFT_VERSION:
            if latest is not None and level < PINNED_KRAFT_VERSION:
                return ErrorCode.INVALID_UPDATE_VERSION, (
                    "kraft.version cannot be downgraded: the upgrade to 1 is one way"
                )
            return ErrorCode.INVALID_UPDATE_VERSION, (
                f"kraft.version {level} is not supported (0 or 1; the upgrade is to 1)"
            )
        if latest is not None:
            return ErrorCode.NONE, ""  # upgraded already (a retried request)
        blocked = self._change_blocked()
        if blocked is not None:
            return blocked
        missing = self._unheard_voters()
        if missing:
            return ErrorCode.INVALID_REQUEST, (
                f"the directory id of voter(s) {missing} is not known: every voter of "
                "controller.quorum.voters must be running, formatted with a directory.id, "
                "and fetching from this leader before the upgrade"
            )
        directories = self._static_directories()
        assert directories is not None
        return directories

    def _unheard_voters(self) -> list[int]:
        state = self._leader()
        found = {self.node_id: self.config.directory_id}
        found.update({v: p.directory_id for v, p in state.progress.items()})
        return sorted(v for v, d in found.items() if not valid_directory_id(d))

    def _static_directories(self, leaving: int | None = None) -> dict[int, str] | None:
        """Every static voter's directory id as heard (``leaving`` aside); None while
        one is not known (never heard, or a directory formatted without one)."""
        state = self._leader()
        found = {self.node_id: self.config.directory_id}
        found.update({v: p.directory_id for v, p in state.progress.items() if v != leaving})
        return found if all(valid_directory_id(d) for d in found.values()) else None

    def _change_blocked(self) -> Refusal | None:
        state = self._leader()
        latest = self.voter_history.latest()
        if (
            state.pending_change is not None
            or state.queued_change is not None
            or (latest is not None and latest.offset >= self.high_watermark)
        ):
            return ErrorCode.REQUEST_TIMED_OUT, "the previous voter change is not committed yet"
        if self.high_watermark <= state.epoch_start_offset:
            return ErrorCode.REQUEST_TIMED_OUT, "the leader has not committed in its epoch yet"
        return None

    def _refuse(self, what: str, refusal: Refusal, reply: Reply) -> None:
        code, why = refusal
        log.warning("node %d: refused to %s: %s", self.node_id, what, why)
        response = self._error(pb.RaftVoterChangeResponse, code)
        response.error_message = why
        reply(response)

    def _decided(self, voters: dict[int, str], why: str, reply: Reply) -> None:
        """Append the change now, or at the next quiet moment (the state machine has
        records queued at offsets it has handed out)."""
        if self.own_appends_allowed():
            self._append_voter_set(voters, why, reply)
        else:
            self._leader().queued_change = (voters, why, reply)
            self._wake(self._clock())

    def _append_voter_set(self, voters: dict[int, str], why: str, reply: Reply) -> None:
        state = self._leader()
        framed = [voters_record(voters)]
        if self.voter_history.latest() is None:  # the upgrade: kraft.version first
            framed.insert(0, kraft_version_record())
        header = self.log.append_framed(framed, self.epoch)
        offset = header.last_offset  # the VotersRecord, the batch's last record
        # The log holds it now (the history is rebuilt from the log on open).
        self.voter_history.add(VoterSet(offset, dict(voters)))
        self._needs_flush = True
        self.metrics.appended(header.last_offset, header.count, self._clock())
        state.pending_change = (offset, reply)
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
            self._refuse(what, refusal, reply)
            return
        log.info("node %d: %s (the operator's request)", self.node_id, what)
        self._decided(refusal, what, reply)

    def _change_refusal(
        self, voter: int, directory_id: str, adding: bool
    ) -> Refusal | dict[int, str]:
        """The voter set after the change, or why it must not be made."""
        if not valid_directory_id(directory_id):
            return ErrorCode.INVALID_REQUEST, f"{shown(directory_id)} is not a directory id"
        pinned = self.pinned_voters()
        if pinned is None:
            return ErrorCode.UNSUPPORTED_VERSION, (
                "voter changes need kraft.version 1 (the quorum is static, as Kafka's "
                "kraft.version 0): run `zk2kraft features upgrade --bootstrap-controller "
                "... --feature kraft.version=1` first"
            )
        blocked = self._change_blocked()
        if blocked is not None:
            return blocked
        if (
            pinned.get(voter) == directory_id
            if adding
            else voter not in pinned and self.voter_history.ever_held(voter, directory_id)
        ):
            return ErrorCode.NONE, ""  # committed already: an operator's retry
        if adding:
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
            return {**pinned, voter: directory_id}
        if voter == self.node_id:
            return ErrorCode.INVALID_REQUEST, "the active controller does not remove itself"
        if pinned.get(voter) != directory_id:
            return ErrorCode.VOTER_NOT_FOUND, f"{voter}:{directory_id} is not a voter"
        del pinned[voter]
        return pinned
