"""Seeded simulations of 3- and 5-node quorums (with an observer on some seeds) under
dropped, delayed and duplicated messages, partitions, hard kills that lose unflushed
data, restarts and snapshots; Raft's safety properties are checked after every event,
and every run must make progress once the faults stop.

A failing seed names itself; ``python -m tests.simulation --seed N`` replays it exactly.
``make soak`` runs thousands of seeds (``SIM_SEEDS``)."""

from __future__ import annotations

import os

import pytest

from tests.simulation.runner import run_seed, shape_of

SEEDS = int(os.environ.get("SIM_SEEDS", "200"))
FIRST_SEED = int(os.environ.get("SIM_FIRST_SEED", "0"))


@pytest.mark.parametrize("seed", range(FIRST_SEED, FIRST_SEED + SEEDS))
def test_seed(seed: int) -> None:
    failure = run_seed(seed)
    assert failure is None, failure


def test_a_seed_replays_exactly() -> None:
    first, second = run_seed(7, keep=True), run_seed(7, keep=True)
    assert first is not None and second is not None
    assert first == second


def test_shapes_cover_three_and_five_voters_with_and_without_observers() -> None:
    shapes = {shape_of(seed) for seed in range(12)}
    assert {voters for voters, _ in shapes} == {3, 5}
    assert {observers for _, observers in shapes} == {0, 1}
