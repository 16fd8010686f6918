"""Drift written into ZooKeeper behind the project's back (plain kazoo and Kafka's JSON,
none of the project's codecs), and the differences the audit must report for it."""

from __future__ import annotations

import json
from typing import Any

from kazoo.client import KazooClient

from migration.zk.model.configs import sanitize
from migration.zk.render import quota_path as quota_path_of
from migration.zk.tree_read import ZkSnapshot

Difference = tuple[str, str, str | None, str]
"""(kind, entity, field or None for the whole entity, difference)."""


def _get(kz: KazooClient, path: str) -> dict[str, Any]:
    data, _ = kz.get(path)
    return json.loads(data)  # type: ignore[no-any-return]


def _set(kz: KazooClient, path: str, value: dict[str, Any]) -> None:
    kz.set(path, json.dumps(value).encode())


def inject(kz: KazooClient, snap: ZkSnapshot, chroot: str = "") -> set[Difference]:
    """Seven kinds of drift (under ``chroot`` when ``kz`` has none); returns the
    differences they make."""
    expected: set[Difference] = set()
    topics = sorted(t for t in snap.topics if t not in snap.pending_deletions)
    isr_topic, config_topic, deleted, extended = topics[:4]

    # An ISR changed.
    state_path = f"{chroot}/brokers/topics/{isr_topic}/partitions/0/state"
    state = _get(kz, state_path)
    state["isr"] = state["isr"][:1] if len(state["isr"]) > 1 else [*state["isr"], 99]
    _set(kz, state_path, state)
    expected.add(("partition", f"{isr_topic}-0", "isr", "value_differs"))

    # An ACL entry removed (from a znode that keeps others).
    acl_path = next(p for p in _acl_znodes(kz, chroot) if len(_get(kz, p)["acls"]) > 1)
    acls = _get(kz, acl_path)
    gone = acls["acls"].pop(0)
    _set(kz, acl_path, acls)
    entry = f"{gone['principal']} {gone['host']} {gone['operation']} {gone['permissionType']}"
    expected.add(("acl", acl_path.removeprefix(chroot + "/"), entry, "only_in_kraft"))

    # A topic config added.
    config_path = f"{chroot}/config/topics/{config_topic}"
    config = _get(kz, config_path)
    config["config"]["min.compaction.lag.ms"] = "4242"
    _set(kz, config_path, config)
    expected.add(("topic_config", config_topic, "min.compaction.lag.ms", "only_in_zookeeper"))

    # A quota changed.
    quota_path = chroot + quota_path_of(sorted(snap.quotas, key=str)[0])
    quota = _get(kz, quota_path)
    key = sorted(quota["config"])[0]
    quota["config"][key] = str(float(quota["config"][key]) * 2 + 1)
    _set(kz, quota_path, quota)
    expected.add(
        ("client_quota", quota_path.removeprefix(f"{chroot}/config/"), key, "value_differs")
    )

    # SCRAM iterations changed.
    user = sorted(snap.scram)[0]
    user_path = f"{chroot}/config/users/{sanitize(user)}"
    creds = _get(kz, user_path)
    mechanism = sorted(m for m in creds["config"] if m.startswith("SCRAM-"))[0]
    parts = dict(p.split("=", 1) for p in creds["config"][mechanism].split(","))
    parts["iterations"] = str(int(parts["iterations"]) + 1000)
    creds["config"][mechanism] = ",".join(f"{k}={v}" for k, v in parts.items())
    _set(kz, user_path, creds)
    expected.add(("scram_credential", sanitize(user), f"{mechanism}.iterations", "value_differs"))

    # A topic deleted (its tree; its config stays).
    kz.delete(f"{chroot}/brokers/topics/{deleted}", recursive=True)
    expected.add(("topic", deleted, None, "only_in_kraft"))
    for pid in snap.topics[deleted].assignment.partitions:
        expected.add(("partition", f"{deleted}-{pid}", None, "only_in_kraft"))

    # An extra partition.
    topic_path = f"{chroot}/brokers/topics/{extended}"
    topic = _get(kz, topic_path)
    new = max(int(p) for p in topic["partitions"]) + 1
    topic["partitions"][str(new)] = topic["partitions"]["0"]
    _set(kz, topic_path, topic)
    replicas = topic["partitions"]["0"]
    kz.create(
        f"{topic_path}/partitions/{new}/state",
        json.dumps(
            {"controller_epoch": 1, "leader": replicas[0], "version": 1, "leader_epoch": 0,
             "isr": replicas}
        ).encode(),
        makepath=True,
    )  # fmt: skip
    expected.add(("topic", extended, f"p{new}.replicas", "only_in_zookeeper"))
    expected.add(("partition", f"{extended}-{new}", None, "only_in_zookeeper"))
    return expected


def _acl_znodes(kz: KazooClient, chroot: str) -> list[str]:
    out = []
    for root in ("kafka-acl", "kafka-acl-extended/prefixed"):
        base = f"{chroot}/{root}"
        if not kz.exists(base):
            continue
        for rtype in kz.get_children(base):
            out.extend(f"{base}/{rtype}/{name}" for name in kz.get_children(f"{base}/{rtype}"))
    return out


def found(report: dict[str, Any]) -> set[Difference]:
    """The differences of an audit's JSON report (its samples: ask for enough)."""
    return {(s["kind"], s["entity"], s["field"], s["difference"]) for s in report["samples"]}
