"""The ZooKeeper controller's topics and partition states (Kafka's PartitionStateMachine
and TopicDeletionManager, with KafkaZkClient's fenced writes).

Owns, in the controller's context, the topic assignments and the partition states with
their znode versions, and in ZooKeeper the znodes below ``/brokers/topics`` and the
deletion requests: it reads topic znodes (and watches each for new partitions), gives
partitions without a state one, elects leaders for partitions whose leader or ISR
members left (unclean only where the topic's config allows it), and deletes requested
topics; every change it makes is announced to the brokers (UpdateMetadata,
LeaderAndIsr, StopReplica) through :class:`~.requests.BrokerRequests`.

Fencing: every write is one multi (at most OPS_PER_MULTI ops) that starts with
``check(/controller_epoch, the version this controller's election wrote)``; a failed
check raises :class:`ControllerMovedError`. A partition state is set at the znode version
read, and carries the controller epoch.

Bad data: a topic znode or partition state that cannot be parsed is reported at ERROR
once per content and skipped (see :mod:`~.controller`).

Threading: every method but a topic watch's firing (kazoo's thread, which only submits
an event) runs on the controller's event thread.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from kazoo.exceptions import NoNodeError

from migration.records.names import topic_name_problem
from migration.zk import paths
from migration.zk.client import ZkClient, ZkWriteError
from migration.zk.errors import ZnodeFormatError
from migration.zk.jute import ERR_BAD_VERSION, ERR_NO_NODE, ERR_NODE_EXISTS
from migration.zk.model.configs import parse_entity_config
from migration.zk.model.topics import (
    PartitionState,
    parse_partition_state,
    parse_topic,
    render_partition_state,
)
from migration.zk.multiread import NodeData, ReadError, ReadOp
from migration.zk.multiwrite import Op, check, create, delete, set_data
from migration.zk.reader import ZkReadError
from migration.zk.reported import ReportedZnodes
from migration.zk.tree_read import ZkSnapshot
from migration.zkcontroller import partition_rules as rules
from migration.zkcontroller.context import ControllerContext, TopicPartition
from migration.zkcontroller.events import ControllerEventManager
from migration.zkcontroller.requests import BrokerRequests

log = logging.getLogger(__name__)

OPS_PER_MULTI = 500


class ControllerMovedError(Exception):
    """Another controller was elected (the epoch check failed): stop acting."""


class PartitionStateMachine:
    """The topics and partition states of one controller (epoch ``epoch``, elected at
    ``/controller_epoch`` version ``epoch_version``)."""

    def __init__(
        self,
        client: ZkClient,
        ctx: ControllerContext,
        requests: BrokerRequests,
        events: ControllerEventManager,
        *,
        epoch: int,
        epoch_version: int,
        unclean_default: bool,
    ) -> None:
        self.client = client
        self.ctx = ctx
        self.requests = requests
        self.events = events
        self.epoch = epoch
        self.epoch_version = epoch_version
        self.unclean_default = unclean_default
        self._watched_topics: set[str] = set()
        self._bad = ReportedZnodes(log, logging.ERROR, "the controller skips it")
        self._unreadable_topics: set[str] = set()
        self._unreadable_states: set[TopicPartition] = set()

    # --- fenced writes ------------------------------------------------------------------

    def write(self, ops: list[Op]) -> None:
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

    def set_states(self, changes: dict[TopicPartition, PartitionState]) -> None:
        ops = []
        for (t, p), state in changes.items():
            _, version = self.ctx.states[(t, p)]
            ops.append(
                set_data(paths.partition_state(t, p), render_partition_state(state), version)
            )
        self.write(ops)
        for key, state in changes.items():
            self.ctx.states[key] = (state, self.ctx.states[key][1] + 1)

    # --- reading ----------------------------------------------------------------------

    def load(self, snap: ZkSnapshot) -> None:
        """Take the start-up snapshot's topics and partition states into the context
        (its malformed znodes already reported with :meth:`skip`)."""
        bad = {problem.path: problem for problem in snap.malformed}
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

    def watch_all(self) -> None:
        """Watch every topic znode known, readable or not."""
        for name in (*self.ctx.assignments, *self._unreadable_topics):
            self._watch_topic(name)

    def skip(self, problem: ZnodeFormatError, mzxid: int | None = None) -> None:
        """Report a znode this controller cannot parse, once per content (its ``mzxid``,
        read here when the caller has no stat); the controller goes on without it."""
        if mzxid is None:
            stat = self.client.kazoo.exists(problem.path)
            mzxid = stat.mzxid if stat is not None else -1
        self._bad.report(problem, mzxid)

    def _unclean(self, topic: str) -> bool:
        path = paths.config_entity("topics", topic)
        try:
            data, stat = self.client.kazoo.get(path)
        except NoNodeError:  # no config of its own (any other failure fails the event)
            return self.unclean_default
        try:
            config = parse_entity_config(path, data, "topics", topic).config
        except ZnodeFormatError as exc:  # as if the topic had no config of its own
            self.skip(exc, stat.mzxid)
            return self.unclean_default
        self._bad.forget(path)
        value = config.get("unclean.leader.election.enable")
        return self.unclean_default if value is None else value.lower() == "true"

    # --- leader elections ---------------------------------------------------------------

    def elect_offline(self, live: set[int], failed: set[int], propagate: bool = True) -> None:
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
            self.set_states(changes)
            if propagate:
                self.requests.announce(sorted(changes))

    # --- topics and partitions ----------------------------------------------------------

    def topics_changed(self, now: set[str]) -> None:
        for name in set(self.ctx.assignments) - now:  # deleted behind our back
            self._forget(name)
        for name in self._unreadable_topics - now:  # a bad topic znode deleted
            self._unreadable_topics.discard(name)
            self._bad.forget(paths.topic(name))
        new = sorted(now - set(self.ctx.assignments) - self._unreadable_topics)
        self.create_missing([name for name in new if self._load_topic(name)])

    def _load_topic(self, name: str) -> bool:
        """Read topic ``name``'s znode into the context (and watch it); False when it is
        gone or cannot be parsed (reported, skipped, watched: a repaired znode is read
        again; the assignment read before, if any, is kept meanwhile)."""
        path = paths.topic(name)
        try:
            data, stat = self.client.kazoo.get(path)
        except NoNodeError:  # gone (any other failure fails the event: never a topic lost)
            return False
        try:
            problem = topic_name_problem(name)  # as the start-up's reader refuses it
            if problem:
                raise ZnodeFormatError(path, problem)
            assignment = parse_topic(path, data, name)
        except ZnodeFormatError as exc:
            self._unreadable_topics.add(name)
            self.skip(exc, stat.mzxid)
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
            if self.events.running and event.type == "CHANGED":
                self.events.submit(f"partitions of {name}", lambda: self._partitions_changed(name))

        self.client.kazoo.exists_async(paths.topic(name), watch=fired)

    def _partitions_changed(self, name: str) -> None:
        if name not in self.ctx.assignments and name not in self._unreadable_topics:
            return
        if self._load_topic(name):
            self.create_missing([name])

    def create_missing(self, names: Iterable[str], propagate: bool = True) -> None:
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
            self.write(ops)
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
                self.skip(exc)
        return found

    def _exists(self, path: str) -> bool:
        return self.client.kazoo.exists(path) is not None

    # --- topic deletion -----------------------------------------------------------------

    def delete_requested(self, names: list[str]) -> None:
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
                self.write(ops)
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


def _topic_names(znode_paths: Iterable[str]) -> list[str]:
    """The topics whose own znode (``/brokers/topics/<name>``) is among ``znode_paths``."""
    prefix = paths.TOPICS + "/"
    return [
        p[len(prefix) :]
        for p in znode_paths
        if p.startswith(prefix) and "/" not in p[len(prefix) :]
    ]
