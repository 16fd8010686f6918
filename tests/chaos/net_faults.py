"""The network faults of a chaos run, and ZooKeeper losing its quorum.

Wiring (:func:`broker_links`, :func:`wire_controllers`): every link a fault may break
runs through a proxy of its own (:class:`~tests.chaos.proxy.Links`). Controller ``i``
names each other voter ``j`` in its ``controller.quorum.voters`` at the proxy (i->j)
(its own entry stays its listener: the config requires it); Raft knows voters by id,
the addresses are only where to connect, so every Raft call and every forwarded
request ``i`` makes to ``j`` crosses (i->j). Broker ``b`` names every controller at a
proxy (b->j) of its own (its KRaft session, forwarded requests and, in KRaft mode, its
metadata fetches). Not proxied: what controllers open to brokers (a ZooKeeper-mode
broker's control RPCs, at the address the broker registered) and the brokers' links to
ZooKeeper and to each other.

Every break here is of directed links (:class:`~tests.chaos.proxy.Links`): a link
carries the connections its source opens, both directions of their bytes.

Faults (each puts the network back at its end, whatever happens; params from
:func:`tests.chaos.plan._params`; ``blackhole`` 1: nothing answered, timeouts;
0: connections reset, see :mod:`.proxy`):

* ``partition-active-from-voters``: the active controller cut off from the other voters
  both ways, not from ZooKeeper nor the brokers, until the others have elected a leader
  and it has claimed ZooKeeper (``/controller`` names a later KRaft epoch), then
  ``hold_s`` more: the old leader, still running and connected to ZooKeeper, must not
  land a write after that claim (:func:`tests.chaos.checks.claim_evidence`). An
  isolated leader commits nothing new, so what it still writes is what it committed
  before; with ``zk_held`` 1 its links to ZooKeeper are blackholed from :data:`LAG_S`
  before the cut until the new leader has claimed: the writes it sent meanwhile reach
  ZooKeeper after the claim, as a partition's delayed packets do (they must be
  refused; it stays under the session timeout if the claim comes within ~5 s). Whether
  one was (ZooKeeper's logs show a refused write of the deposed controller after the
  claim) is the run's ``zk_held_partitions`` fact (``exercised``). That needs a majority
  without it: an earlier fault of the stage may have left a voter exited (a halt on
  EIO or a full disk; :func:`~tests.chaos.run.settle` restarts it only at the stage's
  end). Then no leader can be elected while the cut lasts, and the fault expects what
  Raft promises instead (:func:`_no_majority`): the cut-off leader resigns (check
  quorum), nobody claims ZooKeeper, and while cut it lands nothing in ZooKeeper it had
  not committed before the cut (``/migration`` names its epoch or an earlier one and
  an offset below the high watermark it knew when it resigned). Which case each such
  fault met is the run's ``voter_partitions`` fact (``case``: ``new-leader`` or
  ``no-majority``) and its events.
* ``one-way-partition``: the active controller cannot reach one voter (``reverse`` 0)
  or that voter cannot reach it (``reverse`` 1), ``for_s``. One-way by who opens the
  connection, not by the direction of packets: the link (i->j) is broken, i.e. the
  connections i opens to j (both directions of their bytes: i's requests and j's
  answers to them); j's connections to i stay open, so j's requests to i still get
  i's answers. Raft's calls go one way each (a follower's Fetch to the leader; the
  leader's BeginQuorumEpoch, a candidate's Vote, a forwarded request to their target),
  so with ``reverse`` 0 the voter still fetches from the active controller and with
  ``reverse`` 1 the active controller still reaches the voter; a half-blackhole that
  drops one direction of bytes on every connection is not what this fault does.
* ``flapping-controller-link``: the link between the active controller and one voter,
  both ways, broken and restored ``flaps`` times, ``period_s`` a cycle (half of it
  broken).
* ``partition-broker-from-controllers``: one broker's links to every controller broken
  for ``for_s``, then back; waits until its replicas are in sync again.
* ``zk-quorum-loss``: two of the three ZooKeeper servers SIGSTOPped for ``stopped_s``
  (longer than the 6 s session timeout), then SIGCONT. A stopped server keeps its
  connections open and answers nothing (clients see silence, not resets, and must
  time out on their own), and a stopped leader comes back believing it still leads:
  the ensemble has to notice and elect again, with sessions and data intact. A kill
  and restart (a crash, recovered from disk) is what ``zk-server-restart`` does. Then a
  session is opened to prove the ensemble commits: ZooKeeper 3.8.0 (Debian's) can leave
  a resumed leader committing nothing (ZOOKEEPER-4685); the run then restarts that
  leader, as an operator would, and notes it.
"""

from __future__ import annotations

import signal
import time
from dataclasses import asdict
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from migration.local.quorum import LocalQuorum
from migration.zk import paths
from migration.zk.model.cluster import (
    EMPTY_MIGRATION,
    MigrationZnode,
    parse_controller,
    parse_migration,
)
from tests.broker_harness import eventually
from tests.chaos.context import HEALTHY_S, Run, wait_fully_replicated
from tests.chaos.plan import Fault
from tests.chaos.proxy import Links, TcpProxy

CLAIM_WAIT_S = 120.0  # hang guard: a new leader elected and its claim on ZooKeeper
LAG_S = 1.0  # partition-active-from-voters: its ZooKeeper links held this long before


# --- wiring ----------------------------------------------------------------------------


def broker_links(
    links: Links, brokers: list[int], controllers: list[int]
) -> dict[int, dict[str, str]]:
    """A proxy per (broker, controller) in ``links`` (their upstreams set later by
    :func:`wire_controllers`) and each broker's ``controller.quorum.voters`` through
    its own."""
    props: dict[int, dict[str, str]] = {}
    for b in brokers:
        for c in controllers:
            links.brokers[(b, c)] = TcpProxy(None, name=f"broker {b} -> controller {c}")
        voters = ",".join(f"{c}@127.0.0.1:{links.brokers[(b, c)].port}" for c in controllers)
        props[b] = {"controller.quorum.voters": voters}
    return props


def wire_controllers(links: Links, quorum: LocalQuorum) -> None:
    """The brokers' proxies to the controllers' ports, a proxy per (controller, other
    voter), and each controller's ``controller.quorum.voters`` through its own (takes
    effect when it starts)."""
    for (_, c), proxy in links.brokers.items():
        proxy.upstream_port = int(quorum.endpoint(c).rpartition(":")[2])
    for i in quorum.ids:
        entries = []
        for j in quorum.ids:
            if i == j:
                entries.append(f"{j}@{quorum.endpoint(j)}")
                continue
            upstream = int(quorum.endpoint(j).rpartition(":")[2])
            proxy = TcpProxy(upstream, name=f"controller {i} -> controller {j}")
            links.controllers[(i, j)] = proxy
            entries.append(f"{j}@127.0.0.1:{proxy.port}")
        quorum.reconfigure(i, **{"controller.quorum.voters": ",".join(entries)})


# --- faults ----------------------------------------------------------------------------


def _break(proxies: list[TcpProxy], fault: Fault) -> str:
    blackhole = bool(fault.params.get("blackhole"))
    for proxy in proxies:
        if blackhole:
            proxy.blackhole()
        else:
            proxy.cut()
    return "blackhole" if blackhole else "cut"


def _other_voter(run: Run, node: int, fault: Fault) -> int:
    others = [v for v in run.rig.quorum.ids if v != node]
    return others[int(fault.params["voter"]) % len(others)]


def _claim(run: Run) -> tuple[int, int]:
    """The KRaft controller ``/controller`` names and its epoch (-1: none)."""
    owner = parse_controller(paths.CONTROLLER, run.rig.zk.get(paths.CONTROLLER)[0])
    epoch = owner.kraft_controller_epoch
    return (owner.broker_id, epoch) if epoch is not None else (-1, -1)


def _claimed_after(run: Run, epoch: int, old: int) -> tuple[int, int] | None:
    """The claim of ZooKeeper by another controller than ``old`` in an epoch later than
    ``epoch``, once there is one."""
    node, claimed = _claim(run)
    return (node, claimed) if node != old and claimed > epoch else None


def majority_without(ids: list[int], node: int, running: list[int]) -> bool:
    """Whether the voters other than ``node`` that run are a majority of ``ids``."""
    return len([v for v in running if v != node and v in ids]) > len(ids) // 2


def _migration(run: Run) -> MigrationZnode | None:
    try:
        return parse_migration(paths.MIGRATION, run.rig.zk.get(paths.MIGRATION)[0])
    except NoNodeError:
        return None


def minority_problems(
    node: int,
    claim: tuple[int, int],
    claim_after: tuple[int, int],
    migration: MigrationZnode | None,
    epoch: int,
    high_watermark: int,
) -> list[str]:
    """What ZooKeeper must not show after the active controller ``node`` (KRaft epoch
    ``epoch``) was cut off with no majority left without it, having resigned knowing
    ``high_watermark``: a claim (``claim_after``) other than ``claim`` (before the cut)
    or ``node``'s own in ``epoch`` (no other leader could be elected), or a
    ``/migration`` of a later epoch or past what was committed (``migration``: None
    when absent)."""
    problems = []
    if claim_after not in (claim, (node, epoch)):
        problems.append(f"ZooKeeper claimed {claim_after} (was {claim}) while no majority of the "
                        f"voters could elect a leader without the cut-off {node}")  # fmt: skip
    if migration is not None and migration != EMPTY_MIGRATION:
        if (written := migration.kraft_controller_epoch) > epoch:
            problems.append(f"/migration written in epoch {written} while no leader could be "
                            f"elected after epoch {epoch}: {migration}")  # fmt: skip
        if migration.kraft_metadata_offset >= high_watermark:
            problems.append(f"/migration names offset {migration.kraft_metadata_offset}, not "
                            f"committed (the cut-off {node} resigned at high watermark "
                            f"{high_watermark}): {migration}")  # fmt: skip
    return problems


def _resigned(run: Run, node: int) -> dict[str, Any] | None:
    """``node``'s own status once it no longer leads and its driver has stopped."""
    s = run.rig.status(node)
    return s if s["active_controller"] != node and s["driver_phase"] == "INACTIVE" else None


def _no_majority(
    run: Run, fault: Fault, node: int, before: tuple[tuple[int, int], int], held: list[TcpProxy]
) -> dict[str, Any]:
    """The cut-off leader ``node`` with no majority left without it (see the module
    doc; ``before``: the claim and the KRaft epoch before the cut; ``held``: its links to
    ZooKeeper, held): it resigns, then ``hold_s`` more; nobody claims ZooKeeper, it
    lands nothing it had not committed. AssertionError otherwise."""
    claim, epoch = before
    s = eventually(lambda: _resigned(run, node), CLAIM_WAIT_S, f"the cut-off {node} resigning")
    assert s is not None  # eventually returns a truthy answer
    hw = int(s["high_watermark"])
    run.note("cut-off leader resigned: no majority to elect another", node=node,
             active=s["active_controller"], high_watermark=hw)  # fmt: skip
    if held:
        run.links.heal(held)
        run.note("network to ZooKeeper back: held writes delivered", node=node)
    time.sleep(fault.params["hold_s"])
    migration = _migration(run)
    claim_after = _claim(run)
    problems = minority_problems(node, claim, claim_after, migration, epoch, hw)
    run.note("no claim while no majority", node=node, claim=list(claim_after),
             migration=None if migration is None else asdict(migration),
             problems=problems)  # fmt: skip
    if problems:
        raise AssertionError("; ".join(problems))
    return {"claim": list(claim), "high_watermark": hw}


def _claim_holder(run: Run, fault: Fault) -> tuple[int, str, tuple[int, int]]:
    """The active controller, its phase and ZooKeeper's claim, once the status names the
    controller ``/controller`` does (hang guard): right after a zombie's resume or a kill
    the status can still name a deposed leader while another has already claimed, and a
    partition of the deposed one would wait for a claim that already happened."""

    def agreed() -> tuple[int, str, tuple[int, int]] | None:
        node, phase = run.active(fault)
        claim = _claim(run)
        return (node, phase, claim) if claim[0] == node else None

    found = eventually(agreed, CLAIM_WAIT_S, "the active controller holding ZooKeeper's claim")
    assert found is not None  # eventually returns a truthy answer
    return found


def partition_active_from_voters(run: Run, fault: Fault) -> None:
    node, phase, claim = _claim_holder(run, fault)
    epoch = max(run.status()["kraft_epoch"], claim[1])
    quorum = run.rig.quorum
    proxies, zk_links = run.links.around(node), run.proxies[node]
    held = bool(fault.params.get("zk_held"))
    running = quorum.running()
    majority = majority_without(list(quorum.ids), node, running)
    case = "new-leader" if majority else "no-majority"
    fact: dict[str, Any] = {"node": node, "epoch": epoch, "phase": phase, "case": case,
                            "running": running, "zk_held": held}  # fmt: skip
    run.facts.setdefault("voter_partitions", []).append(fact)
    try:
        if held:
            for zk in zk_links:
                zk.blackhole()
            run.note("network to ZooKeeper holding", node=node)
            time.sleep(LAG_S)
        how = _break(proxies, fault)
        run.note("active controller partitioned from the voters", node=node, phase=phase,
                 how=how, case=case, running=running)  # fmt: skip
        if not majority:
            fact.update(_no_majority(run, fault, node, (claim, epoch), zk_links if held else []))
            return
        found = eventually(lambda: _claimed_after(run, epoch, node), CLAIM_WAIT_S, "a new claim")
        assert found is not None  # eventually returns a truthy answer
        leader, claimed = found
        fact.update(new_leader=leader, claim_epoch=claimed)
        run.note("new leader claimed ZooKeeper", node=leader, epoch=claimed, old=node, zk_held=held)
        if held:
            run.links.heal(zk_links)
            run.note("network to ZooKeeper back: held writes delivered", node=node)
        time.sleep(fault.params["hold_s"])
    finally:
        run.links.heal([*proxies, *zk_links])
        run.note("partition healed", node=node)


def one_way_partition(run: Run, fault: Fault) -> None:
    node, phase = run.active(fault)
    voter = _other_voter(run, node, fault)
    source, target = (voter, node) if fault.params["reverse"] else (node, voter)
    proxy = run.links.controllers[(source, target)]
    how = _break([proxy], fault)
    run.note("one-way partition", cannot_reach=[source, target], active=node, phase=phase, how=how)
    try:
        time.sleep(fault.params["for_s"])
    finally:
        proxy.heal()
        run.note("one-way partition healed", cannot_reach=[source, target])


def flapping_controller_link(run: Run, fault: Fault) -> None:
    node, phase = run.active(fault)
    voter = _other_voter(run, node, fault)
    proxies = run.links.between(node, voter)
    half = fault.params["period_s"] / 2
    run.note("link flapping", link=[node, voter], phase=phase, **fault.params)
    try:
        for _ in range(int(fault.params["flaps"])):
            _break(proxies, fault)
            time.sleep(half)
            run.links.heal(proxies)
            time.sleep(half)
    finally:
        run.links.heal(proxies)
        run.note("link steady", link=[node, voter])


def partition_broker_from_controllers(run: Run, fault: Fault) -> None:
    if fault.stage == "copy":
        run.active(fault)
    broker = int(fault.params["broker"])
    proxies = run.links.from_broker(broker)
    run.sampler.uncontrolled = True  # fenced past its session: its leaderships move
    how = _break(proxies, fault)
    run.note("broker partitioned from the controllers", broker=broker, how=how)
    try:
        time.sleep(fault.params["for_s"])
    finally:
        run.links.heal(proxies)
        run.note("broker reaches the controllers again", broker=broker)
    run.rig.cluster.wait_ready(HEALTHY_S)
    wait_fully_replicated(run)
    run.sampler.uncontrolled = False
    run.note("broker back in sync", broker=broker)


def _commits(run: Run, timeout_s: float = 20.0) -> bool:
    """Whether the ensemble commits: a session opened (a transaction the quorum must
    commit) and closed within ``timeout_s``, straight to the servers."""
    client = KazooClient(hosts=run.ensemble.connect_string, timeout=6.0)
    try:
        client.start(timeout=timeout_s)
    except KazooTimeoutError:
        return False
    finally:
        client.stop()
        client.close()
    return True


def zk_quorum_loss(run: Run, fault: Fault) -> None:
    phase = run.active(fault)[1] if fault.stage == "copy" else None
    kept = int(fault.params["kept"])
    stopped = [s for s in run.ensemble.servers if s.myid != kept]
    modes = {s.myid: s.mode() for s in run.ensemble.servers}
    run.sampler.uncontrolled = True  # ZooKeeper-mode brokers' sessions may expire
    for s in stopped:
        assert s.process is not None
        s.process.send_signal(signal.SIGSTOP)
    run.note("SIGSTOP ZooKeeper servers", servers=[s.myid for s in stopped], modes=modes,
             seconds=fault.params["stopped_s"], phase=phase)  # fmt: skip
    try:
        time.sleep(fault.params["stopped_s"])
    finally:
        for s in stopped:
            if s.process is not None:
                s.process.send_signal(signal.SIGCONT)
        run.note("SIGCONT ZooKeeper servers", servers=[s.myid for s in stopped])
    run.ensemble.wait_serving(HEALTHY_S)
    run.note("ZooKeeper serving again", modes={s.myid: s.mode() for s in run.ensemble.servers})
    if not _commits(run):
        # ZooKeeper 3.8.0 (Debian's): a stopped leader that resumes in its term can be
        # left committing nothing, for ever, when a follower's ACK of a proposal overtakes
        # its ACK of NEWLEADER (ZOOKEEPER-4685, fixed by ZOOKEEPER-4394 in 3.9); every
        # session open then times out. Not zk2kraft's to survive: a new leader ends it.
        leader = next(s for s in run.ensemble.servers if s.mode() == "leader")
        run.note("ZooKeeper commits nothing (ZOOKEEPER-4685): its leader restarted",
                 server=leader.myid)  # fmt: skip
        run.ensemble.restart(leader.myid, HEALTHY_S)
        if not _commits(run):
            raise RuntimeError("ZooKeeper commits nothing even after its leader restarted")
        run.note("ZooKeeper commits again")
    run.rig.cluster.wait_ready(HEALTHY_S)
    wait_fully_replicated(run)
    run.sampler.uncontrolled = False
