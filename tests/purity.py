"""What keeps tests/unit pure -- no child process, no socket bound or connected, no name
looked up, no server, no ZooKeeper -- so that `make quick` runs anywhere, in seconds.

Two checks. While a unit test runs, an audit hook (:func:`watched`, applied to every
test under tests/unit by its conftest) records each child process, fork or exec, each
inet socket bound or connected, each host name looked up, from the test's own thread and
the threads it starts; the test then errors, naming them. What the hook cannot see
(gRPC's servers and channels, bound in C; process pools) and what would reach a real
server is refused in the sources by :func:`offences` (tests/unit/test_unit_purity.py
reads every module). A test that needs any of it belongs in tests/integration.
"""

from __future__ import annotations

import ast
import ipaddress
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

PROCESS_EVENTS = ("os.exec", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.system")
SOCKET_EVENTS = {"socket.bind": "bound to", "socket.connect": "connected to"}
NAME_EVENTS = ("socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex")
INET = (socket.AF_INET, socket.AF_INET6)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _a_name(host: object) -> bool:
    """Whether looking ``host`` up could ask a name server (not an address, not local)."""
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    if not isinstance(host, str) or host in ("", "localhost"):
        return False
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return True
    return False


def impurity(event: str, args: tuple[object, ...]) -> str | None:
    """What an audit event shows a unit test doing that it may not, said; None when the
    event is harmless (a file opened, a Unix socket, a socket made but not used)."""
    if event == "subprocess.Popen":
        return f"a child process {_short(args[1] if len(args) > 1 else args)}"
    if event in PROCESS_EVENTS:
        return f"{event} {_short(args[:2])}"
    if event in SOCKET_EVENTS and len(args) >= 2:
        if getattr(args[0], "family", None) in INET:
            return f"an inet socket {SOCKET_EVENTS[event]} {_short(args[1])}"
        return None
    if event in NAME_EVENTS and args and _a_name(args[0]):
        return f"a host name looked up: {_short(args[0])}"
    return None


@dataclass
class _Watch:
    main: int
    before: frozenset[int]  # threads already running: not the test's
    seen: list[str] = field(default_factory=list)


_watches: list[_Watch] = []
_hooked: list[bool] = []


def _hook(event: str, args: tuple[object, ...]) -> None:
    if not _watches:
        return
    watch = _watches[-1]
    ident = threading.get_ident()
    if ident != watch.main and ident in watch.before:
        return
    found = impurity(event, args)
    if found is not None:
        watch.seen.append(found)


@contextmanager
def watched() -> Iterator[list[str]]:
    """Within the block, what this thread and the threads it starts did that a unit test
    may not (:func:`impurity`), in order. Blocks nest: the innermost records."""
    if not _hooked:
        sys.addaudithook(_hook)  # for good: a hook cannot be removed; idle outside a block
        _hooked.append(True)
    watch = _Watch(threading.get_ident(), frozenset(t.ident or 0 for t in threading.enumerate()))
    _watches.append(watch)
    try:
        yield watch.seen
    finally:
        _watches.remove(watch)


# --- the sources ---------------------------------------------------------------------------

FORBIDDEN_MODULES = {
    "subprocess": "child processes",
    "socket": "sockets",
    "socketserver": "servers",
    "http.server": "servers",
    "http.client": "network clients",
    "urllib.request": "network clients",
    "multiprocessing": "child processes",
    "kazoo.client": "a ZooKeeper client",
    "tests.browser": "Chromium",
    "tests.page_checks": "Chromium and a running rig",
    "tests.real_kafka": "real Kafka",
    "tests.migration_harness": "a running rig",
    "tests.broker_harness": "running brokers",
    "tests.quorum_harness": "running controllers",
    "tests.prometheus_harness": "a real Prometheus",
}
FORBIDDEN_NAMES = {
    ("concurrent.futures", "ProcessPoolExecutor"): "a process pool",
    ("migration.local.zookeeper", "EmbeddedZooKeeper"): "a real ZooKeeper",
    ("migration.zk.client", "ZkClient"): "a ZooKeeper client",
    ("tests.support", "zk2kraft"): "the command in a child process",
    ("tests.tools", "run"): "an external tool",
}
FORBIDDEN_CALLS = {
    "grpc.server": "a gRPC server",
    "grpc.aio.server": "a gRPC server",
    "grpc.insecure_channel": "a gRPC channel",
    "grpc.secure_channel": "a gRPC channel",
    "os.fork": "a fork",
    "os.system": "a shell",
    "os.popen": "a shell",
}


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else None
    return None


def _parametrized(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The argument names a function's ``parametrize`` marks give (not fixtures)."""
    names: set[str] = set()
    for deco in func.decorator_list:
        if isinstance(deco, ast.Call) and (_dotted(deco.func) or "").endswith("parametrize"):
            first = deco.args[0] if deco.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                names |= {n.strip() for n in first.value.split(",")}
            elif isinstance(first, ast.List | ast.Tuple):
                names |= {
                    e.value
                    for e in first.elts
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)
                }
    return names


def _asks(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether pytest fills the function's arguments with fixtures: a test or a fixture."""
    return func.name.startswith("test") or any(
        "fixture" in (_dotted(d.func if isinstance(d, ast.Call) else d) or "")
        for d in func.decorator_list
    )


def offences(source: str, path: str, fixtures: dict[str, str]) -> list[str]:
    """Each line of ``source`` (a module under tests/unit) that imports or calls what runs
    a process, a server or a network client, or asks for one of ``fixtures`` (name: what
    it starts), as ``path:line: what``, in line order."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source, path)):
        where = f"{path}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            for alias in node.names:
                for module, what in FORBIDDEN_MODULES.items():
                    if alias.name == module or alias.name.startswith(module + "."):
                        found.append(f"{where}: imports {alias.name} ({what})")
        elif isinstance(node, ast.ImportFrom) and node.module:
            for module, what in FORBIDDEN_MODULES.items():
                if node.module == module or node.module.startswith(module + "."):
                    found.append(f"{where}: imports from {node.module} ({what})")
            for alias in node.names:
                dotted = f"{node.module}.{alias.name}"
                named = FORBIDDEN_NAMES.get((node.module, alias.name))
                named = named or FORBIDDEN_MODULES.get(dotted)  # from http import server
                if named is not None:
                    found.append(f"{where}: imports {dotted} ({named})")
        elif isinstance(node, ast.Call):
            name = _dotted(node.func)
            if name in FORBIDDEN_CALLS:
                found.append(f"{where}: calls {name} ({FORBIDDEN_CALLS[name]})")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _asks(node):
            given = _parametrized(node)
            for arg in node.args.args + node.args.kwonlyargs:
                if arg.arg in fixtures and arg.arg not in given:
                    found.append(
                        f"{where}: {node.name} asks for the {arg.arg} fixture ({fixtures[arg.arg]})"
                    )
    return sorted(found, key=lambda f: int(f.split(":")[1]))


def session_fixtures(conftest: Path) -> dict[str, str]:
    """The fixtures tests/conftest.py gives every test -- each starts or reads something
    real (a ZooKeeper server, real Kafka) -- by name: the ones it defines and the ones it
    imports from tests.real_kafka."""
    tree = ast.parse(conftest.read_text(), str(conftest))
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any(
            "fixture" in (_dotted(d.func if isinstance(d, ast.Call) else d) or "")
            for d in node.decorator_list
        ):
            out[node.name] = "a real server, from tests/conftest.py"
        elif isinstance(node, ast.ImportFrom) and node.module == "tests.real_kafka":
            out.update({a.asname or a.name: "real Kafka (tests/real_kafka.py)" for a in node.names})
    return out
