"""Admin requests on a ZooKeeper broker while a KRaft controller owns the cluster: sent
on to the active KRaft controller (which answers after its records commit) and never
written to ZooKeeper by the broker itself.

Like Kafka's forwarding, topic requests answer once this broker's metadata cache (kept
by the KRaft controller's UpdateMetadata) shows the result, so a client's next Metadata
through this broker sees it; entity changes (configs, ACLs, quotas, SCRAM) reach the
broker's own view through ZooKeeper's notifications, written behind by the
controller. ``validate_only`` requests are validated here, against this broker's view,
by the same handlers, and write nothing.

Threading: blocking; called from the Kafka listener's worker threads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from migration.broker.kraft_session import KraftSession
from migration.broker.zk_admin import ZkAdmin, topics_led
from migration.controller.errors import request_error
from migration.controller.service import with_error
from migration.image.model import MetadataImage
from migration.kafka_errors import ErrorCode, KafkaError

Wait = Callable[[Callable[[MetadataImage], bool], float], bool]


def forward(
    kraft: KraftSession,
    admin: ZkAdmin,
    wait: Wait,
    method: str,
    request: Any,
    *,
    validate_only: bool,
    timeout_ms: int,
) -> Any:
    if validate_only:
        return admin.validate(method, request)
    try:
        answer = kraft.call(method, request, timeout_ms / 1000)
    except KafkaError as exc:
        return with_error(method, request_error(exc.code, exc.message or str(exc)))
    if answer.HasField("error") and answer.error.error_code:
        return answer
    _settle(method, request, answer, wait, timeout_ms / 1000)
    return answer


def _settle(method: str, request: Any, answer: Any, wait: Wait, timeout_s: float) -> None:
    """Wait (bounded) for this broker's cache to show what the controller did to topics."""
    if method == "CreateTopics":
        done = [t.name for t in answer.topics if t.error_code == ErrorCode.NONE]
        counts = {t.name: t.num_partitions for t in answer.topics}
    elif method == "CreatePartitions":
        done = [r.name for r in answer.results if r.error_code == ErrorCode.NONE]
        counts = {t.name: t.count for t in request.topics}
    elif method == "DeleteTopics":
        gone = [r.name for r in answer.results if r.error_code == ErrorCode.NONE]
        wait(lambda image: all(image.topic(n) is None for n in gone), timeout_s)
        return
    else:
        return
    wait(topics_led(done, counts), timeout_s)
