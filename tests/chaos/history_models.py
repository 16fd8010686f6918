"""The history check's vocabulary: one recorded operation (:class:`Op`) and the models
of the objects it acts on (a topic, a register, a SCRAM credential, an ACL), each a
transition function from a state and an operation to the new state and the answer the
object would give. The search over them: :mod:`tests.chaos.history`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

ABSENT = "absent"
OK, ERROR, UNKNOWN = "ok", "error", "unknown"
READ = "read"
READ_AT_LEAST = "read-at-least"  # a topic as a broker's view shows it: partitions may lag
READS = (READ, READ_AT_LEAST)
LINEARIZABLE, NOT_LINEARIZABLE, UNDECIDED = "linearizable", "non-linearizable", "unknown"
BUDGET = 200_000  # configurations searched per key before the verdict is "unknown"
SHOWN = 40  # a witness's operations printed at most (its last ones)
REVEALING = frozenset(
    ("TOPIC_ALREADY_EXISTS", "UNKNOWN_TOPIC_OR_PARTITION", "INVALID_PARTITIONS",
     "RESOURCE_NOT_FOUND")
)  # fmt: skip
NO_EFFECT = frozenset(
    ("INVALID_CONFIG", "POLICY_VIOLATION", "INVALID_REQUEST", "UNSUPPORTED_VERSION",
     "INVALID_TOPIC_EXCEPTION", "UNACCEPTABLE_CREDENTIAL", "UNSUPPORTED_SASL_MECHANISM")
)  # fmt: skip
"""Refusals decided from the request alone before anything is written: no effect (see
the module doc). Not here: refusals that depend on state that may move either way
(INVALID_REPLICATION_FACTOR: the brokers live then), and NOT_CONTROLLER and the like
(another attempt may have landed)."""

State = Any  # hashable: ABSENT, a partition count, a config value, a bool (an ACL)


@dataclass(frozen=True)
class Op:
    """One operation of the history (times from ``time.monotonic``; ``complete`` None for
    an unknown one). ``f`` is the model's operation, ``value`` its argument (a read: what
    it observed)."""

    id: int
    key: str
    kind: str  # a key of MODELS
    f: str
    value: Any
    result: str  # OK | ERROR | UNKNOWN
    invoke: float
    complete: float | None
    error: str = ""  # the error's name (ERROR; and what an UNKNOWN one was answered, if any)
    stale: bool = False  # a read or error from a broker's view: any state before completion
    phase: str = ""  # the migration phase it completed (or was given up) in

    @property
    def stale_observation(self) -> bool:
        """A read or an error a broker may have answered from a view of earlier."""
        return self.stale and (self.f in READS or self.result == ERROR)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Op:
        return Op(**d)

    def show(self, t0: float = 0.0) -> str:
        end = "..." if self.complete is None else f"{self.complete - t0:.3f}"
        got = self.result + (f" {self.error}" if self.error else "")
        stale = " (broker view)" if self.stale_observation else ""
        return f"#{self.id} {self.f} {self.value!r} -> {got}{stale} [{self.invoke - t0:.3f}, {end}]"


# --- the models -------------------------------------------------------------------------


class Model(Protocol):
    """A key's sequential specification."""

    initial: State

    def apply(self, state: State, f: str, value: Any) -> State | None:
        """The state after ``f`` succeeds from ``state``; None: it would be refused."""
        ...

    def observes(self, op: Op, state: State) -> bool:
        """Whether ``state`` is one that ``op`` (a read, or an error in
        :data:`REVEALING`) observes."""
        ...

    def candidates(self, ops: Sequence[Op]) -> list[State]:
        """Initial states enough to cover every way ``ops`` can behave."""
        ...


class TopicModel:
    """A topic: ABSENT or its partition count. create N (from absent), create-partitions
    N (from fewer than N), delete (from present); read-at-least k: present with k or
    more partitions (a broker's view may show a topic's partitions as they come), or
    ABSENT."""

    initial: State = ABSENT

    def apply(self, state: State, f: str, value: Any) -> State | None:
        if f == "create":
            return value if state == ABSENT else None
        if f == "create-partitions":
            return value if state != ABSENT and state < value else None
        if f == "delete":
            return ABSENT if state != ABSENT else None
        raise ValueError(f"topic: no operation {f!r}")

    def observes(self, op: Op, state: State) -> bool:
        if op.f == READ:
            return bool(state == op.value)
        if op.f == READ_AT_LEAST:  # a view may show a new topic's partitions one by one
            if ABSENT in (state, op.value):
                return bool(state == op.value)
            return bool(state >= op.value)
        if op.error == "UNKNOWN_TOPIC_OR_PARTITION":
            return bool(state == ABSENT)
        if op.error == "TOPIC_ALREADY_EXISTS":
            return bool(state != ABSENT)
        if op.error == "INVALID_PARTITIONS":  # the count asked for is not more than it has
            return bool(state != ABSENT and state >= op.value)
        return True

    def candidates(self, ops: Sequence[Op]) -> list[State]:
        counts = [o.value for o in ops if isinstance(o.value, int)]
        return [ABSENT, *range(1, max(counts, default=0) + 2)]


class RegisterModel:
    """A config key or a quota: ABSENT or its value. set v; delete (always succeeds, as
    Kafka's incremental DELETE and a quota's removal do)."""

    initial: State = ABSENT

    def apply(self, state: State, f: str, value: Any) -> State | None:
        if f == "set":
            return value
        if f == "delete":
            return ABSENT
        raise ValueError(f"register: no operation {f!r}")

    def observes(self, op: Op, state: State) -> bool:
        return bool(state == op.value) if op.f == READ else True

    def candidates(self, ops: Sequence[Op]) -> list[State]:
        return [ABSENT, *{o.value for o in ops if o.value != ABSENT}, _Other()]


class CredentialModel(RegisterModel):
    """A SCRAM credential (user, mechanism): ABSENT or its iterations. upsert (set);
    delete only what exists (RESOURCE_NOT_FOUND otherwise)."""

    def apply(self, state: State, f: str, value: Any) -> State | None:
        if f == "delete":
            return ABSENT if state != ABSENT else None
        return super().apply(state, f, value)

    def observes(self, op: Op, state: State) -> bool:
        if op.error == "RESOURCE_NOT_FOUND":
            return bool(state == ABSENT)
        return super().observes(op, state)


class AclModel:
    """An ACL: present (True) or not. create (idempotent, as Kafka's); delete answered
    ``ok`` only when it matched (deleted) the ACL."""

    initial: State = False

    def apply(self, state: State, f: str, value: Any) -> State | None:
        if f == "create":
            return True
        if f == "delete":
            return False if state else None
        raise ValueError(f"acl: no operation {f!r}")

    def observes(self, op: Op, state: State) -> bool:
        return bool(state == op.value) if op.f == READ else True

    def candidates(self, ops: Sequence[Op]) -> list[State]:
        return [False, True]


class _Other:
    """A value no operation wrote (an initial state for a window of a register)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Other)

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "<another value>"


MODELS: dict[str, Model] = {
    "topic": TopicModel(),
    "register": RegisterModel(),
    "credential": CredentialModel(),
    "acl": AclModel(),
}
