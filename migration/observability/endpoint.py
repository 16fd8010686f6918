"""The metrics endpoint of a process: ``metrics.port`` and ``metrics.host`` in its
properties file, one :class:`~prometheus_client.CollectorRegistry` per process, served
over HTTP at ``/metrics`` on a daemon thread, by a server with a request timeout and a
bound on its connections (:mod:`.http_server`: slow or idle clients cannot hold
threads).

Contract: the values are read when Prometheus scrapes (collectors, never a push from
the working code), so an idle endpoint costs nothing; a port that cannot be bound stops
the process before it starts, with the reason. Every endpoint also serves the process's
own health, from prometheus_client's standard collectors under their usual names
(``process_*``: memory, CPU, open files; ``python_info``; ``python_gc_*``), as the JVM's
exporter does for a Kafka process.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from prometheus_client import (
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    make_wsgi_app,
)
from prometheus_client.registry import Collector

from migration.common.ports import bind_problem, host_problem
from migration.common.properties import TypedProperties
from migration.common.text import shown
from migration.observability.health import Check, HealthRoutes, Route
from migration.observability.http_server import BoundedWSGIServer, serve

log = logging.getLogger(__name__)

KEYS = frozenset({"metrics.port", "metrics.host"})


@dataclass(frozen=True)
class MetricsEndpoint:
    host: str
    port: int  # 0: any free port (tests)


def metrics_endpoint(typed: TypedProperties) -> MetricsEndpoint | None:
    """``metrics.port`` (absent: no endpoint) and ``metrics.host`` (default 0.0.0.0);
    problems go to ``typed.problems``."""
    if "metrics.port" not in typed.props:
        if "metrics.host" in typed.props:
            typed.problems.append("metrics.host is set but metrics.port is not")
        return None
    port = typed.integer("metrics.port", None, 0, 65535)
    host = typed.props.get("metrics.host", "0.0.0.0").strip()
    problem = host_problem(host)
    if problem:
        typed.problems.append(f"metrics.host={shown(host)}: {problem}")
    return MetricsEndpoint(host, port)


class MetricsServer:
    """``/metrics`` for ``collectors`` (more may be registered later) and the process's
    own (see the module doc) on ``endpoint``. OSError naming the port when it cannot
    listen."""

    def __init__(self, endpoint: MetricsEndpoint, collectors: list[Collector]) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        for collector in collectors:
            self.registry.register(collector)
        self._routes = HealthRoutes(make_wsgi_app(self.registry))  # with /ready, /live
        try:
            self._server: BoundedWSGIServer
            self._server, self._thread = serve(endpoint.host, endpoint.port, self._routes)
        except OSError as exc:
            why = bind_problem(endpoint.host, endpoint.port) or str(exc)
            raise OSError(f"metrics.port={endpoint.port}: {why}") from None
        self.host = endpoint.host
        self.port: int = self._server.server_port
        log.info("metrics on http://%s:%d/metrics", self.host, self.port)

    def register(self, collector: Collector) -> None:
        self.registry.register(collector)

    def wire_health(self, ready: Check, live: Check) -> None:
        """The checks behind the readiness and liveness paths of :mod:`.health` (until
        then: not ready, ``starting``; live)."""
        self._routes.wire(ready, live)

    def route(self, path: str, page: Route) -> None:
        """Serve ``page`` at ``path`` too (see :meth:`.health.HealthRoutes.route`)."""
        self._routes.route(path, page)

    def connections(self) -> int:
        """Connections open now (at most :data:`~.http_server.MAX_CONNECTIONS`)."""
        return self._server.connections()

    def close(self) -> None:
        self._server.close()
