"""zookeeper.connect parsing: hosts, chroot, and one clear error for bad input."""

from __future__ import annotations

import pytest

from migration.zk.client import ConnectString


@pytest.mark.parametrize(
    ("text", "hosts", "chroot"),
    [
        ("zk1:2181", "zk1:2181", ""),
        ("zk1:2181,zk2:2181/kafka", "zk1:2181,zk2:2181", "/kafka"),
        ("zk1:2181/kafka/prod/", "zk1:2181", "/kafka/prod"),
        ("zk1:2181/", "zk1:2181", ""),
        ("zk1", "zk1:2181", ""),  # ZooKeeper's default port, as its client does
        ("zk1:2182,zk2/kafka", "zk1:2182,zk2:2181", "/kafka"),
        ("[::1],[::1]:2182", "[::1]:2181,[::1]:2182", ""),
    ],
)
def test_parse(text: str, hosts: str, chroot: str) -> None:
    parsed = ConnectString.parse(text)
    assert (parsed.hosts, parsed.chroot) == (hosts, chroot)


@pytest.mark.parametrize("text", ["", "zk1:abc", "/kafka", "zk1:2181,,zk2", "zk1:70000", ":2181"])
def test_bad_connect_strings_are_named(text: str) -> None:
    with pytest.raises(ValueError, match=r"is not host\[:port\]"):
        ConnectString.parse(text)
