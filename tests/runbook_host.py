"""The service manager the runbook tests give the runbooks (``$RESTART_BROKER 1`` and so
on, where an operator has ``systemctl restart kafka@1``): detached broker and controller
processes with pid files, in the layouts :class:`LocalCluster` and :class:`LocalQuorum`
write configs in.

``python -m tests.runbook_host --brokers DIR --quorum DIR {start,stop,restart}
{broker,controller} ID``. A broker start returns once the broker answers Metadata
listing itself (a health check); a stop sends SIGTERM (a controlled shutdown) and waits
for the process to end."""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from kio.schema.metadata.v12.request import MetadataRequest

from migration.common.properties import read_properties
from migration.kafka.client import KafkaConnection

WAIT_S = 120.0
ROOT = Path(__file__).resolve().parents[1]
RUNBOOKS = ROOT / "runbooks"
BLOCK = re.compile(r"^```sh\n(.*?)^```", re.S | re.M)


def blocks(name: str, sections: tuple[int, ...] | None = None) -> list[str]:
    """The ``sh`` blocks of ``runbooks/<name>``, in order; only the numbered sections
    (``## N. ...``) given, when given."""
    out = []
    for section in re.split(r"^## ", (RUNBOOKS / name).read_text(), flags=re.M)[1:]:
        number = re.match(r"(\d+)\.", section)
        if sections is not None and (number is None or int(number.group(1)) not in sections):
            continue
        out += BLOCK.findall(section)
    return out


def _files(args: argparse.Namespace) -> tuple[Path, Path, Path]:
    """(config, output, pid file) of the process named."""
    if args.kind == "broker":
        home = args.brokers / f"broker-{args.id}"
        return home / "server.properties", args.brokers / f"broker-{args.id}.log", home / "pid"
    root = args.quorum
    return (
        root / f"controller{args.id}.properties",
        root / f"controller{args.id}.out",
        root / f"controller{args.id}.pid",
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def stop(args: argparse.Namespace) -> None:
    _, _, pid_file = _files(args)
    if not pid_file.exists():
        return
    pid = int(pid_file.read_text())
    if _alive(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + WAIT_S
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
    pid_file.unlink()


def _client_port(config: Path) -> int:
    listeners = read_properties(config)["listeners"]
    entry = next(e for e in listeners.split(",") if e.startswith("PLAINTEXT://"))
    return int(entry.rsplit(":", 1)[1])


def _serving(port: int, broker_id: int) -> bool:
    try:
        with KafkaConnection("127.0.0.1", port, 5.0) as conn:
            answer = conn.request(
                MetadataRequest(
                    topics=None,
                    allow_auto_topic_creation=False,
                    include_topic_authorized_operations=False,
                )
            )
    except OSError:
        return False
    return any(b.node_id == broker_id for b in answer.brokers)


def start(args: argparse.Namespace) -> None:
    config, output, pid_file = _files(args)
    command = "broker" if args.kind == "broker" else "controller"
    with open(output, "ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "migration.cli.main", "--log-level", "INFO", command,
             "--config", str(config)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
    pid_file.write_text(str(process.pid))
    if args.kind != "broker":
        return
    port = _client_port(config)
    deadline = time.monotonic() + WAIT_S
    while not _serving(port, args.id):
        if process.poll() is not None:
            sys.exit(f"broker {args.id} exited ({process.returncode}); see {output}")
        if time.monotonic() > deadline:
            sys.exit(f"broker {args.id} not serving within {WAIT_S:g}s; see {output}")
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(prog="runbook_host")
    parser.add_argument("--brokers", type=Path, required=True)
    parser.add_argument("--quorum", type=Path, required=True)
    parser.add_argument("action", choices=["start", "stop", "restart"])
    parser.add_argument("kind", choices=["broker", "controller"])
    parser.add_argument("id", type=int)
    args = parser.parse_args()
    if args.action in ("stop", "restart"):
        stop(args)
    if args.action in ("start", "restart"):
        start(args)


if __name__ == "__main__":
    main()
