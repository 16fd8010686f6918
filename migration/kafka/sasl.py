"""The server side of Kafka's SASL login on a broker's ``SASL_PLAINTEXT`` / ``SASL_SSL``
listeners: SaslHandshake (v1) names the mechanism, SaslAuthenticate carries its tokens.

- SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802/7677, through ``scramp``): the client is checked
  against the SCRAM credentials in the broker's metadata, the ones ZooKeeper holds in
  ZooKeeper mode and the migrated records in KRaft mode, so a password set before the
  migration keeps working after it.
- PLAIN (for tests and simple set-ups): the users of the listener's
  ``listener.name.<name>.plain.sasl.jaas.config`` (``user_<name>="<password>"``).

A connection on a SASL listener serves ApiVersions and SaslHandshake, then SaslAuthenticate
alone, until the login succeeds; anything else, or the same out of order, closes it
unread, as Kafka does. A failed login answers SASL_AUTHENTICATION_FAILED (after
``connection.failed.authentication.delay.ms``) and closes the connection. Nothing of a
password, nonce or proof is logged or echoed: a failure names the mechanism only.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scramp import ScramException, ScramMechanism

from migration.common.jaas import JaasError, parse_jaas_config
from migration.common.kafka_errors import ErrorCode
from migration.image.model import ScramImage
from migration.records.codes import SCRAM_MECHANISMS

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN")
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36
_HANDSHAKING = frozenset({18, SASL_HANDSHAKE})  # 18: ApiVersions
_AUTHENTICATING = frozenset({SASL_AUTHENTICATE})
CredentialsFn = Callable[[], Mapping[tuple[str, int], ScramImage]]


@dataclass(frozen=True)
class SaslSettings:
    """One SASL listener's mechanisms and (PLAIN) users."""

    mechanisms: tuple[str, ...]
    plain_users: Mapping[str, str] = field(default_factory=dict, repr=False)


@dataclass
class Login:
    """One step's answer: an error (0 none), the bytes for the client, and whether the
    connection is now authenticated as ``principal``."""

    error_code: int
    message: str | None = None
    reply: bytes = b""
    principal: str | None = None


class SaslSession:
    """A connection's login, one step at a time. Not thread-safe (a connection's
    requests are handled in order)."""

    def __init__(self, settings: SaslSettings, credentials: CredentialsFn) -> None:
        self.settings = settings
        self.credentials = credentials
        self.mechanism: str | None = None
        self.principal: str | None = None
        self._scram: Any = None
        self._user: str | None = None
        self.failed = False  # the login failed: the connection is closed after the answer

    def expected(self) -> frozenset[int]:
        """The api keys this connection may send while it is not logged in, in Kafka's
        order: ApiVersions or SaslHandshake, then SaslAuthenticate alone. Anything else
        closes the connection before it is decoded (Kafka's IllegalSaslStateException)."""
        return _AUTHENTICATING if self.mechanism is not None else _HANDSHAKING

    def expects(self, api_key: int) -> bool:
        return api_key in self.expected()

    def handshake(self, mechanism: str) -> int:
        if self.mechanism is not None or self.principal is not None:
            return ErrorCode.ILLEGAL_SASL_STATE
        if mechanism not in self.settings.mechanisms:
            return ErrorCode.UNSUPPORTED_SASL_MECHANISM
        self.mechanism = mechanism
        return 0

    def authenticate(self, token: bytes) -> Login:
        if self.mechanism is None or self.principal is not None:
            return Login(ErrorCode.ILLEGAL_SASL_STATE, "SaslAuthenticate before SaslHandshake")
        if self.mechanism == "PLAIN":
            return self._plain(token)
        return self._scram_step(token)

    def _failed(self) -> Login:
        self.failed = True
        return Login(
            ErrorCode.SASL_AUTHENTICATION_FAILED,
            "Authentication failed during authentication due to invalid credentials with "
            f"SASL mechanism {self.mechanism}",
        )

    def _plain(self, token: bytes) -> Login:
        parts = token.split(b"\0")
        if len(parts) != 3:
            return self._failed()
        try:
            user, password = parts[1].decode(), parts[2].decode()
        except UnicodeDecodeError:
            return self._failed()
        known = self.settings.plain_users.get(user)
        if known is None or not hmac.compare_digest(known.encode(), password.encode()):
            return self._failed()
        self.principal = f"User:{user}"
        return Login(0, principal=self.principal)

    def _scram_step(self, token: bytes) -> Login:
        assert self.mechanism is not None
        code = SCRAM_MECHANISMS[self.mechanism]
        try:
            text = token.decode()
            if self._scram is None:
                self._scram = ScramMechanism(self.mechanism).make_server(
                    lambda user: self._lookup(user, code)
                )
                self._scram.set_client_first(_without_extensions(text))
                return Login(0, reply=self._scram.get_server_first().encode())
            self._scram.set_client_final(text)
            final = self._scram.get_server_final()
        except (ScramException, UnicodeDecodeError, ValueError):
            return self._failed()
        self.principal = f"User:{self._user}"
        return Login(0, reply=final.encode(), principal=self.principal)

    def _lookup(self, user: str, code: int) -> tuple[bytes, bytes, bytes, int] | None:
        cred = self.credentials().get((user, code))
        if cred is None:
            return None
        self._user = user
        return cred.salt, cred.stored_key, cred.server_key, cred.iterations


def _without_extensions(client_first: str) -> str:
    """Kafka's SCRAM client-first may carry extensions after the nonce (``tokenauth``);
    scramp takes the standard attributes only."""
    head, sep, bare = client_first.partition(",,")
    kept = [a for a in bare.split(",") if a[:2] in ("n=", "r=", "m=")]
    return head + sep + ",".join(kept)


SASL_KEYS = {"sasl.enabled.mechanisms"}


def sasl_settings(props: Mapping[str, str], listener: str, problems: list[str]) -> SaslSettings:
    """A SASL listener's settings: ``sasl.enabled.mechanisms`` (its
    ``listener.name.<name>.`` override first; default the SCRAM pair) and, with PLAIN,
    ``listener.name.<name>.plain.sasl.jaas.config``'s ``user_<name>`` entries."""
    prefix = f"listener.name.{listener.lower()}."
    text = props.get(prefix + "sasl.enabled.mechanisms") or props.get(
        "sasl.enabled.mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512"
    )
    mechanisms = tuple(m.strip().upper() for m in text.split(",") if m.strip())
    for m in mechanisms:
        if m not in MECHANISMS:
            problems.append(f"sasl.enabled.mechanisms: {m} is not one of {', '.join(MECHANISMS)}")
    users: dict[str, str] = {}
    if "PLAIN" in mechanisms:
        key = prefix + "plain.sasl.jaas.config"
        if key not in props:
            problems.append(f'PLAIN on listener {listener} needs {key} (user_<name>="...")')
        else:
            try:
                module = parse_jaas_config(props[key], key)
            except JaasError as exc:
                problems.append(str(exc))
            else:
                if module.class_name != PLAIN_MODULE:
                    problems.append(f"{key}: expected {PLAIN_MODULE}")
                users = {
                    k.removeprefix("user_"): v
                    for k, v in module.options.items()
                    if k.startswith("user_")
                }
    return SaslSettings(mechanisms, users)
