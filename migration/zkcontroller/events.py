"""The ZooKeeper controller's event queue (Kafka's ControllerEventManager).

Owns one queue and the one thread that runs its events in order, from :meth:`start`
(the first event, the controller's start-up, queued before anything else can be) until
:meth:`stop` or an event fails. Every event is a ``(what, act)`` pair; :meth:`submit`
returns a future of ``act``'s result, or of None when the event is never run: submitted
after the stop, dropped with the queue, or failed.

What a failure means is the owner's decision: the event's future gets None, the thread
calls ``on_failure(what, exc)`` and ends; the owner stops the queue from there (and
may :meth:`drop_queued`). Any thread may call :meth:`submit` and :meth:`stop`.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

Event = tuple[str, Callable[[], Any], Future[Any] | None]


class ControllerEventManager:
    """Running from :meth:`start` until :meth:`stop`; ``running`` says which."""

    def __init__(self, name: str, on_failure: Callable[[str, Exception], None]) -> None:
        self.running = False
        self._on_failure = on_failure
        self._events: queue.Queue[Event | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self, what: str, first: Callable[[], Any]) -> None:
        """Queue ``first``, then run: an event submitted as soon as ``running`` turns
        true (a watch firing at once) runs after it."""
        self._events.put((what, first, Future()))
        self.running = True
        self._thread.start()

    def stop(self) -> bool:
        """Stop (once: True the first time); what is still queued is dropped."""
        if not self.running:
            return False
        self.running = False
        self._events.put(None)
        return True

    def submit(self, what: str, act: Callable[[], Any]) -> Future[Any]:
        done: Future[Any] = Future()
        if not self.running:
            done.set_result(None)
        else:
            self._events.put((what, act, done))
        return done

    def drop_queued(self) -> None:
        """Queued events are never run: their waiters get None (NOT_CONTROLLER)."""
        while True:
            try:
                item = self._events.get_nowait()
            except queue.Empty:
                return
            if item is not None and item[2] is not None and not item[2].done():
                item[2].set_result(None)

    def _run(self) -> None:
        while True:
            item = self._events.get()
            if item is None or not self.running:
                self.drop_queued()
                if item is not None and item[2] is not None:
                    item[2].set_result(None)
                return
            what, act, done = item
            try:
                result = act()
            except Exception as exc:
                if done is not None:
                    done.set_result(None)
                self._on_failure(what, exc)
                return
            if done is not None:
                done.set_result(result)
