"""Readiness and liveness beside ``/metrics``, on the same port: what Kubernetes' probes
ask, and what scripts can ask too (``curl -f``: the status says it, the body says why).

- ``GET`` :data:`READY_PATH`: 200 when the process is ready to be counted on (each
  process says what that means: :mod:`migration.server.readiness`), else 503. Until the
  process has wired its check: 503, ``starting``.
- ``GET`` :data:`LIVE_PATH`: 200 while the process's loops run, else 503 naming the ones
  that stopped. It never waits on a loop: a loop busy with a long event (seconds at a
  million partitions) is alive, and a liveness probe must not restart it for that.
- A path a process added (:meth:`HealthRoutes.route`: the controllers' migration page):
  what its :data:`Route` answers, by the same rules (it must not block; one that raises
  answers 500 naming the exception's type only).
- Every other path: the metrics app (``HEAD`` too: its answer to ``GET`` without the
  body).

Only ``GET`` and ``HEAD`` are answered, on every path: any other method is 405 with
``Allow: GET, HEAD`` (the port serves nothing that changes anything). With basic auth
configured (:mod:`.basic_auth`), every path but the two probes' needs the credentials
(401 with ``WWW-Authenticate`` else): Kubernetes' probes send none, and the probes say
only ready or live, with small facts, never the topology.

The body is one JSON object: ``{"ready"|"live": bool, "reason": str, ...facts}``, the
facts being small numbers and names (offsets, ids, the Raft state), never a secret.

Contract: a check runs on the HTTP handler thread at each request, reading what the
process's threads publish (single attributes, as the metrics collectors do); it must not
block. A check that raises answers 503 naming the exception's type only (its message may
carry anything).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from migration.observability.basic_auth import BasicAuth

log = logging.getLogger(__name__)

READY_PATH = "/ready"
LIVE_PATH = "/live"
METHODS = ("GET", "HEAD")
OPEN_PATHS = frozenset({READY_PATH, LIVE_PATH})  # the probes': never behind basic auth

Fact = int | str | bool | None
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


@dataclass(frozen=True)
class Health:
    """One answer: ``ok`` (200, else 503), the ``reason`` in words, and ``facts``."""

    ok: bool
    reason: str
    facts: Mapping[str, Fact] = field(default_factory=dict)

    def body(self, key: str) -> bytes:
        return json.dumps({key: self.ok, "reason": self.reason, **self.facts}).encode() + b"\n"


Check = Callable[[], Health]


@dataclass(frozen=True)
class Page:
    """A route's answer: the body, its type and status, and extra headers."""

    body: bytes
    content_type: str
    status: str = "200 OK"
    headers: tuple[tuple[str, str], ...] = ()


Route = Callable[[], Page]

STARTING = Health(False, "starting")


def running(loops: Mapping[str, bool]) -> Health:
    """Liveness from named loops and whether each runs: ok when all do."""
    stopped = sorted(name for name, alive in loops.items() if not alive)
    if stopped:
        return Health(False, "stopped: " + ", ".join(stopped), {"stopped": ",".join(stopped)})
    return Health(True, "running: " + ", ".join(sorted(loops)))


class HealthRoutes:
    """The WSGI app of the metrics port: the two health paths, then ``metrics``. The
    checks may be replaced at any time (:meth:`wire`): a process starts serving before its
    parts exist. ``auth``: the credentials every path but the probes' needs, if any."""

    def __init__(self, metrics: WsgiApp, auth: BasicAuth | None = None) -> None:
        self._metrics = metrics
        self._auth = auth
        self._ready: Check = lambda: STARTING
        self._live: Check = lambda: Health(True, "starting")
        self._routes: dict[str, Route] = {}

    def wire(self, ready: Check, live: Check) -> None:
        self._ready, self._live = ready, live

    def route(self, path: str, page: Route) -> None:
        """Answer ``GET path`` with ``page`` (a process's own pages beside the metrics)."""
        self._routes = {**self._routes, path: page}

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        method = environ.get("REQUEST_METHOD", "")
        if method not in METHODS:
            return _respond(NOT_ALLOWED, environ, start_response)
        if (
            self._auth is not None
            and path not in OPEN_PATHS
            and not self._auth.allows(environ.get("HTTP_AUTHORIZATION"))
        ):
            return _respond(self._unauthorized(), environ, start_response)
        if path == READY_PATH:
            return _answer(self._ready, "ready", environ, start_response)
        if path == LIVE_PATH:
            return _answer(self._live, "live", environ, start_response)
        page = self._routes.get(path)
        if page is not None:
            return _page(page, path, environ, start_response)
        if method == "HEAD":  # prometheus_client's app answers GET only
            return _head(self._metrics, environ, start_response)
        return self._metrics(environ, start_response)

    def _unauthorized(self) -> Page:
        assert self._auth is not None
        return Page(
            b"401 Unauthorized: this endpoint needs basic auth\n",
            "text/plain; charset=utf-8",
            "401 Unauthorized",
            (("WWW-Authenticate", self._auth.challenge),),
        )


NOT_ALLOWED = Page(
    b"405 Method Not Allowed: GET or HEAD only\n",
    "text/plain; charset=utf-8",
    "405 Method Not Allowed",
    (("Allow", ", ".join(METHODS)),),
)


def _head(
    app: WsgiApp, environ: dict[str, Any], start_response: Callable[..., Any]
) -> Iterable[bytes]:
    """``app``'s answer to a GET, without its body (its length said, as GET says it)."""
    answered: list[tuple[str, list[tuple[str, str]]]] = []

    def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        answered.append((status, headers))
        return lambda _data: None

    body = app({**environ, "REQUEST_METHOD": "GET"}, capture)
    try:
        length = sum(len(chunk) for chunk in body)
    finally:
        close = getattr(body, "close", None)
        if close is not None:
            close()
    status, headers = answered[-1]
    if not any(name.lower() == "content-length" for name, _ in headers):
        headers = [*headers, ("Content-Length", str(length))]
    start_response(status, headers)
    return []


def _page(
    route: Route, path: str, environ: dict[str, Any], start_response: Callable[..., Any]
) -> Iterable[bytes]:
    try:
        page = route()
    except Exception as exc:
        log.debug("%s failed", path, exc_info=True)
        page = Page(
            f"{path} failed ({type(exc).__name__})\n".encode(),
            "text/plain; charset=utf-8",
            "500 Internal Server Error",
        )
    return _respond(page, environ, start_response)


def _answer(
    check: Check, key: str, environ: dict[str, Any], start_response: Callable[..., Any]
) -> Iterable[bytes]:
    try:
        health = check()
    except Exception as exc:
        log.debug("%s check failed", key, exc_info=True)
        health = Health(False, f"the {key} check failed ({type(exc).__name__})")
    status = "200 OK" if health.ok else "503 Service Unavailable"
    return _respond(Page(health.body(key), "application/json", status), environ, start_response)


def _respond(
    page: Page, environ: dict[str, Any], start_response: Callable[..., Any]
) -> Iterable[bytes]:
    """The answer, never cached; no body to a HEAD."""
    start_response(
        page.status,
        [
            ("Content-Type", page.content_type),
            ("Content-Length", str(len(page.body))),
            ("Cache-Control", "no-store"),
            *page.headers,
        ],
    )
    return [] if environ.get("REQUEST_METHOD") == "HEAD" else [page.body]
