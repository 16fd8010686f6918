"""What production will see, from what the rehearsal measured on this machine: scaled honestly.

The rehearsal copies production's own tree, so its *counts* are production's: the copy's
records (by type), the preflight findings, the number and order of restarts, the audit's
result. Its *times* are this machine's: the local controllers' CPUs and disk (their fsync
latency), a ZooKeeper on localhost, and zk2kraft's local brokers, which hold metadata only
and restart in moments where an Apache Kafka broker recovers its logs first. So the
estimate gives the exact counts, this machine's times labelled as such with a rate to
scale by, and the rolls as a formula in the operator's own broker restart time:

    2 rolling restarts x N brokers x T_broker  +  C controllers x T_controller

(the first roll enables the migration on each broker, the second restarts each into
KRaft mode; finalization restarts each controller once without the migration flag).

:func:`estimate` takes a plain :class:`Measurements` and returns report.json's
``estimate`` object (documented in docs/operations.md).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from migration.operate.plan import ROLLS, roll_seconds
from migration.rehearse.report import Report

CARRIES_OVER = (
    "the number of records the copy writes, and of each record type: the rehearsal copied "
    "production's own tree, so production's copy writes exactly these",
    "every preflight blocker and warning: they were found on production's tree",
    "the restarts: their order and count (every broker twice, every controller once)",
    "the audit's result: ZooKeeper and the metadata log agreed, or differed, on this tree",
    "the procedure and its commands, with production's connect string and broker ids",
)
DOES_NOT_CARRY_OVER = (
    "the CPU and disk speed of production's controllers: the copy's time and the write "
    "pause scale with them",
    "fsync latency: each committed batch waits for the controllers' disks; "
    "a network volume is slower than a local SSD",
    "Apache Kafka brokers' restart time, which depends on their log recovery and the "
    "number of partitions they lead: zk2kraft's local brokers are metadata-only and "
    "restart in moments; time one of your brokers' restarts and use the formula",
    "network latency to ZooKeeper: the local controllers read and write a ZooKeeper on "
    "this machine; production's may be a data centre away",
    "load: production's clients keep producing and changing metadata during the migration",
)


@dataclass(frozen=True)
class Measurements:
    """What the rehearsal measured. ``brokers``: production's broker count (its broker
    ids); ``controllers``: the KRaft controllers finalization restarts;
    ``broker_restarts_s``/``controller_restarts_s``: each local restart, as measured."""

    cpus: int
    source_kind: str  # "zookeeper" (read from production's ensemble) or "files"
    znodes: int
    read_s: float
    brokers: int
    controllers: int
    records: int
    records_by_type: Mapping[str, int] = field(default_factory=dict)
    copy_ms: float = 0.0
    write_pause_ms: float = 0.0
    broker_restarts_s: tuple[float, ...] = ()
    controller_restarts_s: tuple[float, ...] = ()
    audit_s: float | None = None
    audit_ok: bool | None = None
    max_lag: int | None = None
    blockers: int = 0
    warnings: int = 0


def _median(values: tuple[float, ...]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def _read_note(m: Measurements) -> str:
    if m.source_kind == "zookeeper":
        return (
            "read from production's ensemble over this machine's network: close to what a "
            "controller placed like this machine will take to read it"
        )
    return (
        "read from ZooKeeper's files on this machine's disk: a controller reads the live "
        "ensemble over the network, which is slower"
    )


def estimate(m: Measurements) -> dict[str, Any]:
    """report.json's ``estimate``: exact counts, this machine's times said as such, the
    rolls' formula with production's broker and controller counts, and the lists of what
    carries over to production and what does not."""
    copy_s = m.copy_ms / 1000.0
    rate = round(m.records / copy_s) if copy_s > 0 else None
    broker_t = _median(m.broker_restarts_s)
    controller_t = _median(m.controller_restarts_s)
    local_rolls = (
        round(roll_seconds(m.brokers, broker_t, m.controllers, controller_t or 0.0), 3)
        if broker_t is not None
        else None
    )
    formula = (
        f"{ROLLS} rolling restarts x {m.brokers} brokers x T_broker"
        f" + {m.controllers} controllers x T_controller"
    )
    types = len(m.records_by_type)
    summary = (
        f"Production's copy writes exactly {m.records:,} records"
        f" ({types} record type{'s' if types != 1 else ''}). "
        f"On this machine ({m.cpus} CPUs) it took "
        f"{copy_s:,.3f} s and the controllers paused writes for {m.write_pause_ms:,.0f} ms; "
        "production's pause scales with its controllers' CPU, disk and fsync latency and "
        "its network to ZooKeeper. The rolls take "
        f"{formula}, where T_broker is how long one of your brokers takes to restart "
        "(log recovery included): the local brokers here hold metadata only, so their "
        f"{ROLLS * m.brokers} restarts are no guide to yours."
    )
    return {
        "machine_cpus": m.cpus,
        "summary": summary,
        "records": m.records,
        "records_by_type": dict(m.records_by_type),
        "preflight": {"blockers": m.blockers, "warnings": m.warnings},
        "read": {"znodes": m.znodes, "seconds": round(m.read_s, 3), "note": _read_note(m)},
        "copy": {
            "seconds": round(copy_s, 3),
            "records_per_s": rate,
            "write_pause_ms": round(m.write_pause_ms, 3),
            "note": (
                f"this machine's ({m.cpus} CPUs, local disk, ZooKeeper on localhost): "
                "production's pause is about its record count over its controllers' rate, "
                "slower with slower disks or a distant ZooKeeper"
            ),
        },
        "rolls": {
            "brokers": m.brokers,
            "broker_restarts": ROLLS * m.brokers,
            "controller_restarts": m.controllers,
            "formula": formula,
            "local_broker_restart_s": broker_t,
            "local_controller_restart_s": controller_t,
            "local_seconds": local_rolls,
            "note": (
                "the local figures are a lower bound: zk2kraft's local brokers are "
                "metadata-only; an Apache Kafka broker's restart includes its log recovery"
            ),
        },
        "audit": {
            "seconds": None if m.audit_s is None else round(m.audit_s, 3),
            "ok": m.audit_ok,
            "note": (
                "the result carries over (same tree); the time scales with the metadata's "
                "size and the Spark cluster it runs on"
            ),
        },
        "lag": {
            "max": m.max_lag,
            "note": (
                "write-behind lag under the rehearsal's synthetic admin workload; "
                "production's depends on its rate of metadata changes and ZooKeeper's latency"
            ),
        },
        "carries_over": list(CARRIES_OVER),
        "does_not_carry_over": list(DOES_NOT_CARRY_OVER),
    }


def measurements_from(
    report: Report, controllers: int = 3, controller_restarts_s: tuple[float, ...] = ()
) -> Measurements:
    """The :class:`Measurements` a report holds (its sections not reached count as
    nothing measured); finalization's controller restarts are not in the report, so they
    are given here."""
    src, cp, au, dw, pre = (
        report.source,
        report.copy,
        report.audit,
        report.dual_write,
        report.preflight,
    )
    return Measurements(
        cpus=report.machine.cpus,
        source_kind=src.kind if src is not None else "zookeeper",
        znodes=src.znodes if src is not None else 0,
        read_s=src.read_s if src is not None else 0.0,
        brokers=len(src.broker_ids) if src is not None else 0,
        controllers=controllers,
        records=cp.records if cp is not None else 0,
        records_by_type=dict(cp.records_by_type) if cp is not None else {},
        copy_ms=cp.copy_ms if cp is not None else 0.0,
        write_pause_ms=cp.write_pause_ms if cp is not None else 0.0,
        broker_restarts_s=tuple(r.seconds for r in report.restarts),
        controller_restarts_s=controller_restarts_s,
        audit_s=au.seconds if au is not None else None,
        audit_ok=au.ok if au is not None else None,
        max_lag=dw.max_lag if dw is not None else None,
        blockers=len(pre.blockers) if pre is not None else 0,
        warnings=len(pre.warnings) if pre is not None else 0,
    )
