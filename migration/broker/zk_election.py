"""A ZooKeeper-mode broker's controller election (Kafka's KafkaController election):
standing for ``/controller``, the :class:`ZkController` it won, and what follows its
resignation.

An election is one multi that creates the ephemeral ``/controller`` and bumps
``/controller_epoch`` at the version read, so two candidates cannot both win; none is
held while ``/controller`` exists (a KRaft controller's persistent one included) or
``/controller_epoch`` cannot be parsed (reported once, until repaired). A controller
that resigns with the broker running releases ``/controller`` (version-checked: only its
own; retried every second while ZooKeeper cannot be reached and the session lives) and
the broker stands again: at once when its start-up had completed, else after a backoff
(ELECTION_BACKOFF_S, doubling up to ELECTION_BACKOFF_MAX_S), so a cause that persists
does not spin.

Threading: :meth:`ControllerElection.elect` and releases run on the broker's worker
thread (handed over with ``later``); a resignation may be reported on any thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from functools import partial

from kazoo.exceptions import NoNodeError

from migration.broker.config import BrokerConfig
from migration.zk import paths
from migration.zk.client import ZkClient, ZkWriteError
from migration.zk.errors import ZnodeFormatError
from migration.zk.model.cluster import ControllerZnode, parse_controller_epoch, render_controller
from migration.zk.multiwrite import CreateMode, create, set_data
from migration.zk.reported import ReportedZnodes
from migration.zkcontroller.controller import ZkController

log = logging.getLogger(__name__)

ELECTION_BACKOFF_S = 1.0  # after this broker's controller start-up failed; doubles
ELECTION_BACKOFF_MAX_S = 30.0


class ControllerElection:
    """The elections of broker ``config.broker_id``; ``controller`` is the one it won
    while that one is active (None otherwise). ``stopped`` and ``session_lost`` are the
    broker's: no election once it stops, no release retried once its session is lost."""

    def __init__(
        self,
        client: ZkClient,
        config: BrokerConfig,
        later: Callable[[Callable[[], None]], None],
        *,
        stopped: Callable[[], bool],
        session_lost: Callable[[], bool],
    ) -> None:
        self.client = client
        self.config = config
        self.broker_id = config.broker_id
        self.controller: ZkController | None = None
        self._later = later
        self._stopped = stopped
        self._session_lost = session_lost
        self._failed_starts = 0  # this broker's controller start-ups failed in a row
        self._stand_after = 0.0  # time.monotonic() before which it does not stand
        self._bad = ReportedZnodes(log, logging.ERROR, "no broker can be elected")

    def elect(self) -> None:
        if self._stopped() or time.monotonic() < self._stand_after:
            return
        if self.client.kazoo.exists(paths.CONTROLLER) is not None:
            return
        try:
            raw, stat = self.client.kazoo.get(paths.CONTROLLER_EPOCH)
            epoch, version = parse_controller_epoch(paths.CONTROLLER_EPOCH, raw), stat.version
            self._bad.forget(paths.CONTROLLER_EPOCH)
        except NoNodeError:
            epoch, version = 0, None
        except ZnodeFormatError as exc:  # no election until it is repaired (said once)
            self._bad.report(exc, stat.mzxid)
            return
        znode = render_controller(ControllerZnode(self.broker_id, int(time.time() * 1000)))
        ops = [
            create(paths.CONTROLLER, znode, CreateMode.EPHEMERAL),
            set_data(paths.CONTROLLER_EPOCH, str(epoch + 1).encode(), version)
            if version is not None
            else create(paths.CONTROLLER_EPOCH, b"1"),
        ]
        try:
            self.client.multi_write(ops)
        except ZkWriteError as exc:
            log.info("broker %d lost the controller election (%s)", self.broker_id, exc)
            return
        controller = ZkController(
            self.client,
            self.broker_id,
            epoch=epoch + 1,
            epoch_version=version + 1 if version is not None else 0,
            internal_listener=self.config.inter_broker_listener,
            unclean_default=self.config.unclean_leader_election,
        )
        controller.on_resign = partial(self._resigned, controller)
        self.controller = controller
        log.info("broker %d won the controller election (epoch %d)", self.broker_id, epoch + 1)
        controller.activate()

    def _resigned(self, controller: ZkController, why: str) -> None:
        """``controller`` resigned (any thread): release ``/controller`` if it is still
        its own, then stand again, after a backoff when its start-up failed."""
        if self.controller is controller:
            self.controller = None
        if self._stopped():  # the session's close takes the ephemeral /controller with it
            return
        self._later(partial(self._release, controller))
        if controller.started:
            self._failed_starts = 0
            self._later(self.elect)
            return
        self._failed_starts += 1
        doubled = ELECTION_BACKOFF_S * 2 ** min(self._failed_starts - 1, 16)
        delay = min(ELECTION_BACKOFF_MAX_S, doubled)
        self._stand_after = time.monotonic() + delay
        again = threading.Timer(delay, self._later, (self.elect,))
        again.daemon = True
        again.start()

    def _release(self, controller: ZkController) -> None:
        """``controller.release()``, tried again every second while ZooKeeper cannot be
        reached and the session lives (while this broker holds ``/controller``, no other
        can be elected); a lost session's end releases it, a stop's close too."""
        try:
            controller.release()
        except Exception as exc:
            if self._stopped() or self._session_lost():
                return
            log.warning(
                "broker %d could not release /controller (%s): trying again in 1 s",
                self.broker_id,
                exc,
            )
            again = threading.Timer(1.0, self._later, (partial(self._release, controller),))
            again.daemon = True
            again.start()
