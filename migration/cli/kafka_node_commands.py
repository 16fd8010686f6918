"""``zk2kraft kafka-node start|stop|restart|status --properties FILE``: one local Apache
Kafka server run from its own ``server.properties``, as ``systemctl`` runs a host's
``kafka`` unit (:mod:`migration.local.kafka_service`): what an inventory's per-node
commands call for a local cluster."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from migration.cli.output import (
    ERROR,
    EXIT_ERROR,
    EXIT_NOT_READY,
    EXIT_OK,
    NOT_FOUND,
    TIMED_OUT,
    error,
    exit_codes,
    print_json,
    prose,
)
from migration.common.text import shown
from migration.local import kafka_service
from migration.local.kafka import STOP_S
from migration.local.kafka_release import KafkaToolError

MIN_HEAP_MB = 128
_FILES = "its directory holds kafka.pid, server.log (Kafka's log) and stdout.log (the JVM's)"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    k = sub.add_parser(
        "kafka-node",
        help="a local Apache Kafka server (kafka.Kafka) run from its own server.properties, "
        "detached: start, stop, restart, status, format",
        description=prose(
            """One local Apache Kafka server run from its own server.properties, detached,
            with a pid file, as a service manager runs one (development: the tests' and
            `make demo KAFKA=1`'s inventories call it)."""
        ),
    )
    ksub = k.add_subparsers(dest="kafka_node_command", required=True, metavar="COMMAND")
    commands: tuple[tuple[str, str, Callable[[argparse.Namespace], int]], ...] = (
        ("start", "start the server unless it runs; return when it has started and its "
         "first listener accepts connections", run_start),
        ("stop", "controlled shutdown (SIGTERM), SIGKILL after --timeout; nothing to do "
         "when it is not running", run_stop),
        ("restart", "stop, then start: the server reads its server.properties again",
         run_restart),
        ("status", "whether the server runs, and its pid", run_status),
        ("format", "kafka-storage format of the node's directories for a cluster id "
         "(--ignore-formatted: a formatted node is left as it is)", run_format),
    )  # fmt: skip
    for name, help_text, run in commands:
        p = ksub.add_parser(name, help=help_text, description=prose(help_text))
        p.add_argument("--properties", type=Path, required=True, metavar="FILE",
                       help=f"the node's server.properties (read, never written); "
                       f"{_FILES}")  # fmt: skip
        if name == "format":
            p.add_argument(
                "--cluster-id",
                required=True,
                metavar="ID",
                help="the cluster's id (a ZooKeeper-based cluster's /cluster/id)",
            )
        if name not in ("status", "format"):
            start_s = name != "stop"
            p.add_argument("--timeout", type=float, metavar="S",
                           default=kafka_service.START_S if start_s else STOP_S,
                           help="seconds to wait for the server to start (default %(default)g)"
                           if start_s else "seconds from SIGTERM to SIGKILL "
                           "(default %(default)g)")  # fmt: skip
        if name in ("start", "restart"):
            p.add_argument("--heap-mb", type=_heap_mb, default=kafka_service.HEAP_MB,
                           metavar="MIB", help="the server JVM's maximum heap (-Xmx) in "
                           "MiB (default %(default)d; a running node keeps its own)")  # fmt: skip
        if name in ("start", "restart", "format"):
            p.add_argument("--kafka-version", default="3.9.2", metavar="VERSION",
                           help="the Apache Kafka release to run, as `make kafka` installs "
                           "it (default %(default)s)")  # fmt: skip
        p.add_argument("--json", action="store_true",
                       help='print {"properties", "running", "pid"} as JSON')  # fmt: skip
        meanings = {EXIT_OK: "done", EXIT_ERROR: f"an error, naming the file{_TAIL[name]}"}
        if name == "status":
            meanings |= {EXIT_OK: "the server runs", EXIT_NOT_READY: "it does not run"}
        exit_codes(p, meanings)
        p.set_defaults(run=run)


_TAIL = {
    "start": " (a server that did not start: the tails of its logs)",
    "restart": " (a server that did not start: the tails of its logs)",
    "stop": "",
    "status": "",
    "format": " (the tool's output)",
}


def _heap_mb(text: str) -> int:
    """A heap of at least :data:`MIN_HEAP_MB` MiB (Kafka does not start in less)."""
    mib = int(text) if text.isdigit() else 0
    if mib < MIN_HEAP_MB:
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a number of MiB >= {MIN_HEAP_MB}")
    return mib


def run_start(args: argparse.Namespace) -> int:
    return _run(args, lambda: kafka_service.start(
        args.properties, args.kafka_version, args.timeout, heap_mb=args.heap_mb))  # fmt: skip


def run_restart(args: argparse.Namespace) -> int:
    return _run(args, lambda: kafka_service.restart(
        args.properties, args.kafka_version, args.timeout, heap_mb=args.heap_mb))  # fmt: skip


def run_stop(args: argparse.Namespace) -> int:
    return _run(args, lambda: kafka_service.stop(args.properties, args.timeout), stopping=True)


def run_format(args: argparse.Namespace) -> int:
    try:
        output = kafka_service.format_storage(args.properties, args.cluster_id, args.kafka_version)
    except KafkaToolError as exc:
        first, *tail = str(exc).splitlines()
        error(f"{args.properties}: {first}", ERROR, tail)
        return EXIT_ERROR
    if args.json:
        print_json({"properties": str(args.properties), "formatted": True, "output": output})
    else:
        print(output.rstrip())
    return EXIT_OK


def run_status(args: argparse.Namespace) -> int:
    pid = kafka_service.status(args.properties)
    _report(args, pid)
    return EXIT_OK if pid is not None else EXIT_NOT_READY


def _run(args: argparse.Namespace, action: Callable[[], int | None], stopping: bool = False) -> int:
    """``action`` done and reported; a server that did not start or stop reported as one
    line naming the file (Kafka's words in it), its logs' tails as the details."""
    try:
        pid = action()
    except FileNotFoundError as exc:  # the node's directory
        error(f"{args.properties}: {exc.strerror}: {exc.filename}", NOT_FOUND)
        return EXIT_ERROR
    except (RuntimeError, TimeoutError) as exc:
        first, *tail = str(exc).splitlines() or [type(exc).__name__]
        if str(args.properties) not in first and str(args.properties.absolute()) not in first:
            first = f"{args.properties}: {first}"
        error(first.rstrip(":"), TIMED_OUT if isinstance(exc, TimeoutError) else ERROR, tail)
        return EXIT_ERROR
    _report(args, None if stopping else pid, stopped=pid if stopping else None)
    return EXIT_OK


def _report(args: argparse.Namespace, pid: int | None, stopped: int | None = None) -> None:
    where = args.properties
    if args.json:
        print_json({"properties": str(where), "running": pid is not None, "pid": pid})
    elif pid is not None:
        print(f"Kafka node {where}: running, pid {pid}")
    elif stopped is not None:
        print(f"Kafka node {where}: stopped pid {stopped}")
    else:
        print(f"Kafka node {where}: not running")
