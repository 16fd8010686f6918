"""The live migration page on a controller's metrics port: ``GET /migration`` (HTML,
:func:`migration.pages.live.render_controller`, with the page's :data:`HEADERS`) and
``GET /migration.json`` (:mod:`.page_model`, documented in docs/operations.md). Every
controller answers; one that is not the active controller names the active one and
links to its page.

Contract: the handlers read what the process publishes (the driver's view, the newest
image, the sampler's attributes) and never wait: whatever may block runs on the
sampler's thread (:mod:`.page_sampler`). No configuration value, no secret, on either.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from migration.controller.config import ControllerConfig
from migration.driver.driver import MigrationDriver
from migration.observability.health import Page
from migration.pages.live import HEADERS, render_controller
from migration.proto import controller_pb2 as cpb
from migration.raft.node import RaftNode
from migration.server.node_metrics import LatestImage
from migration.server.page_model import JSON_PATH, PAGE_PATH, PageInputs, page_model
from migration.server.page_sampler import PageSampler, now_ms

__all__ = ["JSON_PATH", "PAGE_PATH", "MigrationPage", "advertised_metrics"]

_WILDCARDS = frozenset({"", "0.0.0.0", "::", "[::]"})


def advertised_metrics(config: ControllerConfig, bound_port: int) -> str:
    """The metrics port's address as others reach it: ``metrics.host`` unless it is a
    wildcard, else this controller's host in ``controller.quorum.voters``."""
    assert config.metrics is not None
    host = config.metrics.host
    if host in _WILDCARDS:
        voter = config.voters.get(config.node_id)
        host = voter.host if voter is not None else config.listener.host
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{bound_port}"


class MigrationPage:
    def __init__(
        self,
        sampler: PageSampler,
        describe: Callable[[], cpb.DescribeMigrationResponse],
        driver: MigrationDriver,
        latest: LatestImage,
        raft: RaftNode,
        *,
        scheme: str = "http",
    ) -> None:
        """``scheme``: this controller's metrics port's (``https`` with ``metrics.ssl.*``),
        the scheme of the link to the active controller's page (every controller's port
        is configured alike)."""
        self.sampler = sampler
        self._scheme = scheme
        self._describe = describe
        self._driver = driver
        self._latest = latest
        self._raft = raft

    def model(self) -> dict[str, object]:
        s = self.sampler
        role = self._raft.role.value if self._raft.is_voter else "Observer"
        return page_model(
            PageInputs(
                status=self._describe(),
                image=self._latest.image,
                zk_broker_ids=self._driver.zk_broker_ids(),
                raft_role=role,
                started_ms=s.started_ms,
                timeline=s.timeline,
                lag=s.lag,
                quorum=s.quorum,
                active_page=s.active_page,
                audit=s.audit,
                now_ms=now_ms(),
                page_scheme=self._scheme,
            )
        )

    def html(self) -> Page:
        return Page(
            render_controller(self.model()).encode(),
            "text/html; charset=utf-8",
            headers=HEADERS,
        )

    def json(self) -> Page:
        body = json.dumps(self.model(), indent=1).encode() + b"\n"
        return Page(body, "application/json", headers=(("X-Content-Type-Options", "nosniff"),))
