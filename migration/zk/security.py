"""How every ZooKeeper client of zk2kraft authenticates and which ACLs its znodes carry,
from Kafka's settings.

- SASL DIGEST-MD5 (kazoo through ``pure-sasl``), from the ``Client`` section (or the one
  ``zookeeper.sasl.clientconfig`` names) of the JAAS file named by
  ``java.security.auth.login.config`` (a property, or ``-Djava.security.auth.login.config``
  in ``KAFKA_OPTS``, as Kafka's scripts pass it); ``zookeeper.sasl.client=false`` turns it
  off. ``zookeeper.auth.digest=user:password`` adds ZooKeeper's digest scheme instead (for
  tests and simple set-ups; not a Kafka setting).
- ``zookeeper.ssl.client.enable=true``: TLS to ZooKeeper with Kafka's ``zookeeper.ssl.*``
  settings: PEM or PKCS12 key and trust stores (a JKS one is refused with the keytool
  line that converts it), read by ``common/tls.py`` by the rules of Kafka's ``ssl.*``.
  The key store is the client's certificate, for a ZooKeeper whose ``ssl.clientAuth``
  wants one: its key is loaded into one ``ssl`` context per kazoo client, which every
  (re)connection of that client uses (:class:`TlsHandler`), so no key file stays on disk.
- ``zookeeper.set.acl=true``: Kafka's ACLs on every znode created (:meth:`acl_for`): all
  rights for the creating principal (ZooKeeper's ``auth`` scheme), plus world-readable
  except under the sensitive roots (SCRAM credentials, broker configs, delegation
  tokens); ``/consumers`` stays open, as Kafka leaves it.

Secrets (the SASL and digest passwords, the key store's password) are never shown.
"""

from __future__ import annotations

import os
import shlex
import socket
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.handlers.utils import create_tcp_connection
from kazoo.security import ACL, Id, Permissions

from migration.common.jaas import JaasError, read_jaas_section
from migration.common.properties import ConfigError, read_properties
from migration.common.text import PATH_LIMIT, shown
from migration.common.tls import TlsSettings, tls_settings
from migration.zk.jute import INT

JAAS_PROPERTY = "java.security.auth.login.config"
KEYS = {
    "zookeeper.set.acl", "zookeeper.sasl.client", "zookeeper.sasl.clientconfig",
    "zookeeper.sasl.client.username", JAAS_PROPERTY, "zookeeper.auth.digest",
    "zookeeper.ssl.client.enable", "zookeeper.clientCnxnSocket",
    "zookeeper.ssl.keystore.location", "zookeeper.ssl.keystore.password",
    "zookeeper.ssl.keystore.type", "zookeeper.ssl.truststore.location",
    "zookeeper.ssl.truststore.password", "zookeeper.ssl.truststore.type",
    "zookeeper.ssl.endpoint.identification.algorithm",
}  # fmt: skip
DIGEST_MODULE = "org.apache.zookeeper.server.auth.DigestLoginModule"
# Kafka's sensitive roots: znodes at and under them are never world-readable.
SENSITIVE_ROOTS = ("/config/users", "/config/brokers", "/delegation_token")
OPEN_PATHS = ("/consumers",)
_UNDER_SENSITIVE_ROOTS = tuple(root + "/" for root in SENSITIVE_ROOTS)

_CREATOR_ALL = ACL(Permissions.ALL, Id("auth", ""))
_WORLD_READ = ACL(Permissions.READ, Id("world", "anyone"))
_OPEN = ACL(Permissions.ALL, Id("world", "anyone"))


class TlsHandler(SequentialThreadingHandler):  # type: ignore[misc]
    """kazoo's threading handler with its connections wrapped in one prepared ``ssl``
    context (trust store, client certificate and key, host name check) rather than in the
    files kazoo would read again at every connect. ``last_tls_error``: why the latest
    TLS handshake failed (None once one succeeds), for the connect error to say."""

    def __init__(self, context: ssl.SSLContext) -> None:
        super().__init__()
        self.context = context
        self.last_tls_error: str | None = None

    def create_connection(
        self,
        address: tuple[str, int],
        hostname: str | None = None,
        timeout: float | None = None,
        use_ssl: bool = True,
        **files: Any,  # kazoo's ca/certfile/keyfile: the context has them
    ) -> ssl.SSLSocket:
        sock = create_tcp_connection(socket, address, hostname, timeout)
        try:
            wrapped = self.context.wrap_socket(sock, server_hostname=hostname or address[0])
        except ssl.SSLError as exc:
            sock.close()
            self.last_tls_error = exc.strerror or str(exc)
            raise
        except BaseException:
            sock.close()
            raise
        self.last_tls_error = None
        return wrapped


@dataclass(frozen=True)
class ZkSecurity:
    """A ZooKeeper client's credentials and ACL policy (default: none, open ACLs)."""

    set_acl: bool = False
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    digest: str | None = field(default=None, repr=False)  # "user:password"
    tls: TlsSettings | None = None

    @property
    def authenticated(self) -> bool:
        return self.sasl_username is not None or self.digest is not None

    def kazoo_options(self) -> dict[str, Any]:
        """Keyword arguments for one ``KazooClient`` (a fresh handler each call: a kazoo
        client owns its handler's threads)."""
        options: dict[str, Any] = {}
        if self.sasl_username is not None:
            options["sasl_options"] = {
                "mechanism": "DIGEST-MD5",
                "username": self.sasl_username,
                "password": self.sasl_password or "",
            }
        if self.digest is not None:
            options["auth_data"] = [("digest", self.digest)]
        if self.tls is not None:
            options.update(use_ssl=True, handler=TlsHandler(self.tls.client_context()))
        return options

    def acl_for(self, path: str) -> list[ACL]:
        """The ACL Kafka gives a znode it creates at ``path`` (inside the chroot)."""
        return list(_ACLS[self._kind(path)])

    def acl_bytes(self, path: str) -> bytes:
        """:meth:`acl_for` in jute, for a create inside a multi (no allocation: a seed
        of a million partitions asks once per znode, twice)."""
        return _ACL_BYTES[self._kind(path)]

    def _kind(self, path: str) -> str:
        if not self.set_acl or path in OPEN_PATHS:
            return "open"
        if path in SENSITIVE_ROOTS or path.startswith(_UNDER_SENSITIVE_ROOTS):
            return "sensitive"
        return "public"


OPEN = ZkSecurity()


def _encoded(acls: tuple[ACL, ...]) -> bytes:
    out = [INT.pack(len(acls))]
    for acl in acls:
        out.append(INT.pack(acl.perms))
        for text in (acl.id.scheme, acl.id.id):
            raw = text.encode()
            out.append(INT.pack(len(raw)) + raw)
    return b"".join(out)


_ACLS = {
    "open": (_OPEN,),
    "sensitive": (_CREATOR_ALL,),
    "public": (_CREATOR_ALL, _WORLD_READ),
}
_ACL_BYTES = {kind: _encoded(acls) for kind, acls in _ACLS.items()}


def jaas_path(props: Mapping[str, str], env: Mapping[str, str]) -> str | None:
    """``java.security.auth.login.config``: the property, else ``-D...`` in KAFKA_OPTS."""
    if JAAS_PROPERTY in props:
        return props[JAAS_PROPERTY]
    for word in shlex.split(env.get("KAFKA_OPTS", "")):
        if word.startswith(f"-D{JAAS_PROPERTY}="):
            return word.split("=", 1)[1]
    return None


def zk_security(
    props: Mapping[str, str], problems: list[str], env: Mapping[str, str] | None = None
) -> ZkSecurity:
    """The ZooKeeper security ``props`` configure; every problem appended to
    ``problems`` (the result is then not to be used)."""
    env = os.environ if env is None else env

    def flag(key: str, default: bool) -> bool:
        text = props.get(key, str(default)).strip().lower()
        if text not in ("true", "false"):
            problems.append(f"{key}={shown(text)} is not true or false")
        return text == "true"

    set_acl = flag("zookeeper.set.acl", False)
    username = password = None
    path = jaas_path(props, env)
    if path and flag("zookeeper.sasl.client", True):
        section = props.get("zookeeper.sasl.clientconfig", "Client")
        try:
            module = read_jaas_section(Path(path), section)
        except JaasError as exc:
            problems.append(f"{JAAS_PROPERTY}: {exc}")
        else:
            if module.class_name != DIGEST_MODULE:
                problems.append(
                    f"{JAAS_PROPERTY}: section {section} uses {module.class_name}; only "
                    f"DIGEST-MD5 ({DIGEST_MODULE}) is supported for ZooKeeper"
                )
            elif "username" not in module.options or "password" not in module.options:
                problems.append(f"{JAAS_PROPERTY}: section {section} needs username and password")
            else:
                username, password = module.options["username"], module.options["password"]
    digest = props.get("zookeeper.auth.digest")
    if digest is not None and ":" not in digest:
        problems.append("zookeeper.auth.digest is not user:password")
        digest = None
    if set_acl and username is None and digest is None:
        problems.append(
            "zookeeper.set.acl=true needs an authenticated ZooKeeper client: a JAAS file's "
            f"Client section ({JAAS_PROPERTY}) or zookeeper.auth.digest"
        )
    return ZkSecurity(set_acl, username, password, digest, _tls(props, problems, flag))


def _tls(props: Mapping[str, str], problems: list[str], flag: Any) -> TlsSettings | None:
    if not flag("zookeeper.ssl.client.enable", False):
        return None
    before = len(problems)
    tls = tls_settings(props, None, problems, prefix="zookeeper.ssl")
    if len(problems) == before:
        try:  # here, not at the first connect: the error names the setting
            tls.client_context()
        except ssl.SSLError as exc:
            where = shown(props.get("zookeeper.ssl.keystore.location"), PATH_LIMIT)
            problems.append(
                f"zookeeper.ssl.keystore.location: the key in {where} does not load with its "
                f"certificate and zookeeper.ssl.keystore.password ({exc.reason})"
                if tls.private_key
                else "zookeeper.ssl.truststore.location: its certificates do not load "
                f"({exc.reason})"
            )
    return tls


def zk_config_security(path: Path | None) -> ZkSecurity:
    """A command's ``--zk-config`` file (Kafka's ``zookeeper.*`` settings, as a broker's
    server.properties has them); :class:`ConfigError` listing every problem."""
    props = read_properties(path) if path is not None else {}
    problems: list[str] = []
    security = zk_security(props, problems)
    if problems:
        raise ConfigError(str(path or "the environment"), problems)
    return security
