"""Who is calling a gRPC service: the principal Kafka's default builder gives a TLS peer
(``User:<subject>`` of its verified certificate, named by
:func:`~migration.kafka.server.certificate_principal`, the one rule both the
Kafka listeners and the inter-broker listener use), ``User:ANONYMOUS`` without one
(plaintext, or TLS without client authentication), and the peer's address.

gRPC hands over the peer's certificate as PEM (``x509_pem_cert`` in the auth context,
present once the handshake verified it: ``ssl.client.auth=required``). Its subject is
read here with a small DER walk into the shape ``ssl.getpeercert()`` gives (RDNs of
``(long name, value)`` pairs), so the principal is built exactly as for a TLS client
of the Kafka listener. A certificate that cannot be read is ANONYMOUS.
"""

from __future__ import annotations

import ssl
from typing import Any
from urllib.parse import unquote

from migration.kafka.authorizer import ANONYMOUS, Principal
from migration.kafka.server import certificate_principal

Subject = tuple[tuple[tuple[str, str], ...], ...]

# OpenSSL's long names (what ssl.getpeercert() says) of the usual subject attributes.
_NAMES = {
    "2.5.4.3": "commonName", "2.5.4.4": "surname", "2.5.4.5": "serialNumber",
    "2.5.4.6": "countryName", "2.5.4.7": "localityName", "2.5.4.8": "stateOrProvinceName",
    "2.5.4.9": "streetAddress", "2.5.4.10": "organizationName",
    "2.5.4.11": "organizationalUnitName", "2.5.4.12": "title", "2.5.4.42": "givenName",
    "0.9.2342.19200300.100.1.1": "userId", "0.9.2342.19200300.100.1.25": "domainComponent",
    "1.2.840.113549.1.9.1": "emailAddress",
}  # fmt: skip
_STRINGS = {
    0x0C: "utf-8", 0x12: "ascii", 0x13: "ascii", 0x14: "latin-1", 0x16: "ascii",
    0x1A: "ascii", 0x1C: "utf-32-be", 0x1E: "utf-16-be",
}  # fmt: skip
_VERSION = 0xA0  # TBSCertificate's optional [0] version


def grpc_principal(context: Any) -> Principal:
    """The principal and host of the peer of a gRPC call (a servicer's ``context``)."""
    pem = context.auth_context().get("x509_pem_cert")
    principal = None
    if pem:
        try:
            subject = certificate_subject(ssl.PEM_cert_to_DER_cert(pem[0].decode()))
        except (ValueError, IndexError, UnicodeDecodeError):
            subject = ()
        principal = certificate_principal({"subject": subject})
    return Principal(principal or ANONYMOUS, peer_host(context.peer()))


def peer_host(peer: str) -> str:
    """The address in gRPC's peer string (``ipv4:10.0.0.1:5000``, ``ipv6:[::1]:5000``,
    percent-encoded or not); empty for other transports."""
    kind, _, rest = peer.partition(":")
    if kind not in ("ipv4", "ipv6"):
        return ""
    return unquote(rest).rsplit(":", 1)[0].strip("[]")


def certificate_subject(der: bytes) -> Subject:
    """The subject of a DER certificate, as ``ssl.getpeercert()["subject"]``. Raises
    ValueError (or IndexError) on bytes that are not a certificate."""
    _, start, end = _tlv(der, 0)  # Certificate
    _, start, end = _children(der, start, end)[0]  # TBSCertificate
    fields = _children(der, start, end)
    if fields[0][0] == _VERSION:
        fields = fields[1:]
    _, start, end = fields[4]  # serial, signature, issuer, validity, subject
    rdns = []
    for _, set_start, set_end in _children(der, start, end):
        pairs = []
        for _, at, to in _children(der, set_start, set_end):
            (_, oid_start, oid_end), (tag, value_start, value_end) = _children(der, at, to)
            oid = _oid(der[oid_start:oid_end])
            encoding = _STRINGS.get(tag)
            if encoding is None:
                raise ValueError(f"attribute {oid}: value tag {tag:#x} is not a string")
            pairs.append((_NAMES.get(oid, oid), der[value_start:value_end].decode(encoding)))
        rdns.append(tuple(pairs))
    return tuple(rdns)


def _tlv(der: bytes, at: int) -> tuple[int, int, int]:
    """(tag, start, end) of the value of the DER element at ``at``."""
    tag, length = der[at], der[at + 1]
    at += 2
    if length & 0x80:
        size = length & 0x7F
        if not 0 < size <= 4:
            raise ValueError(f"DER length of {size} bytes")
        length = int.from_bytes(der[at : at + size], "big")
        at += size
    if at + length > len(der):
        raise ValueError("DER element longer than the certificate")
    return tag, at, at + length


def _children(der: bytes, start: int, end: int) -> list[tuple[int, int, int]]:
    out = []
    while start < end:
        tag, value_start, value_end = _tlv(der, start)
        if value_end > end:
            raise ValueError("DER element longer than its parent")
        out.append((tag, value_start, value_end))
        start = value_end
    return out


def _oid(raw: bytes) -> str:
    if not raw:
        raise ValueError("empty OID")
    first = min(raw[0] // 40, 2)
    arcs = [first, raw[0] - 40 * first]
    value = 0
    for byte in raw[1:]:
        value = value << 7 | byte & 0x7F
        if not byte & 0x80:
            arcs.append(value)
            value = 0
    return ".".join(map(str, arcs))
