"""Key and trust stores as Kafka names them (``ssl.keystore.*``, ``ssl.truststore.*``):
PKCS12 stores made at test time carry a real mutual-TLS connection; a wrong store
password names the file, never the password; a JKS store (made by the JDK's keytool) is
refused with the keytool line that converts it, and that line works; ZooKeeper's
``zookeeper.ssl.keystore.*`` read the same way."""

from __future__ import annotations

import shlex
import shutil
import socket
import ssl
import subprocess
import threading
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import NameOID

from migration.common.tls import TlsSettings, tls_settings
from migration.zk.security import zk_security
from tests.security_harness import Authority
from tests.tls_stores import pkcs12_keystore, pkcs12_truststore

PASSWORD = "store-password-1"


def _settings(props: dict[str, str]) -> TlsSettings:
    problems: list[str] = []
    tls = tls_settings(props, None, problems)
    assert not problems, problems
    return tls


def _peer_common_name(tls: ssl.SSLSocket) -> str:
    der = tls.getpeercert(binary_form=True)
    assert der is not None
    names = x509.load_der_x509_certificate(der).subject
    return str(names.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value)


def test_pkcs12_stores_carry_a_real_mutual_tls_connection(tmp_path: Path) -> None:
    ca = Authority("zk2kraft PKCS12 CA")
    server = _settings(
        {
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(pkcs12_keystore(tmp_path / "s.p12", ca, "node", PASSWORD)),
            "ssl.keystore.password": PASSWORD,
            "ssl.key.password": PASSWORD,
            "ssl.truststore.type": "PKCS12",
            "ssl.truststore.location": str(pkcs12_truststore(tmp_path / "t.p12", ca, PASSWORD)),
            "ssl.truststore.password": PASSWORD,
            "ssl.client.auth": "required",
        }
    )
    client = _settings(  # no types: the files' content says PKCS12; a trust store unlocked
        {
            "ssl.keystore.location": str(pkcs12_keystore(tmp_path / "c.p12", ca, "tool", PASSWORD)),
            "ssl.keystore.password": PASSWORD,
            "ssl.truststore.location": str(pkcs12_truststore(tmp_path / "open.p12", ca, None)),
        }
    )
    assert server.private_key is not None and server.private_key not in repr(server)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        seen: list[str] = []

        def serve() -> None:
            conn, _ = listener.accept()
            with server.server_context().wrap_socket(conn, server_side=True) as tls:
                seen.append(_peer_common_name(tls))
                tls.sendall(tls.recv(5).upper())

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        with (
            socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
            client.client_context().wrap_socket(raw, server_hostname="127.0.0.1") as tls,
        ):
            tls.sendall(b"hello")
            assert tls.recv(5) == b"HELLO"
            assert _peer_common_name(tls) == "node"
        thread.join(10)
    assert seen == ["tool"]


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


@pytest.mark.skipif(shutil.which("keytool") is None, reason="the JDK's keytool makes JKS")
def test_a_jks_store_is_refused_with_a_keytool_line_that_converts_it(tmp_path: Path) -> None:
    jks = tmp_path / "kafka.server.keystore.jks"
    subprocess.run(
        ["keytool", "-genkeypair", "-keystore", str(jks), "-storetype", "JKS",
         "-storepass", PASSWORD, "-keypass", PASSWORD, "-alias", "node", "-keyalg", "EC",
         "-dname", "CN=node", "-validity", "1"],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    assert jks.read_bytes()[:4] == bytes.fromhex("feedfeed")
    for declared in ({}, {"ssl.keystore.type": "JKS"}, {"ssl.keystore.type": "PKCS12"}):
        problems: list[str] = []
        props = {"ssl.keystore.location": str(jks), "ssl.keystore.password": PASSWORD}
        tls_settings(props | declared, None, problems)
        assert len(problems) == 1 and "is a JKS store" in problems[0], (declared, problems)
        assert PASSWORD not in problems[0]
    line = problems[0].split("convert it to PKCS12 with: ")[1].split(" (then ")[0]
    assert line == (
        f"keytool -importkeystore -srckeystore {jks} -srcstoretype JKS "
        f"-destkeystore {jks}.p12 -deststoretype PKCS12"
    )
    subprocess.run(  # the line as given, its passwords answered non-interactively
        [*shlex.split(line), "-srcstorepass", PASSWORD, "-deststorepass", PASSWORD],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    converted = _settings(
        {
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": f"{jks}.p12",
            "ssl.keystore.password": PASSWORD,
        }
    )
    assert converted.private_key is not None and "PRIVATE KEY" in converted.private_key
    assert converted.certificate_chain is not None
    converted.client_context()  # the key and its certificate load together


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
