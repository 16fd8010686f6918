"""A serving process's collector (migration.common.gc_pause.keep_full_walks_short): no
automatic full walk over the long-lived image; a settle frees the cycles dropped since
the last one and freezes what survives; a cycle frozen alive and dropped later waits
for the reclaim; nothing is done while a bulk step has the collector paused.

Each case runs in a fresh interpreter: the collector's thresholds and permanent
generation are the whole process's."""

from __future__ import annotations

import subprocess
import sys
import textwrap

PRELUDE = """
import gc, weakref
from migration.common import gc_pause

class Node:
    def __init__(self):
        self.me = self  # a reference cycle: only the collector frees it

def cycle():
    node = Node()
    return node, weakref.ref(node)
"""


def _run(body: str) -> None:
    script = PRELUDE + textwrap.dedent(body)
    done = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


def test_a_settle_frees_what_was_dropped_and_freezes_what_lives() -> None:
    _run(
        """
        dropped, dropped_ref = cycle()
        kept, kept_ref = cycle()
        del dropped
        image = {i: (i, [i]) for i in range(10_000)}  # tracked, long-lived
        before = gc.get_freeze_count()
        assert gc_pause.settle() is not None
        assert dropped_ref() is None and kept_ref() is kept
        assert gc.get_freeze_count() >= before + 10_000
        walked = {id(o) for o in gc.get_objects()}  # every generation but the permanent
        assert id(image) not in walked and id(image[5][1]) not in walked
        """
    )


def test_a_cycle_frozen_alive_and_dropped_later_waits_for_the_reclaim() -> None:
    _run(
        """
        node, ref = cycle()
        gc_pause.settle()
        del node
        gc_pause.settle()
        assert ref() is not None  # frozen while alive: a settle does not walk it
        gc_pause.settle(reclaim=True)
        assert ref() is None
        """
    )


def test_nothing_is_settled_while_a_bulk_step_has_the_collector_paused() -> None:
    _run(
        """
        node, ref = cycle()
        del node
        with gc_pause.gc_paused():
            assert gc_pause.settle() is None
            assert ref() is not None and gc.get_freeze_count() == 0
        assert gc_pause.settle() is not None and ref() is None
        """
    )


def test_a_serving_process_walks_in_full_only_when_it_settles() -> None:
    _run(
        """
        import time
        thread = gc_pause.keep_full_walks_short(interval_s=0.05)
        assert gc.get_threshold()[2] == gc_pause.NO_AUTOMATIC_FULL_WALK
        assert thread.daemon and thread.is_alive()
        node, ref = cycle()
        gc.collect(1)  # alive through the young walks: now in the oldest generation
        del node  # only a full walk frees it now
        deadline = time.monotonic() + 60  # a hang guard, not a measure
        while ref() is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ref() is None
        """
    )


def test_what_a_bulk_step_leaves_alive_is_frozen_as_it_ends_once_the_process_settles() -> None:
    _run(
        """
        with gc_pause.gc_paused():
            before = [[i] for i in range(5_000)]
        assert id(before) in {id(o) for o in gc.get_objects()}  # not settling: walked
        gc_pause.keep_full_walks_short(interval_s=3600)
        with gc_pause.gc_paused():
            with gc_pause.gc_paused():  # nested: the outermost pause freezes
                view = [[i] for i in range(5_000)]
            assert not gc.isenabled()
        assert gc.isenabled()
        walked = {id(o) for o in gc.get_objects()}
        assert id(view) not in walked and id(view[7]) not in walked
        """
    )


def test_pauses_overlapping_in_two_threads_end_with_the_last() -> None:
    _run(
        """
        import threading

        entered, leave = threading.Event(), threading.Event()

        def other() -> None:
            with gc_pause.gc_paused():
                entered.set()
                leave.wait(60)

        with gc_pause.gc_paused():  # the driver streaming a copy
            thread = threading.Thread(target=other)  # the loop replaying its batches
            thread.start()
            assert entered.wait(60)
        assert not gc.isenabled()  # the other's pause still runs
        leave.set()
        thread.join(60)
        assert gc.isenabled()
        """
    )


def test_a_settle_comes_early_once_much_has_survived_since_the_last() -> None:
    _run(
        """
        import time

        gc_pause.keep_full_walks_short(interval_s=3600)  # never, but for the churn
        frozen = gc.get_freeze_count()
        kept = [[i] for i in range(200_000)]  # survivors: young collections promote them
        deadline = time.monotonic() + 60  # hang guard
        while gc.get_freeze_count() < frozen + len(kept) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gc.get_freeze_count() >= frozen + len(kept)
        assert id(kept[7]) not in {id(o) for o in gc.get_objects()}
        """
    )
