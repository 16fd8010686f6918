"""What one chaos run does, drawn from its seed alone (so a seed replays the same run):
which way it ends (finalized, or rolled back from MigrationActive or from half-way
through the broker roll), the order brokers are rolled in, and the faults, each at a
stage of the migration with its own parameters.

Stages, in order: ``copy`` (the controllers just started: the claim and the one-
transaction copy), ``dual-write`` (MigrationActive), ``roll`` (brokers restarted into
KRaft mode, one at a time), ``finished`` (MigrationFinished, before finalization).
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any

STAGES = ("copy", "dual-write", "roll", "finished")

FAULTS: dict[str, tuple[str, ...]] = {
    # fault -> the stages it may be injected at
    "kill-active-controller": ("copy", "dual-write", "roll", "finished"),
    "kill-controller-mid-sync": ("dual-write", "roll", "finished"),
    "zombie-controller": ("copy", "dual-write", "roll", "finished"),
    "controller-zk-session-expiry": ("dual-write", "roll", "finished"),
    "zk-server-restart": ("copy", "dual-write", "roll", "finished"),
    "slow-zk-network": ("copy", "dual-write", "roll", "finished"),
    "broker-kill-mid-roll": ("roll",),
}
ENDINGS = ("finalize", "rollback-active", "rollback-mid-roll")
BROKERS = (1, 2, 3)


@dataclass(frozen=True)
class Fault:
    kind: str
    stage: str
    after_s: float  # into the stage
    params: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Plan:
    seed: int
    ending: str
    roll_order: tuple[int, ...]
    rolled_before_rollback: int  # rollback-mid-roll: brokers in KRaft mode before going back
    faults: tuple[Fault, ...]

    def at(self, stage: str) -> list[Fault]:
        return [f for f in self.faults if f.stage == stage]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _params(kind: str, rng: random.Random) -> dict[str, float]:
    if kind == "zombie-controller":
        return {"stopped_s": round(rng.uniform(1.0, 8.0), 1)}
    if kind == "controller-zk-session-expiry":
        return {"cut_s": round(rng.uniform(8.0, 12.0), 1)}  # the session timeout is 6 s
    if kind == "zk-server-restart":
        return {"server": rng.randint(1, 3), "down_s": round(rng.uniform(0.5, 4.0), 1)}
    if kind == "slow-zk-network":
        return {"delay_ms": rng.randint(10, 80), "for_s": round(rng.uniform(3.0, 10.0), 1)}
    if kind == "broker-kill-mid-roll":
        return {
            "broker": rng.choice(BROKERS),
            "after_rolled": rng.randint(1, len(BROKERS)),  # brokers in KRaft mode by then
            "down_s": round(rng.uniform(0.5, 3.0), 1),
        }
    if kind in ("kill-active-controller", "kill-controller-mid-sync"):
        return {"down_s": round(rng.uniform(0.0, 3.0), 1)}
    return {}


def make_plan(seed: int, faults: int | None = None) -> Plan:
    """The run of ``seed``: 2-4 faults (``faults`` to say how many), stages in order."""
    rng = random.Random(seed)
    ending = rng.choices(ENDINGS, weights=(6, 2, 2))[0]
    stages = {
        "finalize": STAGES,
        "rollback-active": STAGES[:2],
        "rollback-mid-roll": STAGES[:3],
    }[ending]
    chosen: list[Fault] = []
    for _ in range(faults if faults is not None else rng.randint(2, 4)):
        kind = rng.choice([k for k, at in FAULTS.items() if set(at) & set(stages)])
        stage = rng.choice([s for s in FAULTS[kind] if s in stages])
        after = 0.0 if stage == "copy" else round(rng.uniform(0.0, 3.0), 1)
        chosen.append(Fault(kind, stage, after, _params(kind, rng)))
    chosen.sort(key=lambda f: (STAGES.index(f.stage), f.after_s))
    order = list(BROKERS)
    rng.shuffle(order)
    return Plan(seed, ending, tuple(order), rng.randint(1, 2), tuple(chosen))
