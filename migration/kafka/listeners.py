"""What a broker's Kafka listeners serve with, as plain settings (no kio: a config may be
read without importing Kafka's wire format)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from migration.common.tls import TlsSettings
from migration.kafka.authorizer import AuthorizerSettings
from migration.kafka.sasl import SaslSettings
from migration.kafka.socket_limits import SocketLimits
from migration.zk.model.brokers import Endpoint


@dataclass(frozen=True)
class ListenerSecurity:
    """One Kafka listener's security: TLS (``SSL``, ``SASL_SSL``) and SASL (``SASL_*``)."""

    tls: TlsSettings | None = None
    sasl: SaslSettings | None = None


@dataclass(frozen=True)
class ListenerSettings:
    """What the Kafka listeners of one broker serve with: the listeners to bind (the
    client ones, not the inter-broker listener), each one's security, the socket limits
    shared by all, and the authorizer (None: every principal may do everything)."""

    listeners: tuple[Endpoint, ...]
    limits: SocketLimits = field(default_factory=SocketLimits)
    security: Mapping[str, ListenerSecurity] = field(default_factory=dict)
    authorizer: AuthorizerSettings | None = None
