"""common.periodic: a view's sampling thread samples at once and then every period, a
failing sample does not end it, and stop() ends it (also before start)."""

from __future__ import annotations

import threading

from migration.common.periodic import Periodic


def test_a_failing_sample_is_followed_by_the_next_and_stop_ends_it() -> None:
    calls: list[int] = []
    third = threading.Event()

    def tick() -> None:
        calls.append(len(calls))
        if len(calls) >= 3:
            third.set()
        if len(calls) == 1:
            raise RuntimeError("the first reading failed")

    sampler = Periodic("test-sampler", 0.01, tick)
    sampler.start()
    assert third.wait(10), calls  # hang guard: the loop went on past the failure
    sampler.stop()
    stopped_at = len(calls)
    assert not any(t.name == "test-sampler" for t in threading.enumerate())
    assert len(calls) == stopped_at


def test_stopped_before_it_starts_it_samples_nothing() -> None:
    calls: list[None] = []
    sampler = Periodic("test-idle", 0.01, lambda: calls.append(None))
    sampler.stop()
    sampler.start()
    sampler.stop()
    assert calls == []
