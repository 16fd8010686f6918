"""``zk2kraft kafka plan|migrate|rollback|status``: the migration of a real Apache Kafka
3.9 cluster, described by an inventory (:mod:`migration.operate.inventory`).

- ``plan``: the concrete steps it takes -- each properties file's exact diff, each
  command, each gate and what it waits for, and the rolls' estimated duration. Reads the
  files and ZooKeeper; changes nothing. Exit 0: ready to start; 1: problems to fix first.
- ``migrate``: the steps taken, gated and resumable (:mod:`migration.operate.run`).
  Exit 0: done (or stopped at ``--until``); 1: refused, or a gate did not open in time
  (act, then run again: it resumes); 2: a command or an edit failed.
- ``migrate|rollback --page HOST:PORT`` serves the run's live page, ``/migration.json``
  and ``/metrics`` while it runs; ``status --serve HOST:PORT`` serves them until SIGINT
  or SIGTERM (:mod:`migration.operate.watch`). Each prints the address it bound (port 0:
  any free port) on stderr."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from migration.cli.output import (
    EXIT_ERROR,
    EXIT_NOT_READY,
    EXIT_OK,
    CliError,
    exit_codes,
    print_json,
    prose,
)
from migration.common.ports import host_problem
from migration.common.text import inert, printable_line, shown
from migration.observability.endpoint import MetricsEndpoint, MetricsServer
from migration.observability.progress import for_stream
from migration.operate.inventory import Inventory, load_inventory
from migration.operate.plan import build_plan, render_text
from migration.operate.reading import read_cluster, read_files
from migration.operate.run import (
    GateTimedOutError,
    Runner,
    RunOptions,
    RunStoppedError,
    StepFailedError,
    StoppedAtError,
    readable_log_dir,
)
from migration.operate.status import driven_status, render_status
from migration.operate.watch import DrivenWatch, page_address, serve, watch_inventory


def _seconds(text: str) -> float:
    value = float(text)
    if not 0 < value < 86_400:
        raise argparse.ArgumentTypeError(f"{text} is not a number of seconds in (0, 86400)")
    return value


def _listen(text: str) -> MetricsEndpoint:
    """``HOST:PORT`` (an IPv6 host in brackets; port 0: any free port)."""
    host, colon, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not (colon and host and port.isdigit() and int(port) < 65536):
        raise argparse.ArgumentTypeError(f"{shown(text)} is not HOST:PORT (port 0-65535)")
    if problem := host_problem(host):
        raise argparse.ArgumentTypeError(problem)
    return MetricsEndpoint(host, int(port))


def _page_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--page", type=_listen, metavar="HOST:PORT",
        help="serve the run's live page (/migration), /migration.json and /metrics here "
        "while it runs (port 0: any free port; the address is printed); plain HTTP, no "
        "auth: bind it to localhost or a trusted network",
    )  # fmt: skip


def _inventory_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--inventory", type=Path, required=True, metavar="FILE",
        help="the cluster's inventory (TOML: ZooKeeper, brokers, controllers; see "
        "docs/kafka-clusters.md)",
    )  # fmt: skip


def _timeouts(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--gate-timeout", type=_seconds, default=900.0, metavar="S",
        help="how long a gate may stay closed before the run stops (default 900)",
    )  # fmt: skip
    parser.add_argument(
        "--command-timeout", type=_seconds, default=600.0, metavar="S",
        help="how long a restart/start/stop/format command may run (default 600)",
    )  # fmt: skip


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    k = sub.add_parser("kafka", help="drive a real Apache Kafka 3.9 cluster's own migration")
    ksub = k.add_subparsers(dest="kafka_command", required=True, metavar="COMMAND")
    _plan(ksub)
    _migrate(ksub)
    _rollback(ksub)
    _status(ksub)


def _plan(ksub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``kafka plan``: the migration as concrete steps."""
    p = ksub.add_parser(
        "plan",
        help="the migration as concrete steps for this cluster (changes nothing)",
        description=prose(
            """An Apache Kafka 3.9 cluster's migration, from its inventory, as concrete
            steps: each properties file's diff (secrets redacted), each command, each
            gate and what it waits for, the rolls' estimated duration (see
            docs/kafka-clusters.md). Reads the files and ZooKeeper; changes nothing."""
        ),
    )
    _inventory_argument(p)
    p.add_argument(
        "--broker-restart-seconds", type=_seconds, metavar="S",
        help="one of your brokers' restart, timed (log recovery included): the estimate's T_broker",
    )  # fmt: skip
    p.add_argument(
        "--controller-restart-seconds", type=_seconds, metavar="S",
        help="a controller's restart: the estimate's T_controller",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    exit_codes(p, {EXIT_OK: "the plan is ready to run", EXIT_NOT_READY: "problems to fix first"})
    p.set_defaults(run=run_plan)


def _migrate(ksub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``kafka migrate``: take the plan's steps, gated and resumable."""
    m = ksub.add_parser(
        "migrate",
        help="take the plan's steps, each gated on what Kafka reports; resumable",
        description=prose(
            """Takes the plan's steps, each gated on what Kafka reports, refusing with a
            reassignment in flight, a broker missing, unexpected or replaced, or no
            quorum leader; resumable from its journal (FILE.run.json). --json:
            `{"outcome", "step", "reason", "done"}`. --page HOST:PORT: while it runs, the
            live page /migration, /migration.json and /metrics there (see
            docs/kafka-clusters.md#watching-it-while-it-runs)."""
        ),
    )
    _inventory_argument(m)
    m.add_argument(
        "--until", metavar="PHASE|STEP",
        help="stop before this phase (e.g. brokers-kraft) or step id; run again to go on",
    )  # fmt: skip
    _timeouts(m)
    _page_argument(m)
    m.add_argument("--json", action="store_true", help="the outcome as one JSON object")
    exit_codes(
        m,
        {
            EXIT_OK: "done, or stopped at --until",
            EXIT_NOT_READY: "refused, or a gate did not open in time: act, then run again",
            EXIT_ERROR: "a step's command or edit failed (the step and reason are printed), "
            "or bad arguments",
        },
    )
    m.set_defaults(run=run_migrate)


def _rollback(ksub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``kafka rollback``: back to ZooKeeper before finalization."""
    r = ksub.add_parser(
        "rollback",
        help="back to ZooKeeper from any phase before finalization, checked; resumable",
        description=prose(
            """Back to ZooKeeper from any phase before finalization, as steps in the same
            journal: KRaft brokers back with the flag, the write-behind and the audit,
            controllers stopped, ZooKeeper handed back (/controller_epoch raised above the
            KRaft controller's and every partition state's epoch), brokers without the
            migration settings, the controllers' metadata set aside, verified. Refused
            once finalized. --page HOST:PORT: the live page while it runs, as `kafka
            migrate`'s."""
        ),
    )
    _inventory_argument(r)
    _timeouts(r)
    _page_argument(r)
    r.add_argument("--json", action="store_true", help="the outcome as one JSON object")
    exit_codes(
        r,
        {
            EXIT_OK: "the cluster is back on ZooKeeper, verified",
            EXIT_NOT_READY: "refused (finalized, a check failed), or a gate did not open in "
            "time: act, then run again",
            EXIT_ERROR: "a step's command or edit failed (the step and reason are printed), "
            "or bad arguments",
        },
    )
    r.set_defaults(run=run_rollback)


def _status(ksub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``kafka status``: where the driven migration is."""
    st = ksub.add_parser(
        "status",
        help="where the driven migration is: step, gate, brokers by mode, the way back",
        description=prose(
            """Where the driven migration is: its journal read with the cluster as Kafka
            reports it (phase, step, the gate waited on and why, each broker's mode,
            ZkMigrationState, the write-behind lag, the last audit, the way back valid
            now); see docs/kafka-clusters.md#the-run-and-its-gates. --serve HOST:PORT:
            instead of printing once, the live page read every 2 s
            (docs/kafka-clusters.md#watching-it-while-it-runs)."""
        ),
    )
    _inventory_argument(st)
    shown_as = st.add_mutually_exclusive_group()
    shown_as.add_argument("--json", action="store_true", help="one JSON object on stdout")
    shown_as.add_argument(
        "--serve", type=_listen, metavar="HOST:PORT",
        help="instead of printing once, serve the live page (/migration), /migration.json "
        "and /metrics here until SIGINT or SIGTERM (port 0: any free port; the address is "
        "printed); plain HTTP, no auth: bind it to localhost or a trusted network",
    )  # fmt: skip
    exit_codes(st, {EXIT_OK: "done (with --serve: stopped by SIGINT or SIGTERM)"})
    st.set_defaults(run=run_status)


def run_plan(args: argparse.Namespace) -> int:
    inv = load_inventory(args.inventory)
    cluster = read_cluster(inv, for_stream(sys.stderr, enabled=not args.json))
    plan = build_plan(
        inv,
        read_files(inv),
        cluster,
        broker_restart_s=args.broker_restart_seconds,
        controller_restart_s=args.controller_restart_seconds,
    )
    if args.json:
        print_json(plan.to_json())
    else:
        sys.stdout.write(render_text(plan))
    return EXIT_OK if plan.ready else EXIT_NOT_READY


def run_migrate(args: argparse.Namespace) -> int:
    return _run(args, Runner.migrate)


def run_rollback(args: argparse.Namespace) -> int:
    return _run(args, Runner.rollback)


def _run(args: argparse.Namespace, take: Callable[[Runner], object]) -> int:
    inv = load_inventory(args.inventory)
    options = RunOptions(
        gate_timeout_s=args.gate_timeout,
        command_timeout_s=args.command_timeout,
        until=getattr(args, "until", None),
    )

    def say(line: str) -> None:
        stamp = datetime.now(UTC).strftime("%H:%M:%S")
        print(f"{stamp} {printable_line(line)}", file=sys.stderr, flush=True)

    runner = Runner(inv, say, options)
    outcome: dict[str, object] = {"inventory": str(inv.path), "outcome": "done", "step": None}
    code = EXIT_OK
    page = _serve(inv, args.page, "--page") if args.page is not None else None
    if page is not None:
        say(f"live page: {page_address(page[0])} (and /migration.json, /metrics)")
    try:
        take(runner)
    except StoppedAtError as exc:
        outcome |= {"outcome": "stopped", "step": exc.step, "reason": str(exc)}
    except StepFailedError as exc:
        outcome |= {"outcome": "failed", "step": exc.step, "reason": str(exc)}
        code = EXIT_ERROR
    except RunStoppedError as exc:
        kind = "timed_out" if isinstance(exc, GateTimedOutError) else "refused"
        outcome |= {"outcome": kind, "step": exc.step, "reason": str(exc)}
        code = EXIT_NOT_READY
    finally:
        if page is not None:
            page[0].close()
            page[1].stop()
    outcome["done"] = runner.journal.done
    if args.json:
        print_json(outcome)
    elif code != EXIT_OK:
        reason = printable_line(str(outcome["reason"]))
        print(f"zk2kraft kafka {args.kafka_command} stopped at {reason}", file=sys.stderr)
        print("Fix what it says, then run the same command again: it resumes.", file=sys.stderr)
    return code


def _serve(
    inv: Inventory, endpoint: MetricsEndpoint, option: str
) -> tuple[MetricsServer, DrivenWatch]:
    """The run's page, JSON and metrics on ``endpoint``, its watch started;
    :class:`CliError` naming ``option`` when it cannot listen there."""
    watch = watch_inventory(inv)
    try:
        server = serve(watch, endpoint)
    except OSError as exc:
        why = str(exc).removeprefix(f"metrics.port={endpoint.port}: ")
        raise CliError(f"{option} {endpoint.host}:{endpoint.port}: {why}") from None
    watch.start()
    return server, watch


def run_status(args: argparse.Namespace) -> int:
    inv = load_inventory(args.inventory)
    if args.serve is not None:
        return _serve_until_stopped(inv, args.serve)
    status = driven_status(inv, readable_log_dir(inv))
    if args.json:
        print_json(status)
    else:
        sys.stdout.write(inert(render_status(status)))
    return EXIT_OK


def _serve_until_stopped(inv: Inventory, endpoint: MetricsEndpoint) -> int:
    """``status --serve``: until SIGINT or SIGTERM, then exit 0."""
    server, watch = _serve(inv, endpoint, "--serve")
    stopped = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopped.set())
    try:
        print(
            f"zk2kraft kafka status: serving {page_address(server)} (and /migration.json, "
            "/metrics) until SIGINT or SIGTERM",
            file=sys.stderr,
            flush=True,
        )
        stopped.wait()
    finally:
        server.close()
        watch.stop()
    return EXIT_OK
