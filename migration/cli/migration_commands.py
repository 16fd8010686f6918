"""``zk2kraft storage format`` (Kafka's ``kafka-storage format``) and ``zk2kraft
migration status [--wait-for STATE|PHASE]``: where the ZooKeeper-to-KRaft migration is,
from the controllers (what scripts and the runbooks wait on)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from kazoo.exceptions import NoNodeError

from migration.cli.output import (
    DATA_ERROR,
    EXIT_ERROR,
    EXIT_NOT_READY,
    EXIT_OK,
    INVALID_ARGUMENT,
    TIMED_OUT,
    UNAVAILABLE,
    CliError,
    error,
    exit_codes,
    print_json,
    prose,
)
from migration.cli.shared_options import add_config_argument, with_config
from migration.cli.zk_source import add_zk_argument
from migration.controller.client import parse_bootstrap
from migration.controller.config import ControllerConfig, load_config
from migration.controller.storage import StorageError, format_storage, formatted_as
from migration.driver.describe import describe_migration, status_json
from migration.driver.states import ClusterState, Phase
from migration.records import versions
from migration.zk import paths
from migration.zk.client import ConnectString, ZkClient
from migration.zk.model.cluster import parse_cluster_id
from migration.zk.security import ZkSecurity

WAIT_POLL_S = 0.5
FORMAT_DESCRIPTION = """Kafka's `kafka-storage format`: writes meta.properties (version 1:
node.id, cluster.id, directory.id) and bootstrap.checkpoint (the metadata.version a fresh
quorum starts with; a migration needs 3.6 or later) into metadata.log.dir. Refuses a
formatted directory or one holding a log, and a metadata.log.dir that is (or lies under)
a symlink to nothing, naming the link and its target (never created through it).

Use ZooKeeper's /cluster/id to migrate a cluster: --zk reads it, with the ZooKeeper
settings of the controller's own controller.properties (not the ZooKeeper client options
other commands take).

--ignore-formatted: a directory already formatted for this node and cluster is left as it
is and the command succeeds (exit 0; --json says `"already_formatted": true`); one
formatted for another node or cluster is still refused. The Helm chart's controllers
format with it on every start.

--no-initial-controllers: a controller joining an existing quorum (a replaced disk;
bootstrap.checkpoint then holds kraft.version 1, as Kafka's), an observer until `quorum
add-controller` names its new directory.id (after `features upgrade`; in a static quorum
it stays an observer). A formatted directory without a directory.id gets one when the
controller starts."""
STATUS_DESCRIPTION = """Where the live migration is, as the active controller sees it
(see docs/operations.md#the-live-migration; the --json object:
docs/cli.md#migration-status---json). --wait-for polls until a cluster state
(MigrationActive, MigrationFinished, KRaft, ...) or driver phase (DUAL_WRITE, ...) is
reached, or ZkCaughtUp (dual-writing with no write-behind lag: ZooKeeper holds everything
the log had committed), printing each change on stderr.

--kafka: a migration run by Apache Kafka's own controllers, read from the real cluster
(see docs/kafka-log.md#the-status-of-kafkas-own-migration): the ZkMigrationState Kafka's
controllers hold (the image of a controller's __cluster_metadata in --log-dir, its
metadata.log.dir; read-only, safe while it runs), /migration, /controller,
/controller_epoch and the brokers in /brokers/ids with their migration flag, and the
quorum from Kafka's DescribeQuorum over the controller listeners of
--bootstrap-controller (Kafka 3.7 on; the leader answers). A part not given or
unreachable carries its `error` and the rest is shown (the --json object:
docs/cli.md#migration-status---kafka---json)."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    st = sub.add_parser("storage", help="a controller's storage: format")
    ssub = st.add_subparsers(dest="storage_command", required=True, metavar="COMMAND")
    _format(ssub)

    m = sub.add_parser("migration", help="the live migration: status")
    msub = m.add_subparsers(dest="migration_command", required=True, metavar="COMMAND")
    _status(msub)


def _format(ssub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``storage format``: write meta.properties and the bootstrap."""
    f = ssub.add_parser(
        "format",
        help="write meta.properties and the bootstrap metadata.version",
        description=prose(FORMAT_DESCRIPTION),
    )
    add_config_argument(f, "controller.properties")
    which = f.add_mutually_exclusive_group(required=True)
    which.add_argument("--cluster-id", metavar="ID", help="ZooKeeper's /cluster/id")
    which.add_argument("--zk", metavar="CONNECT", help="read the cluster id from /cluster/id")
    f.add_argument(
        "--release-version",
        default="3.9",
        metavar="RELEASE",
        help="the metadata.version to bootstrap, as a release (3.6 or later to migrate)",
    )
    f.add_argument(
        "--no-initial-controllers",
        action="store_true",
        help="a controller joining an existing quorum (a replaced disk): it starts as an "
        "observer until `zk2kraft quorum add-controller` names its directory id (the "
        "quorum upgraded to kraft.version 1 first: `zk2kraft features upgrade`)",
    )
    f.add_argument(
        "--ignore-formatted",
        action="store_true",
        help="succeed when the directory is already formatted for this node and cluster",
    )
    f.add_argument("--json", action="store_true", help="print the formatted directory as JSON")
    f.set_defaults(run=run_format)


def _status(msub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``migration status``: where the live migration is."""
    s = msub.add_parser(
        "status",
        help="where the live migration is: state, ZkMigrationState, driver phase, lag "
        "(--wait-for: until reached; --kafka: Apache Kafka's own migration)",
        description=prose(STATUS_DESCRIPTION),
    )
    s.add_argument(
        "--bootstrap-controller",
        metavar="HOST:PORT[,...]",
        help="the controller quorum (the active controller answers; with --kafka: Kafka's "
        "controller listeners, for DescribeQuorum)",
    )
    s.add_argument(
        "--kafka",
        action="store_true",
        help="a migration run by Apache Kafka's own controllers: its ZkMigrationState from "
        "a controller's log (--log-dir), /migration, /controller and /brokers/ids from "
        "ZooKeeper (--zk), the quorum from DescribeQuorum (--bootstrap-controller)",
    )
    s.add_argument(
        "--log-dir",
        type=Path,
        metavar="DIR",
        help="with --kafka: a Kafka controller's metadata.log.dir (read-only)",
    )
    add_zk_argument(s, required=False)
    s.add_argument(
        "--wait-for",
        metavar="STATE|PHASE[,...]",
        help="poll until the cluster state (e.g. MigrationActive, MigrationFinished, KRaft) "
        "or the driver phase (e.g. DUAL_WRITE) is reached (any of several), or ZkCaughtUp "
        "(dual-writing, no write-behind lag), showing each change; exit 1 after --timeout",
    )
    s.add_argument(
        "--timeout", type=float, default=600.0, metavar="S", help="seconds (with --wait-for)"
    )
    s.add_argument("--json", action="store_true", help="print the status as JSON")
    exit_codes(
        s,
        {
            EXIT_OK: "answered (with --wait-for: reached; with --kafka: any part read)",
            EXIT_NOT_READY: "--wait-for: not reached within --timeout",
            EXIT_ERROR: "no controller answered (with --kafka: no part read), or bad arguments",
        },
    )
    s.set_defaults(run=run_status)


@with_config(load_config, "controller")
def run_format(args: argparse.Namespace, config: ControllerConfig) -> int:
    level = versions.ibp_level(args.release_version)
    if level is None:
        error(
            f"--release-version {args.release_version}: not a Kafka release "
            f"({', '.join(sorted(versions.IBP_RELEASES))})",
            INVALID_ARGUMENT,
        )
        return EXIT_ERROR
    cluster_id = args.cluster_id or zk_cluster_id(args.zk, config.zk_security)
    try:
        existing = (
            formatted_as(config.log_dir, config.node_id, cluster_id)
            if args.ignore_formatted
            else None
        )
        storage = existing or format_storage(
            config.log_dir,
            config.node_id,
            cluster_id,
            level,
            initial_controllers=not args.no_initial_controllers,
        )
    except StorageError as exc:
        error(str(exc), DATA_ERROR)
        return EXIT_ERROR
    report = {
        "already_formatted": existing is not None,
        "directory": str(config.log_dir),
        "node_id": storage.node_id,
        "cluster_id": storage.cluster_id,
        "directory_id": storage.directory_id,
        "joining": storage.joining,
        "metadata_version": storage.metadata_version,
        "metadata_version_name": versions.name(storage.metadata_version),
    }
    if args.json:
        print_json(report)
    elif existing is not None:
        print(
            f"Metadata directory {config.log_dir} is already formatted (cluster "
            f"{storage.cluster_id}, node {storage.node_id}); left as it is."
        )
    else:
        print(
            f"Formatting metadata directory {config.log_dir} with metadata.version "
            f"{versions.name(level)}."
        )
        if storage.joining:
            print(
                f"Directory id {storage.directory_id}: node {storage.node_id} joins the quorum "
                "as an observer until `zk2kraft quorum add-controller --controller-id "
                f"{storage.node_id} --controller-directory-id {storage.directory_id}`."
            )
    return EXIT_OK


def zk_cluster_id(connect: str, security: ZkSecurity) -> str:
    """ZooKeeper's ``/cluster/id`` (CliError when it is missing), read with the
    controller's ZooKeeper settings."""
    with ZkClient(ConnectString.parse(connect), security=security) as client:
        try:
            raw, _ = client.get(paths.CLUSTER_ID)
        except NoNodeError:
            raise CliError(f"{connect}: no {paths.CLUSTER_ID}: not a Kafka cluster") from None
        return parse_cluster_id(paths.CLUSTER_ID, raw).id


# A --wait-for target of its own: dual-writing with no write-behind lag, i.e. ZooKeeper
# holds everything the log had committed when the status was taken (before finalizing).
ZK_CAUGHT_UP = "ZkCaughtUp"


def zk_caught_up(report: dict[str, Any]) -> bool:
    """The ``migration status`` report's controller dual-writes with no write-behind lag."""
    return bool(
        report["driver_phase"] == Phase.DUAL_WRITE.value and report["zk_write_behind_lag"] == 0
    )


def _reached(report: dict[str, Any], targets: list[str]) -> bool:
    if report["active_controller"] < 0:
        return False
    if ZK_CAUGHT_UP in targets and zk_caught_up(report):
        return True
    return bool({report["state"], report["driver_phase"]} & set(targets))


def wait_for(bootstrap: list[str], targets: list[str], timeout_s: float) -> dict[str, Any] | None:
    """Poll ``migration status`` until one of ``targets`` (cluster states or phases);
    each new outcome on stderr (progress). None after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    last = ""
    while True:
        try:
            report = status_json(describe_migration(bootstrap))
            line = f"{report['state']} [{report['driver_phase']}]: {report['outcome']}"
        except ConnectionError as exc:
            report, line = None, f"no answer: {exc}"
        if line != last:
            print(line, file=sys.stderr, flush=True)
            last = line
        if report is not None and _reached(report, targets):
            return report
        if time.monotonic() > deadline:
            return None
        time.sleep(WAIT_POLL_S)


def run_status(args: argparse.Namespace) -> int:
    if args.kafka:
        return run_kafka_status(args)
    if not args.bootstrap_controller:
        error("--bootstrap-controller is required (without --kafka)", INVALID_ARGUMENT)
        return EXIT_ERROR
    for option in ("zk", "log_dir", "zk_config"):
        if getattr(args, option) is not None:
            flag = "--" + option.replace("_", "-")
            error(f"{flag} goes with --kafka", INVALID_ARGUMENT)
            return EXIT_ERROR
    bootstrap = parse_bootstrap(args.bootstrap_controller)
    if args.wait_for:
        known = {s.name for s in ClusterState} | {p.value for p in Phase} | {ZK_CAUGHT_UP}
        targets = [t.strip() for t in args.wait_for.split(",") if t.strip()]
        unknown = [t for t in targets if t not in known]
        if unknown or not targets:
            error(
                f"--wait-for {args.wait_for}: not states or phases ({', '.join(sorted(known))})",
                INVALID_ARGUMENT,
            )
            return EXIT_ERROR
        waited = wait_for(bootstrap, targets, args.timeout)
        if waited is None:
            error(f"{args.wait_for} not reached within {args.timeout:g}s", TIMED_OUT)
            return EXIT_NOT_READY
        report = waited
    else:
        try:
            report = status_json(describe_migration(bootstrap))
        except ConnectionError as exc:
            error(str(exc), UNAVAILABLE)
            return EXIT_ERROR
    if args.json:
        print_json(report)
    else:
        print_status(report)
    return EXIT_OK


def run_kafka_status(args: argparse.Namespace) -> int:
    """``--kafka``: each part read on its own (kafka_status); exit 2 when none was."""
    from migration.cli.kafka_status import (  # noqa: PLC0415 - Kafka's own reads: --kafka only
        answered,
        kafka_status,
        print_kafka_status,
    )

    if args.wait_for:
        error("--wait-for is not offered with --kafka", INVALID_ARGUMENT)
        return EXIT_ERROR
    if not args.zk:
        error("--kafka needs --zk (the cluster's zookeeper.connect)", INVALID_ARGUMENT)
        return EXIT_ERROR
    report = kafka_status(args)
    if args.json:
        print_json(report)
    else:
        print_kafka_status(report)
    if answered(report):
        return EXIT_OK
    if not args.json:  # the report names each part's problem; one JSON object only
        error("nothing answered: ZooKeeper, the controllers and the log", UNAVAILABLE)
    return EXIT_ERROR


def print_status(report: dict[str, Any]) -> None:
    """The text form: one ``Name: value`` line per field."""
    width = max(len(k) for k in report)
    for key, value in report.items():
        print(f"{key.replace('_', ' ').capitalize() + ':':<{width + 2}} {value}")
