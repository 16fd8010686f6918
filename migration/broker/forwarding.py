"""Admin requests sent on to the active KRaft controller (which answers after its records
commit): always on a KRaft-mode broker, and on a ZooKeeper broker once a KRaft
controller owns the cluster (it never writes them to ZooKeeper itself).

Like Kafka's forwarding, topic requests answer once this broker's metadata view shows
the result (a ZooKeeper broker's cache kept by the KRaft controller's UpdateMetadata; a
KRaft broker's image replayed from the log), so a client's next Metadata through this
broker sees it. ``validate_only`` requests are judged here, against this broker's view,
by the controller's own handlers (:func:`~.admin_rules.dry_run`), and write nothing.

Threading: blocking; called from the Kafka listener's worker threads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from migration.broker.admin_rules import topics_led
from migration.broker.kraft_session import KraftSession
from migration.common.kafka_errors import ErrorCode, KafkaError
from migration.controller.errors import request_error
from migration.controller.service import with_error
from migration.image.model import MetadataImage

Wait = Callable[[Callable[[MetadataImage], bool], float], bool]


def forward(
    kraft: KraftSession,
    validate: Callable[[str, Any], Any],
    wait: Wait,
    method: str,
    request: Any,
    *,
    validate_only: bool,
    timeout_ms: int,
) -> Any:
    """``validate``: the broker's :func:`~.admin_rules.dry_run` against its own view."""
    if validate_only:
        return validate(method, request)
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
