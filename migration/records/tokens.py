"""A delegation token's fields, one list for every form that carries them under Kafka's
names (those of the DelegationTokenRecord: issue, max and expiration timestamps):
ZooKeeper's :class:`~migration.zk.model.tokens.DelegationToken`, the record and the
image's TokenImage. The token id is each form's key, not among them."""

from __future__ import annotations

from typing import Any

TOKEN_FIELDS = (
    "owner",
    "requester",
    "renewers",
    "issue_timestamp",
    "max_timestamp",
    "expiration_timestamp",
)


def token_values(token: object) -> dict[str, Any]:
    """The token's fields by name (its renewers as a tuple, whatever sequence held them)."""
    values = {name: getattr(token, name) for name in TOKEN_FIELDS}
    values["renewers"] = tuple(values["renewers"])
    return values
