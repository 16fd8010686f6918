"""What every Kafka API handler of a broker shares: the broker it asks (:class:`Backend`),
the request's context, and how a controller answer's errors read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from migration.image.model import MetadataImage
from migration.kafka.authorizer import ANONYMOUS, CLUSTER, CLUSTER_NAME, Authorizer, Principal
from migration.kafka.sasl import SaslSession
from migration.kafka.wire import Encoded, Request

ADMIN_TIMEOUT_MS = 30_000  # for APIs whose request carries no timeout
AUTHORIZATION_FAILED: str | None = "Authorization failed."  # Kafka's message for a refusal


class Backend(Protocol):
    """What a broker offers its Kafka APIs. ``write`` is blocking, answers the
    controller's response type, and with ``validate_only`` changes nothing; it also
    carries the reads only the controller answers (ListPartitionReassignments)."""

    broker_id: int
    cluster_id: str
    metadata_version_max: int

    def image(self) -> MetadataImage: ...

    def controller_id(self) -> int: ...

    def write(self, method: str, request: Any, validate_only: bool, timeout_ms: int) -> Any: ...


NOBODY = Principal(ANONYMOUS, "")


@dataclass(frozen=True, slots=True)
class Context:
    """One request's context: the broker, the listener it came in on (Metadata lists
    its endpoints), who sent it, the authorizer (None: everything is allowed) and the
    connection's SASL login (None: not a SASL listener)."""

    backend: Backend
    listener: str
    who: Principal = NOBODY
    authorizer: Authorizer | None = None
    sasl: SaslSession | None = None

    def allowed(self, operation: int, resource_type: int, name: str) -> bool:
        """Whether the sender may do ``operation`` on the resource (Kafka's rules,
        over the ACLs of the metadata this broker answers from)."""
        if self.authorizer is None:
            return True
        acls = self.backend.image().acls
        return self.authorizer.authorize(acls, self.who, operation, resource_type, name)

    def cluster_allowed(self, operation: int) -> bool:
        return self.allowed(operation, CLUSTER, CLUSTER_NAME)


Handler = Callable[[Request, Context], "dict[str, Any] | Encoded"]


def timeout_ms(value: Any) -> int:
    """A request's timeout in milliseconds (kio gives a timedelta)."""
    return int(value.total_seconds() * 1000) if hasattr(value, "total_seconds") else int(value)


def outcome(answer: Any, item: Any) -> tuple[int, str | None]:
    """(error code, message) of one item of a controller answer: the request-level
    error when there is one, else the item's."""
    if answer.HasField("error") and answer.error.error_code:
        return answer.error.error_code, answer.error.error_message or None
    if item is None:
        return 0, None
    return item.error_code, item.error_message or None


def nth(items: Any, i: int) -> Any:
    """The i-th item of an answer's repeated results (None past the end)."""
    return items[i] if i < len(items) else None
