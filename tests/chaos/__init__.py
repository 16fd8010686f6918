"""Chaos migrations: seeded runs of the whole migration with faults injected at random
points, each checked afterwards (``make chaos RUNS=N``; ``python -m tests.chaos --seed S``
replays one). See :mod:`tests.chaos.run`."""
