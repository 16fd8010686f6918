"""Seeded simulations of 3- and 5-node quorums (with an observer on some seeds) under
dropped, delayed and duplicated messages, partitions, hard kills that lose unflushed
data, restarts and snapshots; Raft's safety properties are checked after every event,
and every run must make progress once the faults stop.

A failing seed names itself; ``python -m tests.simulation --seed N`` replays it exactly.
``make soak`` runs thousands of seeds (``SIM_SEEDS``)."""

from __future__ import annotations

import os

import pytest

from migration.raft.node import Role
from tests.simulation.runner import fingerprint, run_seed, shape_of
from tests.simulation.world import Faults, Simulation

SEEDS = int(os.environ.get("SIM_SEEDS", "200"))
FIRST_SEED = int(os.environ.get("SIM_FIRST_SEED", "0"))


@pytest.mark.parametrize("seed", range(FIRST_SEED, FIRST_SEED + SEEDS))
def test_seed(seed: int) -> None:
    failure = run_seed(seed)
    assert failure is None, failure


def test_a_seed_replays_exactly() -> None:
    assert fingerprint(7) == fingerprint(7)


def test_the_livelock_seed_of_the_10000_seed_soak_makes_progress() -> None:
    """Seed 103865: after the heal, two voters with stale logs stood in ever higher
    epochs and every refused vote restarted the timers of the voters that could win."""
    failure = run_seed(103865)
    assert failure is None, failure


@pytest.mark.parametrize("seed", [100176, 100594, 100650])
def test_a_voter_that_missed_its_own_add_votes_after_the_next_remove(seed: int) -> None:
    """Seeds of the first soak with voter changes: a voter added by a VotersRecord it
    never fetched (partitioned, or lost unflushed in a kill) refused every (pre-)vote as
    "an observer" once a remove left a 2-voter set that needed it; no leader again."""
    failure = run_seed(seed)
    assert failure is None, failure


@pytest.mark.parametrize("seed", range(5))
def test_a_cut_off_voter_cannot_depose_a_healthy_leader(seed: int) -> None:
    """KIP-996: the isolated voter asks for pre-votes, gets none, and never bumps the
    epoch; back on the network, its pre-votes are refused by voters that still hear
    from the leader, and it follows that leader again."""
    sim = Simulation(seed, voters=3, faults=Faults())
    sim.run_until(5_000)
    leader = sim.leader()
    assert leader is not None and leader.raft is not None
    epoch = leader.raft.epoch
    victim = next(n for n in sim.nodes.values() if n is not leader)
    sim.isolate(victim.node_id)
    sim.run_until(15_000)
    assert victim.raft is not None and victim.raft.epoch == epoch
    sim.heal()
    sim.run_until(25_000)
    assert sim.leader() is leader and leader.raft.epoch == epoch
    assert victim.raft.role is Role.FOLLOWER and victim.raft.leader_id == leader.node_id


@pytest.mark.parametrize("seed", range(5))
def test_a_crashed_leader_is_replaced_without_faults_elsewhere(seed: int) -> None:
    """The followers' pre-vote answers name the dead leader; that must not send the
    prospective back to following it."""
    sim = Simulation(seed, voters=3, faults=Faults())
    sim.run_until(5_000)
    leader = sim.leader()
    assert leader is not None and leader.raft is not None
    epoch = leader.raft.epoch
    sim.kill(leader)
    sim.run_until(15_000)
    successor = sim.leader()
    assert successor is not None and successor.raft is not None
    assert successor is not leader and successor.raft.epoch > epoch


def test_shapes_cover_three_and_five_voters_with_and_without_observers() -> None:
    shapes = {shape_of(seed) for seed in range(12)}
    assert {voters for voters, _ in shapes} == {3, 5}
    assert {observers for _, observers in shapes} == {0, 1}
