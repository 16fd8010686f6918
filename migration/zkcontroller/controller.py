"""The legacy ZooKeeper controller: what the broker that won ``/controller`` does.

On election it reads the tree with the project's reader, gives partitions without a
state one (topics created while no controller ran), elects leaders for partitions led
by dead brokers, and sends UpdateMetadata then LeaderAndIsr to every live broker. Then
it reacts, one event at a time on its own thread (Kafka's controller event queue), to
brokers joining and leaving (``/brokers/ids``), new topics (``/brokers/topics``) and
partitions (a topic znode's data), deletion requests (``/admin/delete_topics``),
AlterPartition and ControlledShutdown requests from brokers.

Fencing: every ZooKeeper write is one multi that starts with
``check(/controller_epoch, the version this controller's election wrote)`` (Kafka's
checkControllerAndUpdate); a partition state is set at the znode version the
controller read, and carries the controller epoch. A failed epoch check means another
controller was elected: this one resigns at once. It also resigns when its ZooKeeper
session is lost or ``/controller`` names someone else, and when an event (its start-up
included) fails; a resigned controller drops its queued events and answers
NOT_CONTROLLER. The broker then releases ``/controller`` (:meth:`ZkController.release`)
if it is still this controller's, so another broker can be elected.

Bad data stops nothing: a topic znode or partition state the controller cannot parse
(a :class:`ZnodeFormatError`, e.g. JSON nested too deep) is reported at ERROR once per
content and skipped; every other topic and partition is served. A skipped topic znode
stays watched, so a repaired one is read again; a deleted one is forgotten. A skipped
partition state is left alone (never created over, never elected) until the next
controller reads it.

The work is split as Kafka splits it: this module is the controller (its lifecycle, the
start-up, broker membership and the requests from brokers);
:mod:`~.partition_states` owns the topics, the partition states and the fenced writes;
:mod:`~.events` runs the events, one at a time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any, TypeVar

from kazoo.exceptions import NoNodeError

from migration.common.kafka_errors import ErrorCode
from migration.proto import broker_pb2 as bpb
from migration.zk import paths
from migration.zk.client import ZkClient, ZkWriteError
from migration.zk.model.brokers import parse_broker
from migration.zk.model.topics import PartitionState
from migration.zk.multiwrite import check, delete
from migration.zk.reader import read_snapshot
from migration.zkcontroller import partition_rules as rules
from migration.zkcontroller.channel import ControllerChannel
from migration.zkcontroller.context import ControllerContext, TopicPartition
from migration.zkcontroller.events import ControllerEventManager
from migration.zkcontroller.partition_states import ControllerMovedError, PartitionStateMachine
from migration.zkcontroller.requests import BrokerRequests

log = logging.getLogger(__name__)


class ZkController:
    """Active from :meth:`activate` (the election won, at ``epoch`` written at znode
    version ``epoch_version``) until :meth:`resign`."""

    def __init__(
        self,
        client: ZkClient,
        broker_id: int,
        *,
        epoch: int,
        epoch_version: int,
        internal_listener: str,
        unclean_default: bool = False,
        on_resign: Callable[[str], None] | None = None,
    ) -> None:
        self.client = client
        self.broker_id = broker_id
        self.epoch = epoch
        self.epoch_version = epoch_version
        self.on_resign = on_resign
        self.ctx = ControllerContext()
        self.channel = ControllerChannel()
        self.requests = BrokerRequests(self.ctx, self.channel, broker_id, epoch, internal_listener)
        self.events = ControllerEventManager(f"zk-controller-{broker_id}", self._event_failed)
        self.states = PartitionStateMachine(
            client,
            self.ctx,
            self.requests,
            self.events,
            epoch=epoch,
            epoch_version=epoch_version,
            unclean_default=unclean_default,
        )
        self.started = False  # the start-up event completed

    # --- lifecycle -------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        return self.events.running

    def activate(self) -> None:
        # Startup is queued before the controller turns active: a watch that fires at
        # once (a topic change) must not run on an empty context before it.
        self.events.start("startup", self._startup)

    def resign(self, why: str, level: int = logging.WARNING) -> None:
        """Stop acting (once; later calls do nothing), logged at ``level``, and tell the
        broker (``on_resign``), which releases ``/controller``."""
        if not self.events.stop():
            return
        log.log(
            level, "broker %d resigns as controller (epoch %d): %s", self.broker_id, self.epoch, why
        )
        self.channel.close()
        if self.on_resign is not None:
            self.on_resign(why)

    def submit(self, what: str, act: Callable[[], Any]) -> Future[Any]:
        return self.events.submit(what, act)

    def _event_failed(self, what: str, exc: Exception) -> None:
        """An event raised (on the event thread, which then ends): resign, and every
        queued event's waiter gets None (NOT_CONTROLLER) -- none is left waiting."""
        if isinstance(exc, ControllerMovedError):
            self.resign(f"{what}: {exc}")
        # a bug or ZooKeeper gone: stop acting, loudly
        elif self.active and what == "startup":  # one line; the traceback at DEBUG
            log.debug("controller start-up failed", exc_info=exc)
            why = f"its start-up failed: {type(exc).__name__}: {str(exc)[:300]}"
            self.resign(why, logging.ERROR)
        elif self.active:  # (a resigned controller's last write may fail: quiet)
            log.exception("controller event %s failed", what, exc_info=exc)
            self.resign(f"{what} failed: {exc}")
        self.events.drop_queued()

    def release(self) -> bool:
        """Delete ``/controller`` if it is still this controller's (after :meth:`resign`,
        so another broker can be elected); True when it was deleted.

        One multi: ``check(/controller_epoch)`` at the version this controller's
        election wrote, and ``delete(/controller)`` at version 0 (it is never rewritten).
        Every election and every KRaft claim changes ``/controller_epoch`` in the multi
        that creates its ``/controller``, so once either happened, or this broker's
        session expired (its ephemeral ``/controller`` is gone), the multi fails whole and
        nothing that is not this controller's is touched."""
        try:
            self.client.multi_write(
                [check(paths.CONTROLLER_EPOCH, self.epoch_version), delete(paths.CONTROLLER, 0)]
            )
        except ZkWriteError as exc:
            log.info(
                "broker %d did not release /controller (epoch %d): %s (a later election or "
                "claim changed /controller_epoch, or this session's /controller is gone)",
                self.broker_id,
                self.epoch,
                exc,
            )
            return False
        log.info("broker %d released /controller (epoch %d)", self.broker_id, self.epoch)
        return True

    # --- events -------------------------------------------------------------------------

    def _startup(self) -> None:
        snap = read_snapshot(self.client, parts=frozenset({"brokers", "topics"}))
        for problem in snap.malformed:
            self.states.skip(problem)
        self.ctx.live = dict(snap.brokers)
        self._learn_broker_epochs(self.ctx.live)
        self.channel.set_brokers(self.requests.targets())
        self.states.load(snap)
        # (the full UpdateMetadata and LeaderAndIsr below carry what these two change)
        self.states.create_missing(list(self.ctx.assignments), propagate=False)
        dead = {  # brokers the states still name but that are not registered
            r
            for state, _ in self.ctx.states.values()
            for r in (state.leader, *state.isr)
            if r >= 0 and r not in self.ctx.live
        }
        self.states.elect_offline(set(self.ctx.live), failed=dead, propagate=False)
        every = sorted(self.ctx.states)
        self.requests.announce(every, full=True)
        self.states.watch_all()
        self.states.delete_requested(sorted(snap.pending_deletions))
        log.info(
            "broker %d is the controller (epoch %d): %d brokers, %d partitions",
            self.broker_id,
            self.epoch,
            len(self.ctx.live),
            len(self.ctx.states),
        )
        self.started = True

    def _learn_broker_epochs(self, brokers: Iterable[int]) -> None:
        for b in brokers:
            try:
                _, stat = self.client.kazoo.get(paths.broker(b))
                self.ctx.broker_epochs[b] = stat.czxid
            except NoNodeError:  # gone meanwhile: the next broker change removes it
                # (any other failure fails the event: never a live broker's epoch dropped)
                self.ctx.broker_epochs.pop(b, None)

    def on_brokers(self, children: list[str]) -> None:
        self.submit(
            "broker change",
            lambda: self._brokers_changed({int(c) for c in children if c.isdigit()}),
        )

    def _brokers_changed(self, now: set[int]) -> None:
        gone = set(self.ctx.live) - now
        added = now - set(self.ctx.live)
        for b in sorted(added):
            try:
                data, _ = self.client.get(paths.broker(b))
                self.ctx.live[b] = parse_broker(paths.broker(b), data, b)
            except Exception as exc:
                log.warning("broker %d registration unreadable: %s", b, exc)
                added.discard(b)
        for b in gone:
            self.ctx.live.pop(b, None)
            self.ctx.broker_epochs.pop(b, None)
            self.ctx.shutting_down.discard(b)
        self._learn_broker_epochs(added)
        self.channel.set_brokers(self.requests.targets())
        if added:
            every = sorted(self.ctx.states)
            self.requests.update_metadata(added, every, full=True)
            self.requests.update_metadata(set(self.ctx.live) - added, [])
            mine = [k for b in added for k in self.ctx.partitions_of(b) if k in self.ctx.states]
            self.requests.leader_and_isr(sorted(set(mine)))
        self.states.elect_offline(set(self.ctx.live), gone)
        if gone and not added:
            self.requests.update_metadata(self.ctx.live, [])
        log.info(
            "brokers: live %s (joined %s, left %s)",
            sorted(self.ctx.live),
            sorted(added),
            sorted(gone),
        )

    def on_topics(self, children: list[str]) -> None:
        self.submit("topic change", lambda: self.states.topics_changed(set(children)))

    def on_deletions(self, children: list[str]) -> None:
        self.submit("topic deletion", lambda: self.states.delete_requested(sorted(children)))

    # --- requests from brokers ----------------------------------------------------------

    def alter_partition(self, req: bpb.AlterPartitionRequest) -> bpb.AlterPartitionResponse:
        future = self.submit("AlterPartition", lambda: self._alter_partition(req))
        result = future.result()
        if result is None:
            return _no_longer_controller(bpb.AlterPartitionResponse)
        return result  # type: ignore[no-any-return]

    def _alter_partition(self, req: bpb.AlterPartitionRequest) -> bpb.AlterPartitionResponse:
        response = bpb.AlterPartitionResponse()
        if req.broker_id not in self.ctx.live or (
            req.broker_epoch >= 0 and req.broker_epoch != self.ctx.broker_epochs.get(req.broker_id)
        ):
            response.error_code = ErrorCode.STALE_BROKER_EPOCH
            response.error_message = (
                f"broker {req.broker_id} epoch {req.broker_epoch} is not current"
            )
            return response
        changes: dict[TopicPartition, PartitionState] = {}
        for s in req.partitions:
            key = (s.topic_name, s.partition_index)
            code = self._alter_problem(req.broker_id, s)
            if code:
                response.partition_errors.add(
                    topic_name=s.topic_name, partition_index=s.partition_index, error_code=code
                )
                continue
            state, _ = self.ctx.states[key]
            changes[key] = state._replace(isr=tuple(s.isr), controller_epoch=self.epoch)
        if changes:
            self.states.set_states(changes)
            self.requests.update_metadata(self.ctx.live, sorted(changes))
            response.partitions.extend(self.requests.state(k) for k in sorted(changes))
        return response

    def _alter_problem(self, broker: int, s: bpb.PartitionState) -> int:
        key = (s.topic_name, s.partition_index)
        if key not in self.ctx.states:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        state, version = self.ctx.states[key]
        return rules.isr_change_problem(
            state,
            version,
            self.ctx.assignments[s.topic_name].partitions.get(s.partition_index, ()),
            broker,
            (s.leader_epoch, s.partition_epoch, tuple(s.isr)),
            usable=self.ctx.usable(),
        )

    def controlled_shutdown(
        self, req: bpb.ControlledShutdownRequest, timeout_s: float = 30.0
    ) -> bpb.ControlledShutdownResponse:
        """Answered within ``timeout_s`` (REQUEST_TIMED_OUT when the event thread is held
        up, e.g. by ZooKeeper being unreachable: the broker asking goes on stopping)."""
        future = self.submit("ControlledShutdown", lambda: self._controlled_shutdown(req))
        try:
            result = future.result(timeout=timeout_s)
        except TimeoutError:
            return bpb.ControlledShutdownResponse(
                error_code=ErrorCode.REQUEST_TIMED_OUT,
                error_message=f"the controller did not get to it within {timeout_s:g} s",
            )
        if result is None:
            return _no_longer_controller(bpb.ControlledShutdownResponse)
        return result  # type: ignore[no-any-return]

    def _controlled_shutdown(
        self, req: bpb.ControlledShutdownRequest
    ) -> bpb.ControlledShutdownResponse:
        broker = req.broker_id
        if broker not in self.ctx.live:
            return bpb.ControlledShutdownResponse(
                error_code=ErrorCode.BROKER_NOT_AVAILABLE,
                error_message=f"broker {broker} is not registered",
            )
        self.ctx.shutting_down.add(broker)
        usable = self.ctx.usable()
        changes: dict[TopicPartition, PartitionState] = {}
        for key in self.ctx.partitions_of(broker):
            if key in self.ctx.states:
                new = rules.shutting_down(self.ctx.states[key][0], broker, usable, self.epoch)
                if new is not None:
                    changes[key] = new
        if changes:
            self.states.set_states(changes)
            self.requests.announce(sorted(changes))
        response = bpb.ControlledShutdownResponse()
        for key in self.ctx.partitions_of(broker):
            if key in self.ctx.states and self.ctx.states[key][0].leader == broker:
                response.remaining.append(self.requests.state(key))
        return response


R = TypeVar("R", bpb.AlterPartitionResponse, bpb.ControlledShutdownResponse)


def _no_longer_controller(reply: type[R]) -> R:
    """The answer to a request whose controller lost the election before running it."""
    return reply(error_code=ErrorCode.NOT_CONTROLLER, error_message="no longer the controller")
