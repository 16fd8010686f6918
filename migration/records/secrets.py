"""Which record fields carry secret material, so every printed form can redact them.

Secrets are SCRAM salts and keys, and the values of password-type configs (Kafka
stores them encrypted with ``password.encoder.secret``, but the ciphertext is still
not for logs). Kafka knows each config's type from its definitions; a name-based rule
covers every password config Kafka defines, including per-listener ones
(``listener.name.<l>.ssl.key.password``, ``...sasl.jaas.config``).
"""

from __future__ import annotations

REDACTED = "<redacted>"

_SECRET_SUFFIXES = (
    "password",
    "sasl.jaas.config",
    "ssl.keystore.key",
    ".secret",
    "secret.key",
    "master.key",
    "zookeeper.auth.digest",  # zk2kraft's own ZooKeeper digest login, user:password
)

# Record type -> fields that are always secret.
SECRET_FIELDS: dict[str, frozenset[str]] = {
    "UserScramCredentialRecord": frozenset({"salt", "stored_key", "server_key"}),
}


def is_sensitive_config(name: str) -> bool:
    """True for a config whose value must not be printed (password-type configs)."""
    return name.endswith(_SECRET_SUFFIXES)
