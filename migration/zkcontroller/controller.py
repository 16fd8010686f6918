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
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any, TypeVar

from migration.common.kafka_errors import ErrorCode
from migration.proto import broker_pb2 as bpb
from migration.zk import paths
from migration.zk.client import ZkClient, ZkWriteError
from migration.zk.errors import ZnodeFormatError
from migration.zk.jute import ERR_BAD_VERSION, ERR_NO_NODE, ERR_NODE_EXISTS
from migration.zk.model.brokers import parse_broker
from migration.zk.model.configs import parse_entity_config
from migration.zk.model.topics import (
    PartitionState,
    parse_partition_state,
    parse_topic,
    render_partition_state,
    topic_name_problem,
)
from migration.zk.multiread import NodeData, ReadError, ReadOp
from migration.zk.multiwrite import Op, check, create, delete, set_data
from migration.zk.reader import ZkReadError, read_snapshot
from migration.zk.reported import ReportedZnodes
from migration.zkcontroller import partition_rules as rules
from migration.zkcontroller.channel import ControllerChannel
from migration.zkcontroller.context import ControllerContext, TopicPartition
from migration.zkcontroller.requests import BrokerRequests

log = logging.getLogger(__name__)

OPS_PER_MULTI = 500


class ControllerMovedError(Exception):
    """Another controller was elected (the epoch check failed): stop acting."""


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
        self.unclean_default = unclean_default
        self.on_resign = on_resign
        self.ctx = ControllerContext()
        self.channel = ControllerChannel()
        self.requests = BrokerRequests(self.ctx, self.channel, broker_id, epoch, internal_listener)
        self.active = False
        self._events: queue.Queue[tuple[str, Callable[[], Any], Future[Any] | None] | None] = (
            queue.Queue()
        )
        self._thread = threading.Thread(
            target=self._run, name=f"zk-controller-{broker_id}", daemon=True
        )
        self._watched_topics: set[str] = set()
        self.started = False  # the start-up event completed
        self._bad = ReportedZnodes(log, logging.ERROR, "the controller skips it")
        self._unreadable_topics: set[str] = set()
        self._unreadable_states: set[TopicPartition] = set()

    # --- lifecycle -------------------------------------------------------------------------

    def activate(self) -> None:
        # Startup is queued before the controller turns active: a watch that fires at
        # once (a topic change) must not run on an empty context before it.
        self._events.put(("startup", self._startup, Future()))
        self.active = True
        self._thread.start()

    def resign(self, why: str, level: int = logging.WARNING) -> None:
        """Stop acting (once; later calls do nothing), logged at ``level``, and tell the
        broker (``on_resign``), which releases ``/controller``."""
        if not self.active:
            return
        self.active = False
        log.log(
            level, "broker %d resigns as controller (epoch %d): %s", self.broker_id, self.epoch, why
        )
        self._events.put(None)
        self.channel.close()
        if self.on_resign is not None:
            self.on_resign(why)

    def submit(self, what: str, act: Callable[[], Any]) -> Future[Any]:
        done: Future[Any] = Future()
        if not self.active:
            done.set_result(None)
        else:
            self._events.put((what, act, done))
        return done

    def _drop_queued(self) -> None:
        """Queued events are never run: their waiters get None (NOT_CONTROLLER)."""
        while True:
            try:
                item = self._events.get_nowait()
            except queue.Empty:
                return
            if item is not None and item[2] is not None and not item[2].done():
                item[2].set_result(None)

    def _run(self) -> None:
        while True:
            item = self._events.get()
            if item is None or not self.active:
                self._drop_queued()
                if item is not None and item[2] is not None:
                    item[2].set_result(None)
                return
            what, act, done = item
            try:
                result = act()
            except ControllerMovedError as exc:
                if done is not None:
                    done.set_result(None)
                self.resign(f"{what}: {exc}")
                return
            except Exception as exc:  # a bug or ZooKeeper gone: stop acting, loudly
                if done is not None:
                    done.set_result(None)
                if self.active and what == "startup":  # one line; the traceback at DEBUG
                    log.debug("controller start-up failed", exc_info=exc)
                    why = f"its start-up failed: {type(exc).__name__}: {str(exc)[:300]}"
                    self.resign(why, logging.ERROR)
                elif self.active:  # (a resigned controller's last write may fail: quiet)
                    log.exception("controller event %s failed", what)
                    self.resign(f"{what} failed: {exc}")
                self._drop_queued()
                return
            if done is not None:
                done.set_result(result)

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

    # --- fenced writes ------------------------------------------------------------------

    def _write(self, ops: list[Op]) -> None:
        """Apply ``ops`` in multis of at most OPS_PER_MULTI, each fenced on the epoch."""
        pending = []
        fence = check(paths.CONTROLLER_EPOCH, self.epoch_version)
        for start in range(0, len(ops), OPS_PER_MULTI):
            chunk = [fence, *ops[start : start + OPS_PER_MULTI]]
            pending.append((chunk, self.client.multi_write_async(chunk)))
        for chunk, result in pending:
            for op, r in zip(chunk, result.get(), strict=False):
                code = getattr(r, "code", 0)
                if code in (0, -2):  # -2: rolled back because another op failed
                    continue
                if op is fence:
                    raise ControllerMovedError(
                        f"/controller_epoch is no longer at {self.epoch_version}"
                    )
                raise ZkWriteError(op, code)

    def _set_states(self, changes: dict[TopicPartition, PartitionState]) -> None:
        ops = []
        for (t, p), state in changes.items():
            _, version = self.ctx.states[(t, p)]
            ops.append(
                set_data(paths.partition_state(t, p), render_partition_state(state), version)
            )
        self._write(ops)
        for key, state in changes.items():
            self.ctx.states[key] = (state, self.ctx.states[key][1] + 1)

    # --- events -------------------------------------------------------------------------

    def _startup(self) -> None:
        snap = read_snapshot(self.client, parts=frozenset({"brokers", "topics"}))
        bad = {problem.path: problem for problem in snap.malformed}
        for problem in snap.malformed:
            self._skip(problem)
        self.ctx.live = dict(snap.brokers)
        self._learn_broker_epochs(self.ctx.live)
        self.channel.set_brokers(self.requests.targets())
        for name, topic in snap.topics.items():
            self.ctx.assignments[name] = topic.assignment
            for pid, part in topic.partitions.items():
                if part.state is not None:
                    self.ctx.states[(name, pid)] = (part.state, part.zk_version)
            self._unreadable_states.update(
                (name, pid)
                for pid in topic.assignment.partitions
                if paths.partition_state(name, pid) in bad
            )
        self._unreadable_topics = {name for name in _topic_names(bad) if name not in snap.topics}
        # (the full UpdateMetadata and LeaderAndIsr below carry what these two change)
        self._create_missing_states(list(self.ctx.assignments), propagate=False)
        dead = {  # brokers the states still name but that are not registered
            r
            for state, _ in self.ctx.states.values()
            for r in (state.leader, *state.isr)
            if r >= 0 and r not in self.ctx.live
        }
        self._elect_offline(set(self.ctx.live), failed=dead, propagate=False)
        every = sorted(self.ctx.states)
        self.requests.announce(every, full=True)
        for name in (*self.ctx.assignments, *self._unreadable_topics):
            self._watch_topic(name)
        self._delete_requested(sorted(snap.pending_deletions))
        log.info(
            "broker %d is the controller (epoch %d): %d brokers, %d partitions",
            self.broker_id,
            self.epoch,
            len(self.ctx.live),
            len(self.ctx.states),
        )
        self.started = True

    def _skip(self, problem: ZnodeFormatError, mzxid: int | None = None) -> None:
        """Report a znode this controller cannot parse, once per content (its ``mzxid``,
        read here when the caller has no stat); the controller goes on without it."""
        if mzxid is None:
            stat = self.client.kazoo.exists(problem.path)
            mzxid = stat.mzxid if stat is not None else -1
        self._bad.report(problem, mzxid)

    def _learn_broker_epochs(self, brokers: Iterable[int]) -> None:
        for b in brokers:
            try:
                _, stat = self.client.kazoo.get(paths.broker(b))
                self.ctx.broker_epochs[b] = stat.czxid
            except Exception:  # gone meanwhile: the next broker change removes it
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
        self._elect_offline(set(self.ctx.live), gone)
        if gone and not added:
            self.requests.update_metadata(self.ctx.live, [])
        log.info(
            "brokers: live %s (joined %s, left %s)",
            sorted(self.ctx.live),
            sorted(added),
            sorted(gone),
        )

    def _unclean(self, topic: str) -> bool:
        path = paths.config_entity("topics", topic)
        try:
            data, stat = self.client.kazoo.get(path)
        except Exception:
            return self.unclean_default
        try:
            config = parse_entity_config(path, data, "topics", topic).config
        except ZnodeFormatError as exc:  # as if the topic had no config of its own
            self._skip(exc, stat.mzxid)
            return self.unclean_default
        self._bad.forget(path)
        value = config.get("unclean.leader.election.enable")
        return self.unclean_default if value is None else value.lower() == "true"

    def _elect_offline(self, live: set[int], failed: set[int], propagate: bool = True) -> None:
        changes: dict[TopicPartition, PartitionState] = {}
        usable = live - self.ctx.shutting_down
        for key, (state, _) in self.ctx.states.items():
            new = state
            replicas = self.ctx.assignments[key[0]].partitions.get(key[1], ())
            for gone in failed:
                moved = rules.without_broker(new, replicas, gone, usable, self.epoch)
                if moved is not None and moved.leader == rules.OFFLINE and self._unclean(key[0]):
                    moved = rules.without_broker(
                        new, replicas, gone, usable, self.epoch, unclean=True
                    )
                new = moved or new
            back = rules.back_online(new, usable, self.epoch)
            new = back or new
            if new is not state:
                changes[key] = new
        if changes:
            self._set_states(changes)
            if propagate:
                self.requests.announce(sorted(changes))

    def on_topics(self, children: list[str]) -> None:
        self.submit("topic change", lambda: self._topics_changed(set(children)))

    def _topics_changed(self, now: set[str]) -> None:
        for name in set(self.ctx.assignments) - now:  # deleted behind our back
            self._forget(name)
        for name in self._unreadable_topics - now:  # a bad topic znode deleted
            self._unreadable_topics.discard(name)
            self._bad.forget(paths.topic(name))
        new = sorted(now - set(self.ctx.assignments) - self._unreadable_topics)
        self._create_missing_states([name for name in new if self._load_topic(name)])

    def _load_topic(self, name: str) -> bool:
        """Read topic ``name``'s znode into the context (and watch it); False when it is
        gone or cannot be parsed (reported, skipped, watched: a repaired znode is read
        again; the assignment read before, if any, is kept meanwhile)."""
        path = paths.topic(name)
        try:
            data, stat = self.client.kazoo.get(path)
        except Exception:
            return False
        try:
            problem = topic_name_problem(name)  # as the start-up's reader refuses it
            if problem:
                raise ZnodeFormatError(path, problem)
            assignment = parse_topic(path, data, name)
        except ZnodeFormatError as exc:
            self._unreadable_topics.add(name)
            self._skip(exc, stat.mzxid)
            self._watch_topic(name)
            return False
        self._unreadable_topics.discard(name)
        self._bad.forget(path)
        self.ctx.assignments[name] = assignment
        self._watch_topic(name)
        return True

    def _watch_topic(self, name: str) -> None:
        """Partition additions arrive as a data change of the topic znode."""
        if name in self._watched_topics:
            return
        self._watched_topics.add(name)

        def fired(event: Any) -> None:
            self._watched_topics.discard(name)
            if self.active and event.type == "CHANGED":
                self.submit(f"partitions of {name}", lambda: self._partitions_changed(name))

        self.client.kazoo.exists_async(paths.topic(name), watch=fired)

    def _partitions_changed(self, name: str) -> None:
        if name not in self.ctx.assignments and name not in self._unreadable_topics:
            return
        if self._load_topic(name):
            self._create_missing_states([name])

    def _create_missing_states(self, names: Iterable[str], propagate: bool = True) -> None:
        """Give each partition of ``names`` without a known state one: a state znode
        that exists (a topic znode repaired after being skipped) is adopted, or
        skipped if it cannot be parsed; only absent ones are created."""
        ops: list[Op] = []
        created: dict[TopicPartition, PartitionState] = {}
        adopted: list[TopicPartition] = []
        usable = self.ctx.usable()
        for name in names:
            assignment = self.ctx.assignments.get(name)
            if assignment is None:
                continue
            unknown = [
                p
                for p in assignment.partitions
                if (name, p) not in self.ctx.states and (name, p) not in self._unreadable_states
            ]
            found = self._existing_states(name, unknown)
            adopted += [(name, p) for p in found if (name, p) in self.ctx.states]
            missing = [p for p in unknown if p not in found]
            if not missing:
                continue
            if not self._exists(paths.topic_partitions(name)):
                ops.append(create(paths.topic_partitions(name)))
            for p in sorted(missing):
                state = rules.initial_state(assignment.partitions[p], usable, self.epoch)
                if not self._exists(paths.partition(name, p)):
                    ops.append(create(paths.partition(name, p)))
                ops.append(create(paths.partition_state(name, p), render_partition_state(state)))
                created[(name, p)] = state
        if created:
            self._write(ops)
        for key, state in created.items():
            self.ctx.states[key] = (state, 0)
        if propagate and (created or adopted):
            self.requests.announce(sorted([*created, *adopted]))

    def _existing_states(self, name: str, pids: list[int]) -> set[int]:
        """Which of ``pids`` have a state znode (one multi-read): each is taken into the
        context, or reported and skipped when it cannot be parsed."""
        if not pids:
            return set()
        wanted = [paths.partition_state(name, p) for p in pids]
        results = self.client.multi_read([(ReadOp.GET_DATA, path) for path in wanted])
        found = set()
        for p, path, result in zip(pids, wanted, results, strict=True):
            if isinstance(result, ReadError) and not result.no_node:
                raise ZkReadError(path, result.code)
            if not isinstance(result, NodeData):  # absent (a getData never lists)
                continue
            found.add(p)
            try:
                self.ctx.states[(name, p)] = (
                    parse_partition_state(path, result.data),
                    result.version,
                )
            except ZnodeFormatError as exc:
                self._unreadable_states.add((name, p))
                self._skip(exc)
        return found

    def _exists(self, path: str) -> bool:
        return self.client.kazoo.exists(path) is not None

    def on_deletions(self, children: list[str]) -> None:
        self.submit("topic deletion", lambda: self._delete_requested(sorted(children)))

    def _delete_requested(self, names: list[str]) -> None:
        """ZooKeeper first (so a client answered after the brokers' caches drop the
        topic finds it gone from ZooKeeper too), then the brokers."""
        for name in names:
            assignment = self.ctx.assignments.get(name)
            keys = [(name, p) for p in sorted(assignment.partitions)] if assignment else []
            ops: list[Op] = []
            for _, p in keys:
                if (name, p) in self.ctx.states or (name, p) in self._unreadable_states:
                    ops.append(delete(paths.partition_state(name, p)))
                if self._exists(paths.partition(name, p)):
                    ops.append(delete(paths.partition(name, p)))
            if assignment is not None:
                if self._exists(paths.topic_partitions(name)):
                    ops.append(delete(paths.topic_partitions(name)))
                ops.append(delete(paths.topic(name)))
                if self._exists(paths.config_entity("topics", name)):
                    ops.append(delete(paths.config_entity("topics", name)))
            ops.append(delete(paths.delete_topic(name)))
            try:
                self._write(ops)
            except ZkWriteError as exc:
                if exc.code not in (ERR_NO_NODE, ERR_NODE_EXISTS, ERR_BAD_VERSION):
                    raise
                log.warning("deleting topic %s: %s (retrying on the next change)", name, exc)
                continue
            if keys:
                self.requests.update_metadata(self.ctx.live, keys, deleted=True)
                self.requests.stop_replicas(keys)
            self._forget(name)
            log.info("topic %s deleted", name)

    def _forget(self, name: str) -> None:
        assignment = self.ctx.assignments.pop(name, None)
        if assignment is not None:
            for p in assignment.partitions:
                self.ctx.states.pop((name, p), None)
                if (name, p) in self._unreadable_states:
                    self._unreadable_states.discard((name, p))
                    self._bad.forget(paths.partition_state(name, p))
        self._unreadable_topics.discard(name)
        self._bad.forget(paths.topic(name))

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
            self._set_states(changes)
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
            self._set_states(changes)
            self.requests.announce(sorted(changes))
        response = bpb.ControlledShutdownResponse()
        for key in self.ctx.partitions_of(broker):
            if key in self.ctx.states and self.ctx.states[key][0].leader == broker:
                response.remaining.append(self.requests.state(key))
        return response


def _topic_names(znode_paths: Iterable[str]) -> list[str]:
    """The topics whose own znode (``/brokers/topics/<name>``) is among ``znode_paths``."""
    prefix = paths.TOPICS + "/"
    return [
        p[len(prefix) :]
        for p in znode_paths
        if p.startswith(prefix) and "/" not in p[len(prefix) :]
    ]


R = TypeVar("R", bpb.AlterPartitionResponse, bpb.ControlledShutdownResponse)


def _no_longer_controller(reply: type[R]) -> R:
    """The answer to a request whose controller lost the election before running it."""
    return reply(error_code=ErrorCode.NOT_CONTROLLER, error_message="no longer the controller")
