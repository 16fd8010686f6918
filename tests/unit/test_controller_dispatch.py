"""The controller's typed RPC surfaces follow the Controller gRPC service: the dispatch
tables (checked at import too) and the client's per-method overloads."""

from __future__ import annotations

import typing

import pytest
from google.protobuf.message import Message

from migration.controller.client import ControllerClient
from migration.controller.handlers import ADMIN_WRITES, HANDLERS, READERS
from migration.proto import controller_pb2 as cpb

SERVICE = cpb.DESCRIPTOR.services_by_name["Controller"]


def test_the_client_has_one_overload_per_rpc_with_its_messages() -> None:
    typed = {}
    for overload in typing.get_overloads(ControllerClient.call):
        hints = typing.get_type_hints(overload)
        (method,) = typing.get_args(hints["method"]) or (None,)
        if method is not None:
            typed[method] = (hints["request"], hints["return"])
    assert set(typed) == set(SERVICE.methods_by_name)
    for name, (request, response) in typed.items():
        method = SERVICE.methods_by_name[name]
        assert request.DESCRIPTOR.full_name == method.input_type.full_name, name
        assert response.DESCRIPTOR.full_name == method.output_type.full_name, name


def test_admin_writes_are_the_users_writes() -> None:
    assert {
        "CreateTopics",
        "DeleteTopics",
        "CreatePartitions",
        "IncrementalAlterConfigs",
        "CreateAcls",
        "DeleteAcls",
        "AlterClientQuotas",
        "AlterUserScramCredentials",
        "AlterPartitionReassignments",
    } == ADMIN_WRITES


@pytest.mark.parametrize("method", sorted(HANDLERS))
def test_a_write_refuses_another_rpcs_request(method: str) -> None:
    other: Message = cpb.DescribeClusterRequest()
    with pytest.raises(TypeError, match="takes a"):
        HANDLERS[method](None, other)  # type: ignore[arg-type]  # the type is checked first


@pytest.mark.parametrize("method", sorted(READERS))
def test_a_read_refuses_another_rpcs_request(method: str) -> None:
    other: Message = cpb.CreateTopicsRequest()
    with pytest.raises(TypeError, match="takes a"):
        READERS[method](None, None, other)  # type: ignore[arg-type]  # checked first
