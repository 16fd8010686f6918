"""``zk2kraft rollback --zk CONNECT [--bootstrap-controller ...] [--log-dir DIR ...]
[--dry-run] [--json]``: the way back to ZooKeeper from any phase before finalization.

Prints the rollback table's row for the phase found, as numbered steps with the exact
commands and config changes; runs the checks; then (not with ``--dry-run``, and only
when every check passed) hands ZooKeeper back in one version-checked multi. Exit 0:
done (or nothing to write; or, with ``--dry-run``, would be done); 1: refused by a
check (each named by its ``code``); 2: bad arguments, ZooKeeper unreachable, or a
malformed ``/controller``, ``/controller_epoch`` or ``/migration`` (named; nothing is
written).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from migration.cli.output import EXIT_NOT_READY, EXIT_OK, exit_codes, print_json, prose
from migration.cli.zk_source import add_zk_argument, connect
from migration.controller.client import parse_bootstrap
from migration.driver.describe import describe_migration, status_json
from migration.rollback import SETTLE_S, Assessment, Phase, assess, hand_back
from migration.zk.multiwrite import Op

MIGRATION_CONFIGS = (
    "zookeeper.metadata.migration.enable",
    "controller.quorum.voters",
    "controller.listener.names",
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    r = sub.add_parser(
        "rollback",
        help="go back to ZooKeeper from any phase before finalizing",
        description=prose(
            """The way back to ZooKeeper, checked (see docs/operations.md#going-back):
            prints the phase and its numbered steps, the checks (each with a `code`), and
            hands ZooKeeper back in one version-checked multi (--dry-run: checks and
            steps only)."""
        ),
    )
    add_zk_argument(r)
    r.add_argument(
        "--bootstrap-controller",
        metavar="HOST:PORT[,...]",
        help="the quorum (to read the phase and stop the migration)",
    )
    r.add_argument(
        "--log-dir",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="a controller's metadata.log.dir (repeat for each; the newest is used)",
    )
    r.add_argument("--dry-run", action="store_true", help="check and show; write nothing")
    r.add_argument("--settle-s", type=float, default=SETTLE_S, help=argparse.SUPPRESS)
    r.add_argument("--json", action="store_true", help="print the phase, steps and checks as JSON")
    exit_codes(r, {EXIT_OK: "done, or nothing to write", EXIT_NOT_READY: "refused by a check"})
    r.set_defaults(run=run)


def steps(a: Assessment, zk: str, bootstrap: str | None) -> list[str]:
    """The rollback table's row for ``a.phase``: what the operator does, in order, with
    the commands (``runbooks/rollback.md`` runs the same ones)."""
    quorum = f"--bootstrap-controller {bootstrap or '<controllers>'}"
    each = "for each broker, one at a time"
    roll_zk = (
        f"Take the migration settings off the brokers ({each}): `zk2kraft broker-mode "
        "--config <server.properties> --to zookeeper`, then restart it (SIGTERM: controlled "
        "shutdown) and wait until it serves again."
    )
    stop_quorum = (
        "Stop every KRaft controller (SIGTERM), all of them: a controller left running "
        "claims ZooKeeper back."
    )
    wipe = (
        "Delete each controller's metadata.log.dir: a later attempt formats them again "
        "(`zk2kraft storage format`) and copies ZooKeeper afresh."
    )
    hand = (
        f"Hand ZooKeeper back: `zk2kraft rollback --zk {zk} --log-dir <each controller's "
        "metadata.log.dir> [--dry-run first]`: deletes /controller and /migration and raises "
        "/controller_epoch in one multi; a ZooKeeper-mode broker wins the controller election."
    )
    if a.phase == Phase.FINALIZED:
        return [
            "None: the migration is finalized (POST_MIGRATION). ZooKeeper has not been "
            "written since; the cluster is KRaft and cannot go back."
        ]
    if a.phase == Phase.ZOOKEEPER:
        return [stop_quorum + " Nothing was copied: ZooKeeper needs no change.", roll_zk, wipe]
    out = []
    if a.phase == Phase.KRAFT_BROKERS:
        out.append(
            f"Roll the KRaft-mode brokers back to ZooKeeper mode while the controllers still "
            f"run ({each}): `zk2kraft broker-mode --config <server.properties> --to migrating "
            f"--zk {zk}`, then restart it; wait until `zk2kraft migration status {quorum} "
            "--json` lists it in zk_brokers."
        )
    out += [
        f"Check the write-behind lag is 0: `zk2kraft migration status {quorum} --json` "
        "(zk_write_behind_lag).",
        stop_quorum,
        hand,
        roll_zk,
        wipe,
    ]
    return out


def _op_json(op: Op) -> dict[str, Any]:
    return {
        "op": op.kind.name.lower(),
        "path": op.path,
        "version": op.version,
        **({"data": op.data.decode()} if op.data else {}),
    }


def run(args: argparse.Namespace) -> int:
    status: dict[str, Any] | None = None
    status_problem: str | None = None
    if args.bootstrap_controller:
        try:
            status = status_json(describe_migration(parse_bootstrap(args.bootstrap_controller)))
        except ConnectionError as exc:
            status_problem = str(exc)
    client = connect(args)
    try:
        a = assess(
            client,
            status=status,
            status_problem=status_problem,
            log_dirs=tuple(args.log_dir),
            settle_s=args.settle_s,
        )
        ops = a.ops()
        written = False
        if not args.dry_run and not a.blocked and ops:
            hand_back(client, a)
            written = True
    finally:
        client.close()
    refused = bool(a.blocked and ops)
    report = {
        "phase": a.phase.value,
        "steps": steps(a, args.zk, args.bootstrap_controller),
        "findings": [{"code": f.code, "ok": f.ok, "message": f.message} for f in a.findings],
        "controller_epoch": a.controller_epoch[0] if a.controller_epoch else None,
        "max_partition_state_controller_epoch": a.max_state_epoch,
        "ops": [_op_json(op) for op in ops],
        "dry_run": args.dry_run,
        "written": written,
        "refused": refused or a.phase == Phase.FINALIZED,
    }
    if args.json:
        print_json(report)
    else:
        _print(report)
    return EXIT_NOT_READY if report["refused"] else EXIT_OK


def _print(report: dict[str, Any]) -> None:
    print(f"Phase: {report['phase']}")
    print("Steps:")
    for i, step in enumerate(report["steps"], 1):
        print(f"  {i}. {step}")
    print("Checks:")
    for f in report["findings"]:
        print(f"  [{'ok' if f['ok'] else 'FAIL'}] {f['code']}: {f['message']}")
    if report["ops"]:
        verb = "Would write" if report["dry_run"] or report["refused"] else "Wrote"
        print(f"{verb} one multi:")
        for op in report["ops"]:
            data = f" = {op['data']}" if "data" in op else ""
            print(f"  {op['op']} {op['path']} (version {op['version']}){data}")
    else:
        print("ZooKeeper needs no change.")
    if report["refused"]:
        print("Refused: fix the failed checks first; nothing was written.")
    elif report["written"]:
        print("ZooKeeper is handed back: a ZooKeeper-mode broker will be elected controller.")
