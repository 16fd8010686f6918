"""The event loop's timers and off-loop work (the migration driver needs both)."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from migration.raft import event_loop
from migration.raft.aio_host import answer
from migration.raft.event_loop import EventLoop
from migration.raft.event_performance import EventPerformance
from tests.lone_controller import lone_controller


@pytest.fixture
def loop(tmp_path: Path) -> Iterator[EventLoop]:
    lone = lone_controller(tmp_path)
    loop = EventLoop(name="test-loop", on_fatal=lambda reason, exc: None)
    loop.start(lone.node)
    yield loop
    loop.stop()
    lone.close()


def test_timers_fire_in_deadline_order_on_the_loop_and_cancelled_ones_never(
    loop: EventLoop,
) -> None:
    fired: list[tuple[str, str]] = []
    done = threading.Event()

    def record(name: str) -> None:
        fired.append((name, threading.current_thread().name))
        if name == "last":
            done.set()

    loop.schedule(300, lambda: record("last"))
    loop.schedule(100, lambda: record("first"))
    loop.schedule(200, lambda: record("cancelled")).cancel()
    loop.schedule(150, lambda: record("second"))
    assert done.wait(30)  # a hang guard
    assert [name for name, _ in fired] == ["first", "second", "last"]
    assert {thread for _, thread in fired} == {"test-loop"}


def test_work_off_the_loop_comes_back_with_its_result_or_error(loop: EventLoop) -> None:
    results: list[tuple[object, object, str]] = []
    done = threading.Event()
    worked_on: list[str] = []

    def work() -> int:
        worked_on.append(threading.current_thread().name)
        return 42

    def fail() -> int:
        raise ValueError("ZooKeeper said no")

    def then(result: object, error: BaseException | None) -> None:
        results.append((result, error, threading.current_thread().name))
        if len(results) == 2:
            done.set()

    loop.run_off_loop(work, then)
    loop.run_off_loop(fail, then)
    assert done.wait(30)
    assert worked_on and worked_on[0].startswith("test-loop-work")
    by_result = {r for r, _, _ in results}
    assert by_result == {42, None}
    errors = [e for _, e, _ in results if e is not None]
    assert len(errors) == 1 and "ZooKeeper said no" in str(errors[0])
    assert {thread for _, _, thread in results} == {"test-loop"}


def test_the_slow_event_log_names_the_rpc_that_held_the_loop(
    loop: EventLoop, caplog: pytest.LogCaptureFixture
) -> None:
    """A request handler posted to the loop is logged under its RPC's name, not as an
    anonymous lambda (every event counts as slow here: the threshold is 0)."""
    loop.performance.always_log_threshold_ms = 0.0
    caplog.set_level(logging.WARNING, logger=event_loop.__name__)

    async def heartbeat() -> str:
        return await answer(
            loop,
            lambda reply: reply("answered"),
            30.0,  # a hang guard
            on_timeout=lambda: "timed out",
            on_stopped=lambda: "stopped",
            name="BrokerHeartbeat",
        )

    assert asyncio.run(heartbeat()) == "answered"
    # The loop logs the event once it returns, which may be after the answer arrived.
    logged = "Exceptionally slow controller event BrokerHeartbeat took"
    deadline = time.monotonic() + 30  # a hang guard
    while logged not in caplog.text and time.monotonic() < deadline:
        time.sleep(0.01)
    assert logged in caplog.text
    assert "<lambda>" not in caplog.text


def test_each_sample_period_names_its_slowest_event(caplog: pytest.LogCaptureFixture) -> None:
    """Kafka's controller performance log: one INFO line a period, with the count, the
    average and the slowest event by name; nothing for a period without events."""
    caplog.set_level(logging.INFO, logger=event_loop.__name__)
    performance = EventPerformance(sample_period_ms=100, always_log_threshold_ms=50)
    performance.report(0.0)
    performance.record("Fetch", 3.0)
    performance.record("BrokerHeartbeat", 60.0)  # past the threshold: logged at once
    performance.record("RaftNode.tick", 1.0)
    performance.report(99.0)
    assert "In the last" not in caplog.text
    assert "Exceptionally slow controller event BrokerHeartbeat took 60 ms." in caplog.text
    performance.report(100.0)
    assert (
        "In the last 100 ms, 3 controller events took 21.33 ms on average; the slowest, "
        "BrokerHeartbeat, took 60.00 ms." in caplog.text
    )
    caplog.clear()
    performance.report(250.0)  # an empty period says nothing
    performance.record("Fetch", 2.0)
    performance.report(349.0)
    performance.report(350.0)
    assert "the slowest, Fetch, took 2.00 ms." in caplog.text
    assert "In the last 150 ms" not in caplog.text
