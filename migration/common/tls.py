"""TLS settings in Kafka's vocabulary, for the brokers' Kafka listeners and the gRPC
channels between controllers and brokers.

PEM only (``ssl.keystore.type=PEM``, ``ssl.truststore.type=PEM``), given inline
(``ssl.keystore.certificate.chain`` + ``ssl.keystore.key``, ``ssl.truststore.certificates``)
or as files (``ssl.keystore.location``: the key and its chain in one PEM file;
``ssl.truststore.location``: the CA certificates). A listener's own settings
(``listener.name.<name>.ssl.*``, the name in lower case) win over the plain ones, as in
Kafka. ``ssl.client.auth``: ``none``, ``requested`` or ``required``.

The private key and ``ssl.key.password`` are never shown; Python's ``ssl`` loads a key
only from a file, so an inline key goes through a file readable by its owner only,
removed as soon as it is loaded.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from migration.common.text import shown

KEYS = {
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password",
    "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.key.password",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.truststore.certificates", "ssl.client.auth", "ssl.endpoint.identification.algorithm",
}  # fmt: skip
CLIENT_AUTH = ("none", "requested", "required")


@dataclass(frozen=True)
class TlsSettings:
    """One listener's (or one client's) TLS material, as PEM text."""

    certificate_chain: str | None = None
    private_key: str | None = field(default=None, repr=False)
    key_password: str | None = field(default=None, repr=False)
    trusted: str | None = None
    client_auth: str = "none"
    check_hostname: bool = True

    def server_context(self) -> ssl.SSLContext:
        """An ``ssl`` server context (the Kafka listeners), TLS 1.2 at least."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        self._load_key(ctx)
        if self.trusted:
            ctx.load_verify_locations(cadata=self.trusted)
        ctx.verify_mode = {
            "none": ssl.CERT_NONE,
            "requested": ssl.CERT_OPTIONAL,
            "required": ssl.CERT_REQUIRED,
        }[self.client_auth]
        return ctx

    def client_context(self) -> ssl.SSLContext:
        """An ``ssl`` client context: the trust store (else the system's CAs) checks the
        server; the key store, when there is one, is this client's certificate."""
        ctx = ssl.create_default_context(cadata=self.trusted)
        ctx.check_hostname = self.check_hostname
        if self.certificate_chain and self.private_key:
            self._load_key(ctx)
        return ctx

    def _load_key(self, ctx: ssl.SSLContext) -> None:
        if not (self.certificate_chain and self.private_key):
            raise ValueError("a TLS server needs a key store (ssl.keystore.*)")
        fd, name = tempfile.mkstemp(prefix="zk2kraft-key-", suffix=".pem")
        try:
            with os.fdopen(fd, "w") as f:  # mkstemp: mode 0600
                f.write(self.private_key + "\n" + self.certificate_chain)
            ctx.load_cert_chain(name, password=self.key_password)
        finally:
            os.unlink(name)

    def grpc_server_credentials(self) -> grpc.ServerCredentials:
        """gRPC server credentials; a peer must present a certificate the trust store
        signs when ``ssl.client.auth=required`` (mutual TLS)."""
        assert self.certificate_chain and self.private_key
        return grpc.ssl_server_credentials(
            [(self.private_key.encode(), self.certificate_chain.encode())],
            root_certificates=self.trusted.encode() if self.trusted else None,
            require_client_auth=self.client_auth == "required",
        )

    def grpc_channel_credentials(self) -> grpc.ChannelCredentials:
        """gRPC channel credentials: the trust store checks the server, the key store
        (when there is one) is this peer's identity."""
        return grpc.ssl_channel_credentials(
            root_certificates=self.trusted.encode() if self.trusted else None,
            private_key=self.private_key.encode() if self.private_key else None,
            certificate_chain=self.certificate_chain.encode() if self.certificate_chain else None,
        )


def tls_settings(
    props: Mapping[str, str], listener: str | None, problems: list[str]
) -> TlsSettings:
    """``listener``'s TLS settings (its ``listener.name.<name>.`` overrides first)."""

    def get(key: str) -> str | None:
        if listener is not None:
            own = props.get(f"listener.name.{listener.lower()}.{key}")
            if own is not None:
                return own
        return props.get(key)

    def pem(inline_key: str, location_key: str, what: str) -> str | None:
        inline, location = get(inline_key), get(location_key)
        if inline and location:
            problems.append(f"{inline_key} and {location_key} are both set: keep one")
        if location:
            try:
                return Path(location).read_text(encoding="ascii")
            except (OSError, UnicodeDecodeError) as exc:
                problems.append(f"{location_key}: cannot read {what} {shown(location)}: {exc}")
                return None
        return inline

    for store in ("keystore", "truststore"):
        kind = (get(f"ssl.{store}.type") or "PEM").strip().upper()
        if kind != "PEM":
            problems.append(f"ssl.{store}.type={shown(kind)}: only PEM stores are supported")
    keystore = pem("ssl.keystore.key", "ssl.keystore.location", "the key store")
    chain = get("ssl.keystore.certificate.chain")
    key = keystore
    if keystore and "PRIVATE KEY" in keystore and not chain:
        chain = "".join(_blocks(keystore, "CERTIFICATE"))  # a location holds both
        key = "".join(_blocks(keystore, "PRIVATE KEY"))
    if key and not chain:
        problems.append("ssl.keystore.key needs ssl.keystore.certificate.chain")
    client_auth = (get("ssl.client.auth") or "none").strip().lower()
    if client_auth not in CLIENT_AUTH:
        problems.append(f"ssl.client.auth={shown(client_auth)} is not one of {CLIENT_AUTH}")
        client_auth = "none"
    algorithm = (get("ssl.endpoint.identification.algorithm") or "https").strip().lower()
    return TlsSettings(
        certificate_chain=chain or None,
        private_key=key or None,
        key_password=get("ssl.key.password") or get("ssl.keystore.password"),
        trusted=pem("ssl.truststore.certificates", "ssl.truststore.location", "the trust store"),
        client_auth=client_auth,
        check_hostname=algorithm == "https",
    )


def _blocks(text: str, label: str) -> list[str]:
    """The PEM blocks of ``text`` whose label ends with ``label``."""
    out: list[str] = []
    lines: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("-----BEGIN ") and line.rstrip("-").endswith(label):
            lines = [line]
        elif lines is not None:
            lines.append(line)
            if line.startswith("-----END "):
                out.append("\n".join(lines) + "\n")
                lines = None
    return out
