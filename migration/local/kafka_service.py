"""A local service manager for one Apache Kafka server: ``start``, ``stop``, ``restart``
and ``status`` of the node whose ``server.properties`` is given, as ``systemctl`` does
for a host's ``kafka`` unit -- for local clusters (the tests, ``make demo KAFKA=1``)
driven from an inventory whose per-node commands call ``zk2kraft kafka-node``.

Contracts:

- The node is its properties file, named by its absolute path (``os.path.abspath``: a
  symlink is not resolved). Its directory (the file's) holds ``kafka.pid``,
  ``server.log`` (Kafka's log4j; ``kafka.logs.dir``), ``stdout.log`` (the JVM's
  output) and ``log4j.properties`` (rewritten at each start). The properties file is
  read, never written: whoever drives the migration edits it between restarts.
- A node runs when ``kafka.pid`` names a live process whose command line holds the
  properties file's absolute path as an argument. A pid file naming any other process
  (a recycled pid) or none is stale: that process is never signalled, and ``start``
  proceeds. Signals go through a pidfd opened before the check, so a pid recycled in
  between is not signalled either.
- The server runs detached (:func:`migration.local.kafka.launch`: a session of its
  own, stdin /dev/null): the caller may exit or be SIGKILLed, the node runs on.
- Calls on one node are serialized by an exclusive ``flock`` of its directory.
- A start that Kafka ends at once because ZooKeeper still holds the node's previous
  registration under another session (a process halted mid-start, as Kafka halts on a
  SIGTERM while still starting, leaves its session until it expires) is retried every
  :data:`REGISTERED_RETRY_S` within the start's timeout, as a service manager's
  restart-on-failure would.
- Every call is idempotent: ``start`` of a running node returns its pid at once (it
  does not wait for readiness), ``stop`` of a stopped node does nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import signal
import time
from collections.abc import Iterator
from pathlib import Path

from migration.common.files import replace_contents
from migration.common.properties import ConfigError, read_properties
from migration.common.text import shown
from migration.local.kafka import SERVER_LOG, STOP_S, launch, wait_started
from migration.local.kafka_release import kafka_release

PID_FILE = "kafka.pid"
START_S = 120.0  # a node's first start on a loaded machine; about 3 s on an idle one
KILL_S = 10.0  # a SIGKILLed process is gone by then
REGISTERED_RETRY_S = 1.0  # between starts while ZooKeeper holds the last incarnation's session
DEFAULT_LISTENERS = "PLAINTEXT://:9092"  # Kafka's default for listeners
HEAP_MB = 512  # a node's -Xmx unless told: a small cluster's, on a small shared machine


def start(
    properties: Path, version: str = "3.9.2", timeout_s: float = START_S, *,
    heap_mb: int = HEAP_MB,
) -> int:  # fmt: skip
    """Start the node (``kafka.Kafka <properties>`` of Kafka ``version``) unless it runs;
    its pid. A new process's pid is written to ``kafka.pid`` at once (atomically), then
    this returns when this start's server log says Kafka started and the node's first
    listener (:func:`listener_address`) accepts a TCP connection. RuntimeError if the
    process exits first, TimeoutError after ``timeout_s`` (the process SIGKILLed): the
    pid file removed, the message naming the file and carrying the logs' tails.
    ConfigError for a file that cannot be read or has no probeable listener;
    :class:`~migration.local.kafka_release.KafkaUnavailableError` for a release not
    installed. Interrupted while waiting, the node runs on (its pid file written).
    ``heap_mb`` is the JVM's maximum heap (``-Xmx``) of a process this starts."""
    config = _absolute(properties)
    with _locked(config.parent):
        return _start(config, version, timeout_s, heap_mb)


def stop(properties: Path, timeout_s: float = STOP_S) -> int | None:
    """Stop the node: SIGTERM (Kafka's controlled shutdown), SIGKILL after
    ``timeout_s``; ``kafka.pid`` removed. The pid stopped, or None: nothing ran (a
    stale pid file is removed, its process left alone). RuntimeError if the process
    outlives SIGKILL by :data:`KILL_S` (its pid file kept)."""
    config = _absolute(properties)
    with _locked(config.parent):
        return _stop(config, timeout_s)


def restart(
    properties: Path, version: str = "3.9.2", timeout_s: float = START_S, *,
    stop_s: float = STOP_S, heap_mb: int = HEAP_MB,
) -> int:  # fmt: skip
    """:func:`stop` (within ``stop_s``), then :func:`start` (within ``timeout_s``), the
    node locked throughout; the new pid."""
    config = _absolute(properties)
    with _locked(config.parent):
        _stop(config, stop_s)
        return _start(config, version, timeout_s, heap_mb)


def format_storage(properties: Path, cluster_id: str, version: str = "3.9.2") -> str:
    """``kafka-storage format --ignore-formatted`` of the node's directories for
    ``cluster_id`` (a node formatted already is left as it is); the tool's output.
    :class:`~migration.local.kafka_release.KafkaToolError` when the tool refuses."""
    config = _absolute(properties)
    with _locked(config.parent):
        return kafka_release(version).format_storage(config, cluster_id, "--ignore-formatted")


def status(properties: Path) -> int | None:
    """The pid of the node's running process, or None (see the module's contracts)."""
    with _node_process(_absolute(properties)) as found:
        return found[0] if found else None


def listener_address(config: Path) -> tuple[str, int]:
    """Where the node's first listener accepts connections: ``host:port`` of the first
    entry of ``listeners`` (Kafka's default ``PLAINTEXT://:9092`` when unset); an empty
    or wildcard host is loopback. ConfigError naming the file for anything else."""
    props = read_properties(config)
    first = props.get("listeners", DEFAULT_LISTENERS).split(",")[0].strip()
    _, scheme, host_port = first.rpartition("://")
    host, colon, port = host_port.rpartition(":")
    if not (scheme and colon and port.isdigit() and 0 < int(port) < 65536):
        raise ConfigError(
            str(config), [f"listeners: {shown(first)} is not NAME://host:port (a port of 1-65535)"]
        )
    host = host.strip("[]")
    host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    return host, int(port)


def _start(config: Path, version: str, timeout_s: float, heap_mb: int) -> int:
    running = status(config)
    if running is not None:
        return running
    address = listener_address(config)
    deadline = time.monotonic() + timeout_s
    left = timeout_s  # the first start has the whole of it, as asked
    while True:
        try:
            return _launch(config, version, left, heap_mb, address)
        except _RegisteredStillError:
            if time.monotonic() > deadline:
                raise
            time.sleep(REGISTERED_RETRY_S)
            left = max(0.0, deadline - time.monotonic())


class _RegisteredStillError(RuntimeError):
    """The node exited at startup because ZooKeeper still holds its previous
    incarnation's registration (a process halted mid-start leaves its session to expire)."""


def _launch(
    config: Path, version: str, timeout_s: float, heap_mb: int, address: tuple[str, int]
) -> int:
    process, offset = launch(kafka_release(version), config, heap_mb=heap_mb)
    pid_file = config.parent / PID_FILE
    try:
        replace_contents(pid_file, f"{process.pid}\n".encode(), through_symlink=False)
    except BaseException:  # a node without its pid file could not be stopped
        process.kill()
        process.wait()
        raise
    try:
        wait_started(process, config.parent, offset, address, timeout_s=timeout_s,
                     name=f"Kafka node {config}")  # fmt: skip
    except TimeoutError:
        process.kill()
        process.wait()
        pid_file.unlink(missing_ok=True)
        raise
    except RuntimeError as exc:  # it exited
        pid_file.unlink(missing_ok=True)
        if _registered_still(config.parent / SERVER_LOG, offset):
            raise _RegisteredStillError(str(exc)) from None
        raise
    return process.pid


def _registered_still(log: Path, offset: int) -> bool:
    """Whether this start's server log says its ``/brokers/ids`` registration exists
    under another session (Kafka's fatal NodeExists at startup)."""
    with log.open("rb") as f:
        f.seek(offset)
        text = f.read().decode(errors="replace")
    return "/brokers/ids/" in text and "NodeExistsException" in text


def _stop(config: Path, timeout_s: float) -> int | None:
    with _node_process(config) as found:
        if found is not None:
            pid, pidfd = found
            signal.pidfd_send_signal(pidfd, signal.SIGTERM)
            if not _exited(pidfd, timeout_s):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                if not _exited(pidfd, KILL_S):
                    raise RuntimeError(
                        f"Kafka node {config}: pid {pid} still runs {KILL_S:g}s after SIGKILL"
                    )
            with contextlib.suppress(ChildProcessError):  # reaped, if it is this process's
                os.waitpid(pid, os.WNOHANG)
    (config.parent / PID_FILE).unlink(missing_ok=True)
    return found[0] if found else None


def _absolute(properties: Path) -> Path:
    return Path(os.path.abspath(properties))


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """The node's directory locked (``flock``, exclusive) for this process."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # (releases the lock)


@contextlib.contextmanager
def _node_process(config: Path) -> Iterator[tuple[int, int] | None]:
    """``(pid, pidfd)`` of the node's live process, or None (see the module doc)."""
    try:
        pid = int((config.parent / PID_FILE).read_text().strip())
        pidfd = os.pidfd_open(pid)
    except (OSError, ValueError, OverflowError):  # no pid file, not a pid, no such process
        yield None
        return
    try:
        yield (pid, pidfd) if _runs_config(pid, config) else None
    finally:
        os.close(pidfd)


def _runs_config(pid: int, config: Path) -> bool:
    """Whether process ``pid``'s arguments hold ``config`` (a zombie's hold nothing)."""
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return os.fsencode(config) in args


def _exited(pidfd: int, timeout_s: float) -> bool:
    """Whether the process of ``pidfd`` exits within ``timeout_s``."""
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    return bool(poller.poll(max(0.0, timeout_s) * 1000))
