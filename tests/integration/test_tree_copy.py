"""Production's tree copied into another ZooKeeper tree, read-only, by tree_copy.

The source is what Kafka 3.5 brokers leave in ZooKeeper, byte for byte (tests/kafka_written:
null-data parents, registrations as ephemerals of a live session, ``/controller``), plus
one znode with empty (not null) data as a non-Kafka tool writes it. It is read live and
from ZooKeeper's own files, loaded into another chroot of the same real server, and the
copy compared znode by znode (data, null or not); the source's every znode keeps its data,
version, mzxid and cversion across the read, and the server's last zxid does not move.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from migration.local.zookeeper import EmbeddedZooKeeper, four_letter_word
from migration.zk.client import ZkClient
from migration.zk.multiwrite import create
from migration.zk.tree_copy import (
    TargetNotEmptyError,
    TreeCopy,
    TreeCopyError,
    load_tree,
    read_tree,
)
from migration.zkfiles.datadir import open_data_dir
from tests.kafka_written import BROKERS, Znode, broker_znode, kafka_35_tree, write

EMPTY = "/tools/empty"  # created with b"" (not null), as kazoo or a script would
EPHEMERALS = ("/brokers/ids/1", "/brokers/ids/2", "/brokers/ids/3", "/controller")

Seen = dict[str, tuple[bytes | None, int, int, int]]


def everything(client: ZkClient, root: str = "/") -> Seen:
    """Every znode below ``root`` (root excluded): data as kazoo reads it (None: null),
    version, mzxid, cversion; plain kazoo calls, independent of the code under test."""
    kz = client.kazoo
    seen: Seen = {}
    level = [root]
    while level:
        answers = [(p, kz.get_async(p), kz.get_children_async(p)) for p in level]
        level = []
        for path, got, kids in answers:
            data, stat = got.get()
            if path != root:
                seen[path] = (data, stat.version, stat.mzxid, stat.cversion)
            level += [f"{path.rstrip('/')}/{name}" for name in kids.get()]
    return seen


@pytest.fixture
def source(zk: ZkClient) -> ZkClient:
    """``zk``'s chroot holding the production-like tree; its ephemerals are ``zk``'s."""
    write(zk, kafka_35_tree())
    zk.multi_write([create("/tools"), create(EMPTY, b"")])
    return zk


@pytest.fixture
def target(zk_server: EmbeddedZooKeeper) -> Iterator[ZkClient]:
    with ZkClient(f"{zk_server.connect_string}/copies/{uuid.uuid4().hex[:8]}") as client:
        yield client


def expected_persistent() -> dict[str, bytes | None]:
    nodes = {n.path: n.data for n in kafka_35_tree() if not n.ephemeral}
    return {**nodes, "/tools": None, EMPTY: b""}


def data_of(seen: Seen) -> dict[str, Any]:
    return {path: node[0] for path, node in seen.items()}


def last_zxid(server: EmbeddedZooKeeper) -> str:
    reply = four_letter_word(server.servers[0].client_port, "srvr")
    return next(line for line in reply.splitlines() if line.startswith("Zxid:"))


def test_live_tree_is_copied_byte_for_byte_without_touching_the_source(
    source: ZkClient, target: ZkClient, zk_server: EmbeddedZooKeeper
) -> None:
    before, zxid = everything(source), last_zxid(zk_server)
    tree = read_tree(source)
    assert last_zxid(zk_server) == zxid, "reading wrote a transaction"
    assert everything(source) == before, "reading changed the source"

    assert tree.chroot == source.chroot
    assert [n.path for n in tree.nodes] == sorted(expected_persistent())
    assert {n.path: (None if n.null else n.data) for n in tree.nodes} == expected_persistent()
    assert tree.skipped == EPHEMERALS
    assert tree.registrations == {b.broker_id: broker_znode(b) for b in BROKERS}
    assert tree.znodes == len(tree.nodes)
    assert tree.bytes == sum(len(d or b"") for d in expected_persistent().values())
    assert tree.read_s > 0

    assert load_tree(target, tree) == tree.znodes
    copied = data_of(everything(target))
    assert copied == expected_persistent()  # null stays null, empty stays empty
    assert copied == {p: d for p, d in data_of(before).items() if p not in EPHEMERALS}
    assert target.kazoo.get_acls(EMPTY)[0][0].perms == 31  # open: world:anyone, all


def test_files_read_offline_give_the_same_copy(
    source: ZkClient, target: ZkClient, zk_server: EmbeddedZooKeeper
) -> None:
    live = read_tree(source)
    offline = open_data_dir([zk_server.servers[0].data_dir], source.chroot)
    tree = read_tree(offline)

    assert tree.chroot == source.chroot
    assert tree.skipped == live.skipped  # the session is open: its ephemerals are there
    assert tree.registrations == live.registrations
    assert [(n.path, n.data) for n in tree.nodes] == [(n.path, n.data) for n in live.nodes]
    # the files cannot tell empty data from null: every empty znode is taken as null
    differ = [n.path for n, m in zip(tree.nodes, live.nodes, strict=True) if n.null != m.null]
    assert differ == [EMPTY]
    assert all(node.null == (node.data == b"") for node in tree.nodes)

    # a multi budget the offsets topic's znode (748 bytes) does not fit: it goes alone
    assert load_tree(target, tree, max_bytes=600) == tree.znodes
    assert data_of(everything(target)) == {**expected_persistent(), EMPTY: None}


def test_a_non_empty_target_or_missing_source_is_refused(
    source: ZkClient, target: ZkClient, zk_server: EmbeddedZooKeeper
) -> None:
    tree = read_tree(source)
    target.ensure_chroot()
    target.multi_write([create("/brokers")])
    with pytest.raises(TargetNotEmptyError, match=r"not empty \(it holds /brokers\)") as exc:
        load_tree(target, tree)
    assert str(target.connect_string) in str(exc.value)
    assert data_of(everything(target)) == {"/brokers": None}, "a refused load wrote"

    missing = f"{zk_server.connect_string}/nowhere-{uuid.uuid4().hex[:8]}"
    with ZkClient(missing) as nowhere, pytest.raises(TreeCopyError, match="does not exist"):
        read_tree(nowhere)


def test_root_chroot_skips_zookeepers_own_subtree(tmp_path: Any) -> None:
    with EmbeddedZooKeeper(base_dir=tmp_path) as server:
        with ZkClient(server.connect_string) as whole:
            write(whole, kafka_35_tree())
            tree: TreeCopy = read_tree(whole)
            assert not [n.path for n in tree.nodes if n.path.startswith("/zookeeper")]
            assert {n.path for n in tree.nodes} == set(expected_persistent()) - {"/tools", EMPTY}
            assert tree.skipped == EPHEMERALS
            offline = read_tree(open_data_dir([server.servers[0].data_dir]))
            assert offline.nodes == tree.nodes
        with ZkClient(f"{server.connect_string}/copy") as copy:
            assert load_tree(copy, tree) == tree.znodes
            assert data_of(everything(copy)) == {
                p: d for p, d in expected_persistent().items() if not p.startswith("/tools")
            }


def test_live_state_is_left_out_whatever_its_owner(target: ZkClient, zk: ZkClient) -> None:
    """The tree as a backup restores it: /controller, the registrations and a legacy
    consumer's ids and owners persistent. They are skipped all the same (the
    registrations kept as data); /controller_epoch and the requests a controller
    handles (a preferred-replica election) are copied."""
    restored = [replace(n, ephemeral=False) for n in kafka_35_tree()]
    legacy = [
        Znode("/consumers/old-app", None),
        Znode("/consumers/old-app/ids", None),
        Znode("/consumers/old-app/ids/old-app_host-1", b'{"version":1}'),
        Znode("/consumers/old-app/owners", None),
        Znode("/consumers/old-app/owners/orders", None),
        Znode("/consumers/old-app/owners/orders/0", b"old-app_host-1-0"),
        Znode("/consumers/old-app/offsets", None),
        Znode("/consumers/old-app/offsets/orders", None),
        Znode("/consumers/old-app/offsets/orders/0", b"1234"),
        Znode("/admin/preferred_replica_election", b'{"version":1,"partitions":[]}'),
    ]
    write(zk, restored + legacy)
    tree = read_tree(zk)
    owned = ("/consumers/old-app/ids/old-app_host-1", "/consumers/old-app/owners/orders/0")
    assert tree.skipped == tuple(sorted((*EPHEMERALS, *owned)))
    assert tree.registrations == {b.broker_id: broker_znode(b) for b in BROKERS}
    copied = {n.path for n in tree.nodes}
    assert not copied & set(tree.skipped)
    assert {"/controller_epoch", "/admin/preferred_replica_election"} <= copied
    assert "/consumers/old-app/offsets/orders/0" in copied
    load_tree(target, tree)
    assert set(data_of(everything(target))) == copied
