"""The voter set (KIP-853, "lite"): which (replica id, directory id) pairs are voters.

A replica is its node id *and* its metadata directory's ``directory.id`` (written by
``storage format``); a replaced disk has a new directory id, so it is another replica
and not a voter until the log says so.

- **Static** (kraft.version 0: no VotersRecord in the log or its snapshot): the voters
  are the ids of ``controller.quorum.voters``, whatever their directories -- as Kafka's
  kraft.version 0 -- except that a node formatted to *join* an existing quorum
  (``--no-initial-controllers``) is never a voter in a static set.
- **Pinned** (kraft.version 1, after the operator's ``zk2kraft features upgrade
  --feature kraft.version=1``): the latest VotersRecord, committed or not (KIP-853),
  names the voters with their directory ids. A vote, a pre-vote or a fetch offset
  counts only from a pair in that set. There is no way back to static.

Where the set lives: only in the log, as Kafka keeps it. A snapshot carries the set in
force at its end (a KRaftVersionRecord and a VotersRecord right after its header,
:func:`snapshot_control_records`); the log after it carries the changes.
:class:`VoterHistory` is rebuilt from both whenever the node opens its log
(:meth:`VoterHistory.rebuild`: the latest snapshot's first batch, then a scan of the
log's frames that decodes only batches holding a VotersRecord's tag), and follows the
log in memory afterwards (appends, truncations, a snapshot installed). There is no side
file that could disagree with the log: after any crash, the set is what the log holds.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from migration.log.batch import decode_records, frame_record, parse_header
from migration.log.snapshots import SnapshotId
from migration.proto.metadata_pb2 import MetadataRecord
from migration.raft.storage import RaftLog
from migration.records.uuids import uuid_bytes, uuid_text

# A MetadataRecord whose oneof is voters_record (field 104, length-delimited) starts with
# these bytes: fetched data without them holds no VotersRecord and is not decoded.
_VOTERS_TAG = b"\xc2\x06"
VOTERS_RECORD_VERSION = 0
KRAFT_VERSION_RECORD_VERSION = 0
PINNED_KRAFT_VERSION = 1  # kraft.version with a VotersRecord (Kafka's KRaftVersion.KRAFT_VERSION_1)
_SCAN_BYTES = 8 << 20  # the log is scanned for VotersRecords this much at a time
_SNAPSHOT_HEAD_BYTES = 64 << 10


@dataclass(frozen=True, slots=True)
class VoterSet:
    """The VotersRecord at ``offset``: voter id -> directory id (22-character text).
    A set read from a snapshot has the snapshot's last offset (end offset - 1)."""

    offset: int
    voters: Mapping[int, str]

    def describe(self) -> str:
        return ", ".join(f"{v}:{d}" for v, d in sorted(self.voters.items()))


def valid_directory_id(directory_id: str) -> bool:
    """Whether ``directory_id`` is a directory id (a UUID in Kafka's base64 text)."""
    try:
        uuid_bytes(directory_id)
    except ValueError:
        return False
    return True


def _voters_message(voters: Mapping[int, str]) -> MetadataRecord:
    record = MetadataRecord()
    record.voters_record.version = VOTERS_RECORD_VERSION
    for voter, directory in sorted(voters.items()):
        entry = record.voters_record.voters.add()
        entry.voter_id = voter
        entry.voter_directory_id = uuid_bytes(directory)
        entry.k_raft_version_feature.min_supported_version = 0  # as Kafka's voters say
        entry.k_raft_version_feature.max_supported_version = PINNED_KRAFT_VERSION
    return record


def _kraft_version_message(level: int = PINNED_KRAFT_VERSION) -> MetadataRecord:
    record = MetadataRecord()
    record.k_raft_version_record.version = KRAFT_VERSION_RECORD_VERSION
    record.k_raft_version_record.k_raft_version = level
    return record


def voters_record(voters: Mapping[int, str]) -> bytes:
    """The framed VotersRecord for ``voters`` (ValueError for a bad directory id)."""
    return frame_record(_voters_message(voters).SerializeToString())


def kraft_version_record(level: int = PINNED_KRAFT_VERSION) -> bytes:
    """The framed KRaftVersionRecord (the upgrade appends it before its VotersRecord)."""
    return frame_record(_kraft_version_message(level).SerializeToString())


def snapshot_control_records(voter_set: VoterSet | None) -> list[MetadataRecord]:
    """What a snapshot holds right after its header (as Kafka's): the kraft.version and
    the voter set in force at its end; nothing for a static set (kraft.version 0)."""
    if voter_set is None:
        return []
    return [_kraft_version_message(), _voters_message(voter_set.voters)]


def voter_sets_in(frames: bytes | memoryview) -> Iterator[VoterSet]:
    """The VotersRecords in whole batch frames (as a fetch carries them), in order.
    ValueError when a batch holding the tag does not decode or a frame does not parse
    (the caller drops the data: a record must never be missed)."""
    data = bytes(frames)
    if data.find(_VOTERS_TAG) < 0:
        return
    pos = 0
    while pos < len(data):
        header = parse_header(data, pos, verify=False)
        if isinstance(header, str):
            raise ValueError(f"frame at byte {pos}: {header}")
        end = pos + header.size
        if data.find(_VOTERS_TAG, pos, end) >= 0:
            for i, record in enumerate(decode_records(data, pos, header)):
                if record.WhichOneof("record") == "voters_record":
                    yield _voter_set(header.base_offset + i, record)
        pos = end


def _voter_set(offset: int, record: MetadataRecord) -> VoterSet:
    return VoterSet(
        offset,
        {v.voter_id: _text(v.voter_directory_id) for v in record.voters_record.voters},
    )


def _text(raw: bytes) -> str:
    try:
        return uuid_text(raw)
    except ValueError:
        return ""  # never equal to a directory id a replica sends: it never counts


def snapshot_voter_set(raft_log: RaftLog, snapshot_id: SnapshotId) -> VoterSet | None:
    """The voter set a snapshot carries in its first batch (its header's), None for a
    static one. ValueError when that batch does not decode."""
    chunk = raft_log.snapshot_chunk(snapshot_id, 0, _SNAPSHOT_HEAD_BYTES)
    if chunk is None or not chunk[0]:
        return None
    data = chunk[0]
    header = parse_header(data, 0, verify=False)
    if isinstance(header, str):
        raise ValueError(f"snapshot {snapshot_id}: {header}")
    if header.size > len(data):
        whole = raft_log.snapshot_chunk(snapshot_id, 0, header.size)
        data = b"" if whole is None else whole[0]
    records = decode_records(data, 0, header)
    if not records or records[0].WhichOneof("record") != "snapshot_header_record":
        return None  # not a snapshot written with its control records (a test's raw frames)
    found = None
    for record in records:
        if record.WhichOneof("record") == "voters_record":
            found = _voter_set(snapshot_id.end_offset - 1, record)
    return found


class VoterHistory:
    """The VotersRecords in force over the log, oldest first (see the module): the
    latest snapshot's set, then the log's. Kept in memory; rebuilt from the log."""

    def __init__(self, sets: list[VoterSet] | None = None, *, joining: bool = False) -> None:
        self._sets = list(sets or [])
        self.joining = joining  # formatted with --no-initial-controllers (storage)

    @classmethod
    def rebuild(cls, raft_log: RaftLog, *, joining: bool = False) -> VoterHistory:
        """The history of ``raft_log`` as it is on disk: the latest snapshot's set and
        every VotersRecord after it."""
        sets: list[VoterSet] = []
        start = raft_log.start_offset
        snapshot = raft_log.latest_snapshot()
        if snapshot is not None:
            found = snapshot_voter_set(raft_log, snapshot)
            if found is not None:
                sets.append(found)
            start = max(start, snapshot.end_offset)
        offset = start
        while offset < raft_log.end_offset:
            frames = raft_log.read_frames(offset, _SCAN_BYTES)
            if not frames:
                break
            sets.extend(s for s in voter_sets_in(frames) if s.offset >= start)
            offset = _next_offset(frames)
        return cls(sets, joining=joining)

    def latest(self) -> VoterSet | None:
        return self._sets[-1] if self._sets else None

    def ever_held(self, voter: int, directory_id: str) -> bool:
        """Whether any set of the history names (``voter``, ``directory_id``)."""
        return any(s.voters.get(voter) == directory_id for s in self._sets)

    def at(self, end_offset: int) -> VoterSet | None:
        """The set in force for a log ending at ``end_offset`` (exclusive)."""
        found = [s for s in self._sets if s.offset < end_offset]
        return found[-1] if found else None

    def add(self, voter_set: VoterSet) -> None:
        last = self.latest()
        if last is not None and voter_set.offset <= last.offset:
            raise ValueError(f"voter set at {voter_set.offset} is not after {last.offset}")
        self._sets.append(voter_set)

    def truncate(self, end_offset: int) -> bool:
        """Forget the sets at or past ``end_offset``; whether any was forgotten."""
        kept = [s for s in self._sets if s.offset < end_offset]
        if len(kept) == len(self._sets):
            return False
        self._sets = kept
        return True

    def reset(self, voter_set: VoterSet | None) -> None:
        """The log was replaced by a snapshot (durably) whose set is ``voter_set``."""
        self._sets = [] if voter_set is None else [voter_set]


def _next_offset(frames: bytes) -> int:
    """The offset after the last whole batch of ``frames``."""
    pos, end = 0, 0
    while pos < len(frames):
        header = parse_header(frames, pos, verify=False)
        if isinstance(header, str):
            raise ValueError(f"frame at byte {pos}: {header}")
        end = header.next_offset
        pos += header.size
    return end
