"""TLS settings in Kafka's vocabulary, for the brokers' Kafka listeners, the gRPC channels
between controllers and brokers, and ZooKeeper's clients (``zookeeper.ssl.*``).

Stores (``ssl.keystore.type``, ``ssl.truststore.type``):

- ``PEM``, given inline (``ssl.keystore.certificate.chain`` + ``ssl.keystore.key``,
  ``ssl.truststore.certificates``) or as files (``ssl.keystore.location``: the key and its
  chain in one PEM file; ``ssl.truststore.location``: the CA certificates);
- ``PKCS12`` files, opened with ``ssl.keystore.password`` / ``ssl.truststore.password``
  (the store's password protects its key too, as keytool makes them) and converted to the
  PEM text :class:`TlsSettings` carries;
- ``JKS`` (Kafka's default) is refused with the ``keytool`` line that converts it to
  PKCS12; a store file that starts with JKS's magic number is refused whatever its type.

With no type given, a file's content decides: PEM text, else PKCS12. A listener's own
settings (``listener.name.<name>.ssl.*``, the name in lower case) win over the plain ones,
as in Kafka. ``ssl.client.auth``: ``none``, ``requested`` or ``required``.

The private key and the passwords are never shown (a wrong password names the store's
file). Python's ``ssl`` loads a key only from a file, so a key goes through
:class:`PrivateKeyFile` (readable by its owner only), removed as soon as it is loaded.
"""

from __future__ import annotations

import os
import shlex
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

import grpc
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from migration.common.files import UnreadableFileError, read_regular
from migration.common.text import shown

KEYS = {
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password",
    "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.key.password",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.truststore.certificates", "ssl.client.auth", "ssl.endpoint.identification.algorithm",
}  # fmt: skip
CLIENT_AUTH = ("none", "requested", "required")
STORE_TYPES = ("PEM", "PKCS12")
JKS_MAGIC = b"\xfe\xed\xfe\xed"  # the first four bytes of every JKS store
# A store file read whole is at most this: the whole Mozilla CA bundle as PEM is ~220 KB,
# a PKCS12 key store with its chain a few KB; a larger file is refused unread (a
# location of /dev/zero or a log file would otherwise be read until memory runs out).
STORE_MAX_BYTES = 1024 * 1024


class PrivateKeyFile:
    """A private key and its certificate chain in one PEM file readable by its owner
    only (``mkstemp``: mode 0600), for a library that loads a key only from a file;
    removed when the ``with`` block ends. ``path`` names it meanwhile."""

    def __init__(self, private_key: str, certificate_chain: str) -> None:
        fd, name = tempfile.mkstemp(prefix="zk2kraft-key-", suffix=".pem")
        self.path = Path(name)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(private_key + "\n" + certificate_chain)
        except BaseException:
            self.path.unlink()
            raise

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.path.unlink(missing_ok=True)


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
        with PrivateKeyFile(self.private_key, self.certificate_chain) as key_file:
            ctx.load_cert_chain(key_file.path, password=self.key_password)

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
    props: Mapping[str, str], listener: str | None, problems: list[str], prefix: str = "ssl"
) -> TlsSettings:
    """``listener``'s TLS settings (its ``listener.name.<name>.`` overrides first); every
    problem appended to ``problems``. ``prefix``: the settings' family, ``ssl`` (Kafka's
    listeners and clients) or ``zookeeper.ssl`` (Kafka's ZooKeeper client), read by the
    same rules."""

    def get(key: str) -> str | None:
        key = f"{prefix}.{key}"
        if listener is not None:
            own = props.get(f"listener.name.{listener.lower()}.{key}")
            if own is not None:
                return own
        return props.get(key)

    chain, key = get("keystore.certificate.chain"), get("keystore.key")
    key_password = get("key.password") or get("keystore.password")
    if (location := get("keystore.location")) and key:
        problems.append(
            f"{prefix}.keystore.key and {prefix}.keystore.location are both set: keep one"
        )
    elif location:
        kind, stored_chain, key = read_keystore(
            location, get("keystore.type"), get("keystore.password"), prefix, problems
        )
        chain = chain or stored_chain
        key_password = None if kind == "PKCS12" else key_password  # converted in the clear
    else:
        _inline_type(get("keystore.type"), f"{prefix}.keystore", problems)
    if key and not chain:
        problems.append(f"{prefix}.keystore.key needs {prefix}.keystore.certificate.chain")
    trusted = get("truststore.certificates")
    if (location := get("truststore.location")) and trusted:
        problems.append(
            f"{prefix}.truststore.certificates and {prefix}.truststore.location are both set: "
            "keep one"
        )
    elif location:
        trusted = read_truststore(
            location, get("truststore.type"), get("truststore.password"), prefix, problems
        )
    else:
        _inline_type(get("truststore.type"), f"{prefix}.truststore", problems)
    client_auth = (get("client.auth") or "none").strip().lower()
    if client_auth not in CLIENT_AUTH:
        problems.append(f"{prefix}.client.auth={shown(client_auth)} is not one of {CLIENT_AUTH}")
        client_auth = "none"
    algorithm = (get("endpoint.identification.algorithm") or "https").strip().lower()
    return TlsSettings(
        certificate_chain=chain or None,
        private_key=key or None,
        key_password=key_password,
        trusted=trusted or None,
        client_auth=client_auth,
        check_hostname=algorithm == "https",
    )


def read_keystore(
    location: str, declared: str | None, password: str | None, prefix: str, problems: list[str]
) -> tuple[str | None, str | None, str | None]:
    """The key store at ``location`` as (its type, the certificate chain, the private key),
    PEM text; ``declared``: the ``<prefix>.keystore.type`` given, if any. A PKCS12 store's
    key comes out unencrypted (in memory only); a PEM file's key as it is in the file.
    Problems name the file and the setting, never a password."""
    opened = _open_store(location, declared, f"{prefix}.keystore", problems)
    if opened is None:
        return None, None, None
    kind, data = opened
    if kind == "PEM":
        text = _pem_text(data, location, f"{prefix}.keystore", problems)
        chain, key = "".join(_blocks(text, "CERTIFICATE")), "".join(_blocks(text, "PRIVATE KEY"))
        if text and not key:
            problems.append(f"{prefix}.keystore.location: {_named(location)} holds no private key")
        return kind, chain or None, key or None
    store = _pkcs12(data, location, password, f"{prefix}.keystore.password", problems)
    if store is None:
        return kind, None, None
    if store.key is None or store.cert is None:
        problems.append(f"{prefix}.keystore.location: {_named(location)} holds no private key")
        return kind, None, None
    certs = [store.cert, *store.additional_certs]
    chain = "".join(c.certificate.public_bytes(serialization.Encoding.PEM).decode() for c in certs)
    key = store.key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return kind, chain, key


def read_truststore(
    location: str, declared: str | None, password: str | None, prefix: str, problems: list[str]
) -> str | None:
    """The CA certificates of the trust store at ``location``, PEM text (as
    :func:`read_keystore`, for ``<prefix>.truststore.*``)."""
    opened = _open_store(location, declared, f"{prefix}.truststore", problems)
    if opened is None:
        return None
    kind, data = opened
    if kind == "PEM":
        text = _pem_text(data, location, f"{prefix}.truststore", problems)
        if "-----BEGIN CERTIFICATE-----" in text:
            return text
        certs = []
        if data and not text:  # not text at all: _pem_text said so
            return None
    else:
        store = _pkcs12(data, location, password, f"{prefix}.truststore.password", problems)
        if store is None:
            return None
        certs = ([store.cert] if store.cert else []) + list(store.additional_certs)
    if not certs:
        problems.append(f"{prefix}.truststore.location: {_named(location)} holds no certificates")
        return None
    return "".join(c.certificate.public_bytes(serialization.Encoding.PEM).decode() for c in certs)


def _inline_type(declared: str | None, store: str, problems: list[str]) -> None:
    """Inline stores (or none) are PEM: another type given is a problem."""
    if declared and declared.strip().upper() != "PEM":
        problems.append(
            f"{store}.type={shown(declared.strip())} needs {store}.location (inline stores are PEM)"
        )


def _open_store(
    location: str, declared: str | None, store: str, problems: list[str]
) -> tuple[str, bytes] | None:
    """(the store's type, its bytes); JKS and unknown types are problems, and so is a
    location that is not a regular file of at most :data:`STORE_MAX_BYTES` (the problem
    names the file and the limit; nothing past the limit is read)."""
    kind = declared.strip().upper() if declared and declared.strip() else None
    if kind is not None and kind not in (*STORE_TYPES, "JKS"):
        problems.append(f"{store}.type={shown(kind)} is not one of {STORE_TYPES}")
        return None
    try:
        data = read_regular(Path(location), STORE_MAX_BYTES)
    except UnreadableFileError as exc:
        problems.append(
            f"{store}.location: cannot read {_named(location)}: {exc.reason} "
            "(a key or trust store file)"
        )
        return None
    except OSError as exc:
        problems.append(f"{store}.location: cannot read {_named(location)}: {exc.strerror}")
        return None
    if kind == "JKS" or data.startswith(JKS_MAGIC):
        src, dest = shlex.quote(location), shlex.quote(f"{location}.p12")
        problems.append(
            f"{store}.location: {_named(location)} is a JKS store, which zk2kraft does not "
            f"read; convert it to PKCS12 with: keytool -importkeystore -srckeystore {src} "
            f"-srcstoretype JKS -destkeystore {dest} -deststoretype PKCS12 "
            f"(then {store}.location={location}.p12 and {store}.type=PKCS12)"
        )
        return None
    if kind is None:
        kind = "PEM" if b"-----BEGIN " in data else "PKCS12"
    return kind, data


def _named(location: str) -> str:
    """A store's file, quoted and named in full (up to PATH_MAX) for the operator to find."""
    return shown(location, limit=4096)


def _pem_text(data: bytes, location: str, store: str, problems: list[str]) -> str:
    try:
        return data.decode("ascii")
    except UnicodeDecodeError:
        problems.append(f"{store}.location: {_named(location)} is not PEM text")
        return ""


def _pkcs12(
    data: bytes, location: str, password: str | None, password_key: str, problems: list[str]
) -> pkcs12.PKCS12KeyAndCertificates | None:
    try:
        return pkcs12.load_pkcs12(data, password.encode() if password else None)
    except ValueError:  # cryptography says the same for a wrong password and a damaged file
        problems.append(
            f"cannot open the PKCS12 store {_named(location)}: a wrong {password_key}"
            + ("" if password else " (none is set)")
            + ", or not a PKCS12 file"
        )
        return None


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
