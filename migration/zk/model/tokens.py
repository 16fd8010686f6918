"""Delegation tokens: ``/delegation_token/tokens/<tokenId>`` (versions 1-3).

Principals are stored sanitized (``User%3Aalice``) and returned desanitized. The token's
HMAC is never stored in ZooKeeper (brokers derive it from the secret key), so nothing
here is secret but the token id's link to its owner.
"""

from __future__ import annotations

from dataclasses import dataclass

from migration.common.text import shown
from migration.zk.errors import ZnodeFormatError
from migration.zk.model.configs import desanitize, sanitize
from migration.zk.model.jsonfields import Fields, decode_text, render_json


@dataclass(frozen=True, slots=True)
class DelegationToken:
    token_id: str
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_timestamp: int
    max_timestamp: int
    expiration_timestamp: int


def parse_token(path: str, raw: bytes | None) -> DelegationToken:
    f = Fields.load(path, raw)
    version = f.version(range(1, 4))

    def principal(field_name: str, text: str) -> str:
        try:
            value = desanitize(text)
        except UnicodeDecodeError:
            f.fail(f"{field_name} {shown(text)} is not a sanitized principal")
        if ":" not in value:
            f.fail(f"{field_name} {shown(value)} is not Type:name")
        return value

    owner = principal("owner", f.text("owner"))
    requester = (
        principal("tokenRequester", f.text("tokenRequester"))
        if version >= 3 and f.has("tokenRequester")
        else owner
    )
    token = DelegationToken(
        token_id=f.text("tokenId"),
        owner=owner,
        requester=requester,
        renewers=tuple(principal("renewers", r) for r in f.str_list("renewers")),
        issue_timestamp=f.integer("issueTimestamp"),
        max_timestamp=f.integer("maxTimestamp"),
        expiration_timestamp=f.integer("expiryTimestamp"),
    )
    if not path.endswith("/" + token.token_id):
        f.fail(f"tokenId {shown(token.token_id)} does not match the znode name")
    return token


def render_token(value: DelegationToken) -> bytes:
    return render_json(
        {
            "version": 3,
            "owner": sanitize(value.owner),
            "tokenRequester": sanitize(value.requester),
            "renewers": [sanitize(r) for r in value.renewers],
            "issueTimestamp": value.issue_timestamp,
            "maxTimestamp": value.max_timestamp,
            "expiryTimestamp": value.expiration_timestamp,
            "tokenId": value.token_id,
        }
    )


def parse_token_change(path: str, raw: bytes | None) -> str:
    """The token id a ``/delegation_token/token_changes`` notification names (its data,
    as Kafka's DelegationTokenManager writes it); ZnodeFormatError unless it is one
    znode name (no ``/``, whitespace or control characters)."""
    token_id = decode_text(path, raw)
    if "/" in token_id or not token_id.isprintable() or any(c.isspace() for c in token_id):
        raise ZnodeFormatError(path, f"token id {shown(token_id)} is not a znode name")
    return token_id
