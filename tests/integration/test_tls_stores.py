"""Key and trust stores, for real: PKCS12 stores made at test time carry a mutual-TLS
connection over a socket; a JKS store (made by the JDK's keytool) is refused with the
keytool line that converts it, and that line works. The rest:
tests/unit/test_tls_stores.py."""

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
from cryptography.x509.oid import NameOID

from migration.common.tls import TlsSettings, tls_settings
from tests.security_harness import Authority
from tests.tls_stores import pkcs12_keystore, pkcs12_truststore
from tests.unit.test_tls_stores import PASSWORD


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
