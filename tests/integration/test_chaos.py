"""The chaos suite's fault tools against real ZooKeeper (in ``make test``), and two
short chaos runs that between them inject every kind of fault (``make test-long``;
``make chaos`` runs many seeded ones)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from kazoo.client import KazooClient, KazooState

from migration.local.zookeeper import EmbeddedZooKeeper
from tests.broker_harness import eventually
from tests.chaos.faults import INJECTED
from tests.chaos.host_faults import need_root
from tests.chaos.plan import Fault, Plan
from tests.chaos.proxy import TcpProxy
from tests.chaos.run import run_seed
from tests.chaos.txnlog import CREATE, DELETE, SET_DATA, ensemble_history

pytestmark = pytest.mark.slow


def test_a_cut_longer_than_the_session_timeout_expires_the_session_behind_the_proxy(
    zk_server: EmbeddedZooKeeper,
) -> None:
    proxy = TcpProxy(zk_server.servers[0].client_port)
    client = KazooClient(hosts=f"127.0.0.1:{proxy.port}", timeout=2.0)
    direct = KazooClient(hosts=zk_server.connect_string)
    lost = threading.Event()
    client.add_listener(lambda state: lost.set() if state == KazooState.LOST else None)
    try:
        client.start(timeout=10)
        direct.start(timeout=10)
        path = client.create("/chaos-proxy-ephemeral", b"", ephemeral=True, sequence=True)
        proxy.delay_s = 0.05  # slow, not cut: the session lives
        assert client.get(path)[0] == b""
        proxy.delay_s = 0.0
        proxy.cut(6.0)
        eventually(lambda: direct.exists(path) is None, 30, "the session expired")
        assert lost.wait(30)
        eventually(lambda: client.connected, 30, "a new session through the proxy")
    finally:
        client.stop()
        direct.stop()
        proxy.close()


def test_the_ensembles_transaction_logs_hold_every_write_once_in_order(tmp_path: Path) -> None:
    with EmbeddedZooKeeper(nodes=3, base_dir=tmp_path) as ensemble:
        client = KazooClient(hosts=ensemble.connect_string)
        client.start(timeout=10)
        try:
            client.create("/a", b"1")
            # a follower this client is not connected to: the others log what it misses
            connected = client._connection._socket.getpeername()[1]
            down = next(
                s.myid
                for s in ensemble.servers
                if s.mode() == "follower" and s.client_port != connected
            )
            ensemble.kill(down)
            tx = client.transaction()
            tx.check("/a", 0)
            tx.set_data("/a", b"2")
            tx.create("/b", b"x")
            tx.commit()
            ensemble.restart(down)
            failed = client.transaction()
            failed.check("/a", 0)  # the version is 1 now
            failed.delete("/b")
            failed.commit()
            client.delete("/b")
        finally:
            client.stop()
        history = ensemble_history(s.data_dir for s in ensemble.servers)
    ours = [t for t in history if t.ops]
    assert [[(op.kind, op.path, op.data) for op in t.ops] for t in ours] == [
        [(CREATE, "/a", b"1")],
        [(13, "/a", None), (SET_DATA, "/a", b"2"), (CREATE, "/b", b"x")],
        [(DELETE, "/b", None)],
    ]
    assert [t.multi for t in ours] == [False, True, False]
    refused = [t for t in history if t.refused]  # the failed multi, logged with its codes
    assert len(refused) == 1 and refused[0].multi and -103 in refused[0].errors  # BADVERSION
    zxids = [t.zxid for t in history]
    assert zxids == sorted(set(zxids))


FINALIZED = Plan(
    seed=17001,
    ending="finalize",
    roll_order=(2, 1, 3),
    rolled_before_rollback=0,
    faults=(
        Fault("kill-active-controller", "copy", 0.0, {"down_s": 0.5}),
        Fault("zombie-controller", "dual-write", 0.5, {"stopped_s": 4.0}),
        Fault(
            "partition-active-from-voters",
            "dual-write",
            1.0,
            {"blackhole": 1, "hold_s": 1.0, "zk_held": 1},
        ),
        Fault("controller-disk-replaced", "dual-write", 2.0, {"voter": 1, "down_s": 0.5}),
        Fault("broker-kill-mid-roll", "roll", 0.0, {"broker": 3, "after_rolled": 1, "down_s": 1.0}),
        Fault(
            "partition-broker-from-controllers",
            "roll",
            0.0,
            {"broker": 1, "blackhole": 0, "for_s": 4.0},
        ),
        Fault(
            "controller-clock-jump",
            "roll",
            0.5,
            {"active": 1, "direction": -1, "seconds": 300, "hold_s": 3.0},
        ),
        Fault("slow-zk-network", "finished", 0.0, {"delay_ms": 40, "for_s": 3.0}),
        Fault("controller-disk-full", "finished", 0.5, {"active": 1}),
        Fault(
            "flapping-controller-link",
            "finished",
            0.5,
            {"voter": 0, "blackhole": 0, "period_s": 1.0, "flaps": 3},
        ),
    ),
)
ROLLED_BACK = Plan(
    seed=17002,
    ending="rollback-active",
    roll_order=(1, 2, 3),
    rolled_before_rollback=0,
    faults=(
        Fault("zk-server-restart", "copy", 0.0, {"server": 1, "down_s": 1.0}),
        Fault(
            "one-way-partition",
            "copy",
            0.5,
            {"voter": 1, "reverse": 1, "blackhole": 1, "for_s": 3.0},
        ),
        Fault("controller-zk-session-expiry", "dual-write", 0.0, {"cut_s": 8.0}),
        Fault("kill-controller-mid-sync", "dual-write", 0.5, {"down_s": 0.5}),
        Fault("zk-quorum-loss", "dual-write", 1.0, {"kept": 3, "stopped_s": 7.0}),
        Fault("controller-fsync-eio", "dual-write", 1.5, {"active": 0}),
    ),
)


def _needs(plan: Plan) -> list[pytest.MarkDecorator]:
    """A plan with host faults that need root is skipped, saying why, when not root."""
    why = need_root({f.kind for f in plan.faults})
    return [] if why is None else [pytest.mark.skip(reason=f"not root: {why}")]


@pytest.mark.long
@pytest.mark.parametrize(
    "plan",
    [pytest.param(p, marks=_needs(p), id=p.ending) for p in (FINALIZED, ROLLED_BACK)],
)
def test_a_chaos_run_loses_no_acknowledged_write_and_no_fenced_write_lands(
    plan: Plan, tmp_path: Path
) -> None:
    record = run_seed(plan.seed, tmp_path, plan=plan)
    assert record["ok"], (record.get("failure"), record.get("problems"), record.get("traceback"))
    assert record["problems"] == []
    assert record["audit"]["consistent"]
    assert record["acked"] > 0 and record["fenced_metadata_writes"] > 0
    assert record["claim_problems"] == 0 and len(record["zk_claims"]) >= 2
    injected = [e["event"] for e in record["events"]]
    expected = {
        "finalize": {"SIGKILL active controller", "SIGSTOP active controller", "SIGKILL broker",
                     "network to ZooKeeper slow", "new leader claimed ZooKeeper",
                     "broker partitioned from the controllers", "link flapping",
                     "wall clock jumped", "wall clock back", "metadata disk full",
                     "controller halted", "metadata disk grown back",
                     "controller disk replaced", "add-controller committed"},
        "rollback-active": {"SIGKILL ZooKeeper server", "network to ZooKeeper cut",
                            "SIGKILL successor while it takes over", "ZooKeeper handed back",
                            "one-way partition", "SIGSTOP ZooKeeper servers",
                            "fsync fails with EIO", "controller halted"},
    }[plan.ending]  # fmt: skip
    assert expected <= set(injected)
    kinds = [e["kind"] for e in record["events"] if e["event"] == INJECTED]
    assert sorted(kinds) == sorted(f.kind for f in plan.faults)  # each fault noted as injected
    if plan.ending == "finalize":  # its zk_held partition: exercised or not, recorded
        (held,) = record["zk_held_partitions"]
        assert held["exercised"] == (held["deposed_writes_refused"] > 0)
