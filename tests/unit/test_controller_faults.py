"""The controller's fault contract, in process on real files: a handler that raises
answers UNKNOWN_SERVER_ERROR at once; an oversized request is a POLICY_VIOLATION; an
append that fails renounces leadership and answers every waiting request; whatever
escapes an event of the loop stops the loop and reaches ``on_fatal``."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from migration.common.kafka_errors import ErrorCode
from migration.controller.context import MAX_RECORDS_PER_USER_OP, WriteContext
from migration.controller.handlers import HANDLERS
from migration.controller.quorum_controller import QuorumController
from migration.proto import controller_pb2 as cpb
from migration.raft.event_loop import EventLoop, LoopStoppedError
from migration.raft.node import RaftInvariantError, RaftNode, Role
from migration.records import versions
from tests.lone_controller import lone_controller


@pytest.fixture
def active(tmp_path: Path) -> Iterator[tuple[QuorumController, RaftNode]]:
    """A one-voter quorum whose controller is active."""
    lone = lone_controller(tmp_path)
    assert lone.image.features["metadata.version"] == versions.LATEST
    yield lone.controller, lone.node
    lone.close()


def quota_request(user: str) -> cpb.AlterClientQuotasRequest:
    entry = cpb.QuotaEntry()
    entry.entity.add(entity_type="user", entity_name=user)
    entry.ops.add(key="producer_byte_rate", value=1024)
    return cpb.AlterClientQuotasRequest(entries=[entry])


def test_a_handler_that_raises_gets_unknown_server_error_at_once(
    active: tuple[QuorumController, RaftNode],
) -> None:
    controller, _ = active

    def broken(ctx: WriteContext, request: object) -> object:
        ctx.add(no_op_record={})  # half-way through: nothing of it may be written
        raise KeyError("a bug")

    answers: list[object] = []
    controller.write(broken, object(), answers.append)
    (answer,) = answers
    assert isinstance(answer, cpb.RequestError)
    assert answer.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert "broken" in answer.error_message
    assert controller.active  # one bad request does not stop the controller
    end = controller.log.end_offset
    controller.flush()
    assert controller.log.end_offset == end


def test_a_request_over_the_record_bound_writes_nothing(
    active: tuple[QuorumController, RaftNode],
) -> None:
    controller, node = active
    end = node.log.end_offset

    def flood(ctx: WriteContext, request: object) -> object:
        for _ in range(MAX_RECORDS_PER_USER_OP + 1):
            ctx.add(no_op_record={})
        return cpb.ItemsResponse()

    answers: list[object] = []
    controller.write(flood, object(), answers.append)
    assert isinstance(answers[0], cpb.RequestError)
    assert answers[0].error_code == ErrorCode.POLICY_VIOLATION
    controller.flush()
    assert node.log.end_offset == end


def test_a_failed_append_renounces_leadership_and_answers_the_waiting(
    active: tuple[QuorumController, RaftNode],
) -> None:
    controller, node = active
    answers: list[object] = []
    controller.write(HANDLERS["AlterClientQuotas"], quota_request("waiting"), answers.append)
    assert not answers  # waits for its commit
    segment = node.log._segments[-1]
    read_only = os.open(os.devnull, os.O_RDONLY)
    saved = os.dup(segment.fd)
    os.dup2(read_only, segment.fd)  # every write to the segment now fails (EBADF)
    try:
        with pytest.raises(OSError):
            controller.flush()
    finally:
        os.dup2(saved, segment.fd)
        os.close(saved)
        os.close(read_only)
    assert not controller.active
    assert node.role is Role.RESIGNED
    (answer,) = answers
    assert isinstance(answer, cpb.RequestError)
    assert answer.error_code == ErrorCode.NOT_CONTROLLER


def test_a_fault_in_the_event_loop_stops_it_and_reaches_on_fatal(
    active: tuple[QuorumController, RaftNode],
) -> None:
    _, node = active
    faults: list[str] = []
    stopped = threading.Event()

    def on_fatal(reason: str, exc: BaseException) -> None:
        faults.append(reason)
        stopped.set()

    loop = EventLoop(on_fatal=on_fatal)
    loop.start(node)

    def broken() -> None:
        raise RaftInvariantError("two leaders in epoch 9")

    loop.post(broken)
    assert stopped.wait(30), "the loop did not stop"  # a hang guard
    assert faults == ["event loop: RaftInvariantError: two leaders in epoch 9"]
    assert isinstance(loop.fault, RaftInvariantError)
    with pytest.raises(LoopStoppedError):
        loop.call(lambda: None, timeout=5)
