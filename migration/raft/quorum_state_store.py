"""The persisted election state, as Kafka keeps it: ``ElectionState`` in the
``quorum-state`` file, behind the ``QuorumStateStore`` interface (``FileQuorumStateStore``).

Contract: :meth:`FileQuorumStateStore.write` returns only once the new state is durable
(temp file, fsync, rename, directory fsync), and the node writes it *before* it acts
on the state (answers a vote, starts a candidacy, follows a leader). So after any
crash a node knows every epoch it entered and every vote it cast, and never votes
twice in one epoch.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from migration.common.files import fsync_dir, write_synced
from migration.common.json_input import MAX_BYTES, JsonInputError, decode_json
from migration.common.limits import INT32_MAX
from migration.log.errors import CorruptLogError, LogError
from migration.log.files import read_regular
from migration.log.recovery import QUORUM_STATE_FILE as FILE_NAME


@dataclass(frozen=True, slots=True)
class ElectionState:
    epoch: int
    leader_id: int | None = None
    voted_id: int | None = None


class QuorumStateStore(Protocol):
    def read(self) -> ElectionState | None: ...

    def write(self, state: ElectionState) -> None: ...


class QuorumStateError(Exception):
    """The ``quorum-state`` file exists but cannot be used; names the file."""


class FileQuorumStateStore:
    """``quorum-state`` in the metadata log directory, as JSON (read within the bounds of
    :mod:`migration.common.json_input`: anything else is a QuorumStateError naming the file)."""

    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / FILE_NAME

    def read(self) -> ElectionState | None:
        try:
            data = decode_json(str(self.path), read_regular(self.path, MAX_BYTES))
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            epoch, leader, voted = data["leaderEpoch"], data["leaderId"], data["votedId"]
            if not all(
                isinstance(v, int) and not isinstance(v, bool) for v in (epoch, leader, voted)
            ):
                raise ValueError("leaderEpoch, leaderId and votedId must be integers")
            if not 0 <= epoch < INT32_MAX:
                raise ValueError(f"leaderEpoch {_short(epoch)} is outside [0, {INT32_MAX})")
            for key, value in (("leaderId", leader), ("votedId", voted)):
                if not -1 <= value <= INT32_MAX:
                    raise ValueError(f"{key} {_short(value)} is outside [-1, {INT32_MAX}]")
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError, OSError, LogError) as exc:
            problem = str(exc)
            if isinstance(exc, KeyError):
                problem = f"missing field {exc}"
            elif isinstance(exc, (JsonInputError, CorruptLogError)):
                problem = exc.problem
            raise QuorumStateError(
                f"{self.path}: unusable quorum state ({problem[:200]}); if it is lost, "
                "delete it: the node restarts unattached in its log's last epoch"
            ) from None
        return ElectionState(epoch, leader if leader >= 0 else None, voted if voted >= 0 else None)

    def write(self, state: ElectionState) -> None:
        body = json.dumps(
            {
                "leaderEpoch": state.epoch,
                "leaderId": -1 if state.leader_id is None else state.leader_id,
                "votedId": -1 if state.voted_id is None else state.voted_id,
                "dataVersion": 0,
            }
        )
        temp = self.path.with_name(FILE_NAME + ".tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            write_synced(fd, (body.encode(),))
        finally:
            os.close(fd)
        os.replace(temp, self.path)
        fsync_dir(self.path.parent)


def _short(value: int) -> str:
    text = str(value)
    return text if len(text) <= 20 else f"{text[:8]}...({len(text)} digits)"
