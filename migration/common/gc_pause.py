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
thread (0.3-0.7 s for a bare 1,000,000-partition image on this machine, more beside a
controller's other state), as often as a quarter of them has been replaced. Once an
image is built whole (loaded, or about to be snapshotted) :func:`freeze_long_lived`
moves what is tracked into the collector's permanent generation, so a full collection
walks what was allocated since. Frozen objects are still freed when their last
reference goes; only a reference cycle frozen while alive and dropped later is never
reclaimed: a bounded cost, paid once per freeze, for pauses bounded by the churn.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def freeze_long_lived() -> None:
    """Everything the collector tracks now moves to its permanent generation (see the
    module doc): call once a large long-lived structure has been built."""
    gc.freeze()
