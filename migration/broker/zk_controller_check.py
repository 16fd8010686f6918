"""Whether a controller request (UpdateMetadata, LeaderAndIsr, StopReplica) on a
ZooKeeper-mode broker's inter-broker listener comes from the controller ZooKeeper
names: a stranger must not blank a broker's metadata, nor fence real updates off with
a huge epoch.

Contract:

- A request is accepted only when its header names the controller ``/controller``
  names (its id, and whether it is a KRaft controller: a ZooKeeper-mode broker's
  ephemeral znode, or a migrating KRaft controller's persistent one with its
  ``kraftControllerEpoch``) in the epoch ``/controller_epoch`` holds. Every claim of
  ``/controller`` (a broker's election, a KRaft controller's claim) bumps
  ``/controller_epoch`` in the same multi, and a rollback deletes ``/controller``: one
  epoch has at most one controller, and a real controller's claim is committed before
  it sends anything.
- ZooKeeper is read only when a request disagrees with the last view read (a newer
  epoch, another controller) or when the broker's ``/controller`` watch has since seen
  another ``/controller`` (the watch may lag a real new controller; it also ends the
  trust in a deposed one). A header older than the last epoch read is refused without
  a read: ``/controller_epoch`` never goes back. Requests that agree with the view read
  cost nothing.
- A read is ZooKeeper's ``sync`` then one multi-read of both znodes, so a server
  lagging behind the leader cannot hide a new controller's claim. Reads are one at a
  time; a request waiting for one uses any read begun after it arrived instead of
  reading again, so a burst of forged requests costs a read per wave, not per request.
- Bounded: a request waits at most ``timeout_s`` (its wait for another read included);
  past it :class:`UndecidedError`, which the service answers with gRPC
  UNAVAILABLE, a code the controllers' channels retry. Nothing is decided on a view
  ZooKeeper did not give.
- A refusal is Kafka's STALE_CONTROLLER_EPOCH (see :func:`judge`); the caller logs it
  and leaves the metadata cache untouched.

Threading: :meth:`ControllerCheck.check` is called from the gRPC service's threads.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from migration.common.kafka_errors import ErrorCode
from migration.proto import broker_pb2 as bpb
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.errors import ZnodeFormatError
from migration.zk.model.cluster import ControllerZnode, parse_controller, parse_controller_epoch
from migration.zk.multiread import NodeData, ReadOp

log = logging.getLogger(__name__)

READ_TIMEOUT_S = 10.0
"""How long a request may wait for ZooKeeper: well inside the controllers' 30 s RPC
deadline, so the sender hears UNAVAILABLE and retries rather than timing out."""


class UndecidedError(RuntimeError):
    """A check that needs ZooKeeper could not be made within its bound (here: who the
    controller is). Nothing is applied; the caller answers UNAVAILABLE, which the sender
    retries."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """A request refused: Kafka's error code and a message for the sender and the log."""

    code: ErrorCode
    message: str


@dataclass(frozen=True, slots=True)
class KnownController:
    """What ZooKeeper said: ``/controller`` (None: no controller, or unreadable) and
    ``/controller_epoch`` (-1 when absent)."""

    owner: ControllerZnode | None
    epoch: int

    def names(self, header: bpb.ControllerHeader) -> bool:
        """Whether ``header`` is this controller's, in this epoch."""
        owner = self.owner
        return (
            owner is not None
            and owner.broker_id == header.controller_id
            and owner.is_kraft == header.is_kraft_controller
            and self.epoch == header.controller_epoch
        )

    def __str__(self) -> str:
        if self.owner is None:
            return f"no controller (/controller_epoch {self.epoch})"
        kind = "KRaft controller" if self.owner.is_kraft else "broker"
        return f"{kind} {self.owner.broker_id} in controller epoch {self.epoch}"


def sender(header: bpb.ControllerHeader) -> str:
    """The controller a header claims to come from, for messages."""
    kind = "KRaft controller" if header.is_kraft_controller else "controller"
    return f"{kind} {header.controller_id} (controller epoch {header.controller_epoch})"


def judge(header: bpb.ControllerHeader, known: KnownController) -> Refusal | None:
    """None when ``known`` (what ZooKeeper says) names the header's controller and
    epoch; else the refusal.

    Both refusals are STALE_CONTROLLER_EPOCH. For an older epoch it is Kafka's own
    answer. For a controller ZooKeeper does not name (another id in the current epoch,
    an epoch ZooKeeper never reached, no ``/controller`` at all) it is the answer too:
    Kafka's brokers answer a request from a controller that is not the current one with
    ControllerMovedException, whose code is STALE_CONTROLLER_EPOCH ("the controller
    moved to another broker"), and that is what it tells the sender. NOT_CONTROLLER
    would say the receiver is not the controller (the answer to broker-to-controller
    requests), INVALID_REQUEST that the request is malformed, which it is not, and
    CLUSTER_AUTHORIZATION_FAILED is the authorizer's (the principal's rights, checked
    before this)."""
    if header.controller_epoch < known.epoch:
        return Refusal(
            ErrorCode.STALE_CONTROLLER_EPOCH,
            f"{sender(header)}: epoch older than ZooKeeper's /controller_epoch {known.epoch}",
        )
    if known.names(header):
        return None
    return Refusal(
        ErrorCode.STALE_CONTROLLER_EPOCH,
        f"{sender(header)} is not the controller ZooKeeper names ({known})",
    )


def read_controller(client: ZkClient, timeout_s: float) -> KnownController:
    """``/controller`` and ``/controller_epoch`` as ZooKeeper's leader has them (a sync,
    then one multi-read), within ``timeout_s``; :class:`UndecidedError` else.
    An unreadable ``/controller`` counts as none (logged): nobody is obeyed."""
    try:
        client.kazoo.sync_async(paths.CONTROLLER)
        results = client.multi_read_async(
            [(ReadOp.GET_DATA, paths.CONTROLLER), (ReadOp.GET_DATA, paths.CONTROLLER_EPOCH)]
        ).get(timeout=timeout_s)
    except (KazooException, KazooTimeoutError) as exc:
        raise UndecidedError(
            f"{paths.CONTROLLER} not read from ZooKeeper within {timeout_s:g} s "
            f"({type(exc).__name__})"
        ) from None
    controller, epoch = results
    try:
        owner = (
            parse_controller(paths.CONTROLLER, controller.data)
            if isinstance(controller, NodeData)
            else None
        )
        value = (
            parse_controller_epoch(paths.CONTROLLER_EPOCH, epoch.data)
            if isinstance(epoch, NodeData)
            else -1
        )
    except ZnodeFormatError as exc:
        log.error("no controller request is obeyed: %s", exc)
        return KnownController(None, -1)
    return KnownController(owner, value)


class ControllerCheck:
    """The check of the module doc over ``read`` (ZooKeeper, bounded by the seconds it
    is given) and ``watched`` (what the broker's ``/controller`` watch last saw)."""

    def __init__(
        self,
        read: Callable[[float], KnownController],
        watched: Callable[[], ControllerZnode | None],
        timeout_s: float = READ_TIMEOUT_S,
    ) -> None:
        self._read = read
        self._watched = watched
        self._timeout_s = timeout_s
        self._lock = threading.Lock()  # one read at a time
        self._known: KnownController | None = None
        self._begun = 0  # reads begun
        self._answered = 0  # the number of the last read that answered

    def check(self, header: bpb.ControllerHeader) -> Refusal | None:
        """None to accept the request; a :class:`Refusal` otherwise. Raises
        :class:`UndecidedError` when ZooKeeper must be read and cannot be."""
        arrived = self._begun
        known = self._known
        if known is not None:
            if header.controller_epoch < known.epoch:
                return judge(header, known)  # /controller_epoch never goes back
            if known.names(header) and self._watched() == known.owner:
                return None
        return judge(header, self._fresh(arrived))

    def _fresh(self, arrived: int) -> KnownController:
        """A view read after the request arrived (another request's, or read now)."""
        deadline = time.monotonic() + self._timeout_s
        if not self._lock.acquire(timeout=self._timeout_s):
            raise UndecidedError(
                f"another read of {paths.CONTROLLER} held this request {self._timeout_s:g} s"
            )
        try:
            if self._answered > arrived and self._known is not None:
                return self._known
            self._begun += 1
            number = self._begun
            known = self._read(max(deadline - time.monotonic(), 0.1))
            if known != self._known:
                log.info("ZooKeeper names %s", known)
            self._known, self._answered = known, number
            return known
        finally:
            self._lock.release()
