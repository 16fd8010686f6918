"""gRPC servers on asyncio, so that no thread is held per waiting call.

A held Raft fetch (the long poll), a write waiting for its commit, or an idle observer
costs one pending future here, not a worker thread: many observers (the KRaft brokers)
cannot starve Vote, BeginQuorumEpoch or admin writes of threads.

Threading: :class:`AioHost` runs one asyncio loop on its own thread; servers are created,
started and stopped on it through :meth:`AioHost.run`. :func:`answer` turns "post this
to the Raft event loop; it replies through a callback, maybe later" into an awaitable
whose reply crosses back with ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

from migration.raft.event_loop import EventLoop, named

T = TypeVar("T")


class AioHost:
    def __init__(self, name: str = "grpc-aio") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coroutine: Callable[[], Awaitable[T]], timeout_s: float = 30.0) -> T:
        """Run ``coroutine()`` on the host's loop and wait for its result (any thread)."""

        async def wrapped() -> T:
            return await coroutine()

        return asyncio.run_coroutine_threadsafe(wrapped(), self.loop).result(timeout_s)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)


async def answer(
    loop: EventLoop,
    act: Callable[[Callable[[T], None]], None],
    timeout_s: float,
    *,
    on_timeout: Callable[[], T],
    on_stopped: Callable[[], T],
    name: str,
) -> T:
    """Post ``act(reply)`` to the Raft loop and await the first ``reply``; after
    ``timeout_s`` the answer is ``on_timeout()``, and ``on_stopped()`` at once when the
    loop is not running (shutdown, or a fault that halts the process). ``name`` (the
    RPC's) is what the loop's slow-event log calls the posted event."""
    if not loop.running:
        return on_stopped()
    aio = asyncio.get_running_loop()
    future: asyncio.Future[T] = aio.create_future()

    def settle(value: T) -> None:
        if not future.done():
            future.set_result(value)

    def reply(value: T) -> None:
        aio.call_soon_threadsafe(settle, value)

    loop.post(named(name, lambda: act(reply)))
    try:
        return await asyncio.wait_for(future, timeout_s)
    except TimeoutError:
        return on_timeout()
