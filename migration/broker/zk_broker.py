"""A ZooKeeper-mode broker: start-up as Kafka does, the controller election, and the
parts a broker is made of.

Start-up: the persistent parents Kafka creates; ``/cluster/id`` (created if absent);
``meta.properties`` in the first log dir (a different cluster id there refuses the start:
INCONSISTENT_CLUSTER_ID); the ephemeral ``/brokers/ids/<id>`` (v5: endpoints, rack,
the metadata.version range its inter.broker.protocol.version gives), whose czxid is the
broker epoch. A session lost and re-established re-registers.

Every broker watches ``/controller`` and runs for election when it is gone
(:mod:`~.zk_election`: one multi, so two candidates cannot both win; never while a KRaft
controller owns the cluster; a resigned controller releases ``/controller`` and the
broker stands again). AlterPartition (ISR expansion of partitions led here) and
ControlledShutdown go to whichever controller owns the cluster
(:mod:`~.zk_controller_requests`).

Threading: kazoo's threads only note events; election and re-registration run on one
worker thread; the controller has its own event thread; the Kafka listeners run on an
asyncio loop and call into :class:`ZkBroker` (their
:class:`~migration.kafka.api_context.Backend`) from worker threads.
"""

from __future__ import annotations

import contextlib
import logging
import random
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.protocol.states import KazooState

from migration.broker.admin_rules import AdminSettings
from migration.broker.config import BrokerConfig
from migration.broker.forwarding import forward
from migration.broker.kraft_session import KraftSession
from migration.broker.zk_admin import ZkAdmin
from migration.broker.zk_controller_requests import ControllerRequests
from migration.broker.zk_election import ControllerElection
from migration.broker.zk_metadata_cache import MetadataCache
from migration.broker.zk_view import ZkEntityWatcher
from migration.common.files import ensure_dir, replace_contents
from migration.common.kafka_errors import ErrorCode
from migration.common.properties import ConfigError, read_properties
from migration.controller.context import STEP_RECORDS
from migration.image.model import MetadataImage
from migration.records import versions
from migration.records.uuids import new_uuid, uuid_text
from migration.zk import paths
from migration.zk.client import ZkClient, ZkWriteError
from migration.zk.errors import ZnodeFormatError
from migration.zk.model.brokers import BrokerRegistration, FeatureRange, render_broker
from migration.zk.model.cluster import (
    ClusterId,
    ControllerZnode,
    parse_cluster_id,
    parse_controller,
    render_cluster_id,
)
from migration.zk.tree import missing_parents
from migration.zkcontroller.controller import ZkController

log = logging.getLogger(__name__)

METADATA_TYPE_ZK, METADATA_TYPE_DUAL = 1, 2  # Kafka's MetadataType gauge (3: KRaft)
STALE_METADATA_LOG = "__cluster_metadata-0"  # left by an earlier run in KRaft mode


class BrokerStartError(RuntimeError):
    """The broker cannot start; ``code`` is Kafka's error name when there is one."""

    def __init__(self, message: str, code: ErrorCode | None = None) -> None:
        super().__init__(f"{code.name}: {message}" if code else message)
        self.code = code


def check_meta_properties(log_dir: Path, broker_id: int, cluster_id: str) -> None:
    """Kafka's ``meta.properties`` (version 0, ZooKeeper mode): written on first start;
    a different cluster or broker id refuses the start."""
    path = log_dir / "meta.properties"
    if path.exists():
        try:
            props = read_properties(path)
        except ConfigError as exc:
            raise BrokerStartError(str(exc)) from None
        if props.get("cluster.id", cluster_id) != cluster_id:
            raise BrokerStartError(
                f"{path} names cluster {props['cluster.id']}, but ZooKeeper's /cluster/id is "
                f"{cluster_id}: this log dir belongs to another cluster",
                ErrorCode.INCONSISTENT_CLUSTER_ID,
            )
        if props.get("broker.id", str(broker_id)) != str(broker_id):
            raise BrokerStartError(
                f"{path} names broker.id {props['broker.id']}, but the config says {broker_id}"
            )
        return
    ensure_dir(log_dir)
    replace_contents(path, f"version=0\nbroker.id={broker_id}\ncluster.id={cluster_id}\n".encode())


def _discard_stale_metadata_log(log_dir: Path) -> None:
    """A ZooKeeper-mode broker never reads a metadata log: one left by an earlier run in
    KRaft mode (before a rollback) is stale and would mislead a later move to KRaft."""
    stale = log_dir / STALE_METADATA_LOG
    if stale.exists():
        log.warning("discarding the stale local metadata log %s (ZooKeeper mode)", stale)
        shutil.rmtree(stale)


class ZkBroker:
    """The broker's state and parts; :meth:`start` registers it, :meth:`stop` ends it."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.broker_id = config.broker_id
        self.metadata_version_max = config.metadata_version_max
        self.cluster_id = ""
        self.client = ZkClient(
            config.zk_connect,
            timeout_s=config.zk_connection_timeout_ms / 1000,
            session_timeout_s=config.zk_session_timeout_ms / 1000,
            security=config.zk_security,
        )
        self.cache = MetadataCache(config.broker_id)
        self.entities = ZkEntityWatcher(self.client, config.password_encoder_secret)
        self.kraft: KraftSession | None = None  # while migrating: the KRaft quorum
        self.owner: ControllerZnode | None = None
        self.admin = ZkAdmin(
            client=self.client,
            entities=self.entities,
            view=self.image,
            wait=self.wait,
            owner=lambda: self.owner,
            settings=AdminSettings(config.num_partitions, config.default_replication_factor),
            secret=config.password_encoder_secret,
            controller_epoch=lambda: max(self.cache.controller_epoch, 0),
        )
        self._work = threading.Condition()
        self._todo: list[Callable[[], None]] = []
        self._stopped = False
        self._session_lost = False
        self._isr_pending = False
        self._image_key: tuple[int, int] | None = None
        self._image = MetadataImage.EMPTY
        self.election = ControllerElection(
            self.client,
            config,
            self._later,
            stopped=lambda: self._stopped,
            session_lost=lambda: self._session_lost,
        )
        self.to_controller = ControllerRequests(
            config,
            self.cache,
            owner=lambda: self.owner,
            kraft=lambda: self.kraft,
            controller=lambda: self.controller,
        )
        self._worker = threading.Thread(target=self._run, name="broker-worker", daemon=True)

    # --- start-up ----------------------------------------------------------------------

    def start(self) -> None:
        self.client.ensure_chroot()
        parents = missing_parents(self.client)
        for op in parents:  # one by one: another broker may be creating them too
            with contextlib.suppress(ZkWriteError):
                self.client.multi_write([op])
        self.cluster_id = self._cluster_id()
        check_meta_properties(self.config.log_dir, self.broker_id, self.cluster_id)
        _discard_stale_metadata_log(self.config.log_dir)
        self._register()
        if self.config.migration_enabled:
            self.kraft = KraftSession(self.config, self.cluster_id, self._kraft_registered).start()
        self.entities.start()
        self.client.kazoo.add_listener(self._on_state)
        self._worker.start()
        self.client.kazoo.DataWatch(paths.CONTROLLER, self._on_controller)
        for path, react in (
            (paths.BROKER_IDS, "on_brokers"),
            (paths.TOPICS, "on_topics"),
            (paths.DELETE_TOPICS, "on_deletions"),
        ):
            self.client.kazoo.ChildrenWatch(path, self._forward(react), send_event=False)

    def _cluster_id(self) -> str:
        try:
            data, _ = self.client.get(paths.CLUSTER_ID)
        except NoNodeError:
            with contextlib.suppress(NodeExistsError):
                self.client.kazoo.create(
                    paths.CLUSTER_ID,
                    render_cluster_id(ClusterId(uuid_text(new_uuid()))),
                    acl=self.client.acl_list(paths.CLUSTER_ID),
                )
            data, _ = self.client.get(paths.CLUSTER_ID)
        try:
            return parse_cluster_id(paths.CLUSTER_ID, data).id
        except ZnodeFormatError as exc:
            raise BrokerStartError(str(exc)) from None

    def _registration(self) -> BrokerRegistration:
        return BrokerRegistration(
            broker_id=self.broker_id,
            endpoints=self.config.advertised,
            timestamp=int(time.time() * 1000),
            rack=self.config.rack,
            features={
                versions.METADATA_VERSION: FeatureRange(
                    versions.MIN_SUPPORTED_LEVEL, self.metadata_version_max
                )
            },
        )

    def _register(self) -> None:
        """The ephemeral registration; an older session's may linger until it expires."""
        path = paths.broker(self.broker_id)
        data = render_broker(self._registration())
        deadline = time.monotonic() + self.config.zk_session_timeout_ms / 1000 + 5
        while True:
            try:
                self.client.kazoo.create(path, data, acl=self.client.acl_list(path), ephemeral=True)
                break
            except NodeExistsError:
                stat = self.client.kazoo.exists(path)
                if stat is not None and stat.ephemeralOwner == self.client.kazoo.client_id[0]:
                    break
                if time.monotonic() > deadline:
                    raise BrokerStartError(
                        f"{path} is held by another live session: is broker {self.broker_id} "
                        "already running?"
                    ) from None
                time.sleep(0.5)
        stat = self.client.kazoo.exists(path)
        self.cache.broker_epoch = stat.czxid if stat is not None else -1
        log.info("broker %d registered (epoch %d)", self.broker_id, self.cache.broker_epoch)

    # --- events from kazoo (its threads: note and hand over) ------------------------------

    def _later(self, act: Callable[[], None]) -> None:
        with self._work:
            self._todo.append(act)
            self._work.notify()

    def _run(self) -> None:
        while True:
            with self._work:
                self._work.wait_for(lambda: self._todo or self._stopped)
                if self._stopped:
                    return
                act = self._todo.pop(0)
            try:
                act()
            except Exception:
                log.exception("broker %d: background step failed", self.broker_id)

    def _on_state(self, state: KazooState) -> None:
        if state == KazooState.LOST:
            self._session_lost = True
            controller = self.controller
            if controller is not None:
                controller.resign("the ZooKeeper session expired")
        elif state == KazooState.CONNECTED and self._session_lost:
            self._session_lost = False
            self._later(self._register)
            self._later(self.election.elect)

    def _on_controller(self, data: bytes | None, stat: Any) -> None:
        owner = None
        if data:
            try:
                owner = parse_controller(paths.CONTROLLER, data)
            except ZnodeFormatError as exc:
                log.error("unreadable /controller: %s", exc)
        was_dual = self.metadata_type == METADATA_TYPE_DUAL
        self.owner = owner
        if self.metadata_type == METADATA_TYPE_DUAL and not was_dual:
            log.info(
                "broker %d: metadata type 2 (dual): KRaft controller %d leads the migration",
                self.broker_id,
                owner.broker_id if owner is not None else -1,
            )
        mine = self.controller
        if mine is not None and (owner is None or owner.broker_id != self.broker_id):
            mine.resign("/controller no longer names this broker")
        if data is None and not self._stopped:
            self._later(self.election.elect)

    def _forward(self, react: str) -> Callable[[list[str]], bool]:
        def on_children(children: list[str]) -> bool:
            controller = self.controller
            if controller is not None and controller.active:
                getattr(controller, react)(children)
            return not self._stopped

        return on_children

    @property
    def controller(self) -> ZkController | None:
        """The ZooKeeper controller this broker won the election with, while active."""
        return self.election.controller

    def _kraft_registered(self, epoch: int) -> None:
        self.cache.kraft_broker_epoch = epoch

    @property
    def metadata_type(self) -> int:
        """Kafka's MetadataType: 2 (dual) once a KRaft controller leads a migrating
        broker, 1 (ZooKeeper) otherwise."""
        return METADATA_TYPE_DUAL if self.to_controller.kraft_owned() else METADATA_TYPE_ZK

    # --- the Backend of the Kafka APIs -------------------------------------------------

    def image(self) -> MetadataImage:
        entities = self.entities.current()
        key = (self.cache.version, entities.generation)
        if key != self._image_key:
            topics, ids = self.cache.topics()
            e = entities.image
            self._image = MetadataImage(
                brokers=self.cache.brokers(),
                topics=topics,
                topic_ids=ids,
                configs=e.configs,
                quotas=e.quotas,
                scram=e.scram,
                acls=e.acls,
                delegation_tokens=e.delegation_tokens,
            )
            self._image_key = key
        return self._image

    def wait(self, predicate: Callable[[MetadataImage], bool], timeout_s: float) -> bool:
        return self.cache.wait(lambda: predicate(self.image()), timeout_s)

    def controller_id(self) -> int:
        """The broker admin clients should send to: the ZooKeeper controller; while a
        KRaft controller owns the cluster, a random live broker (the KIP's rule: every
        broker forwards)."""
        owner = self.owner
        if owner is not None and not owner.is_kraft:
            return owner.broker_id
        if owner is not None:
            live = sorted(self.cache.brokers()) or [self.broker_id]
            return random.choice(live)
        return self.cache.controller_id

    def write(self, method: str, request: Any, validate_only: bool, timeout_ms: int) -> Any:
        owner, kraft = self.owner, self.kraft
        if owner is not None and owner.is_kraft and kraft is not None:
            return forward(
                kraft,
                self.admin.validate,
                self.wait,
                method,
                request,
                validate_only=validate_only,
                timeout_ms=timeout_ms,
            )
        return self.admin.write(method, request, validate_only, timeout_ms)

    # --- ISR expansion (this broker as a leader) -----------------------------------------

    def check_isr(self) -> None:
        """After a controller request: ask, off the caller's thread, to add live
        followers back to the ISR of partitions led here (coalesced)."""
        with self._work:
            if self._isr_pending:
                return
            self._isr_pending = True
        self._later(self._expand_isr)

    def _expand_isr(self) -> None:
        with self._work:
            self._isr_pending = False
        # a step at a time (the rest with the next controller request): a controller
        # handles a request on its quorum's event loop, which must stay responsive
        wanted = self.cache.isr_to_expand(STEP_RECORDS)
        if not wanted or self._stopped:
            return
        self.to_controller.alter_partition(wanted)

    # --- controlled shutdown and stop --------------------------------------------------

    def controlled_shutdown(self) -> bool:
        """See :meth:`ControllerRequests.controlled_shutdown`."""
        return self.to_controller.controlled_shutdown()

    def stop(self) -> None:
        self._stopped = True
        with self._work:
            self._work.notify_all()
        self.entities.stop()
        if self.kraft is not None:
            self.kraft.stop()
        controller = self.controller
        if controller is not None:
            controller.resign("the broker is stopping")
        self.client.close()
