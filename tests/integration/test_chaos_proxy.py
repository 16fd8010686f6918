"""The chaos suite's TCP proxy (tests/chaos/proxy.py) against a real echo server on
loopback: what a client sees in each mode (a reset, a silence, the bytes), and that
healing puts the link back with the held bytes delivered in order."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from tests.broker_harness import eventually
from tests.chaos.proxy import Links, TcpProxy

SILENCE_S = 0.5  # how long a client waits for an answer that must not come


class EchoServer:
    """Echoes every connection's bytes back; counts the connections it accepted."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    @staticmethod
    def _echo(conn: socket.socket) -> None:
        with conn:
            try:
                while data := conn.recv(4096):
                    conn.sendall(data)
            except OSError:
                return

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    server = EchoServer()
    yield server
    server.close()


@pytest.fixture
def proxy(echo: EchoServer) -> Iterator[TcpProxy]:
    p = TcpProxy(echo.port, name="test")
    yield p
    p.close()


def _connect(proxy: TcpProxy) -> socket.socket:
    return socket.create_connection(("127.0.0.1", proxy.port), timeout=5)


def _receive(conn: socket.socket, n: int) -> bytes:
    got = b""
    while len(got) < n and (chunk := conn.recv(n - len(got))):
        got += chunk
    return got


def _round_trip(conn: socket.socket, data: bytes) -> bytes:
    conn.sendall(data)
    return _receive(conn, len(data))


def _reset(conn: socket.socket) -> bool:
    """The connection was reset or closed by the proxy (not silent)."""
    try:
        conn.sendall(b"x")
        return conn.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True


def _silent(conn: socket.socket) -> bool:
    conn.settimeout(SILENCE_S)
    try:
        conn.recv(1)
    except TimeoutError:
        return True
    finally:
        conn.settimeout(5)
    return False


def test_an_open_proxy_passes_bytes_both_ways_and_a_delay_keeps_their_order(
    proxy: TcpProxy,
) -> None:
    with _connect(proxy) as conn:
        assert _round_trip(conn, b"hello") == b"hello"
        proxy.delay_s = 0.02
        assert _round_trip(conn, b"slow but whole") == b"slow but whole"
    assert proxy.mode == "open"


def test_a_cut_resets_open_connections_and_new_ones_until_healed(
    proxy: TcpProxy, echo: EchoServer
) -> None:
    with _connect(proxy) as before:
        assert _round_trip(before, b"a") == b"a"
        proxy.cut()
        assert proxy.mode == "cut"
        assert _reset(before)
    with _connect(proxy) as during:  # accepted by the proxy, reset at once
        assert _reset(during)
    accepted = echo.accepted
    proxy.heal()
    with _connect(proxy) as after:
        assert _round_trip(after, b"back") == b"back"
    assert echo.accepted == accepted + 1


def test_a_timed_cut_ends_by_itself(proxy: TcpProxy) -> None:
    proxy.cut(0.3)
    with _connect(proxy) as during:
        assert _reset(during)
    eventually(lambda: proxy.mode == "open", 10, "the cut over")
    with _connect(proxy) as after:
        assert _round_trip(after, b"ok") == b"ok"


def test_a_blackhole_answers_nothing_resets_nothing_and_delivers_the_held_bytes_when_healed(
    proxy: TcpProxy, echo: EchoServer
) -> None:
    with _connect(proxy) as old:
        assert _round_trip(old, b"1") == b"1"
        proxy.blackhole()
        eventually(lambda: proxy.mode == "blackhole", 10, "the blackhole on")
        old.sendall(b"held")
        assert _silent(old)
        accepted = echo.accepted
        with _connect(proxy) as new:  # accepted by the proxy, the server not reached
            new.sendall(b"waits")
            assert _silent(new)
            assert echo.accepted == accepted
            proxy.heal()
            assert _receive(new, 5) == b"waits"
        assert _receive(old, 4) == b"held"
        assert _round_trip(old, b"2") == b"2"


def test_a_proxy_without_its_upstream_yet_resets_then_forwards_once_given_one(
    echo: EchoServer,
) -> None:
    proxy = TcpProxy(None, name="later")
    try:
        with _connect(proxy) as conn:
            assert _reset(conn)
        proxy.upstream_port = echo.port
        with _connect(proxy) as conn:
            assert _round_trip(conn, b"now") == b"now"
    finally:
        proxy.close()


def test_links_name_each_direction_of_a_link_apart() -> None:
    links = Links()
    try:
        for i in (1, 2, 3):
            for j in (1, 2, 3):
                if i != j:
                    links.controllers[(i, j)] = TcpProxy(None, name=f"c{i}->c{j}")
            links.brokers[(7, i)] = TcpProxy(None, name=f"b7->c{i}")
        assert [p.name for p in links.between(1, 2)] == ["c1->c2", "c2->c1"]
        assert sorted(p.name for p in links.around(3)) == ["c1->c3", "c2->c3", "c3->c1", "c3->c2"]
        assert [p.name for p in links.from_broker(7)] == ["b7->c1", "b7->c2", "b7->c3"]
        links.controllers[(1, 2)].cut()
        links.brokers[(7, 1)].blackhole()
        eventually(lambda: links.brokers[(7, 1)].mode == "blackhole", 10, "the blackhole on")
        assert links.controllers[(2, 1)].mode == "open"
        links.heal()
        eventually(lambda: all(p.mode == "open" for p in links.all()), 10, "every link open")
    finally:
        links.close()
