"""Topics: assignments (``/brokers/topics/<t>``, versions 1-3), partition states
(``.../partitions/<p>/state``), the legacy reassignment znode and ISR notifications."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from migration.common.shared_ids import shared_ids
from migration.common.text import shown
from migration.records.uuids import canonical_uuid
from migration.zk.model.jsonfields import Fields, render_json

LEADER_NONE = -1
RECOVERED, RECOVERING = 0, 1


@dataclass(frozen=True, slots=True)
class TopicAssignment:
    """Replica assignment of one topic; ``adding``/``removing`` list only partitions
    under reassignment. ``topic_id`` is None on clusters older than Kafka 2.8, else the
    canonical text of the uuid the znode holds (:func:`~migration.records.uuids.canonical_uuid`:
    a form Kafka accepts but would not print is read as the uuid Kafka reads it as)."""

    name: str
    partitions: dict[int, tuple[int, ...]]
    topic_id: str | None = None
    adding: dict[int, tuple[int, ...]] = field(default_factory=dict)
    removing: dict[int, tuple[int, ...]] = field(default_factory=dict)
    version: int = 3


def _partition_map(f: Fields, name: str, obj: Mapping[str, Any]) -> dict[int, tuple[int, ...]]:
    out: dict[int, tuple[int, ...]] = {}
    for key, replicas in obj.items():
        if not key.isdecimal():
            f.fail(f"{name}: partition key {shown(key)} is not a partition number")
        out[int(key)] = shared_ids(f.as_int_list(f"{name}.{key}", replicas))
    return out


def parse_topic(path: str, raw: bytes | None, name: str) -> TopicAssignment:
    f = Fields.load(path, raw)
    version = f.version(range(1, 4))
    partitions = _partition_map(f, "partitions", f.mapping("partitions"))
    if not partitions:
        f.fail("topic has no partitions")
    if sorted(partitions) != list(range(len(partitions))):
        f.fail(f"partition numbers are not 0..{len(partitions) - 1}")
    for pid, replicas in partitions.items():
        if not replicas:
            f.fail(f"partition {pid} has no replicas")
        if len(set(replicas)) != len(replicas):
            f.fail(f"partition {pid} lists a replica twice: {list(replicas)}")
        if min(replicas) < 0:
            f.fail(f"partition {pid} names a negative broker id")
    topic_id = f.opt_text("topic_id") if version >= 2 else None
    if topic_id is not None:
        try:
            topic_id = canonical_uuid(topic_id)
        except ValueError as exc:
            f.fail(f"topic_id: {exc}")
    adding = _partition_map(f, "adding_replicas", f.opt_mapping("adding_replicas"))
    removing = _partition_map(f, "removing_replicas", f.opt_mapping("removing_replicas"))
    for label, moving in (("adding_replicas", adding), ("removing_replicas", removing)):
        for pid in moving:
            if pid not in partitions:
                f.fail(f"{label} names partition {pid}, which the topic does not have")
    return TopicAssignment(name, partitions, topic_id, adding, removing, version)


def render_topic(value: TopicAssignment) -> bytes:
    def as_json(m: dict[int, tuple[int, ...]]) -> dict[str, list[int]]:
        return {str(p): list(r) for p, r in sorted(m.items())}

    obj: dict[str, object] = {"version": value.version, "partitions": as_json(value.partitions)}
    if value.version >= 3:
        obj["adding_replicas"] = as_json(value.adding)
        obj["removing_replicas"] = as_json(value.removing)
    if value.version >= 2 and value.topic_id is not None:
        obj["topic_id"] = value.topic_id
    return render_json(obj)


class PartitionState(NamedTuple):
    """Leader and ISR of one partition; ``leader`` -1 means offline. A tuple: the reader
    decodes one per partition and the writer compares and renders 100,000s."""

    leader: int
    leader_epoch: int
    controller_epoch: int
    isr: tuple[int, ...]
    leader_recovery_state: int = RECOVERED


def parse_partition_state(path: str, raw: bytes | None) -> PartitionState:
    f = Fields.load(path, raw)
    # Fast path for the common, valid shape (the reader decodes one per partition);
    # anything unusual falls through to the field-by-field checks below for the error.
    o = f.obj
    leader, le, ce, isr = (
        o.get("leader"),
        o.get("leader_epoch"),
        o.get("controller_epoch"),
        o.get("isr"),
    )
    if (
        o.get("version") == 1
        and type(leader) is int
        and leader >= LEADER_NONE
        and type(le) is int
        and le >= 0
        and type(ce) is int
        and type(isr) is list
        and (not isr or set(map(type, isr)) == {int})
        and o.get("leader_recovery_state", RECOVERED) in (RECOVERED, RECOVERING)
        and type(o.get("leader_recovery_state", RECOVERED)) is int
    ):
        return PartitionState(
            leader, le, ce, shared_ids(isr), o.get("leader_recovery_state", RECOVERED)
        )
    f.version(range(1, 2))
    lrs = f.opt_integer("leader_recovery_state", RECOVERED)
    if lrs not in (RECOVERED, RECOVERING):
        f.fail(f"leader_recovery_state must be 0 or 1, found {lrs}")
    state = PartitionState(
        leader=f.integer("leader"),
        leader_epoch=f.integer("leader_epoch"),
        controller_epoch=f.integer("controller_epoch"),
        isr=shared_ids(f.int_list("isr")),
        leader_recovery_state=lrs,
    )
    if state.leader < LEADER_NONE:
        f.fail(f"leader {state.leader} is neither a broker id nor -1")
    if state.leader_epoch < 0:
        f.fail(f"leader_epoch {state.leader_epoch} is negative")
    return state


def render_partition_state(value: PartitionState) -> bytes:
    """Kafka's compact JSON, formatted directly: the writer renders one per changed
    partition (100,000s in a reassignment or a broker failure)."""
    recovery = (
        f',"leader_recovery_state":{value.leader_recovery_state}'
        if value.leader_recovery_state != RECOVERED
        else ""
    )
    return (
        f'{{"controller_epoch":{value.controller_epoch:d},"leader":{value.leader:d},'
        f'"version":1,"leader_epoch":{value.leader_epoch:d},'
        f'"isr":[{",".join(map(str, value.isr))}]{recovery}}}'
    ).encode()


# --- /admin/reassign_partitions (legacy, in-flight reassignment) ---------------------


@dataclass(frozen=True, slots=True)
class ReassignmentTarget:
    topic: str
    partition: int
    replicas: tuple[int, ...]


def parse_reassignment(path: str, raw: bytes | None) -> tuple[ReassignmentTarget, ...]:
    f = Fields.load(path, raw)
    f.version(range(1, 2))
    return tuple(
        ReassignmentTarget(sub.text("topic"), sub.integer("partition"), sub.int_list("replicas"))
        for sub in f.objects("partitions")
    )


def render_reassignment(targets: tuple[ReassignmentTarget, ...]) -> bytes:
    return render_json(
        {
            "version": 1,
            "partitions": [
                {"topic": t.topic, "partition": t.partition, "replicas": list(t.replicas)}
                for t in targets
            ],
        }
    )


# --- /isr_change_notification/isr_change_<seq> ----------------------------------------


def render_isr_change(partitions: list[tuple[str, int]]) -> bytes:
    return render_json(
        {"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in partitions]}
    )
