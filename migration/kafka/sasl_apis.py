"""SaslHandshake and SaslAuthenticate on a broker's Kafka listener (see :mod:`sasl`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from migration.common.kafka_errors import ErrorCode
from migration.kafka.api_context import Context

if TYPE_CHECKING:
    from migration.kafka.wire import Request


def sasl_handshake(request: Request, ctx: Context) -> dict[str, Any]:
    if ctx.sasl is None:
        return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}
    code = ctx.sasl.handshake(request.body.mechanism)
    return {"error_code": code, "mechanisms": list(ctx.sasl.settings.mechanisms)}


def sasl_authenticate(request: Request, ctx: Context) -> dict[str, Any]:
    if ctx.sasl is None:
        return {
            "error_code": ErrorCode.ILLEGAL_SASL_STATE,
            "error_message": "this listener does not use SASL",
            "auth_bytes": b"",
        }
    step = ctx.sasl.authenticate(request.body.auth_bytes)
    return {"error_code": step.error_code, "error_message": step.message, "auth_bytes": step.reply}


HANDLERS = {17: sasl_handshake, 36: sasl_authenticate}
