"""Kafka's socket limits as rules: the request-memory pool's order and its accounting
when a waiting reader goes away, the connection counts, and the properties' checks."""

from __future__ import annotations

import asyncio

from migration.common.properties import TypedProperties
from migration.kafka.socket_limits import Connections, RequestMemory, SocketLimits, socket_limits


def test_request_memory_grants_in_arrival_order_and_survives_a_cancelled_waiter() -> None:
    async def scenario() -> list[str]:
        pool, order = RequestMemory(100), []
        await pool.take(90)

        async def reader(name: str, n: int) -> None:
            await pool.take(n)
            order.append(name)

        big = asyncio.create_task(reader("big", 60))
        await asyncio.sleep(0)
        gone = asyncio.create_task(reader("gone", 5))
        small = asyncio.create_task(reader("small", 5))
        await asyncio.sleep(0)
        assert order == []  # the small ones queue behind the big one, though they fit
        gone.cancel()
        await asyncio.gather(gone, return_exceptions=True)
        pool.give(90)
        await asyncio.gather(big, small)
        assert pool.used == 65  # 60 + 5: nothing held for the cancelled reader
        return order

    assert asyncio.run(scenario()) == ["big", "small"]


def test_connections_count_per_address_and_in_all() -> None:
    conns = Connections(SocketLimits(max_connections=3, max_connections_per_ip=2))
    assert conns.admit("a") is None and conns.admit("a") is None
    assert conns.admit("a") == "max.connections.per.ip=2"
    assert conns.admit("b") is None
    assert conns.admit("c") == "max.connections=3"
    conns.release("a")
    assert conns.admit("c") is None and conns.per_ip == {"a": 1, "b": 1, "c": 1}


def test_a_queue_smaller_than_one_request_is_refused() -> None:
    typed = TypedProperties(
        {"socket.request.max.bytes": "2048", "queued.max.request.bytes": "1024"}
    )
    limits = socket_limits(typed)
    assert limits.request_max_bytes == 2048
    assert any("smaller than socket.request.max.bytes" in p for p in typed.problems)


def test_kafkas_unbounded_queue_is_taken_and_the_default_follows_the_request_limit() -> None:
    unbounded = socket_limits(TypedProperties({"queued.max.request.bytes": "-1"}))
    assert unbounded.queued_max_request_bytes == -1
    typed = TypedProperties({"socket.request.max.bytes": "209715200"})
    assert socket_limits(typed).queued_max_request_bytes == 209715200 and not typed.problems

    async def never_waits() -> None:
        pool = RequestMemory(-1)
        await asyncio.wait_for(pool.take(2**40), 10)

    asyncio.run(never_waits())
