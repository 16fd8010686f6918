"""Which function answers which controller RPC: writes (run against the pending image,
their records committed before the answer) and reads (answered from the committed
image).

Each entry is typed by its RPC's request and response messages (:class:`Write`,
:class:`Read`, generic over them), so mypy checks that every handler takes its RPC's
request and returns its response (or a bare RequestError, which the service wraps). The
tables themselves are keyed by the gRPC method name, as the service and the brokers
dispatch; at import they are checked against the Controller service's descriptor (each
method's request and response types), so the table and the gRPC surface cannot drift."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Generic, Protocol, TypeVar

from google.protobuf.message import Message

from migration.controller import brokers, reassignment, security, topics
from migration.controller.context import ControllerView, WriteContext
from migration.image.model import MetadataImage
from migration.proto import controller_pb2 as cpb
from migration.records.secrets import REDACTED, is_sensitive_config

__all__ = [
    "ADMIN_WRITES",
    "HANDLERS",
    "READERS",
    "Read",
    "ReadRpc",
    "Write",
    "WriteContext",
    "WriteRpc",
    "configs_of",
]

Req = TypeVar("Req", bound=Message)
Resp = TypeVar("Resp", bound=Message)


class WriteRpc(Protocol):
    """A write RPC with its message types erased: what the method-name table holds."""

    @property
    def admin(self) -> bool: ...

    @property
    def request(self) -> type[Message]: ...

    @property
    def response(self) -> type[Message]: ...

    def __call__(self, ctx: WriteContext, request: Message) -> Message: ...

    def rest(
        self, ctx: WriteContext, request: Message, answer: Message, slices: int
    ) -> Message | None:
        """What of ``request`` the next slice handles, after ``slices`` of them, the last
        handled with ``ctx`` and answered ``answer``; None: the request is whole (see
        :mod:`migration.controller.slices`)."""

    def whole(self, answers: list[Message]) -> Message:
        """The request's answer from its slices' answers, in order."""


class ReadRpc(Protocol):
    """A read RPC with its message types erased: what the method-name table holds."""

    @property
    def request(self) -> type[Message]: ...

    @property
    def response(self) -> type[Message]: ...

    def __call__(
        self, image: MetadataImage, controller: ControllerView, request: Message
    ) -> Message: ...


def _typed(rpc: str, kind: type[Req], request: Message) -> Req:
    """``request`` as ``kind``; TypeError if it is another message (a caller's bug)."""
    if not isinstance(request, kind):
        raise TypeError(f"{rpc} takes a {kind.__name__}, not a {type(request).__name__}")
    return request


Slicing = tuple[Callable[[WriteContext, Req, Resp, int], Req | None], Callable[[list[Resp]], Resp]]
"""A sliced write's (rest, whole): see :meth:`WriteRpc.rest` and :meth:`WriteRpc.whole`."""


class Write(Generic[Req, Resp]):
    """A write RPC: ``handler`` validates a ``request``, adds its records to the context
    and returns the ``response`` (or a RequestError). ``admin``: a user's write (bounded
    in records, refused while the ZooKeeper write-behind is over its bound); otherwise
    the brokers' own, always served. Called with any message, it checks the request's
    type first (TypeError). Carries the handler's ``__name__`` (the controller's log
    names a handler that failed by it). ``slicing``: a handler doing a slice of a bulk
    request per call gives (rest, whole), as :class:`WriteRpc` says; without it a
    request is one slice."""

    def __init__(
        self,
        request: type[Req],
        response: type[Resp],
        handler: Callable[[WriteContext, Req], Resp | cpb.RequestError],
        *,
        admin: bool,
        slicing: Slicing[Req, Resp] | None = None,
    ) -> None:
        self.request = request
        self.response = response
        self.handler = handler
        self.admin = admin
        self.slicing = slicing
        functools.update_wrapper(self, handler)

    def __call__(self, ctx: WriteContext, request: Message) -> Resp | cpb.RequestError:
        return self.handler(ctx, _typed(self.handler.__name__, self.request, request))

    def rest(
        self, ctx: WriteContext, request: Message, answer: Message, slices: int
    ) -> Message | None:
        if self.slicing is None:
            return None
        name = self.handler.__name__
        typed = _typed(name, self.request, request), _typed(name, self.response, answer)
        return self.slicing[0](ctx, *typed, slices)

    def whole(self, answers: list[Message]) -> Message:
        if self.slicing is None:
            (answer,) = answers
            return answer
        return self.slicing[1]([_typed(self.handler.__name__, self.response, a) for a in answers])


class Read(Generic[Req, Resp]):
    """A read RPC: ``reader`` answers a ``request`` from the committed image (and the
    answering controller's identity) with the ``response`` (or a RequestError). Called
    with any message, it checks the request's type first (TypeError)."""

    def __init__(
        self,
        request: type[Req],
        response: type[Resp],
        reader: Callable[[MetadataImage, ControllerView, Req], Resp | cpb.RequestError],
    ) -> None:
        self.request = request
        self.response = response
        self.reader = reader
        functools.update_wrapper(self, reader)

    def __call__(
        self, image: MetadataImage, controller: ControllerView, request: Message
    ) -> Resp | cpb.RequestError:
        return self.reader(image, controller, _typed(self.reader.__name__, self.request, request))


def write(
    request: type[Req],
    response: type[Resp],
    handler: Callable[[WriteContext, Req], Resp | cpb.RequestError],
    *,
    admin: bool,
    slicing: Slicing[Req, Resp] | None = None,
) -> WriteRpc:
    """A table entry: :class:`Write` typed by its arguments (mypy checks ``handler``
    against ``request`` and ``response`` here, not against the table's erased type)."""
    rpc: Write[Req, Resp] = Write(request, response, handler, admin=admin, slicing=slicing)
    return rpc


def read(
    request: type[Req],
    response: type[Resp],
    reader: Callable[[MetadataImage, ControllerView, Req], Resp | cpb.RequestError],
) -> ReadRpc:
    """A table entry: :class:`Read` typed by its arguments (see :func:`write`)."""
    rpc: Read[Req, Resp] = Read(request, response, reader)
    return rpc


def configs_of(
    image: MetadataImage, req: cpb.DescribeConfigsRequest
) -> cpb.DescribeConfigsResponse:
    """A resource's configs as the image holds them, sensitive values redacted (also what a
    broker answers from its own view)."""
    problem = topics.resource_problem(image, req.resource_type, req.resource_name)
    if problem:
        return cpb.DescribeConfigsResponse(error_code=problem[0], error_message=problem[1])
    values = image.config(req.resource_type, req.resource_name)
    return cpb.DescribeConfigsResponse(
        configs={k: REDACTED if is_sensitive_config(k) else v for k, v in values.items()}
    )


def describe_configs(
    image: MetadataImage, _: ControllerView, req: cpb.DescribeConfigsRequest
) -> cpb.DescribeConfigsResponse:
    return configs_of(image, req)


HANDLERS: Mapping[str, WriteRpc] = {
    "CreateTopics": write(
        cpb.CreateTopicsRequest, cpb.CreateTopicsResponse, topics.create_topics, admin=True
    ),
    "DeleteTopics": write(
        cpb.DeleteTopicsRequest, cpb.ItemsResponse, topics.delete_topics, admin=True
    ),
    "CreatePartitions": write(
        cpb.CreatePartitionsRequest, cpb.ItemsResponse, topics.create_partitions, admin=True
    ),
    "IncrementalAlterConfigs": write(
        cpb.IncrementalAlterConfigsRequest, cpb.ItemsResponse, topics.alter_configs, admin=True
    ),
    "CreateAcls": write(cpb.CreateAclsRequest, cpb.AclsResponse, security.create_acls, admin=True),
    "DeleteAcls": write(cpb.DeleteAclsRequest, cpb.AclsResponse, security.delete_acls, admin=True),
    "AlterClientQuotas": write(
        cpb.AlterClientQuotasRequest, cpb.ItemsResponse, security.alter_client_quotas, admin=True
    ),
    "AlterUserScramCredentials": write(
        cpb.AlterUserScramCredentialsRequest, cpb.ItemsResponse, security.alter_scram, admin=True
    ),
    "AllocateProducerIds": write(
        cpb.AllocateProducerIdsRequest,
        cpb.AllocateProducerIdsResponse,
        brokers.allocate_producer_ids,
        admin=False,
    ),
    "AlterPartition": write(
        cpb.AlterPartitionRequest,
        cpb.AlterPartitionResponse,
        brokers.alter_partition,
        admin=False,
        slicing=(brokers.alter_partition_rest, brokers.alter_partition_whole),
    ),
    "AlterPartitionReassignments": write(
        cpb.AlterPartitionReassignmentsRequest,
        cpb.AlterPartitionReassignmentsResponse,
        reassignment.alter_partition_reassignments,
        admin=True,
    ),
    "BrokerRegistration": write(
        cpb.BrokerRegistrationRequest,
        cpb.BrokerRegistrationResponse,
        brokers.register,
        admin=False,
    ),
    "BrokerHeartbeat": write(
        cpb.BrokerHeartbeatRequest,
        cpb.BrokerHeartbeatResponse,
        brokers.heartbeat,
        admin=False,
        slicing=(brokers.heartbeat_rest, brokers.last_answer),
    ),
}

ADMIN_WRITES = frozenset(method for method, rpc in HANDLERS.items() if rpc.admin)
"""The writes users make (refused while the ZooKeeper write-behind is over its bound);
the brokers' own (registration, heartbeats, ISR changes) are always served."""

READERS: Mapping[str, ReadRpc] = {
    "DescribeConfigs": read(
        cpb.DescribeConfigsRequest, cpb.DescribeConfigsResponse, describe_configs
    ),
    "DescribeAcls": read(cpb.DescribeAclsRequest, cpb.AclsResponse, security.describe_acls),
    "DescribeClientQuotas": read(
        cpb.DescribeClientQuotasRequest,
        cpb.DescribeClientQuotasResponse,
        security.describe_client_quotas,
    ),
    "DescribeCluster": read(
        cpb.DescribeClusterRequest, cpb.DescribeClusterResponse, brokers.describe_cluster
    ),
    "Metadata": read(cpb.MetadataRequest, cpb.MetadataResponse, brokers.metadata),
    "ListPartitionReassignments": read(
        cpb.ListPartitionReassignmentsRequest,
        cpb.ListPartitionReassignmentsResponse,
        reassignment.list_partition_reassignments,
    ),
}


def _matches_the_service() -> None:
    """Each entry's request and response are its gRPC method's (the service's descriptor),
    and no method of the service but the two answered outside the quorum is left out."""
    service = cpb.DESCRIPTOR.services_by_name["Controller"]
    outside = {"DescribeMigration", "ReportAudit"}
    served: dict[str, WriteRpc | ReadRpc] = {**HANDLERS, **READERS}
    assert set(served) | outside == set(service.methods_by_name), "every RPC has a handler"
    for name, rpc in served.items():
        method = service.methods_by_name[name]
        assert rpc.request.DESCRIPTOR.full_name == method.input_type.full_name, name
        assert rpc.response.DESCRIPTOR.full_name == method.output_type.full_name, name


_matches_the_service()
