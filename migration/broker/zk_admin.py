"""Admin requests on a ZooKeeper-mode broker, carried out through ZooKeeper as Kafka's
ZooKeeper brokers do, with the controller's own handlers deciding (one implementation of
Kafka's validation, placement and error codes).

A request is run by the controller's handler against the broker's view (its metadata
cache plus what it learned from ZooKeeper); the records it produces are turned into
ZooKeeper operations by the writer's planner (:func:`migration.bridge.plan.plan`, the rule
the migration's dual-write follows), minus what Kafka leaves to the ZooKeeper
controller (partition states). So:

- CreateTopics writes ``/brokers/topics/T`` (assignment and a new topic id) and
  ``/config/topics/T``; the controller creates the partition states. One multi per
  topic, so one topic's failure does not fail the others; a topic znode that appeared
  meanwhile answers TOPIC_ALREADY_EXISTS.
- CreatePartitions rewrites ``/brokers/topics/T`` at the version it read.
- Configs, quotas and SCRAM rewrite ``/config/<type>/<name>`` and add a
  ``config_change_`` notification; ACLs rewrite the resource's znode and add an
  ``acl_changes_`` notification. Each set or delete carries the znode version this
  broker read (a version-checked read-modify-write): a concurrent change makes the
  multi fail, the broker re-reads ZooKeeper and runs the request again.
- DeleteTopics creates ``/admin/delete_topics/T``; the controller deletes.
- DeleteAcls re-reads the ACLs from ZooKeeper first: what a filter deletes (and the
  answer lists) does not depend on which notifications this broker has seen.

Like Kafka's brokers, topic requests answer once this broker's metadata cache shows the
result (or REQUEST_TIMED_OUT after the request's timeout: the change is in ZooKeeper
and completes anyway). Once ``/controller`` is owned by a KRaft controller, a ZooKeeper
broker never writes admin changes to ZooKeeper (NOT_CONTROLLER); every multi it writes
checks ``/controller_epoch`` at the version it read beside a ZooKeeper-era
``/controller``, so a write racing the KRaft controller's claim fails instead of landing
after the copy read ZooKeeper, where nothing would bring it into the log.

Threading: :meth:`ZkAdmin.write` blocks (ZooKeeper round trips) and may be called from
several threads; concurrent writes are serialized by ZooKeeper's version checks.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from migration.bridge.mirror import ImageView
from migration.bridge.plan import Scope, plan
from migration.broker.admin_rules import AdminSettings, dry_run, topics_led
from migration.broker.zk_view import ZkEntityWatcher
from migration.common.kafka_errors import ErrorCode
from migration.controller.context import TooManyRecordsError, WriteContext
from migration.controller.errors import request_error
from migration.controller.handlers import HANDLERS
from migration.controller.registry import BrokerRegistry
from migration.controller.service import with_error
from migration.image.delta import MetadataDelta
from migration.image.model import MetadataImage
from migration.proto import controller_pb2 as cpb
from migration.zk import paths
from migration.zk.client import ZkClient, ZkWriteError
from migration.zk.jute import ERR_BAD_VERSION, ERR_NO_NODE, ERR_NODE_EXISTS
from migration.zk.model.cluster import ControllerZnode, parse_controller
from migration.zk.model.topics import parse_topic
from migration.zk.multiread import NodeData, ReadOp
from migration.zk.multiwrite import Op, WriteOp, check, create

log = logging.getLogger(__name__)

ATTEMPTS = 5  # read-modify-write rounds before giving up on a contended znode
RACES = (ERR_BAD_VERSION, ERR_NODE_EXISTS, ERR_NO_NODE)
_REASSIGNMENT = (
    "partition reassignment is served once a KRaft controller owns the cluster (from the "
    "migration's dual-write on); this ZooKeeper-mode cluster's controller does not run it"
)
KRAFT_ONLY = {
    "AlterPartitionReassignments": _REASSIGNMENT,
    "ListPartitionReassignments": _REASSIGNMENT,
}
"""The requests only a KRaft controller answers, each with the reason a ZooKeeper-mode
broker gives (UNSUPPORTED_VERSION)."""


class ZkAdmin:
    def __init__(
        self,
        *,
        client: ZkClient,
        entities: ZkEntityWatcher,
        view: Callable[[], MetadataImage],
        wait: Callable[[Callable[[MetadataImage], bool], float], bool],
        owner: Callable[[], ControllerZnode | None],
        settings: AdminSettings,
        secret: str | None,
        controller_epoch: Callable[[], int],
    ) -> None:
        self._client = client
        self._entities = entities
        self._view = view
        self._wait = wait
        self._owner = owner
        self._settings = settings
        self._secret = secret
        self._controller_epoch = controller_epoch
        self._registry = BrokerRegistry(0, time.monotonic)

    def write(self, method: str, request: Any, validate_only: bool, timeout_ms: int) -> Any:
        owner = self._owner()
        if owner is not None and owner.is_kraft:
            return with_error(method, request_error(ErrorCode.NOT_CONTROLLER, _kraft_owned(owner)))
        if method in KRAFT_ONLY:
            refused = request_error(ErrorCode.UNSUPPORTED_VERSION, KRAFT_ONLY[method])
            return with_error(method, refused)
        if method == "DeleteTopics":
            return self._delete_topics(request, timeout_ms)
        if method == "DeleteAcls":
            # Decided against ZooKeeper as it is now, not this broker's view: an ACL made
            # through another broker whose notification has not arrived yet is deleted
            # too (Kafka reads the znode of each resource a filter names).
            self._entities.refresh()
        if method == "CreateTopics" and len(request.topics) > 1:
            return self._create_topics_one_by_one(request, validate_only, timeout_ms)
        for _ in range(ATTEMPTS):
            outcome = self._attempt(method, request, validate_only)
            if outcome is None:
                continue  # ZooKeeper changed under us: re-read and run again
            response, new = outcome
            if new is not None:
                self._settle(method, request, new, timeout_ms)
            return response
        return with_error(
            method,
            request_error(
                ErrorCode.REQUEST_TIMED_OUT,
                f"the znodes kept changing under the request ({ATTEMPTS} attempts); retry",
            ),
        )

    def validate(self, method: str, request: Any) -> Any:
        """``method`` checked against this broker's view by the controller's handler;
        nothing is written (validate_only)."""
        return dry_run(self._view(), self._settings, method, request)

    # --- one read-modify-write round -------------------------------------------------------

    def _attempt(
        self, method: str, request: Any, validate_only: bool
    ) -> tuple[Any, MetadataImage | None] | None:
        base = self._view()
        versions = self._entities.current().versions
        ctx = WriteContext(base, base.offset + 1, self._registry, self._settings)
        try:
            response = with_error(method, HANDLERS[method](ctx, request))
        except TooManyRecordsError as exc:
            return with_error(method, request_error(ErrorCode.POLICY_VIOLATION, str(exc))), None
        if validate_only or not ctx.records:
            return response, None
        delta = MetadataDelta(base)
        for i, record in enumerate(ctx.records):
            delta.replay(record, base.offset + 1 + i, 0)
        new = delta.apply()
        epoch = self._controller_epoch()
        try:
            planned = plan(
                ImageView(base, epoch, self._secret),
                ImageView(new, epoch, self._secret),
                Scope.of_change(base, delta),
                self._secret,
            )
        except ValueError as exc:  # a password config and no password.encoder.secret
            return with_error(method, request_error(ErrorCode.INVALID_CONFIG, str(exc))), None
        ops = [
            self._guarded(op, versions)
            for op in planned.ops
            if not _below_topic(op.path)  # partitions and their states are the controller's
        ]
        try:
            ops = [*self._fence(), *(self._topic_version(op, base) for op in ops)]
            self._client.multi_write(ops)
        except _StaleViewError:
            return None
        except _KraftOwnedError as exc:
            return with_error(method, request_error(ErrorCode.NOT_CONTROLLER, str(exc))), None
        except ZkWriteError as exc:
            if exc.code == ERR_NODE_EXISTS and exc.op.path.startswith(paths.TOPICS + "/"):
                name = exc.op.path.rsplit("/", 1)[1]
                return _topic_exists(name), None
            if exc.code not in RACES:
                raise
            log.info("%s raced another change (%s); re-reading ZooKeeper", method, exc)
            self._entities.refresh()
            return None
        return response, new

    def _fence(self) -> list[Op]:
        """The check that ties this write to the ZooKeeper controllers' era:
        ``/controller_epoch`` at the version read now, with ``/controller`` (read after
        it) not a KRaft controller's. A KRaft controller's claim bumps
        ``/controller_epoch`` in the multi that takes ``/controller``, so a write racing
        the claim fails its check (BadVersion: re-read, and the retry is refused) and
        cannot land after the copy read ZooKeeper. No check while ``/controller_epoch``
        does not exist (no controller was ever elected)."""
        epoch_read, controller_read = self._client.multi_read(
            [(ReadOp.GET_DATA, paths.CONTROLLER_EPOCH), (ReadOp.GET_DATA, paths.CONTROLLER)]
        )
        if isinstance(controller_read, NodeData):
            owner = parse_controller(paths.CONTROLLER, controller_read.data)
            if owner.is_kraft:
                raise _KraftOwnedError(_kraft_owned(owner))
        return (
            [check(paths.CONTROLLER_EPOCH, epoch_read.version)]
            if isinstance(epoch_read, NodeData)
            else []
        )

    def _guarded(self, op: Op, versions: dict[str, int]) -> Op:
        """A set or delete of a config or ACL znode, checked against the version read."""
        if op.kind in (WriteOp.SET_DATA, WriteOp.DELETE) and op.path in versions:
            return replace(op, version=versions[op.path])
        return op

    def _topic_version(self, op: Op, base: MetadataImage) -> Op:
        """A rewrite of a topic's assignment (CreatePartitions), checked against the
        version read now, which must hold the partitions this broker's view holds."""
        if op.kind != WriteOp.SET_DATA or op.path.rpartition("/")[0] != paths.TOPICS:
            return op
        name = op.path.rsplit("/", 1)[1]
        data, version = self._client.get(op.path)
        topic = base.topic(name)
        if topic is None or set(parse_topic(op.path, data, name).partitions) != set(
            topic.partitions
        ):
            self._wait(lambda image: image is not base, 1.0)  # the cache is behind
            raise _StaleViewError
        return replace(op, version=version)

    # --- after the write --------------------------------------------------------------------

    def _settle(self, method: str, request: Any, new: MetadataImage, timeout_ms: int) -> None:
        """Answer as Kafka does: topic changes once this broker's cache shows them with
        leaders; entity changes once this broker re-read them (its own next describe
        sees them; other brokers follow their notifications)."""
        if method in ("CreateTopics", "CreatePartitions"):
            wanted = {t.name: len(t.partitions) for t in new.topics.values()}
            names = [t.name for t in request.topics]
            self._wait(topics_led(names, wanted), timeout_ms / 1000)
            return
        self._entities.refresh()

    def _create_topics_one_by_one(
        self, request: cpb.CreateTopicsRequest, validate_only: bool, timeout_ms: int
    ) -> cpb.CreateTopicsResponse:
        out = cpb.CreateTopicsResponse()
        names = [t.name for t in request.topics]
        for topic in request.topics:
            if names.count(topic.name) > 1:
                out.topics.add(
                    name=topic.name,
                    error_code=ErrorCode.INVALID_REQUEST,
                    error_message=f"topic {topic.name} appears more than once in the request",
                )
                continue
            one = cpb.CreateTopicsRequest(topics=[topic], validate_only=request.validate_only)
            answer = self.write("CreateTopics", one, validate_only, timeout_ms)
            if answer.HasField("error") and answer.error.error_code:
                out.topics.add(
                    name=topic.name,
                    error_code=answer.error.error_code,
                    error_message=answer.error.error_message,
                )
            else:
                out.topics.extend(answer.topics)
        return out

    def _delete_topics(
        self, request: cpb.DeleteTopicsRequest, timeout_ms: int
    ) -> cpb.ItemsResponse:
        base = self._view()
        ctx = WriteContext(base, base.offset + 1, self._registry, self._settings)
        response = with_error("DeleteTopics", HANDLERS["DeleteTopics"](ctx, request))
        if response.HasField("error") and response.error.error_code:
            return response  # type: ignore[no-any-return]
        doomed = [r.name for r in response.results if r.error_code == ErrorCode.NONE]
        for name in doomed:
            for _ in range(ATTEMPTS):
                try:
                    self._client.multi_write([*self._fence(), create(paths.delete_topic(name))])
                except _KraftOwnedError as exc:
                    refused = request_error(ErrorCode.NOT_CONTROLLER, str(exc))
                    return with_error("DeleteTopics", refused)  # type: ignore[no-any-return]
                except ZkWriteError as exc:
                    if exc.code == ERR_BAD_VERSION:  # a controller election or a claim
                        continue
                    if exc.code != ERR_NODE_EXISTS:  # already requested: fine
                        raise
                break
        gone = self._wait(
            lambda image: all(image.topic(n) is None for n in doomed), timeout_ms / 1000
        )
        if not gone:  # Kafka's answer too: the deletion goes on without the client
            still = self._view()
            for r in response.results:
                if r.name in doomed and still.topic(r.name) is not None:
                    r.error_code = ErrorCode.REQUEST_TIMED_OUT
                    r.error_message = "deletion requested in ZooKeeper; not yet complete"
        return response  # type: ignore[no-any-return]


class _KraftOwnedError(Exception):
    """``/controller`` names a KRaft controller: this broker writes nothing itself."""


def _kraft_owned(owner: ControllerZnode) -> str:
    return (
        f"a KRaft controller (id {owner.broker_id}) owns this cluster: "
        "a ZooKeeper broker no longer writes admin changes to ZooKeeper"
    )


def _below_topic(path: str) -> bool:
    """``/brokers/topics/T/...``: a topic's partitions and their states."""
    return path.startswith(paths.TOPICS + "/") and path.count("/") > 3


class _StaleViewError(Exception):
    """The broker's view is behind ZooKeeper: run the request again on a fresher one."""


def _topic_exists(name: str) -> cpb.CreateTopicsResponse:
    out = cpb.CreateTopicsResponse()
    out.topics.add(
        name=name,
        error_code=ErrorCode.TOPIC_ALREADY_EXISTS,
        error_message=f"Topic '{name}' already exists.",
    )
    return out
