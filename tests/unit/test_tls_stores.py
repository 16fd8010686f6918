"""Key and trust stores as Kafka names them (``ssl.keystore.*``, ``ssl.truststore.*``): a
wrong store password names the file, never the password; ZooKeeper's
``zookeeper.ssl.keystore.*`` read the same way. A real mutual-TLS connection and the
JDK's keytool: tests/integration/test_tls_stores.py."""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives import serialization

from migration.common.tls import tls_settings
from migration.zk.security import zk_security
from tests.security_harness import Authority
from tests.tls_stores import pkcs12_keystore

PASSWORD = "store-password-1"


def test_a_wrong_store_password_names_the_file_not_the_password(tmp_path: Path) -> None:
    store = pkcs12_keystore(tmp_path / "node.p12", Authority("CA"), "node", PASSWORD)
    problems: list[str] = []
    tls_settings(
        {
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(store),
            "ssl.keystore.password": "not-the-store-password",
        },
        None,
        problems,
    )
    assert len(problems) == 1
    assert str(store) in problems[0] and "a wrong ssl.keystore.password" in problems[0]
    assert "not-the-store-password" not in problems[0] and PASSWORD not in problems[0]


def test_a_zookeeper_key_that_does_not_load_is_named_before_any_connect(tmp_path: Path) -> None:
    """``zookeeper.ssl.keystore.*``: a PEM key encrypted with another password than
    ``zookeeper.ssl.keystore.password`` is a configuration problem naming the file."""
    key_pem, cert_pem = Authority("CA").issue("zk2kraft")
    key = serialization.load_pem_private_key(key_pem.encode(), None)
    encrypted = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(PASSWORD.encode()),
    ).decode()
    store = tmp_path / "zk2kraft.pem"
    store.write_text(encrypted + cert_pem)
    props = {
        "zookeeper.ssl.client.enable": "true",
        "zookeeper.ssl.keystore.location": str(store),
        "zookeeper.ssl.keystore.password": "not-the-key-password",
    }
    problems: list[str] = []
    zk_security(props, problems, {})
    assert len(problems) == 1 and str(store) in problems[0] and "does not load" in problems[0]
    assert "not-the-key-password" not in problems[0] and PASSWORD not in problems[0]
    problems = []
    tls = zk_security(props | {"zookeeper.ssl.keystore.password": PASSWORD}, problems, {}).tls
    assert not problems and tls is not None and tls.certificate_chain == cert_pem


def test_a_pem_trust_store_without_certificates_is_named(tmp_path: Path) -> None:
    # A key file given as the trust store: named as a problem of that setting when the
    # config is read, not an ssl error at the first connect.
    wrong = tmp_path / "key-only.pem"
    wrong.write_text("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
    problems: list[str] = []
    tls_settings({"ssl.truststore.location": str(wrong)}, None, problems)
    assert len(problems) == 1, problems
    assert problems[0].startswith("ssl.truststore.location: ") and str(wrong) in problems[0]
    assert problems[0].endswith("holds no certificates")
