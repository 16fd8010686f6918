"""``zk2kraft kafka plan|migrate``: the migration of a real Apache Kafka 3.9 cluster,
described by an inventory (:mod:`migration.operate.inventory`).

- ``plan``: the concrete steps it takes -- each properties file's exact diff, each
  command, each gate and what it waits for, and the rolls' estimated duration. Reads the
  files and ZooKeeper; changes nothing. Exit 0: ready to start; 1: problems to fix first.
- ``migrate``: the steps taken, gated and resumable (:mod:`migration.operate.run`).
  Exit 0: done (or stopped at ``--until``); 1: refused, or a gate did not open in time
  (act, then run again: it resumes); 2: a command or an edit failed."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from migration.cli.output import EXIT_ERROR, EXIT_NOT_READY, EXIT_OK, exit_codes, print_json
from migration.common.text import inert, printable_line
from migration.observability.progress import for_stream
from migration.operate.inventory import load_inventory
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


def _seconds(text: str) -> float:
    value = float(text)
    if not 0 < value < 86_400:
        raise argparse.ArgumentTypeError(f"{text} is not a number of seconds in (0, 86400)")
    return value


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
    p = ksub.add_parser(
        "plan", help="the migration as concrete steps for this cluster (changes nothing)"
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

    m = ksub.add_parser(
        "migrate", help="take the plan's steps, each gated on what Kafka reports; resumable"
    )
    _inventory_argument(m)
    m.add_argument(
        "--until", metavar="PHASE|STEP",
        help="stop before this phase (e.g. brokers-kraft) or step id; run again to go on",
    )  # fmt: skip
    _timeouts(m)
    m.add_argument("--json", action="store_true", help="the outcome as one JSON object")
    exit_codes(
        m,
        {
            EXIT_OK: "done, or stopped at --until",
            EXIT_NOT_READY: "refused, or a gate did not open in time: act, then run again",
        },
    )
    m.set_defaults(run=run_migrate)

    r = ksub.add_parser(
        "rollback",
        help="back to ZooKeeper from any phase before finalization, checked; resumable",
    )
    _inventory_argument(r)
    _timeouts(r)
    r.add_argument("--json", action="store_true", help="the outcome as one JSON object")
    exit_codes(
        r,
        {
            EXIT_OK: "the cluster is back on ZooKeeper, verified",
            EXIT_NOT_READY: "refused (finalized, a check failed), or a gate did not open in "
            "time: act, then run again",
        },
    )
    r.set_defaults(run=run_rollback)

    st = ksub.add_parser(
        "status", help="where the driven migration is: step, gate, brokers by mode, the way back"
    )
    _inventory_argument(st)
    st.add_argument("--json", action="store_true", help="one JSON object on stdout")
    exit_codes(st)
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
    outcome["done"] = runner.journal.done
    if args.json:
        print_json(outcome)
    elif code != EXIT_OK:
        reason = printable_line(str(outcome["reason"]))
        print(f"zk2kraft kafka {args.kafka_command} stopped at {reason}", file=sys.stderr)
        print("Fix what it says, then run the same command again: it resumes.", file=sys.stderr)
    return code


def run_status(args: argparse.Namespace) -> int:
    inv = load_inventory(args.inventory)
    status = driven_status(inv, readable_log_dir(inv))
    if args.json:
        print_json(status)
    else:
        sys.stdout.write(inert(render_status(status)))
    return EXIT_OK
