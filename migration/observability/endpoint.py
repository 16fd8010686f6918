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

Securing it (docs/security.md says what the port exposes), both optional:

- TLS: ``metrics.ssl.*``, Kafka's ``ssl.*`` keys under the ``metrics.`` prefix, read by
  :func:`migration.common.tls.tls_settings` as the listeners read theirs (a PEM or
  PKCS12 key store; ``metrics.ssl.client.auth`` with a trust store for client
  certificates). Any ``metrics.ssl.*`` key turns TLS on and needs a key store; the key
  is loaded when the config is read, so a wrong password stops the process at start.
- Basic auth: ``metrics.basic.auth.users.file`` (:mod:`.basic_auth`), for every path but
  the probes' ``/ready`` and ``/live``.
"""

from __future__ import annotations

import logging
import ssl
from dataclasses import dataclass, field

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
from migration.common.tls import KEYS as TLS_KEYS
from migration.common.tls import TlsSettings, tls_settings
from migration.observability.basic_auth import USERS_KEY, BasicAuth, read_users
from migration.observability.health import Check, HealthRoutes, Route
from migration.observability.http_server import BoundedWSGIServer, serve

log = logging.getLogger(__name__)

TLS_PREFIX = "metrics.ssl"
KEYS = frozenset(
    {
        "metrics.port",
        "metrics.host",
        USERS_KEY,
        *(f"metrics.{k}" for k in TLS_KEYS if k != "ssl.endpoint.identification.algorithm"),
    }
)


@dataclass(frozen=True)
class MetricsEndpoint:
    host: str
    port: int  # 0: any free port (tests)
    tls: TlsSettings | None = None  # None: plain HTTP
    users: tuple[tuple[str, bytes], ...] = field(default=(), repr=False)  # (): no auth

    @property
    def scheme(self) -> str:
        return "http" if self.tls is None else "https"


def metrics_endpoint(typed: TypedProperties) -> MetricsEndpoint | None:
    """``metrics.port`` (absent: no endpoint), ``metrics.host`` (default 0.0.0.0), and
    the optional TLS and basic auth of the module doc; problems go to
    ``typed.problems``, each naming its key."""
    tls_keys = sorted(k for k in typed.props if k.startswith(f"{TLS_PREFIX}."))
    if "metrics.port" not in typed.props:
        for key in ["metrics.host", USERS_KEY, *tls_keys[:1]]:
            if key in typed.props:
                typed.problems.append(f"{key} is set but metrics.port is not")
        return None
    port = typed.integer("metrics.port", None, 0, 65535)
    host = typed.props.get("metrics.host", "0.0.0.0").strip()
    problem = host_problem(host)
    if problem:
        typed.problems.append(f"metrics.host={shown(host)}: {problem}")
    tls = _tls(typed, tls_keys) if tls_keys else None
    users: dict[str, bytes] = {}
    if USERS_KEY in typed.props:
        users = read_users(typed.props[USERS_KEY], typed.problems)
    return MetricsEndpoint(host, port, tls, tuple(users.items()))


def _tls(typed: TypedProperties, keys: list[str]) -> TlsSettings | None:
    """The port's TLS from ``metrics.ssl.*`` (``keys``: those set), its key loaded once
    to check it; None with a problem when it is unusable."""
    problems: list[str] = []
    settings = tls_settings(typed.props, None, problems, prefix=TLS_PREFIX)
    if not problems and not (settings.certificate_chain and settings.private_key):
        problems.append(
            f"{keys[0]} is set, which serves the metrics port over TLS, but there is no key "
            f"store: set {TLS_PREFIX}.keystore.location (PEM or PKCS12), or "
            f"{TLS_PREFIX}.keystore.certificate.chain and {TLS_PREFIX}.keystore.key"
        )
    if not problems and settings.client_auth != "none" and not settings.trusted:
        problems.append(
            f"{TLS_PREFIX}.client.auth={settings.client_auth} needs a trust store "
            f"({TLS_PREFIX}.truststore.location or {TLS_PREFIX}.truststore.certificates)"
        )
    if not problems:
        try:
            settings.server_context()
        except (ssl.SSLError, ValueError) as exc:
            why = exc.reason if isinstance(exc, ssl.SSLError) and exc.reason else "unusable"
            problems.append(
                f"{TLS_PREFIX}.keystore: its key does not load ({shown(str(why))}): a wrong "
                f"{TLS_PREFIX}.key.password, or a key that is not its certificate's"
            )
    typed.problems.extend(problems)
    return None if problems else settings


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
        auth = BasicAuth(dict(endpoint.users)) if endpoint.users else None
        # with /ready and /live, GET and HEAD only
        self._routes = HealthRoutes(make_wsgi_app(self.registry), auth)
        tls = endpoint.tls.server_context() if endpoint.tls is not None else None
        try:
            self._server: BoundedWSGIServer
            self._server, self._thread = serve(endpoint.host, endpoint.port, self._routes, tls)
        except OSError as exc:
            # port 0 (any free port) is in range: only the host can be what failed
            why = (bind_problem(endpoint.host, endpoint.port) if endpoint.port else None) or str(
                exc.strerror or exc
            )
            raise OSError(f"metrics.port={endpoint.port}: {why}") from None
        self.host = endpoint.host
        self.port: int = self._server.server_port
        self.scheme = endpoint.scheme
        log.info(
            "metrics on %s://%s:%d/metrics%s",
            self.scheme,
            self.host,
            self.port,
            " (basic auth)" if auth else "",
        )

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
