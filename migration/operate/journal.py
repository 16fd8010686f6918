"""The journal of a driven migration: ``<inventory>.run.json`` beside the inventory,
replaced atomically at every save, read by ``kafka migrate``/``rollback`` to resume and by
``kafka status`` to tell where the run is."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from migration.common.files import replace_contents
from migration.common.properties import ConfigError
from migration.operate.inventory import Inventory


@dataclass
class Journal:
    """The run's record (the module doc), at ``path``."""

    path: Path
    inventory: str
    done: list[str] = field(default_factory=list)
    baselines: dict[str, dict[str, Any]] = field(default_factory=dict)
    current: str | None = None
    waiting: str | None = None
    updated: str | None = None
    rolling_back: bool = False
    rollback_began: int = 0  # seconds since the epoch
    audits: list[dict[str, Any]] = field(default_factory=list)
    """Each audit the run made: its gate, when, the verdict and the differences."""

    @classmethod
    def open(cls, inv: Inventory) -> Journal:
        path = journal_path(inv)
        if not path.exists():
            return cls(path, str(inv.path))
        try:
            data = json.loads(path.read_text())
            if not isinstance(data.get("done"), list) or not all(
                isinstance(step, str) for step in data["done"]
            ):
                raise ValueError('"done" is not a list of step ids')
            return cls(
                path,
                str(data["inventory"]),
                [str(s) for s in data["done"]],
                dict(data.get("baselines", {})),
                data.get("current"),
                data.get("waiting"),
                data.get("updated"),
                bool(data.get("rolling_back", False)),
                int(data.get("rollback_began", 0)),
                list(data.get("audits", [])),
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(str(path), [f"not a zk2kraft run journal: {exc}"]) from None

    def save(self) -> None:
        self.updated = datetime.now(UTC).isoformat(timespec="seconds")
        data = {
            "inventory": self.inventory,
            "done": self.done,
            "baselines": self.baselines,
            "current": self.current,
            "waiting": self.waiting,
            "updated": self.updated,
            "rolling_back": self.rolling_back,
            "rollback_began": self.rollback_began,
            "audits": self.audits,
        }
        replace_contents(self.path, (json.dumps(data, indent=2) + "\n").encode())

    def mark(self, step_id: str) -> None:
        self.done.append(step_id)
        self.current, self.waiting = None, None
        self.save()

    def retire(self) -> None:
        """Set the journal aside (``<journal>.rolled-back-<epoch seconds>``)."""
        self.path.rename(self.path.with_name(f"{self.path.name}.rolled-back-{int(time.time())}"))


def journal_path(inv: Inventory) -> Path:
    return inv.path.with_name(inv.path.name + ".run.json")
