"""Request-level errors as the controller RPCs carry them."""

from __future__ import annotations

from migration.common.kafka_errors import ErrorCode
from migration.proto import controller_pb2 as cpb


def request_error(
    code: ErrorCode, message: str, controller_id: int | None = None, endpoint: str = ""
) -> cpb.RequestError:
    return cpb.RequestError(
        error_code=code,
        error_message=message,
        controller_id=-1 if controller_id is None else controller_id,
        controller_endpoint=endpoint,
    )
