"""``zk2kraft migration status --kafka``: where a migration run by Apache Kafka's own
controllers is (read by :mod:`migration.operate.kafka_state`): ZooKeeper from ``--zk``,
the metadata log from ``--log-dir`` (on a controller host), the quorum from
``--bootstrap-controller``. Read-only."""

from __future__ import annotations

import argparse
from typing import Any

from migration.cli.zk_source import connect
from migration.operate import kafka_state


def kafka_status(args: argparse.Namespace) -> dict[str, Any]:
    """The ``migration status --kafka --json`` contract (docs/cli.md)."""
    return kafka_state.kafka_status(
        args.zk, lambda: connect(args), args.log_dir, args.bootstrap_controller
    )


def answered(report: dict[str, Any]) -> bool:
    """Any part was read (else the command exits 2, as ``migration status`` does when no
    controller answers)."""
    return any(report[part]["error"] is None for part in ("metadata_log", "zookeeper", "quorum"))


def _flags(broker: dict[str, Any]) -> str:
    """How a ZooKeeper-registered broker shows its migration flag: in its registration
    (what the preflight reads) and with the KRaft controllers (Kafka's own sign)."""
    kraft = broker["kraft_registration"]
    shown = [
        "migration flag in ZooKeeper" if broker["migration_flag"] else "",
        ""
        if kraft is None
        else "migrating (KRaft registration)"
        if kraft["is_migrating_zk_broker"]
        else "not migrating (KRaft registration)",
    ]
    flags = ", ".join(f for f in shown if f)
    return f" ({flags})" if flags else ""


def print_kafka_status(report: dict[str, Any]) -> None:
    """The text form: the state, then each part (its error when it was not read)."""
    log, zk, quorum = report["metadata_log"], report["zookeeper"], report["quorum"]
    state = report["zk_migration_state"]
    code = report["zk_migration_state_code"]
    print(f"ZkMigrationState:    {state if state is None else f'{state} ({code})'}")
    if log["error"] is None:
        print(
            f"Metadata log:        {log['log_dir']}: offset {log['offset']} (epoch "
            f"{log['epoch']}), log end {log['log_end_offset']}, metadata.version "
            f"{log['metadata_version']}"
        )
    else:
        print(f"Metadata log:        {log['error']}")
    if zk["error"] is not None:
        print(f"ZooKeeper:           {zk['error']}")
    else:
        m = zk["migration_znode"]
        print(
            "/migration:          "
            + (
                "absent"
                if m is None
                else f"offset {m['kraft_metadata_offset']} (epoch {m['kraft_metadata_epoch']}), "
                f"controller {m['kraft_controller_id']} with kraftControllerEpoch "
                f"{m['kraft_controller_epoch']}, znode version {m['zk_version']}"
            )
        )
        c = zk["controller_znode"]
        print(
            "/controller:         "
            + (
                "absent"
                if c is None
                else f"KRaft controller {c['broker_id']} (kraftControllerEpoch "
                f"{c['kraft_controller_epoch']})"
                if c["is_kraft"]
                else f"ZooKeeper-mode broker {c['broker_id']}"
            )
        )
        print(f"/controller_epoch:   {zk['controller_epoch']}")
        brokers = ", ".join(f"{b['broker_id']}{_flags(b)}" for b in zk["brokers"])
        print(f"/brokers/ids:        {brokers or 'none'}")
        for problem in zk["problems"]:
            print(f"  problem: {problem}")
    print(f"ZK write-behind lag: {report['zk_write_behind_lag']}")
    if quorum["error"] is not None:
        print(f"Quorum:              {quorum['error']}")
        return
    print(
        f"Quorum:              leader {quorum['leader_id']}, epoch {quorum['leader_epoch']}, "
        f"high watermark {quorum['high_watermark']} (answered by {quorum['answered_by']})"
    )
    for r in [*quorum["voters"], *quorum["observers"]]:
        lag = "-" if r["lag"] is None else r["lag"]
        print(
            f"  {r['status']:<8} {r['replica_id']:>6}  log end {r['log_end_offset']:>10}  lag {lag}"
        )
