"""``zk2kraft controller --config FILE`` and ``zk2kraft quorum describe``."""

from __future__ import annotations

import argparse
import logging
import signal
import threading

from migration.cli.output import (
    DATA_ERROR,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    IO_ERROR,
    error,
    exit_codes,
    print_json,
    prose,
    serving,
)
from migration.cli.shared_options import add_config_argument, with_config
from migration.common.kafka_errors import KafkaError
from migration.controller.client import (
    change_voter,
    describe_quorum,
    parse_bootstrap,
    upgrade_kraft_version,
)
from migration.controller.config import ControllerConfig, load_config
from migration.controller.storage import StorageError
from migration.log.errors import LogFlushError
from migration.raft.faults import FATAL_EXIT_CODE, halt


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    _controller(sub)

    q = sub.add_parser(
        "quorum", help="the controller quorum: describe, add-controller, remove-controller"
    )
    qsub = q.add_subparsers(dest="quorum_command", required=True, metavar="COMMAND")
    _describe(qsub)
    _voter_changes(qsub)

    f = sub.add_parser("features", help="the quorum's kraft.version (kafka-features)")
    fsub = f.add_subparsers(dest="features_command", required=True, metavar="COMMAND")
    _upgrade(fsub)


def _controller(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``controller``: run one KRaft controller until stopped."""
    c = sub.add_parser(
        "controller",
        help="run a KRaft controller (a member of the quorum)",
        description=prose(
            """Runs one KRaft controller (Raft voter + quorum controller) until SIGTERM or
            Ctrl-C; a leader resigns gracefully (EndQuorumEpoch) on the way out. Every
            configuration problem is listed before anything starts (exit 2)."""
        ),
    )
    add_config_argument(c, "controller.properties")
    exit_codes(
        c,
        {
            EXIT_OK: "stopped (SIGTERM or Ctrl-C)",
            EXIT_ERROR: "a configuration or storage problem: nothing started",
            FATAL_EXIT_CODE: "halted on a fault of the log or of Raft "
            "(docs/configuration.md#a-controller-quorum)",
            EXIT_INTERRUPTED: "interrupted (Ctrl-C) while starting, before it serves",
        },
    )
    c.set_defaults(run=run_controller)


def _describe(qsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``quorum describe``: the quorum's leader, epoch and lag."""
    d = qsub.add_parser(
        "describe",
        help="leader, epoch, high watermark, replicas' lag",
        description=prose(
            """Leader, epoch, high watermark, each voter's and observer's log end offset,
            lag and last fetch (what `kafka-metadata-quorum describe --status
            --replication` shows). Any voter answers (non-leaders forward). The --json
            object: docs/cli.md#quorum-describe---json."""
        ),
    )
    d.add_argument(
        "--bootstrap-controller",
        required=True,
        metavar="HOST:PORT[,...]",
        help="the controller quorum (any voter answers)",
    )
    d.add_argument("--json", action="store_true", help="print the quorum as JSON")
    d.set_defaults(run=run_describe)


def _voter_changes(qsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``quorum add-controller`` and ``quorum remove-controller``."""
    for name, helptext in (
        ("add-controller", "add a voter (a replica fetching as an observer, caught up)"),
        ("remove-controller", "remove a voter, named by its id and directory id"),
    ):
        v = qsub.add_parser(
            name,
            help=f"{helptext} (KIP-853; one change at a time)",
            description=prose(_VOTER_CHANGES[name]),
        )
        _forwarding_bootstrap_argument(v)
        v.add_argument("--controller-id", type=int, required=True, help="the node id")
        v.add_argument(
            "--controller-directory-id",
            required=True,
            help="the replica's directory.id (meta.properties; `quorum describe` lists them)",
        )
        v.add_argument("--timeout", type=float, default=60.0, help="seconds to retry")
        exit_codes(
            v,
            {
                EXIT_OK: "the voter change is committed",
                EXIT_ERROR: "refused (the reason is printed) or no answer within --timeout",
            },
        )
        v.set_defaults(run=run_change_voter, adding=name == "add-controller")


def _upgrade(fsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``features upgrade``: pin the voter set (kraft.version=1)."""
    u = fsub.add_parser(
        "upgrade",
        help="kraft.version=1: pin the voter set with directory ids (one way; KIP-853)",
        description=prose(
            """Kafka 4.1's `kafka-features --bootstrap-controller HOST:PORT upgrade
            --feature kraft.version=1`: the active controller pins the static voter set
            of controller.quorum.voters with every voter's directory id (a
            KRaftVersionRecord and a VotersRecord), answered once committed (at once when
            done already); refused with the voters not heard yet named (each must be
            running and fetching with a directory id). Never automatic, and one way:
            there is no downgrade. Until it, the quorum is static (Kafka's kraft.version
            0) and a replaced disk has no protection. See
            docs/operations.md#replacing-a-controllers-disk."""
        ),
    )
    _forwarding_bootstrap_argument(u)
    u.add_argument(
        "--feature",
        required=True,
        metavar="kraft.version=1",
        help="the feature and level (only kraft.version=1; there is no downgrade)",
    )
    u.add_argument("--timeout", type=float, default=60.0, help="seconds to retry")
    exit_codes(
        u,
        {
            EXIT_OK: "kraft.version 1 is committed (or was already)",
            EXIT_ERROR: "refused (the reason is printed) or no answer within --timeout",
        },
    )
    u.set_defaults(run=run_upgrade)


_VOTER_CHANGES = {
    "add-controller": """Kafka's `kafka-metadata-quorum add-controller`: adds the
    replica (--controller-id, --controller-directory-id) -- fetching as an observer and
    caught up, its id in controller.quorum.voters, not a voter already -- as a voter,
    answered once committed. Needs kraft.version 1 (`features upgrade`; else
    UNSUPPORTED_VERSION). Kafka's takes --command-config controller.properties (the new
    controller's own, for its node id and directory id); this one takes them as options
    (from `storage format --json` or `quorum describe`).""",
    "remove-controller": """Kafka's `kafka-metadata-quorum remove-controller`: removes
    the voter (--controller-id, --controller-directory-id) through the log, answered once
    committed; one voter change at a time; never the active controller (Kafka allows
    it). Needs kraft.version 1 (`features upgrade`; else UNSUPPORTED_VERSION). See
    docs/operations.md#replacing-a-controllers-disk.""",
}


def _forwarding_bootstrap_argument(parser: argparse.ArgumentParser) -> None:
    """``--bootstrap-controller``, required, for a change any voter forwards (a voter
    change, a feature upgrade)."""
    parser.add_argument(
        "--bootstrap-controller",
        required=True,
        metavar="HOST:PORT[,...]",
        help="the controller quorum (any voter forwards to the active controller)",
    )


@with_config(load_config, "controller")
def run_controller(args: argparse.Namespace, config: ControllerConfig) -> int:
    from migration.server.controller_server import ControllerProcess  # noqa: PLC0415 - serving only

    try:
        serving(config.tls)
        process = ControllerProcess(config)
    except LogFlushError as exc:  # a fault of the node, not of its input: as when serving
        halt(f"controller {config.node_id}: {exc}", exc)
        return FATAL_EXIT_CODE  # halt() does not return
    except (StorageError, OSError) as exc:
        error(
            f"controller {config.node_id}: {exc}",
            DATA_ERROR if isinstance(exc, StorageError) else IO_ERROR,
        )
        return EXIT_ERROR
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    process.start()
    while not stop.wait(0.5):
        pass
    logging.getLogger(__name__).info("controller %d: shutting down", config.node_id)
    process.stop()
    return EXIT_OK


def run_change_voter(args: argparse.Namespace) -> int:
    what = "add-controller" if args.adding else "remove-controller"
    try:
        change_voter(
            parse_bootstrap(args.bootstrap_controller),
            args.controller_id,
            args.controller_directory_id,
            add=args.adding,
            timeout_s=args.timeout,
        )
    except KafkaError as exc:
        error(f"{what} {args.controller_id}:{args.controller_directory_id}: {exc}", DATA_ERROR)
        return EXIT_ERROR
    print(
        f"{what}: node {args.controller_id} with directory {args.controller_directory_id} "
        f"{'added to' if args.adding else 'removed from'} the voters (committed)."
    )
    return EXIT_OK


def run_upgrade(args: argparse.Namespace) -> int:
    name, _, level = str(args.feature).partition("=")
    if name != "kraft.version" or not level.isdigit():
        error(f"--feature {args.feature}: only kraft.version=<level> is supported", DATA_ERROR)
        return EXIT_ERROR
    try:
        upgrade_kraft_version(
            parse_bootstrap(args.bootstrap_controller), int(level), timeout_s=args.timeout
        )
    except KafkaError as exc:
        error(f"features upgrade --feature {args.feature}: {exc}", DATA_ERROR)
        return EXIT_ERROR
    print(
        f"kraft.version is {level}: the voter set is pinned with its directory ids "
        "(committed; there is no downgrade)."
    )
    return EXIT_OK


def run_describe(args: argparse.Namespace) -> int:
    from migration.operate.kafka_state import quorum_json  # noqa: PLC0415 - ZooKeeper's client

    response = describe_quorum(parse_bootstrap(args.bootstrap_controller))
    report = quorum_json(response)
    if args.json:
        print_json(report)
        return EXIT_OK
    print(f"LeaderId:        {report['leader_id']}")
    print(f"LeaderEpoch:     {report['leader_epoch']}")
    print(f"HighWatermark:   {report['high_watermark']}")
    print(f"MaxFollowerLag:  {report['max_follower_lag']}")
    print(f"CurrentVoters:   {[v['replica_id'] for v in report['voters']]}")
    print(f"CurrentObservers: {[o['replica_id'] for o in report['observers']]}")
    print()
    print(
        f"{'NodeId':>6}  {'DirectoryId':<22}  {'LogEndOffset':>12}  {'Lag':>6}  "
        f"{'LastFetchMsAgo':>14}  Status"
    )
    for r in [*report["voters"], *report["observers"]]:
        ago = "-" if r["last_fetch_ms_ago"] is None else r["last_fetch_ms_ago"]
        lag = "-" if r["lag"] is None else r["lag"]
        print(
            f"{r['replica_id']:>6}  {r['directory_id'] or '-':<22}  {r['log_end_offset']:>12}  "
            f"{lag:>6}  {ago:>14}  {r['status']}"
        )
    return EXIT_OK
