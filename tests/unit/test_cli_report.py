"""How a command's error is reported (:func:`migration.cli.main.report`): each kind with
its ``--json`` code and exit code, the error classes of packages the command never
loaded imported only then, a bug in one line."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kazoo.exceptions import NoAuthError

from migration.cli.main import report
from migration.cli.output import (
    DATA_ERROR,
    EXIT_ERROR,
    INTERNAL_ERROR,
    INVALID_ARGUMENT,
    IO_ERROR,
    NOT_AUTHORIZED,
    NOT_FOUND,
    UNAVAILABLE,
    CliError,
    errors_as_json,
    json_error,
)
from migration.common.kafka_errors import ErrorCode, KafkaError
from migration.log.errors import LogError
from migration.zk.client import ZkConnectError
from migration.zk.errors import ZnodeFormatError


@pytest.fixture(autouse=True)
def as_json() -> Iterator[None]:
    errors_as_json(True)
    yield
    errors_as_json(False)


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (ZnodeFormatError("/brokers/ids/1", "not JSON"), DATA_ERROR),  # not INVALID_ARGUMENT
        (CliError("bad", NOT_FOUND), NOT_FOUND),
        (KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, "t"), "TOPIC_ALREADY_EXISTS"),
        (FileNotFoundError(2, "No such file", "/x"), NOT_FOUND),
        (ZkConnectError("h:1: unreachable"), UNAVAILABLE),
        (ConnectionRefusedError(111, "Connection refused"), UNAVAILABLE),
        (LogError("a torn segment"), DATA_ERROR),
        (ValueError("not a number"), INVALID_ARGUMENT),
        (NoAuthError(), NOT_AUTHORIZED),
        (PermissionError(13, "Permission denied", "/etc/x"), IO_ERROR),
        (RuntimeError("a bug"), INTERNAL_ERROR),
    ],
)
def test_each_kind_of_error_has_its_code(exc: Exception, code: str) -> None:
    assert report(exc) == EXIT_ERROR
    document = json_error(EXIT_ERROR)
    assert document is not None
    assert document["error"]["code"] == code, document


def test_a_bug_is_one_line_naming_its_type() -> None:
    report(KeyError("oops"))
    document = json_error(EXIT_ERROR)
    assert document is not None
    message = document["error"]["message"]
    assert message.startswith("internal error: KeyError: ") and "\n" not in message
