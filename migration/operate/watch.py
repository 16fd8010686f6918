"""The driven migration, seen while it runs: ``/migration`` (HTML), ``/migration.json``
(:mod:`.page`) and ``/metrics`` on one port (the project's
:class:`~migration.observability.endpoint.MetricsServer`), for ``zk2kraft kafka
migrate|rollback --page`` (the run's duration) and ``kafka status --serve`` (until
stopped).

Contract:

- One daemon thread reads the status (:func:`~migration.operate.status.driven_status`:
  the journal, ZooKeeper, a controller's metadata log, the quorum -- any of which may
  block) every :data:`SAMPLE_S` and publishes the model, replaced whole. The HTTP
  handlers and the metrics collector only read what was published: they never wait.
  Before the first reading they answer ``starting`` (the page; ``/migration.json`` with
  503 and ``Retry-After``; no family on ``/metrics``).
- A reading that fails (a journal that is not one, anything unexpected) keeps the last
  good one on the page, with the failure in ``errors.status``; the watcher never stops
  the run it watches.
- The write-behind lag's samples cover the last :data:`LAG_WINDOW_S`; a gate's seconds
  closed are as this watcher saw it (from its first reading of the gate closed).
- The metrics (:meth:`DrivenWatch.collect`) are the catalog's: Kafka's names for what
  Kafka's controllers report too (ZkMigrationState, the write-behind lag, the migrating
  ZooKeeper brokers), the audit's, and ``zk2kraft_kafka_migrate_*``. A value not read
  (the log before the controllers exist, no audit yet) is absent, never 0.
"""

from __future__ import annotations

import json
import logging
import time
from collections import deque
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from prometheus_client.core import Metric

from migration.common.periodic import Periodic
from migration.common.times import iso
from migration.driver.states import ZK_MIGRATION_STATE_NAMES
from migration.observability import catalog as c
from migration.observability.endpoint import MetricsEndpoint, MetricsServer
from migration.observability.exposition import enum, gauge, labelled
from migration.observability.health import Page
from migration.operate.inventory import Inventory
from migration.operate.page import MODES, driven_model, render, starting
from migration.operate.plan import PHASES
from migration.operate.rollback_plan import ROLLBACK_PHASES
from migration.operate.run import readable_log_dir
from migration.operate.status import driven_status
from migration.pages.live import HEADERS
from migration.server.page_model import JSON_PATH, PAGE_PATH

log = logging.getLogger(__name__)

SAMPLE_S = 2.0
LAG_WINDOW_S = 600.0
FIRST_READING = "the first reading of the cluster is under way"
ALL_PHASES = (*PHASES, *ROLLBACK_PHASES)
_STATE_CODES = {name: code for code, name in ZK_MIGRATION_STATE_NAMES.items()}
_JSON = "application/json"
_NOSNIFF = (("X-Content-Type-Options", "nosniff"),)


def _now() -> str:
    return iso(int(time.time() * 1000))


class DrivenWatch:
    """The sampler, the routes' answers and the collector of the module doc. ``read``:
    one reading of the status (:func:`watch_inventory` gives the real one)."""

    def __init__(self, read: Callable[[], dict[str, Any]], *, sample_s: float = SAMPLE_S) -> None:
        self._read = read
        self._sample_s = sample_s
        self.model: dict[str, Any] | None = None
        """The newest model (published whole; None before the first good reading)."""
        self.failure: str | None = None
        """Why the newest reading failed (None: it did not)."""
        self._status: dict[str, Any] | None = None
        self._generated = ""
        self._lag: deque[tuple[str, int]] = deque(maxlen=int(LAG_WINDOW_S / sample_s) + 1)
        self._closed: tuple[str, float] | None = None  # the gate seen closed, since (monotonic)
        self._thread = Periodic("driven-watch", sample_s, self.sample)

    def start(self) -> DrivenWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._thread.stop()

    def sample(self) -> None:
        """One reading, published (the thread's; tests call it directly)."""
        try:
            status = self._read()
        except Exception as exc:  # the page is a view: it never stops the run
            log.debug("driven migration page: reading failed", exc_info=True)
            self.failure = f"{type(exc).__name__}: {exc}"
        else:
            self.failure = None
            self._status, self._generated = status, _now()
            if status["zk_write_behind_lag"] is not None:
                self._lag.append((self._generated, int(status["zk_write_behind_lag"])))
            gate = status["step"] if status["waiting_for"] is not None else None
            if gate is None:
                self._closed = None
            elif self._closed is None or self._closed[0] != gate:
                self._closed = (gate, time.monotonic())
        if self._status is None:
            return
        self.model = driven_model(
            self._status,
            generated=self._generated,
            lag=tuple(self._lag),
            waiting_s=None if self._closed is None else time.monotonic() - self._closed[1],
            failure=self.failure,
        )

    # --- the routes ------------------------------------------------------------------------

    def _shown(self) -> dict[str, Any]:
        model = self.model
        if model is not None:
            return model
        return starting(FIRST_READING if self.failure is None else f"not read: {self.failure}")

    def html(self) -> Page:
        return Page(render(self._shown()).encode(), "text/html; charset=utf-8", headers=HEADERS)

    def json(self) -> Page:
        model = self._shown()
        body = json.dumps(model, indent=1).encode() + b"\n"
        if model["starting"]:
            headers = (*_NOSNIFF, ("Retry-After", str(max(1, round(self._sample_s)))))
            return Page(body, _JSON, "503 Service Unavailable", headers)
        return Page(body, _JSON, headers=_NOSNIFF)

    # --- the metrics -----------------------------------------------------------------------

    def collect(self) -> Iterator[Metric]:
        m = self.model
        if m is None:
            return
        state = _STATE_CODES.get(m["zk_migration_state"] or "")
        if state is not None:
            yield gauge(c.ZK_MIGRATION_STATE, state)
        if m["zk_write_behind_lag"] is not None:
            yield gauge(c.ZK_WRITE_BEHIND_LAG, m["zk_write_behind_lag"])
        by_mode = m["brokers_by_mode"]
        yield gauge(c.MIGRATING_ZK_BROKER_COUNT, by_mode["migrating"])
        yield labelled(c.DRIVEN_BROKERS, (((mode,), by_mode[mode]) for mode in MODES))
        current = next((p["name"] for p in m["phases"] if p["state"] == "current"), "")
        yield enum(c.DRIVEN_PHASE, current, ALL_PHASES)
        yield gauge(c.DRIVEN_STEPS_DONE, m["steps_done"])
        yield gauge(c.DRIVEN_ROLLING_BACK, 1 if m["rolling_back"] else 0)
        yield gauge(c.DRIVEN_WAY_BACK, 0 if m["way_back"] is None else 1)
        gate = m["gate"]
        if gate is not None:
            seconds = gate["seconds"] or 0.0
            yield labelled(c.DRIVEN_GATE_CLOSED_SECONDS, [((gate["step"],), seconds)])
        yield labelled(
            c.DRIVEN_READ_ERRORS,
            (((part,), 1 if why else 0) for part, why in m["errors"].items()),
        )
        audit = m["last_audit"]
        if audit is not None:
            yield gauge(c.AUDIT_SUCCESS, 1 if audit["verdict"] == "CONSISTENT" else 0)
            at = _seconds(audit["at"])
            if at is not None:
                yield gauge(c.AUDIT_LAST_RUN, at)


def _seconds(at: object) -> float | None:
    """An ISO 8601 time (the journal's) as seconds since the epoch; None when it is not one."""
    try:
        return datetime.fromisoformat(str(at)).timestamp()
    except ValueError:
        return None


def watch_inventory(inv: Inventory) -> DrivenWatch:
    """A watch of ``inv``'s run, reading as ``kafka status`` does (not started)."""
    return DrivenWatch(lambda: driven_status(inv, readable_log_dir(inv)))


def serve(watch: DrivenWatch, endpoint: MetricsEndpoint) -> MetricsServer:
    """``watch``'s page, JSON and metrics on ``endpoint`` (port 0: any free port; the
    server's ``port`` is the one bound). OSError naming the port when it cannot listen."""
    server = MetricsServer(endpoint, [watch])
    server.route(PAGE_PATH, watch.html)
    server.route(JSON_PATH, watch.json)
    return server


def page_address(server: MetricsServer) -> str:
    """The page's URL as bound (an IPv6 host in brackets)."""
    host = f"[{server.host}]" if ":" in server.host else server.host
    return f"{server.scheme}://{host}:{server.port}{PAGE_PATH}"
