"""What admin requests share on every kind of broker: the broker defaults the handlers
read (:class:`AdminSettings`), how a ``validate_only`` request is
judged (the controller's own handlers against the broker's view, nothing kept), and
when a topic request may answer (its topics visible with leaders)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from migration.common.kafka_errors import ErrorCode
from migration.controller.context import TooManyRecordsError, WriteContext
from migration.controller.errors import request_error
from migration.controller.handlers import HANDLERS
from migration.controller.registry import BrokerRegistry
from migration.controller.service import with_error
from migration.image.model import MetadataImage


def dry_run(image: MetadataImage, settings: Any, method: str, request: Any) -> Any:
    """``method``'s answer judged against ``image`` by the controller's handler, its
    records dropped: what a ``validate_only`` request gets."""
    ctx = WriteContext(image, image.offset + 1, BrokerRegistry(0, time.monotonic), settings)
    try:
        return with_error(method, HANDLERS[method](ctx, request))
    except TooManyRecordsError as exc:
        return with_error(method, request_error(ErrorCode.POLICY_VIOLATION, str(exc)))


def topics_led(names: list[str], partitions: dict[str, int]) -> Callable[[MetadataImage], bool]:
    """Whether an image shows every topic of ``names`` with (at least) its number of
    ``partitions``, each with a leader: when a broker answers a topic request."""

    def ready(image: MetadataImage) -> bool:
        for name in names:
            topic = image.topic(name)
            if topic is None or len(topic.partitions) < partitions.get(name, 0):
                return False
            if any(p.leader < 0 for p in topic.partitions.values()):
                return False
        return True

    return ready


@dataclass(frozen=True)
class AdminSettings:
    """The broker defaults the controller's handlers read (``num.partitions`` and
    ``default.replication.factor`` for CreateTopics with -1)."""

    num_partitions: int = 1
    default_replication_factor: int = 1
