"""Pausing Python's cyclic garbage collector around bulk building.

Reading a 100,000-partition tree, translating it and replaying it into an image each
allocate millions of small acyclic objects; every few thousand allocations the
collector walks the young objects and, ever more often as the heap grows, the whole
heap: about 30% of the reader's time (measured). Reference counting frees all of this
garbage anyway, so the work is paused while it runs and the collector resumes
afterwards. Process-wide: it pauses collection for every thread, which is harmless
for the seconds a bulk step takes.

A serving process's image is long-lived: a million partitions are over a million
objects the collector tracks, and each full collection walks them all, stopping every
thread (0.3-0.7 s for a bare 1,000,000-partition image on this machine). Once an image
is loaded whole :func:`freeze_long_lived` moves what is tracked into the collector's
permanent generation, so a full walk covers what was allocated since. Frozen objects
are still freed when their last reference goes; only a reference cycle frozen while
alive and dropped later is never reclaimed by a partial walk.

Freezing once is not enough: after a freeze the collector starts a full walk each time
what was promoted since grows by a quarter of what the last full walk found alive, so as
a serving image is replaced piece by piece (a broker's ISRs coming back, two thousand
partitions a step) the walks come ever closer together and each walks more: at a million
partitions, in process, full walks of 0.7-1.3 million objects took 0.5-1.1 s each,
dozens of them in one broker's return, none finding anything to free (live, beside two
other controllers on two cores, the quorum lost its leader in such a return: an event
held the active controller's loop 2.2 s). A serving process therefore runs
:func:`keep_full_walks_short`: no automatic full walk; every :data:`SETTLE_INTERVAL_S`, or
sooner once the young collections promoted enough since the last, a thread collects what
is not frozen (what survived since the last settle: its cost is that churn, tens of
milliseconds at most) and freezes what survives (:func:`settle`). At a fixed interval
the churn right after a million-partition migration made walks of ~0.3 s.
A reference cycle still alive at a settle and dropped later is kept until the once-a-day
reclaim, which thaws everything for one full walk (a second or so at a million
partitions, logged).
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

SETTLE_INTERVAL_S = 10.0
RECLAIM_INTERVAL_S = 24 * 3600.0
NO_AUTOMATIC_FULL_WALK = 2**31 - 1  # the collector's third threshold, never reached
LOGGED_WALK_S = 0.1  # a settle at least this long is logged
# A settle comes early once this many gen-1 collections ran since the last (gc.get_count's
# third count; ~60,000 objects promoted at most: a walk of ~50 ms), checked this often.
EARLY_SETTLE_PROMOTIONS = 8
EARLY_SETTLE_CHECK_S = 0.2
RELEASE_SLICE = 500  # entries freed between two yields (a topic: ~20 partitions)

log = logging.getLogger(__name__)
_settling = threading.Event()  # set once the process runs keep_full_walks_short


class _Pauses:
    """The :func:`gc_paused` blocks running now, in every thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.enabled_before = True  # whether the collector ran before the first began


_PAUSES = _Pauses()


@contextmanager
def gc_paused() -> Iterator[None]:
    """The collector paused while the block runs (process-wide; overlapping pauses, in
    one thread or several, end with the last of them: the Raft loop replaying a copy's
    batches does not end the pause of the driver streaming it). In a process that
    settles (:func:`keep_full_walks_short`), what the blocks leave alive is frozen as
    the last ends: the first young collection after a pause walks every object
    allocated during it that is still alive (a full sync's view of a million-partition
    ZooKeeper: 0.7 s with every thread stopped), and the next settle again."""
    with _PAUSES.lock:
        if _PAUSES.running == 0:
            _PAUSES.enabled_before = gc.isenabled()
            gc.disable()
        _PAUSES.running += 1
    try:
        yield
    finally:
        with _PAUSES.lock:
            _PAUSES.running -= 1
            if _PAUSES.running == 0 and _PAUSES.enabled_before:
                if _settling.is_set():
                    gc.freeze()
                gc.enable()


def freeze_long_lived() -> None:
    """Everything the collector tracks now moves to its permanent generation (see the
    module doc): call once a large long-lived structure has been built."""
    gc.freeze()


def release_gradually(items: dict[Any, Any], name: str) -> threading.Thread:
    """Empty ``items`` a slice of :data:`RELEASE_SLICE` entries at a time, on a thread
    of its own that yields the interpreter between slices: the caller is about to drop
    the last reference to a very large structure, and freeing it at once holds every
    thread (a million-partition snapshot's topics: about 0.2 s, measured, in the
    middle of the migration's write pause). The caller gives the dict up: nothing else
    may read it any more."""

    def run() -> None:
        while items:
            for _ in range(min(RELEASE_SLICE, len(items))):
                items.popitem()
            time.sleep(0)

    thread = threading.Thread(target=run, name=f"release-{name}", daemon=True)
    thread.start()
    return thread


def settle(*, reclaim: bool = False) -> int | None:
    """Collect what is not frozen (``reclaim``: thaw everything first, for one full
    walk), then freeze what survives. Returns the objects found unreachable; None, and
    nothing done, while the collector is paused (:func:`gc_paused`: a bulk step's
    millions of young objects are its own to free)."""
    if not gc.isenabled():
        return None
    if reclaim:
        gc.unfreeze()
    found = gc.collect()
    gc.freeze()
    return found


def keep_full_walks_short(
    interval_s: float = SETTLE_INTERVAL_S, reclaim_s: float = RECLAIM_INTERVAL_S
) -> threading.Thread:
    """Set a serving process's collector as the module doc says: automatic full walks
    off, a daemon thread settling every ``interval_s`` and reclaiming every
    ``reclaim_s``. Call once, before the process serves."""
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, NO_AUTOMATIC_FULL_WALK)
    _settling.set()
    thread = threading.Thread(
        target=_settle_forever, args=(interval_s, reclaim_s), name="gc-settle", daemon=True
    )
    thread.start()
    return thread


def _wait_for_settle(interval_s: float) -> None:
    """Until ``interval_s`` has passed, or sooner once the young collections promoted
    about :data:`EARLY_SETTLE_PROMOTIONS` gen-1 collections' worth (each follows ~7,000
    net allocations): a walk costs what survived since the last settle, so under churn
    (a million-partition image replaced after a copy) settles come sooner and each
    stays short; an idle process settles every ``interval_s``."""
    deadline = time.monotonic() + interval_s
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(left, EARLY_SETTLE_CHECK_S))
        if gc.get_count()[2] >= EARLY_SETTLE_PROMOTIONS:
            return


def _settle_forever(interval_s: float, reclaim_s: float) -> None:
    reclaimed_at = time.monotonic()
    while True:
        _wait_for_settle(interval_s)
        reclaim = time.monotonic() - reclaimed_at >= reclaim_s
        started = time.monotonic()
        found = settle(reclaim=reclaim)
        took = time.monotonic() - started
        if reclaim and found is not None:
            reclaimed_at = started
        if reclaim:  # counting the frozen walks their whole list: only once a day
            log.info(
                "garbage collector: the daily full walk took %d ms, %s unreachable "
                "objects, %d frozen",
                took * 1000,
                "no (paused)" if found is None else found,
                gc.get_freeze_count(),
            )
        elif took >= LOGGED_WALK_S:
            log.info(
                "garbage collector: a walk took %d ms, %s unreachable objects",
                took * 1000,
                "no (paused)" if found is None else found,
            )
