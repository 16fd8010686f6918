"""Run one seed and describe the outcome; ``python -m tests.simulation`` for many."""

from __future__ import annotations

from tests.simulation.memory import SafetyViolationError
from tests.simulation.world import Simulation


def shape_of(seed: int) -> tuple[int, int]:
    """(voters, observers) for ``seed``: 3 or 5 voters, an observer every third seed."""
    return (3 if seed % 2 == 0 else 5), (1 if seed % 3 == 0 else 0)


def run_seed(seed: int) -> str | None:
    """None if the seed passed; else what broke and how to replay it."""
    return _run(seed)[1]


def fingerprint(seed: int) -> str:
    """What a passing run of ``seed`` did (to show that runs replay exactly); a failing
    run raises AssertionError with the failure."""
    sim, failure = _run(seed)
    if failure is not None:
        raise AssertionError(failure)
    return f"{sim.events} events, committed {sim.committed_end}, trace {sim.trace}"


def _run(seed: int) -> tuple[Simulation, str | None]:
    voters, observers = shape_of(seed)
    sim = Simulation(seed, voters=voters, observers=observers)
    try:
        sim.run()
    except (SafetyViolationError, AssertionError) as exc:
        return sim, (
            f"seed {seed} ({voters} voters, {observers} observers, {sim.initial_faults}) "
            f"failed at t={sim.now:.1f} ms after {sim.events} events: {exc}\n"
            f"  last events: {sim.trace[-8:]}\n"
            f"  replay: python -m tests.simulation --seed {seed}"
        )
    return sim, None
