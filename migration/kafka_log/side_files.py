"""The small files around Kafka's metadata log, read to check them and written by
``log export``.

- ``quorum-state`` (in ``__cluster_metadata-0``): Raft's election state as JSON
  (``data_version`` 0 with ``currentVoters``, or 1 without, from Kafka 3.9).
- ``leader-epoch-checkpoint``: a version line (0), a count, then ``<epoch> <start offset>``
  lines -- where each leader epoch begins in the log.
- ``partition.metadata``: ``version: 0`` and ``topic_id: <uuid>`` (the metadata topic's
  fixed id, ``AAAAAAAAAAAAAAAAAAAAAQ``).
- ``meta.properties`` (in the log directory above): ``version=0`` with ``broker.id`` and
  ``cluster.id``, or ``version=1`` with ``node.id``, ``cluster.id`` and, from 3.7,
  ``directory.id``.

:func:`side_file_findings` reads the first three and says, as warnings, what does not
agree with the log (a damaged side file does not change what the segments hold).
"""

from __future__ import annotations

import json
from pathlib import Path

from migration.common.properties import parse_properties
from migration.common.text import shown
from migration.log.files import read_regular

METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
_MAX_SIDE_FILE = 1 << 20


def _read(path: Path) -> str | None:
    if not path.exists():
        return None
    return read_regular(path, _MAX_SIDE_FILE).decode("utf-8", errors="replace")


def parse_leader_epochs(text: str) -> list[tuple[int, int]]:
    """(epoch, start offset) entries of a leader-epoch-checkpoint; ValueError if bad."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) < 2 or lines[0] != "0":
        raise ValueError("not a version-0 checkpoint file")
    count = int(lines[1])
    if count != len(lines) - 2:
        raise ValueError(f"says {count} entries, holds {len(lines) - 2}")
    out = []
    for line in lines[2:]:
        epoch, offset = line.split()
        out.append((int(epoch), int(offset)))
    return out


def format_leader_epochs(entries: list[tuple[int, int]]) -> str:
    return "".join(
        f"{line}\n" for line in ["0", str(len(entries))] + [f"{e} {o}" for e, o in entries]
    )


def side_file_findings(directory: Path, log_epochs: list[tuple[int, int]]) -> list[str]:
    """Warnings about ``quorum-state``, ``leader-epoch-checkpoint`` and
    ``partition.metadata`` in ``directory``, checked against ``log_epochs`` (epoch,
    first offset in the segments)."""
    found: list[str] = []
    text = _read(directory / "leader-epoch-checkpoint")
    if text is not None:
        try:
            entries = parse_leader_epochs(text)
        except ValueError as exc:
            found.append(f"{directory / 'leader-epoch-checkpoint'}: {exc}")
        else:
            listed = dict(entries)
            kept = _from_log_start(log_epochs, entries[0][1]) if entries else log_epochs
            for i, (epoch, first) in enumerate(kept):
                start = listed.get(epoch)
                if start is None or (start != first and i > 0):
                    found.append(
                        f"{directory / 'leader-epoch-checkpoint'}: the log has epoch {epoch} "
                        f"from offset {first}; the checkpoint has "
                        + ("no such epoch" if start is None else f"it from offset {start}")
                    )
    text = _read(directory / "quorum-state")
    if text is not None:
        try:
            state = json.loads(text)
            if not isinstance(state, dict) or state.get("data_version") not in (0, 1):
                raise ValueError("no data_version 0 or 1")
            state_epoch = state.get("leaderEpoch")
            if log_epochs and isinstance(state_epoch, int) and state_epoch < log_epochs[-1][0]:
                found.append(
                    f"{directory / 'quorum-state'}: epoch {state_epoch} is older than the log's "
                    f"last epoch {log_epochs[-1][0]}"
                )
        except ValueError as exc:
            found.append(f"{directory / 'quorum-state'}: not Kafka's quorum state ({exc})")
    text = _read(directory / "partition.metadata")
    if text is not None:
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        topic_id = fields.get("topic_id", "").strip()
        if topic_id != METADATA_TOPIC_ID:
            found.append(
                f"{directory / 'partition.metadata'}: topic_id {shown(topic_id)}, not the metadata "
                f"topic's {METADATA_TOPIC_ID}"
            )
    return found


def _from_log_start(log_epochs: list[tuple[int, int]], start: int) -> list[tuple[int, int]]:
    """The log's epochs as Kafka's epoch cache keeps them once the log start moved up to
    ``start`` (the checkpoint's first entry): epochs that ended before it are dropped and
    the one holding it begins there. The segment holding the log start still has the
    older batches; the checkpoint rightly no longer names them."""
    kept: list[tuple[int, int]] = []
    for i, (epoch, first) in enumerate(log_epochs):
        ends = log_epochs[i + 1][1] if i + 1 < len(log_epochs) else None
        if ends is not None and ends <= start:
            continue
        kept.append((epoch, max(first, start)))
    return kept


def read_meta_properties(log_dir: Path) -> dict[str, str] | None:
    """The ``meta.properties`` of the log directory ``log_dir`` (None: there is none)."""
    text = _read(log_dir / "meta.properties")
    return None if text is None else parse_properties(text)


def meta_properties_text(cluster_id: str, node_id: int, directory_id: str | None) -> str:
    """``meta.properties`` version 1, as ``kafka-storage format`` writes it."""
    lines = ["#", f"cluster.id={cluster_id}"]
    if directory_id is not None:
        lines.append(f"directory.id={directory_id}")
    lines += [f"node.id={node_id}", "version=1"]
    return "\n".join(lines) + "\n"


def partition_metadata_text() -> str:
    return f"version: 0\ntopic_id: {METADATA_TOPIC_ID}\n"
