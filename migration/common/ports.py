"""Hosts and listening ports: whether a host name looks like one, choosing unused ports,
and saying clearly why one cannot be used.

Choosing a port by binding to port 0 and closing the socket races: the kernel hands
that same ephemeral port to the next outgoing connection. Ports below the ephemeral
range (``/proc/sys/net/ipv4/ip_local_port_range``) are never handed out that way, so
:func:`unused_port` walks that stretch instead (each process from its own starting
point, by pid) and returns a port that binds now; it stays free unless something
asks for it by number.
"""

from __future__ import annotations

import errno
import os
import re
import socket
import threading
from pathlib import Path

from migration.common.text import shown

_HOST = re.compile(r"[A-Za-z0-9._:%-]{1,253}")


def host_problem(host: str) -> str | None:
    """Why ``host`` is not a host name or IP address (None: it looks like one)."""
    if not _HOST.fullmatch(host) or host.startswith(("-", ".")):
        return f"host {shown(host)} is not a host name or IP address"
    return None


_LOWEST = 10_000
_lock = threading.Lock()
_next: int | None = None


def _below_ephemeral() -> tuple[int, int]:
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32_768
    return _LOWEST, max(low, _LOWEST + 1_000)


def unused_port(host: str = "127.0.0.1") -> int:
    """A port on ``host`` that nothing listens on, below the ephemeral range."""
    global _next  # noqa: PLW0603 - one cursor per process, behind the lock
    low, high = _below_ephemeral()
    with _lock:
        if _next is None:
            _next = low + (os.getpid() * 7919) % (high - low)
        for _ in range(high - low):
            port = _next
            _next = low if _next + 1 >= high else _next + 1
            if bind_problem(host, port) is None:
                return port
    raise OSError(f"no unused port on {host} in [{low}, {high})")


def bind_problem(host: str, port: int) -> str | None:
    """Why a server could not listen on ``host:port`` (None: it can, right now):
    a host that does not resolve, an address that is not this machine's, a port in
    use or out of range."""
    if not 0 < port < 65_536:
        return f"port {port} is out of range (1-65535)"
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        return f"host {shown(host)} does not resolve ({exc})"
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return f"port {port} on {host} is in use by another process"
            if exc.errno == errno.EADDRNOTAVAIL:
                return f"host {shown(host)} ({address[0]}) is not an address of this machine"
            return f"cannot listen on {host}:{port}: {exc.strerror}"
    return None
