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
    "partition-active-from-voters": ("copy", "dual-write", "roll", "finished"),
    "one-way-partition": ("copy", "dual-write", "roll", "finished"),
    "flapping-controller-link": ("copy", "dual-write", "roll", "finished"),
    "partition-broker-from-controllers": ("copy", "dual-write", "roll", "finished"),
    "zk-quorum-loss": ("copy", "dual-write", "roll", "finished"),
    "controller-disk-full": ("copy", "dual-write", "roll", "finished"),
    "controller-fsync-eio": ("copy", "dual-write", "roll", "finished"),
    "controller-clock-jump": ("copy", "dual-write", "roll", "finished"),
    "controller-disk-replaced": ("dual-write",),  # a non-active voter: tests/chaos/disk_replace.py
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
    if kind in ("controller-disk-full", "controller-fsync-eio", "controller-clock-jump"):
        return _host_params(kind, rng)
    if kind == "controller-disk-replaced":  # voter: which non-active voter (in id order)
        return {"voter": rng.randint(0, 1), "down_s": round(rng.uniform(0.0, 3.0), 1)}
    return _net_params(kind, rng)


def _host_params(kind: str, rng: random.Random) -> dict[str, float]:
    """tests/chaos/host_faults.py's faults, on the active controller (``active`` 1) or
    the voter after it (0); a clock steps ``direction`` (1 forward, -1 back) by
    ``seconds`` for ``hold_s``, then back."""
    params = {"active": float(rng.randint(0, 1))}
    if kind == "controller-clock-jump":
        params |= {"direction": float(rng.choice((1, -1))), "seconds": float(rng.randint(30, 600)),
                   "hold_s": round(rng.uniform(2.0, 8.0), 1)}  # fmt: skip
    return params


def _net_params(kind: str, rng: random.Random) -> dict[str, float]:
    """tests/chaos/net_faults.py's faults. ``voter``: which of the other two voters (in
    id order); ``blackhole`` 1: nothing answered (timeouts), 0: connections reset."""
    if kind == "partition-active-from-voters":  # until a new leader claims, then hold_s
        return {"blackhole": rng.randint(0, 1), "hold_s": round(rng.uniform(1.0, 6.0), 1),
                "zk_held": rng.randint(0, 1)}  # fmt: skip
    if kind == "one-way-partition":  # reverse 0: the active cannot reach the voter
        return {"voter": rng.randint(0, 1), "reverse": rng.randint(0, 1),
                "blackhole": rng.randint(0, 1),
                "for_s": round(rng.uniform(3.0, 10.0), 1)}  # fmt: skip
    if kind == "flapping-controller-link":
        return {"voter": rng.randint(0, 1), "blackhole": rng.randint(0, 1),
                "period_s": round(rng.uniform(0.5, 3.0), 1),
                "flaps": rng.randint(3, 6)}  # fmt: skip
    if kind == "partition-broker-from-controllers":
        return {"broker": rng.choice(BROKERS), "blackhole": rng.randint(0, 1),
                "for_s": round(rng.uniform(3.0, 15.0), 1)}  # fmt: skip
    if kind == "zk-quorum-loss":  # longer than the 6 s session timeout
        return {"kept": rng.randint(1, 3), "stopped_s": round(rng.uniform(7.0, 12.0), 1)}
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
