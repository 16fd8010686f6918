"""The next step and the way back are the runbooks' own sections: every title a heading,
every command a line of that runbook's sh blocks, an answer for every state."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from migration.driver import next_steps
from migration.driver.next_steps import Step, fill, next_step, production_steps, rollback_step
from migration.driver.states import ClusterState, Phase

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```sh\n(.*?)^```", re.S | re.M)


def _all_steps() -> list[Step]:
    return [v for v in vars(next_steps).values() if isinstance(v, Step)]


def _sections(path: str) -> dict[str, str]:
    """Each ``## `` heading's anchor -> its text up to the next heading."""
    text = (ROOT / path).read_text()
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return {next_steps._slug(h): body for h, body in zip(parts[1::2], parts[2::2], strict=True)}


@pytest.mark.parametrize("step", _all_steps(), ids=lambda s: s.runbook)
def test_each_step_is_its_runbook_section(step: Step) -> None:
    path, anchor = step.runbook.split("#")
    sections = _sections(path)
    assert anchor in sections, f"{step.runbook}: no such heading"
    heading = [h for h in re.findall(r"^## (.+)$", (ROOT / path).read_text(), re.M)]
    assert any(h.endswith(step.title) for h in heading)
    lines = {
        line for block in FENCE.findall((ROOT / path).read_text()) for line in block.splitlines()
    }
    for command in step.commands:
        assert command in lines, f"{step.runbook}: `{command}` is not a line of {path}"
    own = FENCE.findall(sections[anchor])
    if own:  # a section with a block of its own: exactly its lines, in order
        assert step.commands == tuple(own[0].splitlines())


@pytest.mark.parametrize("state", list(ClusterState))
@pytest.mark.parametrize("phase", list(Phase))
def test_every_state_has_an_answer(state: ClusterState, phase: Phase) -> None:
    assert next_step(state, phase) is not None
    back = rollback_step(state)
    assert (back is None) == (state == ClusterState.KRaft)


def test_the_answers_follow_the_runbooks() -> None:
    anchor = {
        (s, p): next_step(s, p).runbook.split("#")[1]  # type: ignore[union-attr]
        for s in ClusterState
        for p in Phase
    }
    assert anchor[(ClusterState.ZooKeeper, Phase.INACTIVE)] == "1-preflight"
    assert anchor[(ClusterState.MigrationEligible, Phase.WAIT_FOR_BROKERS)].startswith("3-")
    assert anchor[(ClusterState.MigrationActive, Phase.DUAL_WRITE)].startswith("4-")
    assert anchor[(ClusterState.MigrationFinished, Phase.DUAL_WRITE)] == (
        "2-audit-zookeeper-holds-what-kraft-committed"
    )
    assert anchor[(ClusterState.KRaft, Phase.INACTIVE)] == "5-retire-zookeeper"
    finished = rollback_step(ClusterState.MigrationFinished)
    assert finished is not None and finished.runbook.endswith(
        "#2-from-migrationfinished-brokers-in-kraft-mode-roll-them-back-first"
    )
    active = rollback_step(ClusterState.MigrationActive)
    assert active is not None and "rollback --zk" in " ".join(active.commands)
    assert rollback_step(ClusterState.MigrationActive, kraft_brokers=True) == finished
    eligible = rollback_step(ClusterState.MigrationEligible)
    assert eligible is not None and eligible.runbook.endswith(
        "#from-controllers-provisioned-nothing-copied-yet"
    )


def test_production_steps_are_migration_then_finalize_in_order() -> None:
    steps = production_steps()
    assert [s.runbook.split("#")[0] for s in steps] == [next_steps.MIGRATION] * 4 + [
        next_steps.FINALIZE
    ] * 5
    numbers = [int(s.runbook.split("#")[1].split("-")[0]) for s in steps]
    assert numbers == [1, 2, 3, 4, 1, 2, 3, 4, 5]


def test_fill_substitutes_the_names_given_only() -> None:
    line = 'zk2kraft audit --zk "$ZK" --bootstrap-controller "${BOOTSTRAP_CONTROLLER}" $logs'
    assert fill(line, {"ZK": "zk1:2181/kafka", "BOOTSTRAP_CONTROLLER": "c0:9093"}) == (
        'zk2kraft audit --zk "zk1:2181/kafka" --bootstrap-controller "c0:9093" $logs'
    )
    assert fill("$ZKX $ZK", {"ZK": "z"}) == "$ZKX z"
    assert fill(next_steps.ENABLE.commands[0], {"BROKER_IDS": "1 2 3"}) == "for id in 1 2 3; do"
    assert fill("$A", {"A": "$B"}) == "$B"  # one pass: a value is not substituted again
