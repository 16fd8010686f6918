"""PKCS12 key and trust stores made at test time (``cryptography``), from the PEM key and
certificates a :class:`tests.security_harness.Authority` issues: what keytool would make
for a Kafka operator (one password protecting the store and its key)."""

from __future__ import annotations

from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12

from tests.security_harness import Authority


def _encryption(password: str | None) -> serialization.KeySerializationEncryption:
    if password is None:
        return serialization.NoEncryption()
    return serialization.BestAvailableEncryption(password.encode())


def _private(path: Path, data: bytes) -> Path:
    path.touch(mode=0o600)
    path.write_bytes(data)
    return path


def pkcs12_keystore(path: Path, ca: Authority, cn: str, password: str) -> Path:
    """A PKCS12 key store at ``path``: a key and its certificate ``ca`` issued for
    ``cn``, with the CA's certificate as the rest of the chain."""
    key_pem, cert_pem = ca.issue(cn)
    key = serialization.load_pem_private_key(key_pem.encode(), None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)  # what an Authority issues
    cert = x509.load_pem_x509_certificate(cert_pem.encode())
    assert ca.cert is not None
    data = pkcs12.serialize_key_and_certificates(
        cn.encode(),
        key,
        cert,
        [ca.cert],
        _encryption(password),
    )
    return _private(path, data)


def pkcs12_truststore(path: Path, ca: Authority, password: str | None) -> Path:
    """A PKCS12 trust store at ``path`` holding ``ca``'s certificate only."""
    assert ca.cert is not None
    data = pkcs12.serialize_key_and_certificates(None, None, None, [ca.cert], _encryption(password))
    return _private(path, data)
