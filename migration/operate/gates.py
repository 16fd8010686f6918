"""The gates of a driven migration and the refusals between its steps, each decided on
what Kafka itself reports (:class:`View`: one read of ZooKeeper's tree, a controller's
metadata log and Kafka's DescribeQuorum).

A gate is a function of the inventory, a :class:`View` and a :class:`Baseline` (what was
seen before the step it follows: a broker's registration before its restart, the log's
end when the copy finished) that returns None once open, else why not yet, in words an
operator can act on. :func:`refusal` is checked before every step after the preflight:
a partition reassignment in flight, a broker registered that the inventory does not
name, a broker registering from other endpoints than when the migration began (a
replaced node, :func:`replaced`), or the quorum without a leader stops the run there (it
does not wait: the operator acts, then runs again); a missing broker is refused too,
except the one a step has just restarted, whose gate waits for it.

A view read without ZooKeeper's topics (``read_view(topics=False)``: every partition's
state znode, ~100,000 reads of production's ZooKeeper at 100,000 partitions) serves the
gates of :data:`TOPICS_FREE`, polled every second while they wait; a gate or refusal
that judges partitions refuses such a view rather than finding none out of sync.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kazoo.exceptions import KazooException

from migration.bridge.preflight import run_preflight
from migration.common.properties import ConfigError
from migration.image.at_offset import image_at
from migration.image.delta import RecordApplyError
from migration.image.model import ZK_MIGRATION_MIGRATION, ZK_MIGRATION_POST, MetadataImage
from migration.log.errors import LogError
from migration.operate.inventory import Inventory
from migration.operate.kafka_state import quorum_part
from migration.zk.client import ZkClient, ZkConnectError
from migration.zk.errors import ZnodeFormatError
from migration.zk.reader import read_snapshot
from migration.zk.security import zk_config_security
from migration.zk.tree_read import ZkSnapshot

_VIEW_PARTS = frozenset({"cluster", "brokers", "topics"})
_NO_TOPICS = "ZooKeeper's topics not read in this view"


@dataclass
class View:
    """One read of the cluster. A part that could not be read is None with its error."""

    snap: ZkSnapshot | None
    zk_error: str | None
    image: MetadataImage | None
    log_end: int | None
    log_error: str | None
    quorum: dict[str, Any]
    topics_read: bool = True  # False: ``snap`` holds no topics, however many there are

    def kraft_brokers(self) -> dict[int, Any]:
        return dict(self.image.brokers) if self.image is not None else {}

    def zk_offset(self) -> int | None:
        """The metadata offset ZooKeeper holds (``/migration``'s), None before a copy
        claimed it or when ZooKeeper was not read."""
        migration = self.snap.migration if self.snap is not None else None
        if migration is None or migration.value.kraft_metadata_offset < 0:
            return None
        return migration.value.kraft_metadata_offset

    def write_behind_lag(self) -> int | None:
        """Records of the controllers' image that ZooKeeper does not hold yet: the
        image's offset past ``/migration``'s; None before a copy claimed ``/migration``
        or when either side was not read."""
        at = self.zk_offset()
        if self.image is None or at is None:
            return None
        return max(0, self.image.offset - at)


def read_view(inv: Inventory, log_dir: Path | None, *, topics: bool = True) -> View:
    """Read ZooKeeper (cluster, brokers, and ``topics`` unless False), the metadata log in
    ``log_dir`` (None: not yet, before the controllers exist) and the quorum."""
    snap, zk_error = None, None
    try:
        security = zk_config_security(inv.zookeeper_client_config)
        with ZkClient(inv.zookeeper_connect, timeout_s=15, security=security) as client:
            parts = _VIEW_PARTS if topics else _VIEW_PARTS - {"topics"}
            snap = read_snapshot(client, parts=parts)
    except (ZkConnectError, KazooException, ZnodeFormatError, ConfigError, OSError) as exc:
        zk_error = str(exc) or type(exc).__name__
    image, log_end, log_error = None, None, None
    if log_dir is not None and (log_dir / "__cluster_metadata-0").is_dir():
        try:
            at = image_at(log_dir, None)
            image, log_end = at.image, at.log_end_offset
        except (LogError, OSError, ValueError, RecordApplyError) as exc:
            # RecordApplyError: the log ends inside Kafka's copy transaction (under way,
            # or left by a controller that died in it until the next one aborts it)
            log_error = str(exc) or type(exc).__name__
    else:
        log_error = f"no metadata log in {log_dir} yet"
    quorum = quorum_part(",".join(f"{c.host}:{c.port}" for c in inv.controllers))
    return View(snap, zk_error, image, log_end, log_error, quorum, topics_read=topics)


@dataclass
class Baseline:
    """What a gate compares with, recorded before the step it follows (kept in the run's
    journal so that a resumed run's gate still has it)."""

    zk_timestamp: int | None = None  # the broker's ZooKeeper registration's "timestamp"
    kraft_epoch: int | None = None  # its registration's broker epoch with the controllers
    log_end: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"zk_timestamp": self.zk_timestamp, "kraft_epoch": self.kraft_epoch,
                "log_end": self.log_end}  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Baseline:
        return cls(data.get("zk_timestamp"), data.get("kraft_epoch"), data.get("log_end"))


def broker_baseline(view: View, broker_id: int) -> Baseline:
    registered = view.snap.brokers.get(broker_id) if view.snap is not None else None
    kraft = view.kraft_brokers().get(broker_id)
    return Baseline(
        zk_timestamp=registered.timestamp if registered is not None else None,
        kraft_epoch=kraft.epoch if kraft is not None else None,
    )


# --- what is read -------------------------------------------------------------------------


def _needs(
    view: View, zk: bool = True, log: bool = False, quorum: bool = False, topics: bool = False
) -> str | None:
    if zk and view.snap is None:
        return f"ZooKeeper not read: {view.zk_error}"
    if topics and not view.topics_read:
        return _NO_TOPICS
    if log and view.image is None:
        return f"the metadata log not read: {view.log_error}"
    if quorum and view.quorum.get("error") is not None:
        return f"the quorum did not answer: {view.quorum['error']}"
    return None


def out_of_sync(snap: ZkSnapshot) -> list[str]:
    """Partitions (``topic-N``) without a leader or whose ISR is not their replica set,
    as ZooKeeper holds them (the controllers dual-write the states during a migration)."""
    found = []
    for name, topic in sorted(snap.topics.items()):
        for pid, replicas in sorted(topic.assignment.partitions.items()):
            adding = set(topic.assignment.adding.get(pid, ()))
            part = topic.partitions.get(pid)
            state = part.state if part is not None else None
            wanted = {r for r in replicas if r not in adding}
            if state is None or state.leader < 0 or set(state.isr) != wanted:
                found.append(f"{name}-{pid}")
    return found


def reassigning(view: View) -> list[str]:
    """Partitions under reassignment, in ZooKeeper or with the controllers."""
    found: set[str] = set()
    if view.snap is not None:
        found |= {f"{t.topic}-{t.partition}" for t in view.snap.reassignment}
        for name, topic in view.snap.topics.items():
            moving = set(topic.assignment.adding) | set(topic.assignment.removing)
            found |= {f"{name}-{pid}" for pid in moving}
    if view.image is not None:
        for image in view.image.topics.values():
            for pid, p in image.partitions.items():
                if p.adding_replicas or p.removing_replicas:
                    found.add(f"{image.name}-{pid}")
    return sorted(found)


def _sample(names: list[str], limit: int = 5) -> str:
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


# --- refusals --------------------------------------------------------------------------


def addresses(view: View) -> dict[int, list[str]]:
    """Each registered broker's ``host:port`` endpoints (ZooKeeper's registration, else
    the controllers')."""
    found = {
        i: sorted(f"{e.host}:{e.port}" for e in b.endpoints)
        for i, b in view.kraft_brokers().items()
    }
    if view.snap is not None:
        found |= {
            i: sorted(f"{e.host}:{e.port}" for e in b.endpoints)
            for i, b in view.snap.brokers.items()
        }
    return found


def replaced(view: View, began: Mapping[int, list[str]]) -> str | None:
    """A broker registering from other endpoints than when the migration began: a node
    replaced during the migration, which Kafka's rollback does not survive
    (KAFKA-20762, docs/field-bugs.md#fb-31)."""
    for broker_id, now in sorted(addresses(view).items()):
        then = began.get(broker_id)
        if then is not None and now != then:
            return (
                f"broker {broker_id} registers from {', '.join(now)}, not {', '.join(then)} "
                "as when the migration began: a node replaced during the migration breaks "
                "Kafka's way back (KAFKA-20762); put the original node back, then run again"
            )
    return None


def refusal(
    inv: Inventory,
    view: View,
    restarting: int | None = None,
    began: Mapping[int, list[str]] | None = None,
) -> str | None:
    """Why the run must not take its next step (the module doc), or None. ``began``:
    each broker's endpoints when the migration began (:func:`addresses`)."""
    if why := _needs(view, topics=True):
        return why
    assert view.snap is not None
    if moving := reassigning(view):
        return (
            f"a partition reassignment is in flight ({_sample(moving)}): let it finish, or "
            "cancel it (kafka-reassign-partitions --cancel), then run again"
        )
    expected = {b.id for b in inv.brokers}
    # present: in /brokers/ids, or a KRaft-mode broker the controllers have unfenced (a
    # stopped broker stays registered with them, fenced)
    seen = set(view.snap.brokers) | {
        i for i, b in view.kraft_brokers().items() if not b.fenced and not b.is_migrating_zk_broker
    }
    if unexpected := sorted(seen - expected - {c.id for c in inv.controllers}):
        return (
            f"broker(s) {unexpected} are registered but not in the inventory: add them to "
            "it (every broker is rolled), or stop them"
        )
    if missing := sorted(expected - seen - ({restarting} if restarting is not None else set())):
        return f"broker(s) {missing} of the inventory are not registered: start them"
    return replaced(view, began) if began else None


def quorum_refusal(view: View) -> str | None:
    """Once the controllers run: the quorum must have a leader (a majority up)."""
    if why := _needs(view, zk=False, quorum=True):
        return why
    if view.quorum["leader_id"] < 0:
        return "the controller quorum has no leader: a majority of the controllers must run"
    return None


# --- gates ---------------------------------------------------------------------------------

Gate = Callable[[Inventory, View, Baseline], str | None]


def preflight_open(inv: Inventory, view: View, _: Baseline) -> str | None:
    if why := _needs(view, topics=True):
        return why
    assert view.snap is not None
    if view.snap.cluster_id is None:
        return "ZooKeeper holds no /cluster/id"
    report = run_preflight(view.snap)
    if report.blockers:
        return "; ".join(f"{f.code}: {f.message}" for f in report.blockers)
    return None


def brokers_open(inv: Inventory, view: View, _: Baseline) -> str | None:
    if why := _needs(view):
        return why
    assert view.snap is not None
    expected = sorted(b.id for b in inv.brokers)
    registered = sorted(view.snap.brokers)
    if registered != expected:
        return f"/brokers/ids holds {registered}, the inventory names {expected}"
    return None


def quorum_open(inv: Inventory, view: View, _: Baseline) -> str | None:
    if why := quorum_refusal(view):
        return why
    voters = sorted(v["replica_id"] for v in view.quorum["voters"])
    if voters != sorted(c.id for c in inv.controllers):
        return f"the quorum's voters are {voters}, not the inventory's controllers"
    lagging = [v["replica_id"] for v in view.quorum["voters"] if v["lag"] != 0]
    if lagging:
        return f"voter(s) {lagging} not caught up with the leader"
    return None


def _in_sync(view: View) -> str | None:
    if why := _needs(view, topics=True):
        return why
    assert view.snap is not None
    if behind := out_of_sync(view.snap):
        return f"{len(behind)} partition(s) not in sync: {_sample(behind)}"
    return None


def _registered_again(view: View, broker_id: int, before: Baseline) -> str | None:
    """Broker ``broker_id`` in ``/brokers/ids`` with a registration newer than the one
    seen before its restart."""
    assert view.snap is not None
    registered = view.snap.brokers.get(broker_id)
    if registered is None:
        return f"broker {broker_id} not registered in /brokers/ids yet"
    if before.zk_timestamp is not None and registered.timestamp <= before.zk_timestamp:
        return f"broker {broker_id}'s registration is the one from before its restart"
    return None


def migrating_back(broker_id: int) -> Gate:
    """Broker ``broker_id`` registered again since its restart (a newer ZooKeeper
    registration), with the controllers as a migrating ZooKeeper broker, partitions in
    sync."""

    def gate(inv: Inventory, view: View, before: Baseline) -> str | None:
        if why := _needs(view, log=True):
            return why
        if why := _registered_again(view, broker_id, before):
            return why
        kraft = view.kraft_brokers().get(broker_id)
        if kraft is None or not kraft.is_migrating_zk_broker:
            return (
                f"broker {broker_id} not registered with the controllers as a migrating "
                "ZooKeeper broker (is zookeeper.metadata.migration.enable set, and the "
                "controller listener reachable from it?)"
            )
        return _in_sync(view)

    return gate


def kraft_back(broker_id: int) -> Gate:
    """Broker ``broker_id`` registered with the controllers since its restart (a newer
    broker epoch), in KRaft mode, unfenced; gone from ``/brokers/ids``; partitions in sync."""

    def gate(inv: Inventory, view: View, before: Baseline) -> str | None:
        if why := _needs(view, log=True):
            return why
        assert view.snap is not None
        kraft = view.kraft_brokers().get(broker_id)
        if kraft is None or (before.kraft_epoch is not None and kraft.epoch <= before.kraft_epoch):
            return f"broker {broker_id} not registered again with the controllers yet"
        if kraft.is_migrating_zk_broker:
            return f"broker {broker_id} registered as a ZooKeeper-mode broker still"
        if kraft.fenced:
            return f"broker {broker_id} fenced (catching up with the metadata log)"
        if broker_id in view.snap.brokers:
            return f"broker {broker_id} still in /brokers/ids (ZooKeeper mode)"
        return _in_sync(view)

    return gate


def copied_open(inv: Inventory, view: View, _: Baseline) -> str | None:
    if why := _needs(view, log=True):
        return why
    assert view.snap is not None and view.image is not None
    if view.image.zk_migration_state != ZK_MIGRATION_MIGRATION:
        return (
            "Kafka's copy not done (ZkMigrationState "
            f"{view.image.zk_migration_state}): the controllers wait for every broker to "
            "register with them, then copy"
        )
    migration = view.snap.migration
    if migration is None or migration.value.kraft_metadata_offset <= 0:
        return "/migration not written by the active controller yet"
    return None


def dual_write_open(inv: Inventory, view: View, before: Baseline) -> str | None:
    """``/migration`` names an offset at or past the log's end when the gate began."""
    if why := _needs(view, log=True):
        return why
    assert view.snap is not None and view.log_end is not None
    target = (before.log_end if before.log_end is not None else view.log_end) - 1
    migration = view.snap.migration
    offset = migration.value.kraft_metadata_offset if migration is not None else -1
    if offset < target:
        return f"/migration at offset {offset}, the metadata log at {target}: writing behind"
    return None


def no_zk_brokers_open(inv: Inventory, view: View, _: Baseline) -> str | None:
    """Finalization's precondition: every broker registered with the controllers in
    KRaft mode, none in ZooKeeper mode (named when refused)."""
    if why := _needs(view, log=True):
        return why
    assert view.snap is not None
    kraft = view.kraft_brokers()
    in_zk = sorted(
        set(view.snap.brokers) | {i for i, b in kraft.items() if b.is_migrating_zk_broker}
    )
    if in_zk:
        return f"broker(s) {in_zk} still in ZooKeeper mode: roll them into KRaft mode first"
    if unregistered := sorted({b.id for b in inv.brokers} - set(kraft)):
        return f"broker(s) {unregistered} not registered with the controllers"
    return None


def finalized_open(inv: Inventory, view: View, _: Baseline) -> str | None:
    if why := _needs(view, zk=False, log=True):
        return why
    assert view.image is not None
    if view.image.zk_migration_state != ZK_MIGRATION_POST:
        return f"ZkMigrationState {view.image.zk_migration_state}, not POST_MIGRATION yet"
    return None


def zk_back(broker_id: int) -> Gate:
    """Broker ``broker_id`` registered again in ZooKeeper since its restart; partitions
    in sync."""

    def gate(inv: Inventory, view: View, before: Baseline) -> str | None:
        if why := _needs(view) or _registered_again(view, broker_id, before):
            return why
        return _in_sync(view)

    return gate


def zookeeper_open(inv: Inventory, view: View, _: Baseline) -> str | None:
    """The end of a rollback: a ZooKeeper-mode broker controls the cluster, no
    ``/migration``, every broker registered, every partition led and in sync."""
    if why := _needs(view):
        return why
    assert view.snap is not None
    controller = view.snap.controller
    if controller is None or controller.is_kraft:
        return "no ZooKeeper-mode broker in /controller yet"
    if view.snap.migration is not None:
        return "/migration is there again: is a KRaft controller still running?"
    if why := brokers_open(inv, view, Baseline()):
        return why
    return _in_sync(view)


def no_kraft_brokers_open(inv: Inventory, view: View, _: Baseline) -> str | None:
    """Before the controllers stop in a rollback: no broker registered with them in
    KRaft mode (it could not read ZooKeeper once they are gone). No metadata log here:
    no controller ever ran, so no broker is registered with them."""
    if in_kraft := sorted(
        i for i, b in view.kraft_brokers().items() if not b.is_migrating_zk_broker
    ):
        return (
            f"broker(s) {in_kraft} registered with the controllers in KRaft mode: roll "
            "them back to ZooKeeper mode first (run the rollback again)"
        )
    return None


TOPICS_FREE: frozenset[Gate] = frozenset({
    brokers_open, quorum_open, copied_open, dual_write_open, no_zk_brokers_open,
    finalized_open, no_kraft_brokers_open,
})  # fmt: skip
"""The gates that never judge partitions: polled on views read without the topics."""

GATES: dict[str, Gate] = {
    "preflight.zookeeper": preflight_open,
    "preflight.brokers": brokers_open,
    "controllers.quorum": quorum_open,
    "copy.done": copied_open,
    "copy.dual-write": dual_write_open,
    "finalize.brokers": no_zk_brokers_open,
    "finalize.done": finalized_open,
    "rollback-controllers.written-behind": dual_write_open,
    "rollback-controllers.brokers": no_kraft_brokers_open,
    "rollback-verify.zookeeper": zookeeper_open,
}
_BROKER_GATES: dict[str, Callable[[int], Gate]] = {
    "brokers-migration": migrating_back,
    "brokers-kraft": kraft_back,
    "rollback-kraft-brokers": migrating_back,
    "rollback-brokers": zk_back,
}


def gate_for(step_id: str) -> Gate | None:
    """The gate of a plan's gate step (None: not a gate this module opens, the audit)."""
    if step_id in GATES:
        return GATES[step_id]
    phase, _, rest = step_id.partition(".")
    if phase in _BROKER_GATES and rest.endswith(".back"):
        return _BROKER_GATES[phase](int(rest.split(".")[0]))
    return None
