"""The embedded ZooKeeper is a real server: standalone, ensembles, crashes, sessions."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kazoo.client import KazooState

from migration.local.zookeeper import (
    EmbeddedZooKeeper,
    drop_connection,
    expire_session,
    four_letter_word,
)
from migration.zk.client import ZkClient
from migration.zk.multiwrite import CreateMode, create


def test_standalone_answers_four_letter_words(zk_server: EmbeddedZooKeeper) -> None:
    port = zk_server.servers[0].client_port
    assert four_letter_word(port, "ruok") == "imok"
    assert zk_server.servers[0].mode() == "standalone"


def test_three_node_ensemble_survives_a_leader_crash() -> None:
    with EmbeddedZooKeeper(nodes=3) as ensemble:
        modes = sorted(s.mode() or "" for s in ensemble.servers)
        assert modes == ["follower", "follower", "leader"]
        with ZkClient(ensemble.connect_string) as client:
            client.multi_write([create("/before", b"1")])
            leader = next(s for s in ensemble.servers if s.mode() == "leader")
            ensemble.kill(leader.myid)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                others = [s.mode() for s in ensemble.servers if s.myid != leader.myid]
                if "leader" in others:
                    break
                time.sleep(0.2)
            assert "leader" in others
            client.kazoo.retry(client.kazoo.create, "/after", b"2")
            assert client.get("/before")[0] == b"1"
            ensemble.restart(leader.myid)
            assert ensemble.servers[leader.myid - 1].mode() == "follower"


def test_expire_session_drops_ephemerals(zk: ZkClient, zk_connect: str) -> None:
    zk.multi_write([create("/ephemeral", b"", CreateMode.EPHEMERAL)])
    expire_session(zk)
    with ZkClient(zk_connect) as other:
        assert other.kazoo.exists("/ephemeral") is None


def test_drop_connection_keeps_the_session(zk: ZkClient) -> None:
    zk.multi_write([create("/kept", b"", CreateMode.EPHEMERAL)])
    states: list[str] = []
    zk.kazoo.add_listener(states.append)
    session = zk.kazoo.client_id
    drop_connection(zk)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and KazooState.CONNECTED not in states:
        time.sleep(0.05)
    assert KazooState.SUSPENDED in states and KazooState.CONNECTED in states
    assert zk.kazoo.client_id == session
    assert zk.kazoo.exists("/kept") is not None


def test_a_relative_data_dir_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with EmbeddedZooKeeper(base_dir=Path("zk-data")) as server:
        assert server.servers[0].mode() == "standalone"
        assert server.servers[0].data_dir.is_absolute()
