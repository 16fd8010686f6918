"""The audit's report: the JSON contract scripts read, and its text form.

``--json`` prints one object::

    {"consistent": bool,
     "offset": N,              # the log offset ZooKeeper was compared with
     "offset_source": "/migration" | "log end (no /migration)",
     "offset_window": [A, B],  # /migration before and after the read (A == B: it stood still)
     "log_end_offset": N,      # how far the log had gone (records past "offset" are lag)
     "rows": {"zookeeper": N, "kraft": N},   # entities compared per side
     "fields": {"zookeeper": N, "kraft": N},
     "differences": {kind: count},           # every kind listed, 0 when clean
     "by_difference": {"only_in_zookeeper": N, "only_in_kraft": N, "value_differs": N},
     "samples": [{"kind", "entity", "field", "zookeeper", "kraft", "difference"}, ...],
     "in_flight": N,           # entities accepted because the log changed them mid-read
     "not_compared": {...},    # ZooKeeper-only data, counted, with the reason
     "seconds": {...}}

Values in samples are what the rows hold: secrets only as keyed hashes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TextIO

from migration.audit.rows import KINDS
from migration.common.text import shown

REPORTED_KINDS = (*KINDS, "producer_ids")

NOT_COMPARED_REASONS = {
    "broker_registrations": "ephemeral znodes of live ZooKeeper-mode brokers; KRaft keeps "
    "its own registrations",
    "legacy_consumer_offsets": "ZooKeeper-stored consumer offsets are not metadata and are "
    "not migrated; zk2kraft zk export-offsets saves them",
    "topics_pending_deletion": "deleted in ZooKeeper before the copy: never migrated, and the "
    "full sync finishes deleting them",
    "scram_credentials": "the log's metadata.version is below 3.5-IV2: KRaft holds no SCRAM "
    "credentials there, and a migration leaves them in ZooKeeper",
    "delegation_tokens": "the log's metadata.version is below 3.6-IV2: KRaft holds no "
    "delegation tokens there, and a migration leaves them in ZooKeeper",
}


@dataclass
class AuditReport:
    offset: int
    offset_source: str
    offset_window: tuple[int, int]
    log_end_offset: int
    rows: dict[str, int] = field(default_factory=dict)
    fields: dict[str, int] = field(default_factory=dict)
    differences: dict[str, int] = field(default_factory=lambda: dict.fromkeys(REPORTED_KINDS, 0))
    by_difference: dict[str, int] = field(default_factory=dict)
    samples: list[dict[str, Any]] = field(default_factory=list)
    in_flight: int = 0
    not_compared: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    out: str | None = None

    def count(self, kind: str, difference: str, n: int) -> None:
        self.differences[kind] += n
        self.by_difference[difference] = self.by_difference.get(difference, 0) + n

    @property
    def consistent(self) -> bool:
        return not any(self.differences.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "consistent": self.consistent,
            "offset": self.offset,
            "offset_source": self.offset_source,
            "offset_window": list(self.offset_window),
            "log_end_offset": self.log_end_offset,
            "rows": self.rows,
            "fields": self.fields,
            "differences": self.differences,
            "by_difference": self.by_difference,
            "samples": self.samples,
            "in_flight": self.in_flight,
            "not_compared": {
                k: {"count": n, "why": NOT_COMPARED_REASONS[k]}
                for k, n in self.not_compared.items()
            },
            "seconds": self.seconds,
            "out": self.out,
        }

    def print_text(self, out: TextIO) -> None:
        verdict = "CONSISTENT" if self.consistent else "DIFFERENCES FOUND"
        a, b = self.offset_window
        moved = "" if a == b else f" (/migration moved {a} -> {b} during the read)"
        behind = max(self.log_end_offset - 1 - self.offset, 0)
        print(
            f"{verdict}: ZooKeeper vs the metadata log at offset {self.offset} "
            f"({self.offset_source}){moved}; the log ends at {self.log_end_offset - 1} "
            f"({behind:,} record(s) not yet written behind, not compared)",
            file=out,
        )
        print(
            f"  compared {self.rows.get('zookeeper', 0):,} ZooKeeper entities with "
            f"{self.rows.get('kraft', 0):,} KRaft entities"
            + (
                f"; {self.in_flight:,} changed while being read, accepted" if self.in_flight else ""
            ),
            file=out,
        )
        for kind, count in self.differences.items():
            if count:
                print(f"  {kind:<18} {count:>9,} difference(s)", file=out)
        for s in self.samples:
            where = f"{s['kind']} {s['entity']}" + (f" {s['field']}" if s["field"] else "")
            values = (
                f": ZooKeeper {shown(s['zookeeper'])}, KRaft {shown(s['kraft'])}"
                if s["difference"] == "value_differs"
                else ""
            )
            print(f"    {s['difference']:<18} {where}{values}", file=out)
        for k, n in self.not_compared.items():
            if n:
                print(
                    f"  not compared: {n:,} {k.replace('_', ' ')} ({NOT_COMPARED_REASONS[k]})",
                    file=out,
                )
        if self.out:
            print(f"  every difference: {self.out}", file=out)
