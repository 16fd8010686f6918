"""Where a migration run by Apache Kafka's own controllers is, read from the real
cluster (Kafka's controllers do not speak zk2kraft's gRPC), each part from where Kafka
keeps it -- what ``migration status --kafka`` shows and what ``kafka migrate``'s gates
open on:

- the ZkMigrationState Kafka's controllers hold: the image of a controller's
  ``__cluster_metadata`` (its ``metadata.log.dir``, read-only, safe while it runs),
  whose latest ZkMigrationStateRecord sets it, with the brokers registered with the
  controllers;
- ``/migration`` (the offset and epoch of the log ZooKeeper holds, the claiming
  controller), ``/controller`` (a ZooKeeper-mode broker, or the KRaft controller's claim
  with its ``kraftControllerEpoch``), ``/controller_epoch``, and the brokers registered
  in ``/brokers/ids`` with whether each carries the migration flag (what the preflight
  reads);
- the quorum: Kafka's DescribeQuorum over the controller listener.

A part that cannot be read carries its ``error`` and the others are still read.
Read-only."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kazoo.exceptions import KazooException, NoNodeError

from migration.bridge.preflight import FEATURES_REGISTRATION
from migration.controller.client import parse_bootstrap
from migration.driver.states import ZK_MIGRATION_STATE_NAMES
from migration.image.at_offset import image_at
from migration.image.delta import RecordApplyError
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
    except (LogError, OSError, ValueError, RecordApplyError) as exc:
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


def zookeeper_part(connect: str, open_client: Callable[[], ZkClient]) -> dict[str, Any]:
    """``/migration``, ``/controller``, ``/controller_epoch`` and ``/brokers/ids`` of the
    ZooKeeper at ``connect``, read through ``open_client()``; a znode that does not parse
    is named in ``problems``."""
    out: dict[str, Any] = {"connect": connect, "error": None}
    try:
        client = open_client()
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
        return {
            "bootstrap": None,
            "error": "not read: no --bootstrap-controller",
        }
    endpoints = parse_bootstrap(bootstrap)
    try:
        answered_by, response = describe_kafka_quorum(endpoints)
    except ConnectionError as exc:
        return {"bootstrap": endpoints, "error": str(exc)}
    return {"bootstrap": endpoints, "error": None, "answered_by": answered_by} | quorum_json(
        response
    )


# --- the report --------------------------------------------------------------------------


def kafka_status(
    connect: str,
    open_client: Callable[[], ZkClient],
    log_dir: Path | None,
    bootstrap: str | None,
) -> dict[str, Any]:
    """The ``migration status --kafka --json`` contract (docs/cli.md): ZooKeeper at
    ``connect`` (through ``open_client()``), the metadata log in ``log_dir``, the quorum
    at ``bootstrap`` (each None: that part not read)."""
    zk = zookeeper_part(connect, open_client)  # first: the log then holds what /migration names
    log = metadata_log_part(log_dir)
    quorum = quorum_part(bootstrap)
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


def quorum_json(response: Any) -> dict[str, Any]:
    """The contract: leader_id, leader_epoch, high_watermark, voters[], observers[]."""
    now_ms = int(time.time() * 1000)
    leader_end = max((v.log_end_offset for v in response.current_voters), default=0)

    def replica(r: Any) -> dict[str, Any]:
        return {
            "replica_id": r.replica_id,
            "log_end_offset": r.log_end_offset,
            "lag": max(0, leader_end - r.log_end_offset) if r.log_end_offset >= 0 else None,
            "last_fetch_ms_ago": now_ms - r.last_fetch_timestamp
            if r.last_fetch_timestamp >= 0
            else None,
            "last_caught_up_ms_ago": now_ms - r.last_caught_up_timestamp
            if r.last_caught_up_timestamp >= 0
            else None,
            "status": "Leader" if r.replica_id == response.leader_id else "Follower",
            "directory_id": r.replica_directory_id,
        }

    return {
        "leader_id": response.leader_id,
        "leader_epoch": response.leader_epoch,
        "high_watermark": response.high_watermark,
        "max_follower_lag": max(
            (replica(v)["lag"] or 0 for v in response.current_voters), default=0
        ),
        "voters": [replica(v) for v in response.current_voters],
        "observers": [dict(replica(o), status="Observer") for o in response.observers],
    }
