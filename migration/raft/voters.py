"""The voter set (KIP-853, "lite"): which (replica id, directory id) pairs are voters.

A replica is its node id *and* its metadata directory's ``directory.id`` (written by
``storage format``); a replaced disk has a new directory id, so it is another replica
and not a voter until the log says so.

- **Static** (no VotersRecord in the log yet): the voters are the ids of
  ``controller.quorum.voters``, whatever their directories -- how a cluster formatted
  before directory ids mattered works -- except that a node formatted to *join* an
  existing quorum (``--no-initial-controllers``) is never a voter in a static set.
- **Pinned**: the latest VotersRecord in the log, committed or not (KIP-853), names
  the voters with their directory ids. A vote, a pre-vote or a fetch offset counts only
  from a pair in that set.

:class:`VoterHistory` keeps every VotersRecord of the log with its offset, so a
truncation below one reverts to the one before, and a snapshot that replaces the log
brings the set in force at its end. Its contract: it is written durably
(:class:`FileVoterStore`) *before* the log holds the record it names, so after any
crash the history holds at least what the log does; on open, entries at or past the
log's end (records the log lost) are dropped.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from migration.common.files import fsync_dir
from migration.common.json_input import MAX_BYTES, JsonInputError, decode_json
from migration.log.batch import decode_records, frame_record, parse_header
from migration.log.errors import CorruptLogError, LogError
from migration.log.files import read_regular
from migration.log.recovery import QUORUM_VOTERS_FILE as FILE_NAME
from migration.proto.metadata_pb2 import MetadataRecord
from migration.records.uuids import uuid_bytes, uuid_text

# A MetadataRecord whose oneof is voters_record (field 104, length-delimited) starts with
# these bytes: fetched data without them holds no VotersRecord and is not decoded.
_VOTERS_TAG = b"\xc2\x06"
VOTERS_RECORD_VERSION = 0


@dataclass(frozen=True, slots=True)
class VoterSet:
    """The VotersRecord at ``offset``: voter id -> directory id (22-character text)."""

    offset: int
    voters: Mapping[int, str]

    def describe(self) -> str:
        return ", ".join(f"{v}:{d}" for v, d in sorted(self.voters.items()))


def voters_record(voters: Mapping[int, str]) -> bytes:
    """The framed VotersRecord for ``voters`` (ValueError for a bad directory id)."""
    record = MetadataRecord()
    record.voters_record.version = VOTERS_RECORD_VERSION
    for voter, directory in sorted(voters.items()):
        entry = record.voters_record.voters.add()
        entry.voter_id = voter
        entry.voter_directory_id = uuid_bytes(directory)
    return frame_record(record.SerializeToString())


def voter_sets_in(frames: bytes | memoryview) -> Iterator[VoterSet]:
    """The VotersRecords in whole batch frames (as a fetch carries them), in order.
    Frames that do not parse are skipped (the log's own append rejects them)."""
    if _VOTERS_TAG not in frames:
        return
    pos = 0
    while pos < len(frames):
        header = parse_header(frames, pos, verify=False)
        if isinstance(header, str):
            return
        if _VOTERS_TAG in frames[pos : pos + header.size]:
            try:
                records = decode_records(frames, pos, header)
            except ValueError:
                return
            for i, record in enumerate(records):
                if record.WhichOneof("record") == "voters_record":
                    yield VoterSet(
                        header.base_offset + i,
                        {
                            v.voter_id: _text(v.voter_directory_id)
                            for v in record.voters_record.voters
                        },
                    )
        pos += header.size


def _text(raw: bytes) -> str:
    try:
        return uuid_text(raw)
    except ValueError:
        return ""  # never equal to a directory id a replica sends: it never counts


@dataclass(slots=True)
class VoterState:
    """What the store keeps: whether this node was formatted to join, and the history."""

    joining: bool = False
    sets: list[VoterSet] = field(default_factory=list)


class VoterStore(Protocol):
    def read(self) -> VoterState | None: ...

    def write(self, state: VoterState) -> None: ...


class MemoryVoterStore:
    """A store that lives as long as the object (the simulation keeps it across a
    node's restarts, as a disk would)."""

    def __init__(self, state: VoterState | None = None) -> None:
        self.state = state

    def read(self) -> VoterState | None:
        return self.state

    def write(self, state: VoterState) -> None:
        self.state = VoterState(state.joining, list(state.sets))


class VoterStoreError(Exception):
    """The ``quorum-voters`` file exists but cannot be used; names the file."""


class FileVoterStore:
    """``quorum-voters`` in the metadata log directory, as JSON; written whole (temp
    file, fsync, rename, directory fsync)."""

    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / FILE_NAME

    def read(self) -> VoterState | None:
        try:
            data = decode_json(str(self.path), read_regular(self.path, MAX_BYTES))
            if not isinstance(data, dict) or not isinstance(data.get("joining"), bool):
                raise ValueError("not a JSON object with a boolean 'joining'")
            sets = []
            for entry in data["voterSets"]:
                offset = entry["offset"]
                voters = {int(v["id"]): str(v["directoryId"]) for v in entry["voters"]}
                if not isinstance(offset, int) or offset < 0:
                    raise ValueError(f"bad offset {offset!r}")
                sets.append(VoterSet(offset, voters))
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError, OSError, LogError) as exc:
            problem = str(exc)
            if isinstance(exc, (JsonInputError, CorruptLogError)):
                problem = exc.problem
            raise VoterStoreError(f"{self.path}: unusable voter set ({problem[:200]})") from None
        return VoterState(data["joining"], sets)

    def write(self, state: VoterState) -> None:
        body = json.dumps(
            {
                "version": 0,
                "joining": state.joining,
                "voterSets": [
                    {
                        "offset": s.offset,
                        "voters": [
                            {"id": v, "directoryId": d} for v, d in sorted(s.voters.items())
                        ],
                    }
                    for s in state.sets
                ],
            }
        )
        temp = self.path.with_name(FILE_NAME + ".tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(body.encode())
            while view:  # a short write is followed by one that says why (ENOSPC)
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, self.path)
        fsync_dir(self.path.parent)


class VoterHistory:
    """The log's VotersRecords, oldest first, kept in ``store`` (see the module)."""

    def __init__(self, store: VoterStore, log_end_offset: int) -> None:
        self._store = store
        state = store.read() or VoterState()
        self.joining = state.joining
        self._sets = [s for s in state.sets if s.offset < log_end_offset]
        if len(self._sets) != len(state.sets):
            self._save()

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
        self._save()

    def truncate(self, end_offset: int) -> bool:
        """Forget the sets at or past ``end_offset``; whether any was forgotten."""
        kept = [s for s in self._sets if s.offset < end_offset]
        if len(kept) == len(self._sets):
            return False
        self._sets = kept
        self._save()
        return True

    def reset(self, voter_set: VoterSet | None) -> None:
        """The log was replaced by a snapshot whose voter set is ``voter_set``."""
        self._sets = [] if voter_set is None else [voter_set]
        self._save()

    def _save(self) -> None:
        self._store.write(VoterState(self.joining, list(self._sets)))
