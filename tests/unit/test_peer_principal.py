"""A gRPC peer's certificate principal is the one the Kafka listener gives the same
certificate: the DER walk reads the subject exactly as Python's ssl module does."""

from __future__ import annotations

import datetime
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from migration.kafka.principal import certificate_subject, peer_host
from migration.kafka.server import certificate_principal


def _certificate(subject: x509.Name) -> x509.Certificate:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )


SUBJECTS = {
    "common": x509.Name(
        [x509.NameAttribute(NameOID.ORGANIZATION_NAME, "zk2kraft tests"),
         x509.NameAttribute(NameOID.COMMON_NAME, "broker-1")]
    ),
    "every usual attribute": x509.Name(
        [x509.NameAttribute(NameOID.DOMAIN_COMPONENT, "com"),
         x509.NameAttribute(NameOID.DOMAIN_COMPONENT, "example"),
         x509.NameAttribute(NameOID.COUNTRY_NAME, "DE"),
         x509.NameAttribute(NameOID.STATE_OR_PROVINCE_NAME, "Bayern"),
         x509.NameAttribute(NameOID.LOCALITY_NAME, "München"),
         x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Ops, Inc."),
         x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, "kafka"),
         x509.NameAttribute(NameOID.USER_ID, "u42"),
         x509.NameAttribute(NameOID.EMAIL_ADDRESS, "ops@example.com"),
         x509.NameAttribute(NameOID.COMMON_NAME, "Zoë")]
    ),
    "a multi-valued RDN": x509.Name(
        [x509.RelativeDistinguishedName(
            [x509.NameAttribute(NameOID.COMMON_NAME, "a"),
             x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, "b")]
        )]
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(SUBJECTS))
def test_the_subject_reads_as_the_ssl_module_reads_it(case: str, tmp_path: Path) -> None:
    cert = _certificate(SUBJECTS[case])
    pem = tmp_path / "cert.pem"
    pem.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    # the ssl module's own decoder: the shape getpeercert() gives the Kafka listener
    expected = ssl._ssl._test_decode_cert(str(pem))["subject"]  # type: ignore[attr-defined]
    subject = certificate_subject(cert.public_bytes(serialization.Encoding.DER))
    assert subject == expected
    assert certificate_principal({"subject": subject}) == certificate_principal(
        {"subject": expected}
    )


def test_the_principal_names_the_certificate_as_kafka_does() -> None:
    cert = _certificate(SUBJECTS["common"])
    subject = certificate_subject(cert.public_bytes(serialization.Encoding.DER))
    assert certificate_principal({"subject": subject}) == "User:CN=broker-1,O=zk2kraft tests"


@pytest.mark.parametrize("cut", [0, 1, 2, 10, 100, -1])
def test_bytes_that_are_not_a_certificate_are_refused(cut: int) -> None:
    der = _certificate(SUBJECTS["common"]).public_bytes(serialization.Encoding.DER)
    with pytest.raises((ValueError, IndexError)):
        certificate_subject(der[:cut] if cut >= 0 else b"\x30\x03\x02\x01\x00")


def test_the_peer_host_is_the_address_without_the_port() -> None:
    assert peer_host("ipv4:10.0.0.1:5000") == "10.0.0.1"
    assert peer_host("ipv6:[::1]:5000") == "::1"
    assert peer_host("ipv6:%5B::1%5D:5000") == "::1"
    assert peer_host("unix:/tmp/socket") == ""
