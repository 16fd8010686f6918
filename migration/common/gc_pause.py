"""Pausing Python's cyclic garbage collector around bulk building.

Reading a 100,000-partition tree, translating it and replaying it into an image each
allocate millions of small acyclic objects; every few thousand allocations the
collector walks the young objects and, ever more often as the heap grows, the whole
heap: about 30% of the reader's time (measured). Reference counting frees all of this
garbage anyway, so the work is paused while it runs and the collector resumes
afterwards. Process-wide: it pauses collection for every thread, which is harmless
for the seconds a bulk step takes.
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
