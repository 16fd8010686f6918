"""``zk2kraft migration status --kafka``: where a migration run by Apache Kafka's own
controllers is, read from the real cluster (Kafka's controllers do not speak
zk2kraft's gRPC), each part from where Kafka keeps it:

- the ZkMigrationState Kafka's controllers hold: the image of a controller's
  ``__cluster_metadata`` (``--log-dir`` on a controller host, read-only, safe while it
  runs), whose latest ZkMigrationStateRecord sets it;
- ``/migration`` (the offset and epoch of the log ZooKeeper holds, the claiming
  controller), ``/controller`` (a ZooKeeper-mode broker, or the KRaft controller's claim
  with its ``kraftControllerEpoch``), ``/controller_epoch``, and the brokers registered
  in ``/brokers/ids`` with whether each carries the migration flag (what the preflight
  reads);
- the quorum: Kafka's DescribeQuorum over the controller listener
  (``--bootstrap-controller``).

A part that cannot be read (no ``--log-dir``, ZooKeeper or every controller
unreachable) carries its ``error`` and the others are still shown. Read-only."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kazoo.exceptions import KazooException, NoNodeError

from migration.bridge.preflight import FEATURES_REGISTRATION
from migration.cli.controller_commands import quorum_json
from migration.cli.zk_source import connect
from migration.controller.client import parse_bootstrap
from migration.driver.states import ZK_MIGRATION_STATE_NAMES
from migration.image.at_offset import image_at
from migration.log.errors import LogError
from migration.records.versions import METADATA_VERSION
from migration.zk import paths
from migration.zk.client import ZkClient, ZkConnectError
from migration.zk.errors import ZnodeFormatError
from migration.zk.model.brokers import BrokerRegistration, parse_broker
from migration.zk.model.cluster import (
    ControllerZnode,
    MigrationZnode,
    parse_controller,
    parse_controller_epoch,
    parse_migration,
)


def state_fields(code: int | None) -> dict[str, Any]:
    """Kafka's ZkMigrationState, by name and code (null when not read)."""
    return {
        "zk_migration_state": None
        if code is None
        else ZK_MIGRATION_STATE_NAMES.get(code, "UNKNOWN"),
        "zk_migration_state_code": code,
    }


# --- the controller's metadata log ------------------------------------------------------


def metadata_log_part(log_dir: Path | None) -> dict[str, Any]:
    """The image at the end of a controller's ``__cluster_metadata``."""
    if log_dir is None:
        return {
            "log_dir": None,
            "error": "not read: no --log-dir (a controller's metadata.log.dir)",
        }
    try:
        at = image_at(log_dir, None)
    except (LogError, OSError, ValueError) as exc:
        return {"log_dir": str(log_dir), "error": str(exc) or type(exc).__name__}
    image = at.image
    return {
        "log_dir": str(log_dir),
        "error": None,
        "format": at.log_format,
        **state_fields(image.zk_migration_state),
        "offset": image.offset,
        "epoch": image.epoch,
        "log_end_offset": at.log_end_offset,
        "metadata_version": image.features.get(METADATA_VERSION),
        "brokers": [
            {
                "broker_id": b.broker_id,
                "is_migrating_zk_broker": b.is_migrating_zk_broker,
                "fenced": b.fenced,
                "epoch": b.epoch,
            }
            for b in sorted(image.brokers.values(), key=lambda b: b.broker_id)
        ],
    }


# --- ZooKeeper -----------------------------------------------------------------------------


def migration_json(znode: MigrationZnode, version: int) -> dict[str, Any]:
    return {
        "kraft_controller_id": znode.kraft_controller_id,
        "kraft_controller_epoch": znode.kraft_controller_epoch,
        "kraft_metadata_offset": znode.kraft_metadata_offset,
        "kraft_metadata_epoch": znode.kraft_metadata_epoch,
        "copy_done": znode.copy_done,
        "zk_version": version,
    }


def controller_json(znode: ControllerZnode) -> dict[str, Any]:
    return {
        "broker_id": znode.broker_id,
        "kraft_controller_epoch": znode.kraft_controller_epoch,
        "is_kraft": znode.is_kraft,
        "timestamp": znode.timestamp,
    }


def migration_flag(broker: BrokerRegistration) -> bool:
    """The registration carries the migration flag: a ``metadata.version`` feature in a
    registration of version 5 (what a ZooKeeper-mode broker writes once restarted with
    ``zookeeper.metadata.migration.enable=true``)."""
    return broker.version >= FEATURES_REGISTRATION and METADATA_VERSION in broker.features


def broker_json(broker: BrokerRegistration) -> dict[str, Any]:
    """A ZooKeeper registration; ``kraft_registration`` is the broker's registration
    with the KRaft controllers in the log's image (its ``is_migrating_zk_broker`` is
    Kafka's own sign that the broker runs with the migration flag), null when the
    image has none or was not read."""
    return {
        "broker_id": broker.broker_id,
        "migration_flag": migration_flag(broker),
        "registration_version": broker.version,
        "endpoints": [e.uri() for e in broker.endpoints],
        "kraft_registration": None,
    }


def _read(client: ZkClient, path: str) -> tuple[bytes, int] | None:
    try:
        return client.get(path)
    except NoNodeError:
        return None


def zookeeper_part(args: argparse.Namespace) -> dict[str, Any]:
    """``/migration``, ``/controller``, ``/controller_epoch`` and ``/brokers/ids``; a
    znode that does not parse is named in ``problems``."""
    out: dict[str, Any] = {"connect": args.zk, "error": None}
    try:
        client = connect(args)
    except (ZkConnectError, KazooException, ValueError) as exc:
        return out | {"error": str(exc) or type(exc).__name__}
    problems: list[str] = []

    def znode(path: str, render: Callable[[bytes, int], Any]) -> Any:
        found = _read(client, path)
        if found is None:
            return None
        try:
            return render(*found)
        except ZnodeFormatError as exc:
            problems.append(str(exc))
            return None

    try:
        with client:
            out["migration_znode"] = znode(
                paths.MIGRATION, lambda raw, version: migration_json(
                    parse_migration(paths.MIGRATION, raw), version
                )
            )  # fmt: skip
            out["controller_znode"] = znode(
                paths.CONTROLLER, lambda raw, _: controller_json(
                    parse_controller(paths.CONTROLLER, raw)
                )
            )  # fmt: skip
            out["controller_epoch"] = znode(
                paths.CONTROLLER_EPOCH,
                lambda raw, _: parse_controller_epoch(paths.CONTROLLER_EPOCH, raw),
            )
            brokers = []
            try:
                ids = client.kazoo.get_children(paths.BROKER_IDS)
            except NoNodeError:
                ids = []
            for name in sorted(ids, key=lambda n: (len(n), n)):
                if not name.isdigit():
                    problems.append(f"{paths.BROKER_IDS}/{name}: not a broker id")
                    continue
                path = paths.broker(int(name))
                found = _read(client, path)
                if found is None:  # gone between the listing and the read
                    continue
                try:
                    brokers.append(broker_json(parse_broker(path, found[0], int(name))))
                except ZnodeFormatError as exc:
                    problems.append(str(exc))
            out["brokers"] = brokers
    except KazooException as exc:
        return out | {"error": f"ZooKeeper: {exc or type(exc).__name__}"}
    out["problems"] = problems
    return out


# --- the quorum ------------------------------------------------------------------------


def quorum_part(bootstrap: str | None) -> dict[str, Any]:
    """The leader's DescribeQuorum, in ``quorum describe --json``'s shape."""
    from migration.kafka.quorum_client import describe_kafka_quorum  # noqa: PLC0415 - kio: see migration.cli

    if not bootstrap:
        return {"bootstrap": None, "error": "not read: no --bootstrap-controller"}
    endpoints = parse_bootstrap(bootstrap)
    try:
        answered_by, response = describe_kafka_quorum(endpoints)
    except ConnectionError as exc:
        return {"bootstrap": endpoints, "error": str(exc)}
    return {"bootstrap": endpoints, "error": None, "answered_by": answered_by} | quorum_json(
        response
    )


# --- the report --------------------------------------------------------------------------


def kafka_status(args: argparse.Namespace) -> dict[str, Any]:
    """The ``migration status --kafka --json`` contract (docs/cli.md)."""
    zk = zookeeper_part(args)  # before the log: the log then holds what /migration names
    log = metadata_log_part(args.log_dir)
    quorum = quorum_part(args.bootstrap_controller)
    if log["error"] is None and zk["error"] is None:
        in_image = {b["broker_id"]: b for b in log["brokers"]}
        for broker in zk["brokers"]:
            broker["kraft_registration"] = in_image.get(broker["broker_id"])
    migration = zk.get("migration_znode")
    lag = (
        log["offset"] - migration["kraft_metadata_offset"]
        if log["error"] is None and migration and migration["kraft_metadata_offset"] >= 0
        else None
    )
    return {
        "source": "kafka",
        **state_fields(log.get("zk_migration_state_code")),
        "zk_write_behind_lag": lag,
        "metadata_log": log,
        "zookeeper": zk,
        "quorum": quorum,
    }


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
