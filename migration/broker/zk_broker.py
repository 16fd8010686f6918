"""A ZooKeeper-mode broker: start-up as Kafka does, the controller election, and the
parts a broker is made of.

Start-up: the persistent parents Kafka creates; ``/cluster/id`` (created if absent);
``meta.properties`` in the first log dir (a different cluster id there refuses the start:
INCONSISTENT_CLUSTER_ID); the ephemeral ``/brokers/ids/<id>`` (v5: endpoints, rack,
the metadata.version range its inter.broker.protocol.version gives), whose czxid is the
broker epoch. A session lost and re-established re-registers.

Every broker watches ``/controller`` and runs for election when it is gone: one multi
creates the ephemeral ``/controller`` and bumps ``/controller_epoch`` at the version
read, so two candidates cannot both win. It never runs while ``/controller`` is
persistent with a ``kraftControllerEpoch``: a KRaft controller owns the cluster. A
controller that resigns with its session alive (an event failed, its start-up included)
releases ``/controller`` (version-checked: only its own) so another broker is elected;
one whose start-up failed stands again only after a backoff (ELECTION_BACKOFF_S,
doubling up to ELECTION_BACKOFF_MAX_S), so a cause that persists does not spin.

Threading: kazoo's threads only note events; election and re-registration run on one
worker thread; the controller has its own event thread; the Kafka listeners run on an
asyncio loop and call into :class:`ZkBroker` (the :class:`~.kafka_apis.Backend`) from
worker threads.
"""

from __future__ import annotations

import contextlib
import logging
import random
import shutil
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import grpc
from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.protocol.states import KazooState

from migration.broker.admin_rules import AdminSettings
from migration.broker.config import BrokerConfig
from migration.broker.forwarding import forward
from migration.broker.kraft_session import KraftSession
from migration.broker.zk_admin import ZkAdmin
from migration.broker.zk_controller_link import controller_stub
from migration.broker.zk_metadata_cache import MetadataCache
from migration.broker.zk_view import ZkEntityWatcher
from migration.common.files import ensure_dir, replace_contents
from migration.common.kafka_errors import ErrorCode
from migration.common.properties import ConfigError, read_properties
from migration.controller.context import MAX_RECORDS_PER_USER_OP
from migration.image.model import MetadataImage
from migration.proto import broker_pb2 as bpb
from migration.proto.broker_pb2_grpc import BrokerControlStub
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
    parse_controller_epoch,
    render_cluster_id,
    render_controller,
)
from migration.zk.multiwrite import CreateMode, create, set_data
from migration.zk.reported import ReportedZnodes
from migration.zk.tree import missing_parents
from migration.zkcontroller.controller import ZkController

log = logging.getLogger(__name__)

METADATA_TYPE_ZK, METADATA_TYPE_DUAL = 1, 2  # Kafka's MetadataType gauge (3: KRaft)
ELECTION_BACKOFF_S = 1.0  # after this broker's controller start-up failed; doubles
ELECTION_BACKOFF_MAX_S = 30.0
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
        self.controller: ZkController | None = None
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
        self._failed_starts = 0  # this broker's controller start-ups failed in a row
        self._stand_after = 0.0  # time.monotonic() before which it does not stand
        self._bad = ReportedZnodes(log, logging.ERROR, "no broker can be elected")
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
            if self.controller is not None:
                self.controller.resign("the ZooKeeper session expired")
        elif state == KazooState.CONNECTED and self._session_lost:
            self._session_lost = False
            self._later(self._register)
            self._later(self._elect)

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
            self._later(self._elect)

    def _forward(self, react: str) -> Callable[[list[str]], bool]:
        def on_children(children: list[str]) -> bool:
            controller = self.controller
            if controller is not None and controller.active:
                getattr(controller, react)(children)
            return not self._stopped

        return on_children

    # --- the election --------------------------------------------------------------------

    def _elect(self) -> None:
        if self._stopped or time.monotonic() < self._stand_after:
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
        if self._stopped:  # the session's close takes the ephemeral /controller with it
            return
        self._later(partial(self._release, controller))
        if controller.started:
            self._failed_starts = 0
            self._later(self._elect)
            return
        self._failed_starts += 1
        doubled = ELECTION_BACKOFF_S * 2 ** min(self._failed_starts - 1, 16)
        delay = min(ELECTION_BACKOFF_MAX_S, doubled)
        self._stand_after = time.monotonic() + delay
        again = threading.Timer(delay, self._later, (self._elect,))
        again.daemon = True
        again.start()

    def _release(self, controller: ZkController) -> None:
        """``controller.release()``, tried again every second while ZooKeeper cannot be
        reached and the session lives (while this broker holds ``/controller``, no other
        can be elected); a lost session's end releases it, a stop's close too."""
        try:
            controller.release()
        except Exception as exc:
            if self._stopped or self._session_lost:
                return
            log.warning(
                "broker %d could not release /controller (%s): trying again in 1 s",
                self.broker_id,
                exc,
            )
            again = threading.Timer(1.0, self._later, (partial(self._release, controller),))
            again.daemon = True
            again.start()

    def _kraft_registered(self, epoch: int) -> None:
        self.cache.kraft_broker_epoch = epoch

    @property
    def metadata_type(self) -> int:
        """Kafka's MetadataType: 2 (dual) once a KRaft controller leads a migrating
        broker, 1 (ZooKeeper) otherwise."""
        owner = self.owner
        migrating = self.kraft is not None and owner is not None and owner.is_kraft
        return METADATA_TYPE_DUAL if migrating else METADATA_TYPE_ZK

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
        wanted = self.cache.isr_to_expand()[:MAX_RECORDS_PER_USER_OP]
        if not wanted or self._stopped:
            return
        request = bpb.AlterPartitionRequest(
            broker_id=self.broker_id, broker_epoch=self.cache.broker_epoch, partitions=wanted
        )
        controller = self.controller
        if self._kraft_owned():
            assert self.kraft is not None
            answer = self.kraft.alter_partition(request, self.cache.topics()[1])
            if answer is None:
                return
        elif controller is not None and controller.active:
            answer = controller.alter_partition(request)
        else:
            stub = self._controller_stub()
            if stub is None:
                return
            try:
                answer = stub.AlterPartition(request, timeout=30)
            except grpc.RpcError as exc:  # the controller moved or stopped: retried later
                log.info("AlterPartition not answered (%s); retried on the next change", exc.code())
                return
        self.cache.altered(list(answer.partitions))
        if answer.error_code or answer.partition_errors:
            log.info(
                "AlterPartition for %d partitions: %s, %d partition errors (retried on the "
                "next controller request)",
                len(wanted),
                answer.error_message or "ok",
                len(answer.partition_errors),
            )

    def _controller_stub(self) -> BrokerControlStub | None:
        return controller_stub(self.owner, self.cache, self.config.inter_broker_listener)

    def _kraft_owned(self) -> bool:
        owner = self.owner
        return self.kraft is not None and owner is not None and owner.is_kraft

    # --- controlled shutdown and stop --------------------------------------------------

    def controlled_shutdown(self) -> bool:
        """Ask the controller to move leadership away; True once nothing is left led
        here. ``controlled.shutdown.max.retries`` attempts, each answered or given up
        within ``controller.socket.timeout.ms``: an unreachable controller or ZooKeeper
        holds the stop for at most their product."""
        if self._kraft_owned():
            assert self.kraft is not None
            done = self.kraft.controlled_shutdown()
            log.info(
                "broker %d: controlled shutdown through the KRaft controller %s",
                self.broker_id,
                "complete" if done else "failed",
            )
            return done
        request = bpb.ControlledShutdownRequest(
            broker_id=self.broker_id, broker_epoch=self.cache.broker_epoch
        )
        timeout_s = self.config.controller_socket_timeout_ms / 1000
        for attempt in range(self.config.controlled_shutdown_max_retries):
            try:
                if self.controller is not None and self.controller.active:
                    answer = self.controller.controlled_shutdown(request, timeout_s)
                else:
                    stub = controller_stub(
                        self.owner, self.cache, self.config.inter_broker_listener
                    )
                    if stub is None:
                        time.sleep(0.5)
                        continue
                    answer = stub.ControlledShutdown(request, timeout=timeout_s)
            except Exception as exc:
                log.warning("controlled shutdown attempt %d failed: %s", attempt + 1, exc)
                time.sleep(0.5)
                continue
            if answer.error_code == 0 and not answer.remaining:
                log.info("broker %d: controlled shutdown complete", self.broker_id)
                return True
            log.info(
                "controlled shutdown: %d partitions still led here (%s)",
                len(answer.remaining),
                answer.error_message or "no other live ISR member",
            )
            time.sleep(0.5)
        return False

    def stop(self) -> None:
        self._stopped = True
        with self._work:
            self._work.notify_all()
        self.entities.stop()
        if self.kraft is not None:
            self.kraft.stop()
        if self.controller is not None:
            self.controller.resign("the broker is stopping")
        self.client.close()
