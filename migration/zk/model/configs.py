"""Entity configs under ``/config/<type>/<name>``: topic and broker configs, client
quotas, SCRAM credentials (kept in the user's znode next to its quotas), and the
``/config/changes`` notifications written after each change.

Entity names in paths are *sanitized* as Kafka does (URL-encoding with ``*`` and ``~``
escaped too); ``<default>`` stands for the default entity of its type.
"""

from __future__ import annotations

import base64
import binascii
import math
from dataclasses import dataclass, field
from decimal import Decimal
from urllib.parse import quote, unquote_plus

from migration.common.text import shown
from migration.records.codes import QUOTA_TYPES, SCRAM_MECHANISMS
from migration.zk.errors import ZnodeFormatError
from migration.zk.model.jsonfields import Fields, render_json
from migration.zk.paths import CONFIG_ENTITY_TYPES

QUOTA_KEYS = frozenset(QUOTA_TYPES)
# Entity type in the znode path -> Kafka's client-quota entity type.
QUOTA_ENTITY_TYPES = {"users": "user", "clients": "client-id", "ips": "ip"}


def sanitize(name: str) -> str:
    """Kafka's Sanitizer: URL-encode with only [A-Za-z0-9._-] left as is."""
    return quote(name, safe="").replace("~", "%7E")


def desanitize(name: str) -> str:
    """Kafka's Sanitizer undone; UnicodeDecodeError when the escapes are not UTF-8."""
    return unquote_plus(name, errors="strict")


@dataclass(frozen=True, slots=True)
class EntityConfig:
    """The config map of one entity; ``name`` is desanitized, None for ``<default>``."""

    entity_type: str
    name: str | None
    config: dict[str, str] = field(default_factory=dict)


def parse_entity_config(
    path: str, raw: bytes | None, entity_type: str, name: str | None
) -> EntityConfig:
    f = Fields.load(path, raw)
    f.version(range(1, 2))
    return EntityConfig(entity_type, name, f.str_map("config"))


def render_entity_config(config: dict[str, str]) -> bytes:
    return render_json({"version": 1, "config": config})


# --- client quotas -------------------------------------------------------------------

QuotaEntity = tuple[tuple[str, str | None], ...]
"""Kafka's ClientQuotaEntity: ((entity_type, name or None for default), ...)."""


def quota_values(path: str, config: dict[str, str]) -> dict[str, float]:
    """The quota keys of an entity's config, as Kafka's doubles."""
    out: dict[str, float] = {}
    for key in QUOTA_KEYS.intersection(config):
        try:
            value = float(config[key])
        except ValueError:
            raise ZnodeFormatError(
                path, f"quota {key}={shown(config[key])} is not a number"
            ) from None
        if not math.isfinite(value) or value < 0:
            raise ZnodeFormatError(
                path, f"quota {key}={shown(config[key])} must be finite and >= 0"
            )
        out[key] = value
    return out


def render_quota_value(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


def java_double_text(value: float) -> str:
    """``value`` as Java's ``Double.toString`` prints it (the shortest digits that read
    back): plain decimal with at least one fractional digit in [1e-3, 1e7), else
    ``d.dddE±n``."""
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(value)
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)  # a finite quota
    text = "".join(map(str, digits))
    power = exponent + len(text) - 1
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{power}"


def render_quota(key: str, value: float) -> str:
    """A quota as Kafka writes it into ZooKeeper (its ZkAdminManager and its migration's
    dual-write alike): a long or int quota (byte rates, connection creation rate) as an
    integer, a double quota (request_percentage, controller_mutation_rate) as Java
    prints a double (``50.0``)."""
    if QUOTA_TYPES.get(key) == "double":
        return java_double_text(value)
    return render_quota_value(value)


# --- SCRAM -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """SCRAM material of one user and mechanism. Secret: never log or print it."""

    mechanism: int
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:
        return (
            f"ScramCredential(mechanism={self.mechanism}, iterations={self.iterations}, <redacted>)"
        )


def parse_scram(path: str, mechanism_name: str, text: str) -> ScramCredential:
    """Parse ``salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=N``.

    Errors name the path and the mechanism, never the secret values.
    """
    where = f"{mechanism_name} credential"
    parts: dict[str, str] = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep:
            raise ZnodeFormatError(path, f"{where}: entry is not key=value")
        parts[key] = value
    missing = {"salt", "stored_key", "server_key", "iterations"} - parts.keys()
    if missing:
        raise ZnodeFormatError(path, f"{where}: missing {', '.join(sorted(missing))}")
    try:
        salt, stored, server = (
            base64.b64decode(parts[k], validate=True) for k in ("salt", "stored_key", "server_key")
        )
    except (binascii.Error, ValueError):
        raise ZnodeFormatError(path, f"{where}: a key or salt is not valid base64") from None
    if not parts["iterations"].isdecimal() or not 4096 <= int(parts["iterations"]) <= 16384:
        raise ZnodeFormatError(path, f"{where}: iterations must be an integer in 4096..16384")
    return ScramCredential(
        SCRAM_MECHANISMS[mechanism_name], salt, stored, server, int(parts["iterations"])
    )


def render_scram(cred: ScramCredential) -> str:
    def b64(raw: bytes) -> str:
        return base64.b64encode(raw).decode()

    return (
        f"salt={b64(cred.salt)},stored_key={b64(cred.stored_key)},"
        f"server_key={b64(cred.server_key)},iterations={cred.iterations}"
    )


def scram_credentials(path: str, config: dict[str, str]) -> dict[int, ScramCredential]:
    """The SCRAM entries of a user's config, by mechanism code."""
    return {
        code: parse_scram(path, name, config[name])
        for name, code in SCRAM_MECHANISMS.items()
        if name in config
    }


# --- /config/changes -------------------------------------------------------------------


def render_config_change(entity_path: str) -> bytes:
    """The notification Kafka writes after a config change, e.g. ``topics/foo``."""
    return render_json({"version": 2, "entity_path": entity_path})


def parse_config_change(path: str, raw: bytes | None) -> str:
    """The entity a ``/config/changes`` notification names, as ``<type>/<sanitized
    name>`` (``users/<u>/clients/<c>`` for a user's client), from version 2
    (``entity_path``) or version 1 (``entity_type`` and ``entity_name``), as Kafka's
    ConfigChangeNotification reads them; ZnodeFormatError for anything else."""
    f = Fields.load(path, raw)
    if f.version(range(1, 3)) == 1:
        entity = f"{f.text('entity_type')}/{f.text('entity_name')}"
    else:
        entity = f.text("entity_path")
    kind, _, name = entity.partition("/")
    if kind not in CONFIG_ENTITY_TYPES or not name:
        f.fail(
            f"entity {shown(entity)} is not <type>/<name> with a type among "
            f"{', '.join(CONFIG_ENTITY_TYPES)}"
        )
    return entity
