"""Is the chaos client's history linearizable? Per key, Wing & Gong's search for an order
of the key's operations that respects real time and the key's sequential model, with
Lowe's memoisation of (operations linearized, state) (as Knossos' WGL checker does).

The history (:class:`Op`, one per admin operation the client made) names, per operation,
its key (one entity: a topic's existence and partition count, one config key, one
quota, one SCRAM credential, one ACL), what it did, its invoke and complete times and
its result: ``ok``; ``error`` (an answer; :data:`REVEALING` errors observe the key's
state); ``unknown`` (a timeout, a disconnect: it may take effect at any time after its
invoke, or never). Reads are operations too; their value is what they observed.

How each operation constrains an order (the per-kind rules are :data:`MODELS`):

* ``ok``: takes effect once, between its invoke and complete, and only from a state it
  succeeds from (a second acknowledged create of one topic needs a delete between).
* an ``error`` in :data:`NO_EFFECT` (INVALID_CONFIG, POLICY_VIOLATION, INVALID_REQUEST,
  UNSUPPORTED_VERSION, ...): no effect, ever. Each is decided from the request itself
  before anything is written (Kafka validates a request, then writes its records; a
  refused one writes none), and whatever the broker or the client retried was the same
  request, refused the same way: no attempt of it landed. (The project's
  POLICY_VIOLATION also depends on a topic's partition count, which only grows: an
  earlier attempt that met the bound would leave a later one further within it.)
* ``unknown`` and any other ``error``: may take effect once, at any time after its
  invoke, or never. A request Kafka's clients retried may have landed before the answer
  that refused it, and one still queued somewhere may land after it: such an error is
  never taken as "had no effect". The window is not bounded by the client's deadline
  (REQUEST_S) or a forwarding timeout: no sound bound exists. After the client gives up,
  the request may still be in a broker's forwarding retries (a broker follows
  NOT_CONTROLLER to the next leader and resends), in bytes a partition holds and
  delivers when it heals (a gRPC server starts a delayed call's deadline when the call
  arrives), in a stopped (SIGSTOPped) controller's queue, or appended by an old leader
  to a minority of voters and committed by a later leader in its first epoch; none of
  these waits has an upper bound in time, so a bound would risk a false failure.
* an ``error`` in :data:`REVEALING` (TOPIC_ALREADY_EXISTS, UNKNOWN_TOPIC_OR_PARTITION,
  INVALID_PARTITIONS, RESOURCE_NOT_FOUND) and a read: an observation of the state, at
  one point of the order before it completed. ``stale`` (every answer a broker gives
  from its metadata view, as Kafka's brokers answer reads and validate requests):
  the point may be any time before completion (a broker's view lags by any amount); not
  stale: between invoke and complete (a linearizable read).
* the final state each store holds after the run is a read after everything
  (:func:`check`'s ``final``).

What reads can catch: every read is stale, each on its own (no order between two reads
is assumed), so a read fails the check only when it observed a value the key never held
before the read completed (never written, or written only later), or a state no order
of the writes reaches (a topic with more partitions than it ever had). A read that goes
back in time (a broker answering an older value than an earlier read, even the same
broker's) or that misses an acknowledged write is not caught: the final state, read
from the log and from ZooKeeper, is what checks that acknowledged writes stay. Per-broker
monotonic reads are not checked: the client does not know which broker process answered
most reads (librdkafka picks the broker for describe topics, topic configs, ACLs and
SCRAM credentials and does not say which), and a broker's view is monotonic only within
one process (a broker restarted, or rolled between ZooKeeper and KRaft mode, serves from
another view: ZooKeeper, which lags the log while dual-writing, or the log), so a
sound check would need the broker id and its process incarnation with every read.

Bounds: each key's search stops after ``budget`` configurations and the key's verdict is
then ``unknown``: a problem of the run, like a key that is not linearizable (never a
pass). A key that is not linearizable gets a witness (:func:`witness`): the shortest
time-prefix of its history that is already not linearizable (operations still pending
at the cut count as unknown), cut from the left to the fewest operations that no initial
state explains.

The operations and the models of the objects: :mod:`tests.chaos.history_models`.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tests.chaos.history_models import (
    BUDGET,
    ERROR,
    LINEARIZABLE,
    MODELS,
    NO_EFFECT,
    NOT_LINEARIZABLE,
    OK,
    READ,
    READS,
    REVEALING,
    SHOWN,
    UNDECIDED,
    UNKNOWN,
    Model,
    Op,
    State,
)

# --- the search -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Step:
    """One point an operation may be linearized at: in [lo, hi]; ``optional`` ones may
    never be; ``next`` the states it may leave (none: not from here)."""

    op: Op
    lo: float
    hi: float
    optional: bool
    next: Callable[[State], tuple[State, ...]]


def _steps(op: Op, model: Model) -> list[_Step]:
    hi = math.inf if op.complete is None else op.complete
    seen_from = -math.inf if op.stale else op.invoke

    def effect(state: State) -> tuple[State, ...]:
        after = model.apply(state, op.f, op.value)
        return () if after is None else (after,)

    def seen(state: State) -> tuple[State, ...]:
        return (state,) if model.observes(op, state) else ()

    if op.f in READS:  # a read that got no answer observed nothing
        return [_Step(op, seen_from, hi, False, seen)] if op.result == OK else []
    if op.result == OK:
        return [_Step(op, op.invoke, hi, False, effect)]
    if op.result == ERROR and op.error in NO_EFFECT:
        return []
    steps = [_Step(op, op.invoke, math.inf, True, effect)]
    if op.result == ERROR and op.error in REVEALING:
        steps.append(_Step(op, seen_from, hi, False, seen))
    return steps


class BudgetExceededError(Exception):
    pass


def linearizable(ops: Sequence[Op], model: Model, initial: State, budget: int) -> tuple[bool, int]:
    """Whether ``ops`` (one key's) admit a linearization from ``initial``, and how many
    configurations the search visited. Raises :class:`BudgetExceededError` past
    ``budget``."""
    steps = sorted((s for o in ops for s in _steps(o, model)), key=lambda s: s.lo)
    required = 0
    for i, s in enumerate(steps):
        if not s.optional:
            required |= 1 << i
    seen: set[tuple[int, State]] = set()
    stack: list[tuple[int, State]] = [(0, initial)]
    while stack:
        done, state = stack.pop()
        if (done, state) in seen:
            continue
        seen.add((done, state))
        if len(seen) > budget:
            raise BudgetExceededError(len(seen))
        if done & required == required:
            return True, len(seen)
        # the next point may be any operation none still unlinearized must precede
        bound = min(
            (s.hi for i, s in enumerate(steps) if not s.optional and not done >> i & 1),
            default=math.inf,
        )
        for i, s in enumerate(steps):
            if s.lo > bound:
                break
            if done >> i & 1:
                continue
            for after in s.next(state):
                if (done | 1 << i, after) not in seen:
                    stack.append((done | 1 << i, after))
    return False, len(seen)


# --- a key's verdict and its witness ------------------------------------------------------


def cut(ops: Sequence[Op], at: float) -> list[Op]:
    """The history as it stood at time ``at``: what was invoked by then; what had not
    completed is unknown (a read of it observed nothing yet)."""
    out = []
    for o in ops:
        if o.invoke > at:
            continue
        pending = o.complete is not None and o.complete > at
        out.append(replace(o, result=UNKNOWN, complete=None) if pending else o)
    return out


def window(ops: Sequence[Op], start: float) -> list[Op]:
    """What of ``ops`` is known to happen from ``start`` on, whatever happened before
    (for :func:`witness`, with any initial state): what completed earlier is gone; what
    was in flight at ``start``, and what a broker may have answered from its view of
    earlier, may already have happened: a write of it is unknown, a read of it is gone."""
    out = []
    for o in ops:
        if o.complete is not None and o.complete < start:
            continue
        earlier = o.invoke < start or o.stale_observation
        if earlier and o.f in READS:
            continue
        out.append(replace(o, result=UNKNOWN, complete=None) if earlier else o)
    return out


def witness(ops: Sequence[Op], model: Model, budget: int) -> list[Op]:
    """The fewest operations that show ``ops`` (not linearizable) are not: the shortest
    failing time-prefix (:func:`cut`), then its shortest :func:`window` that no initial
    state explains (the whole prefix, if it needs the key's true initial state). The
    searches share ``budget`` x 10 configurations; past that, the least found so far."""
    left = budget * 10

    def fails(part: list[Op], initial: State) -> bool:
        nonlocal left
        if left <= 0:
            raise BudgetExceededError(left)
        ok, visited = linearizable(part, model, initial, min(budget, left))
        left -= visited
        return not ok

    recorded = {o.id: o for o in ops}
    best = sorted(ops, key=lambda o: (o.invoke, o.id))
    try:
        for at in sorted({o.complete for o in ops if o.complete is not None}):
            prefix = cut(ops, at)
            if fails(prefix, model.initial):
                best = sorted((recorded[o.id] for o in prefix), key=lambda o: (o.invoke, o.id))
                break
        else:
            prefix = list(ops)
        for start in sorted({o.invoke for o in prefix}, reverse=True)[:-1]:
            part = window(prefix, start)
            if all(fails(part, s) for s in model.candidates(part)):
                return sorted((recorded[o.id] for o in part), key=lambda o: (o.invoke, o.id))
    except BudgetExceededError:
        pass
    return best


@dataclass
class KeyVerdict:
    key: str
    ops: int
    verdict: str
    configurations: int
    witness: list[Op] = field(default_factory=list)


@dataclass
class Report:
    """One store's check: every key's verdict; ``verdict`` the history's (the worst)."""

    store: str
    keys: list[KeyVerdict]
    seconds: float
    t0: float

    @property
    def verdict(self) -> str:
        verdicts = {k.verdict for k in self.keys}
        for v in (NOT_LINEARIZABLE, UNDECIDED):
            if v in verdicts:
                return v
        return LINEARIZABLE

    def facts(self) -> dict[str, Any]:
        return {
            "keys": len(self.keys),
            "ops": sum(k.ops for k in self.keys),
            "verdict": self.verdict,
            "non_linearizable_keys": [k.key for k in self.keys if k.verdict == NOT_LINEARIZABLE],
            "undecided_keys": [k.key for k in self.keys if k.verdict == UNDECIDED],
            "most_configurations": max((k.configurations for k in self.keys), default=0),
            "seconds": round(self.seconds, 3),
        }

    def problems(self) -> list[str]:
        """One line per key that is not linearizable, with its witness (its last
        :data:`SHOWN` operations), and one per key the search could not decide within
        its budget (undecided is never a pass)."""
        out = []
        for k in self.keys:
            if k.verdict == UNDECIDED:
                out.append(
                    f"history undecided in {self.store}: {k.key}: {k.ops} ops, the search "
                    f"stopped after {k.configurations} configurations"
                )
            if k.verdict == NOT_LINEARIZABLE:
                ops = "; ".join(o.show(self.t0) for o in k.witness[-SHOWN:])
                more = len(k.witness) - SHOWN
                earlier = f"({more} earlier ops not shown) " if more > 0 else ""
                out.append(f"history not linearizable in {self.store}: {k.key}: {earlier}{ops}")
        return out


def check(
    store: str,
    history: Iterable[Op],
    final: Mapping[str, State],
    *,
    budget: int = BUDGET,
    t0: float | None = None,
) -> Report:
    """Every key of ``history`` checked, each with ``final[key]`` (the state ``store``
    holds after the run, when given) as a read after everything."""
    began = time.monotonic()
    by_key: dict[str, list[Op]] = {}
    for op in history:
        by_key.setdefault(op.key, []).append(op)
    times = [
        t for ops in by_key.values() for o in ops for t in (o.invoke, o.complete) if t is not None
    ]
    end = max(times, default=0.0) + 1.0
    keys = []
    for key, recorded in sorted(by_key.items()):
        model = MODELS[recorded[0].kind]
        ops = list(recorded)
        if key in final:
            ops.append(Op(-1, key, recorded[0].kind, READ, final[key], OK, end, end, phase=store))
        try:
            ok, visited = linearizable(ops, model, model.initial, budget)
        except BudgetExceededError:
            keys.append(KeyVerdict(key, len(ops), UNDECIDED, budget))
            continue
        if ok:
            keys.append(KeyVerdict(key, len(ops), LINEARIZABLE, visited))
            continue
        keys.append(
            KeyVerdict(key, len(ops), NOT_LINEARIZABLE, visited, witness(ops, model, budget))
        )
    first = min(times, default=0.0) if t0 is None else t0
    return Report(store, keys, time.monotonic() - began, first)


def as_of(history: Iterable[Op], phases: set[str]) -> list[Op]:
    """The history a store that stopped being written after ``phases`` holds: what
    completed later is unknown to it (a write may be there or not; a read says
    nothing)."""
    out = []
    for o in history:
        if o.phase in phases or o.result == UNKNOWN:
            out.append(o)
        elif o.f not in READS:
            out.append(replace(o, result=UNKNOWN, complete=None))
    return out


def main(argv: Sequence[str]) -> int:
    """``python -m tests.chaos.history <run dir> [--budget N]``: the check again, from
    the history a run kept (``history.jsonl``, ``history-final.json``, as the chaos
    checks wrote them); 1 when some key is not linearizable or undecided (the search
    spent its budget, N configurations per key)."""
    parser = argparse.ArgumentParser(prog="python -m tests.chaos.history")
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--budget", type=int, default=BUDGET, help="configurations per key")
    args = parser.parse_args(argv)
    root = args.run_dir
    lines = (root / "history.jsonl").read_text().splitlines()
    ops = [Op.from_json(json.loads(line)) for line in lines if line]
    stores = json.loads((root / "history-final.json").read_text())
    failed = False
    for store, kept in stores.items():
        phases = kept["phases"]
        history = ops if phases is None else as_of(ops, set(phases))
        report = check(store, history, kept["final"], budget=args.budget)
        print(json.dumps({store: report.facts()}))
        for line in report.problems():
            print(line)
        failed |= report.verdict != LINEARIZABLE
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
