"""EventLoop: the one thread that owns a RaftNode and everything layered on it.

Threading contract: the RaftNode and the quorum controller are touched only by the loop
thread. Other threads hand it work with :meth:`EventLoop.post` (or :meth:`call` to wait
for a result); timers (:meth:`schedule`) fire on it; long or blocking work (ZooKeeper
I/O for the migration driver) runs on a small worker pool with :meth:`run_off_loop`
and comes back to the loop with its result; the node's log fsyncs run on a thread of
their own (:meth:`flusher`), never queued behind that work. ``on_idle`` hooks run after
each round of events, before the node's timers (the controller turns the requests it
gathered into batches there).

Slow events: every event, timer, hook or tick is timed under its name into
:class:`~migration.raft.event_performance.EventPerformance` (Kafka's controller event
performance log: one held past a threshold is logged at once, and each sample period's
slowest is logged with the period's summary): a loop held past the followers' fetch
timeout costs the quorum its leader, and this says what held it.

Metrics (Kafka's ControllerEventManager timers, read by a scrape from another thread):
``queue_time`` is how long each posted event waited in the queue before it ran,
``processing_time`` how long each event (posted or a timer) held the loop; idle hooks
and the node's ticks are the loop's own upkeep, not events, and are not in them.

Faults: an exception that escapes an event (a failed fsync, a broken invariant, a record
that cannot be applied) ends the loop and goes to ``on_fatal``, which by default halts
the process (:func:`migration.raft.faults.halt`). Request handlers catch their own
non-fatal errors and answer UNKNOWN_SERVER_ERROR at once, so only real faults get here.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from migration.observability.samples import LatencyWindow
from migration.raft.event_performance import EventPerformance
from migration.raft.faults import halt
from migration.raft.node import RaftNode

T = TypeVar("T")
MAX_WAIT_S = 0.5  # the loop looks at its queue at least this often

log = logging.getLogger(__name__)


def monotonic_ms() -> float:
    return time.monotonic() * 1000.0


class LoopStoppedError(Exception):
    pass


@dataclass(order=True)
class Timer:
    """A scheduled action; :meth:`cancel` before it fires and it never runs."""

    at_ms: float
    seq: int
    action: Callable[[], None] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)

    def cancel(self) -> None:
        self.cancelled = True


class EventLoop:
    """A single thread running posted callables in order, between timers."""

    def __init__(
        self,
        name: str = "raft-loop",
        on_fatal: Callable[[str, BaseException], None] = halt,
        workers: int = 4,
        performance: EventPerformance | None = None,
    ) -> None:
        # (action, posted at ms); None wakes the loop to stop
        self._queue: queue.SimpleQueue[tuple[Callable[[], None], float] | None] = (
            queue.SimpleQueue()
        )
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._node: RaftNode | None = None
        self._idle_hooks: list[Callable[[], None]] = []
        self._timers: list[Timer] = []  # a heap, touched only on the loop thread
        self._seq = itertools.count()
        self._workers = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"{name}-work")
        self._disk = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{name}-fsync")
        self._running = False
        self._on_fatal = on_fatal
        self.fault: BaseException | None = None  # what stopped the loop, if anything
        self.queue_time = LatencyWindow()
        self.processing_time = LatencyWindow()
        self.performance = performance or EventPerformance()

    @property
    def running(self) -> bool:
        return self._running

    def start(self, node: RaftNode) -> None:
        self._node = node
        self._running = True
        self._thread.start()

    def on_idle(self, hook: Callable[[], None]) -> None:
        self._idle_hooks.append(hook)

    def post(self, action: Callable[[], None]) -> None:
        """Run ``action`` on the loop, after what is already queued (any thread)."""
        self._queue.put((action, monotonic_ms()))

    def schedule(self, delay_ms: float, action: Callable[[], None]) -> Timer:
        """Run ``action`` on the loop in ``delay_ms`` (any thread; the returned timer can
        be cancelled)."""
        timer = Timer(monotonic_ms() + delay_ms, next(self._seq), action)
        self.post(lambda: heapq.heappush(self._timers, timer))
        return timer

    def run_off_loop(
        self,
        work: Callable[[], T],
        then: Callable[[T | None, BaseException | None], None],
    ) -> None:
        """Run ``work`` on a worker thread, then ``then(result, None)`` -- or
        ``then(None, error)`` -- on the loop. ``work`` must not touch loop-owned state."""
        self._submit(self._workers, work, then)

    def flusher(
        self, fsync: Callable[[], None], done: Callable[[BaseException | None], None]
    ) -> None:
        """A RaftNode's flusher: ``fsync`` on the loop's fsync thread, then ``done(error)``
        (None when it succeeded) on the loop, as an event under ``done``'s name."""

        def then(_: None, error: BaseException | None) -> None:
            done(error)

        then.__qualname__ = done.__qualname__
        self._submit(self._disk, fsync, then)

    def _submit(
        self,
        executor: ThreadPoolExecutor,
        work: Callable[[], T],
        then: Callable[[T | None, BaseException | None], None],
    ) -> None:
        def done(future: Future[T]) -> None:
            error = future.exception()
            result = None if error is not None else future.result()
            self.post(named(then.__qualname__, lambda: then(result, error)))

        executor.submit(work).add_done_callback(done)

    def call(self, action: Callable[[], T], timeout: float) -> T:
        """Run ``action`` on the loop and return its result (raising what it raised)."""
        if not self._running:
            raise LoopStoppedError("the controller is shutting down")
        done = threading.Event()
        box: list[Any] = []

        def run() -> None:
            try:
                box.append((True, action()))
            except BaseException as exc:  # handed back to the calling thread
                box.append((False, exc))
            done.set()

        self.post(run)
        if not done.wait(timeout):
            raise TimeoutError(f"the event loop did not answer within {timeout:.1f} s")
        ok, value = box[0]
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    def stop(self) -> None:
        self._running = False
        self._queue.put(None)
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)
        self._workers.shutdown(wait=False, cancel_futures=True)
        self._disk.shutdown(wait=False, cancel_futures=True)

    def _run(self) -> None:
        try:
            self._rounds()
        except BaseException as exc:  # a fault: stop, never limp on
            self._running = False
            self.fault = exc
            self._on_fatal(f"event loop: {type(exc).__name__}: {exc}", exc)

    def _next_deadline(self, node: RaftNode) -> float:
        while self._timers and self._timers[0].cancelled:
            heapq.heappop(self._timers)
        timer = self._timers[0].at_ms if self._timers else float("inf")
        return min(node.next_deadline(), timer)

    def _rounds(self) -> None:
        node = self._node
        assert node is not None
        while self._running:
            wait = max(0.0, (self._next_deadline(node) - monotonic_ms()) / 1000.0)
            try:
                item = self._queue.get(timeout=min(wait, MAX_WAIT_S))
            except queue.Empty:
                item = None
            for _ in range(10000):  # a round: what is queued now, then the timers
                if item is not None:
                    action, posted_ms = item
                    self.queue_time.record(monotonic_ms() - posted_ms)
                    self.processing_time.record(self._timed(action))
                elif not self._running:
                    return
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            now = monotonic_ms()
            while self._timers and self._timers[0].at_ms <= now:
                timer = heapq.heappop(self._timers)
                if not timer.cancelled:
                    self.processing_time.record(self._timed(timer.action))
            for hook in self._idle_hooks:
                self._timed(hook)
            if node.next_deadline() <= monotonic_ms():
                self._timed(node.tick)
            self.performance.report(monotonic_ms())

    def _timed(self, action: Callable[[], None]) -> float:
        """Run ``action`` and return the milliseconds it took, recorded under its name."""
        started = monotonic_ms()
        action()
        took = monotonic_ms() - started
        name = getattr(action, "__qualname__", None) or repr(action)
        self.performance.record(name, took)
        return took


def named(name: str, action: Callable[[], None]) -> Callable[[], None]:
    """``action`` under ``name``, which the slow-event log prints (a posted lambda's own
    name says nothing: name RPC handlers and answers after their RPC)."""

    def event() -> None:
        action()

    event.__qualname__ = name
    return event
