"""The metrics port's defences, on a real server (loopback sockets, the config read as a
process reads it): GET and HEAD only on every path; TLS (PEM and PKCS12 key stores)
served over https and refused over plain HTTP, its handshake never holding up the
accept loop; basic auth on everything but the probes; the migration page's headers;
and every bad setting one startup problem naming its key."""

from __future__ import annotations

import base64
import http.client
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import bcrypt
import pytest

from migration.common.properties import TypedProperties
from migration.observability import http_server
from migration.observability.endpoint import KEYS, MetricsEndpoint, MetricsServer, metrics_endpoint
from migration.observability.health import LIVE_PATH, READY_PATH, Health, Page
from migration.pages.live import CSP, HEADERS
from tests.security_harness import Authority
from tests.tls_stores import pkcs12_keystore

PAGE = "/migration"
Start = Callable[[dict[str, str]], MetricsServer]
HANG_GUARD_S = 30.0


def endpoint(props: dict[str, str]) -> MetricsEndpoint:
    typed = TypedProperties({"metrics.port": "0", "metrics.host": "127.0.0.1", **props})
    found = metrics_endpoint(typed)
    assert not typed.problems, typed.problems
    assert found is not None
    return found


def problems(props: dict[str, str]) -> list[str]:
    typed = TypedProperties({"metrics.port": "0", **props})
    metrics_endpoint(typed)
    return typed.problems


@pytest.fixture
def start() -> Iterator[Start]:
    servers: list[MetricsServer] = []

    def started(props: dict[str, str]) -> MetricsServer:
        server = MetricsServer(endpoint(props), [])
        server.wire_health(lambda: Health(True, "ok"), lambda: Health(True, "running"))
        server.route(PAGE, lambda: Page(b"<p>page</p>", "text/html", headers=HEADERS))
        servers.append(server)
        return server

    yield started
    for server in servers:
        server.close()


def request(
    server: MetricsServer,
    path: str,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    tls: ssl.SSLContext | None = None,
) -> tuple[int, dict[str, str], bytes]:
    if tls is None:
        conn: http.client.HTTPConnection = http.client.HTTPConnection(
            "127.0.0.1", server.port, timeout=HANG_GUARD_S
        )
    else:
        conn = http.client.HTTPSConnection(
            "localhost", server.port, timeout=HANG_GUARD_S, context=tls
        )
    try:
        conn.request(method, path, headers=headers or {})
        answer = conn.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    finally:
        conn.close()


# --- methods -------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/metrics", READY_PATH, LIVE_PATH, PAGE, "/elsewhere", "/"])
def test_only_get_and_head_on_every_path(start: Start, path: str) -> None:
    server = start({})
    for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT", "FOO"):
        status, headers, body = request(server, path, method)
        assert (status, headers["allow"]) == (405, "GET, HEAD"), (method, path)
        assert b"GET or HEAD only" in body
    assert request(server, path, "GET")[0] == 200


def test_head_answers_as_get_without_a_body(start: Start) -> None:
    server = start({})
    for path in ("/metrics", READY_PATH, PAGE):
        status, headers, body = request(server, path, "HEAD")
        got_status, got_headers, got = request(server, path, "GET")
        assert (status, body) == (200, b"") and got_status == 200 and got
        assert headers["content-type"] == got_headers["content-type"]
        assert int(headers["content-length"]) > 0
    assert b"process_resident_memory_bytes" in request(server, "/metrics")[2]


def test_the_page_cannot_be_framed(start: Start) -> None:
    server = start({})
    _, headers, _ = request(server, PAGE)
    assert "frame-ancestors 'none'" in CSP
    assert headers["content-security-policy"] == CSP
    assert headers["x-frame-options"] == "DENY"
    assert headers["x-content-type-options"] == "nosniff"


# --- TLS -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ca() -> Authority:
    return Authority("metrics test CA")


def pem_keystore(tmp_path: Path, ca: Authority) -> Path:
    key, cert = ca.issue("localhost")
    path = tmp_path / "metrics.pem"
    path.touch(mode=0o600)
    path.write_text(key + cert + ca.pem)
    return path


def client_tls(ca: Authority) -> ssl.SSLContext:
    return ssl.create_default_context(cadata=ca.pem)


def test_tls_with_a_pem_key_store(start: Start, tmp_path: Path, ca: Authority) -> None:
    keystore = pem_keystore(tmp_path, ca)
    server = start({"metrics.ssl.keystore.location": str(keystore)})
    assert server.scheme == "https"
    status, _, body = request(server, "/metrics", tls=client_tls(ca))
    assert status == 200 and b"process_resident_memory_bytes" in body
    assert request(server, READY_PATH, tls=client_tls(ca))[0] == 200
    assert request(server, "/metrics", "POST", tls=client_tls(ca))[0] == 405
    with pytest.raises((http.client.HTTPException, ConnectionError)):
        request(server, "/metrics")  # plain HTTP: its handshake fails, no answer
    with pytest.raises(ssl.SSLCertVerificationError):
        request(server, "/metrics", tls=ssl.create_default_context())  # not the system's CAs
    assert request(server, "/metrics", tls=client_tls(ca))[0] == 200  # still serving


def test_tls_with_a_pkcs12_key_store(start: Start, tmp_path: Path, ca: Authority) -> None:
    keystore = pkcs12_keystore(tmp_path / "metrics.p12", ca, "localhost", "store-secret")
    server = start(
        {
            "metrics.ssl.keystore.location": str(keystore),
            "metrics.ssl.keystore.type": "PKCS12",
            "metrics.ssl.keystore.password": "store-secret",
        }
    )
    status, _, body = request(server, "/metrics", tls=client_tls(ca))
    assert status == 200 and b"python_info" in body


def test_tls_with_client_certificates_required(start: Start, tmp_path: Path, ca: Authority) -> None:
    ca_file = tmp_path / "ca.pem"
    ca_file.write_text(ca.pem)
    server = start(
        {
            "metrics.ssl.keystore.location": str(pem_keystore(tmp_path, ca)),
            "metrics.ssl.truststore.location": str(ca_file),
            "metrics.ssl.client.auth": "required",
        }
    )
    with pytest.raises((ssl.SSLError, ConnectionError)):
        request(server, "/metrics", tls=client_tls(ca))
    key, cert = ca.issue("prometheus")
    client_file = tmp_path / "client.pem"
    client_file.write_text(key + cert)
    mutual = client_tls(ca)
    mutual.load_cert_chain(client_file)
    assert request(server, "/metrics", tls=mutual)[0] == 200


def test_a_stalled_handshake_holds_neither_the_accept_loop_nor_its_slot(
    start: Start, tmp_path: Path, ca: Authority, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Connections that send nothing, or half a ClientHello: scrapes are answered
    meanwhile (the handshake runs on each connection's own thread), and each stalled one
    is closed at the request deadline."""
    monkeypatch.setattr(http_server, "REQUEST_TIMEOUT_S", 1.0)
    server = start({"metrics.ssl.keystore.location": str(pem_keystore(tmp_path, ca))})
    stalled = []
    try:
        for n in range(6):
            client = socket.create_connection(("127.0.0.1", server.port), timeout=HANG_GUARD_S)
            if n % 2:
                client.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")  # a hello begun
            stalled.append(client)
        started = time.monotonic()
        assert request(server, "/metrics", tls=client_tls(ca))[0] == 200
        assert time.monotonic() - started < 1.0
        assert all(closed_by_server(c) for c in stalled)
    finally:
        for client in stalled:
            client.close()
    deadline = time.monotonic() + HANG_GUARD_S
    while server.connections() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.connections() == 0


def closed_by_server(client: socket.socket) -> bool:
    """Whether the server ends ``client`` (an alert may come first) within the guard."""
    client.settimeout(HANG_GUARD_S)
    try:
        while client.recv(1024):
            pass
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


# --- basic auth ----------------------------------------------------------------------


def users_file(tmp_path: Path, **users: str) -> Path:
    path = tmp_path / "metrics-users"
    path.write_text(
        "# Prometheus's scraper\n\n"
        + "".join(
            f"{user}:{bcrypt.hashpw(pw.encode(), bcrypt.gensalt(4)).decode()}\n"
            for user, pw in users.items()
        )
    )
    return path


def basic(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def test_basic_auth_on_everything_but_the_probes(start: Start, tmp_path: Path) -> None:
    users = users_file(tmp_path, prometheus="scrape-me", operator="päss:word")
    server = start({"metrics.basic.auth.users.file": str(users)})
    for path in ("/metrics", PAGE, "/elsewhere"):
        for headers in (
            {},
            basic("prometheus", "wrong"),
            basic("nobody", "scrape-me"),
            basic("prometheus", "x" * 100),
            {"Authorization": "Basic !!!not-base64"},
            {"Authorization": "Bearer scrape-me"},
        ):
            status, answer, _ = request(server, path, headers=headers)
            assert status == 401, (path, headers)
            assert answer["www-authenticate"] == 'Basic realm="zk2kraft", charset="UTF-8"'
        assert request(server, path, "HEAD")[0] == 401
    assert request(server, "/metrics", headers=basic("prometheus", "scrape-me"))[0] == 200
    assert request(server, PAGE, headers=basic("operator", "päss:word"))[0] == 200
    assert request(server, "/metrics", "HEAD", headers=basic("prometheus", "scrape-me"))[0] == 200
    for probe in (READY_PATH, LIVE_PATH):  # Kubernetes' probes send no credentials
        assert request(server, probe)[0] == 200
    assert request(server, "/metrics", "POST", headers=basic("prometheus", "scrape-me"))[0] == 405


def test_tls_and_basic_auth_together(start: Start, tmp_path: Path, ca: Authority) -> None:
    server = start(
        {
            "metrics.ssl.keystore.location": str(pem_keystore(tmp_path, ca)),
            "metrics.basic.auth.users.file": str(users_file(tmp_path, prometheus="s3cret")),
        }
    )
    tls = client_tls(ca)
    assert request(server, "/metrics", tls=tls)[0] == 401
    assert request(server, "/metrics", headers=basic("prometheus", "s3cret"), tls=tls)[0] == 200
    assert request(server, READY_PATH, tls=tls)[0] == 200


# --- configuration -------------------------------------------------------------------


def test_the_keys_are_known_to_the_process_configs() -> None:
    assert {
        "metrics.ssl.keystore.location",
        "metrics.ssl.keystore.password",
        "metrics.ssl.keystore.type",
        "metrics.ssl.key.password",
        "metrics.ssl.client.auth",
        "metrics.basic.auth.users.file",
    } <= KEYS


def one_problem(props: dict[str, str]) -> str:
    found = problems(props)
    assert len(found) == 1, found
    return found[0]


def test_bad_tls_settings_are_one_problem_naming_the_key(tmp_path: Path, ca: Authority) -> None:
    missing = one_problem({"metrics.ssl.keystore.location": str(tmp_path / "absent.pem")})
    assert missing.startswith("metrics.ssl.keystore.location: cannot read")
    no_store = one_problem({"metrics.ssl.client.auth": "none"})
    assert "metrics.ssl.client.auth is set" in no_store and "no key store" in no_store
    p12 = pkcs12_keystore(tmp_path / "m.p12", ca, "localhost", "right")
    wrong = one_problem(
        {"metrics.ssl.keystore.location": str(p12), "metrics.ssl.keystore.password": "wrong"}
    )
    assert "metrics.ssl.keystore.password" in wrong and "wrong" not in wrong.replace("a wrong", "")
    no_trust = one_problem(
        {
            "metrics.ssl.keystore.location": str(pem_keystore(tmp_path, ca)),
            "metrics.ssl.client.auth": "required",
        }
    )
    assert no_trust.startswith("metrics.ssl.client.auth=required needs a trust store")
    cert_only = tmp_path / "cert-only.pem"
    cert_only.write_text(ca.pem)
    assert "holds no private key" in one_problem({"metrics.ssl.keystore.location": str(cert_only)})
    without_port = TypedProperties({"metrics.ssl.keystore.location": "/x"})
    assert metrics_endpoint(without_port) is None
    assert without_port.problems == ["metrics.ssl.keystore.location is set but metrics.port is not"]


def test_an_encrypted_pem_key_with_a_wrong_password(tmp_path: Path, ca: Authority) -> None:
    from cryptography.hazmat.primitives import serialization

    key_pem, cert = ca.issue("localhost")
    key = serialization.load_pem_private_key(key_pem.encode(), None)
    encrypted = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"right"),
    ).decode()
    path = tmp_path / "encrypted.pem"
    path.write_text(encrypted + cert)
    props = {"metrics.ssl.keystore.location": str(path), "metrics.ssl.key.password": "wrong"}
    problem = one_problem(props)
    assert problem.startswith("metrics.ssl.keystore: its key does not load")
    assert "metrics.ssl.key.password" in problem and "=wrong" not in problem
    assert endpoint({**props, "metrics.ssl.key.password": "right"}).tls is not None


def test_bad_users_files_are_one_problem_naming_the_key(tmp_path: Path) -> None:
    key = "metrics.basic.auth.users.file"
    absent = one_problem({key: str(tmp_path / "absent")})
    assert absent.startswith(f"{key}=") and "cannot read it" in absent
    assert "not a regular file" in one_problem({key: str(tmp_path)})
    plain = tmp_path / "plain"
    plain.write_text("prometheus:scrape-me\n")
    not_bcrypt = one_problem({key: str(plain)})
    assert not_bcrypt.startswith(f"{key}=") and "line 1 (user 'prometheus'): not a bcrypt" in (
        not_bcrypt.replace('"', "'")
    )
    assert "scrape-me" not in not_bcrypt
    no_colon = tmp_path / "no-colon"
    no_colon.write_text("just-a-name\n")
    assert "line 1 is not user:bcrypt-hash" in one_problem({key: str(no_colon)})
    empty = tmp_path / "empty"
    empty.write_text("# nobody yet\n")
    assert one_problem({key: str(empty)}).endswith("names no user")
    hashed = bcrypt.hashpw(b"pw", bcrypt.gensalt(4)).decode()
    twice = tmp_path / "twice"
    twice.write_text(f"a:{hashed}\na:{hashed}\n")
    assert "given twice" in one_problem({key: str(twice)})
    htpasswd = tmp_path / "htpasswd"  # htpasswd -B writes $2y$
    htpasswd.write_text(f"a:{hashed.replace('$2b$', '$2y$', 1)}\n")
    assert endpoint({key: str(htpasswd)}).users[0][0] == "a"
