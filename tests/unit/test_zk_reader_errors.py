"""The snapshot reader's errors: bad data in a znode is a finding (``malformed``) and the
rest of the tree is still read; an error that is not about the data (a bug in a parser)
is raised, never disguised as a malformed znode for the operator."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from migration.zk import reader
from migration.zk.jute import ERR_NO_NODE
from migration.zk.model import brokers
from migration.zk.multiread import NodeData, ReadError, ReadOp, ReadResult
from migration.zk.tree_read import ZkSnapshot

BROKER = (
    b'{"version":4,"host":"h","port":9092,"jmx_port":-1,"timestamp":"1",'
    b'"endpoints":["PLAINTEXT://h:9092"],"listener_security_protocol_map":'
    b'{"PLAINTEXT":"PLAINTEXT"}}'
)
CONFIG = b'{"version":1,"config":{"producer_byte_rate":"1024"}}'


class _Tree:
    """A tree in memory, read as the crawl reads ZooKeeper (a missing znode: no node)."""

    chroot = ""

    def __init__(self, znodes: dict[str, bytes]) -> None:
        self.data = dict(znodes)
        self.children: dict[str, set[str]] = {}
        for path in znodes:
            parts = path.strip("/").split("/")
            for i in range(len(parts)):
                parent = "/" + "/".join(parts[:i])
                self.children.setdefault(parent, set()).add(parts[i])
                self.data.setdefault("/" + "/".join(parts[: i + 1]), b"")

    def _read(self, op: ReadOp, path: str) -> ReadResult:
        if path not in self.data:
            return ReadError(ERR_NO_NODE)
        if op == ReadOp.GET_CHILDREN:
            return tuple(sorted(self.children.get(path, ())))
        return NodeData(self.data[path], 0, 0, len(self.children.get(path, ())))

    def iter_multi_read(
        self, ops: Sequence[tuple[ReadOp, str]], *, batch: int = 1000, depth: int = 4
    ) -> Iterator[list[ReadResult]]:
        yield [self._read(op, path) for op, path in ops]

    def multi_read(self, ops: Sequence[tuple[ReadOp, str]], **kw: int) -> list[ReadResult]:
        return [r for chunk in self.iter_multi_read(ops) for r in chunk]


def _read(znodes: dict[str, bytes]) -> ZkSnapshot:
    return reader.read_snapshot(_Tree(znodes))


def test_a_well_formed_tree_has_no_findings() -> None:
    snap = _read({"/brokers/ids/1": BROKER, "/config/users/alice": CONFIG})
    assert sorted(snap.brokers) == [1]
    assert snap.malformed == ()


@pytest.mark.parametrize(
    ("path", "data", "problem"),
    [
        ("/brokers/ids/2", b"{", ""),  # not JSON
        ("/brokers/ids/\u00b2", BROKER, "is not an integer"),  # a digit int() does not read
        ("/config/users/%ff", CONFIG, "is not a sanitized name"),  # not UTF-8 once decoded
        ("/consumers/g/offsets/t/\u00b2", b"5", "is not a number"),
    ],
    ids=["json", "broker-id", "entity-name", "offset-partition"],
)
def test_a_malformed_znode_is_a_finding_and_the_rest_is_read(
    path: str, data: bytes, problem: str
) -> None:
    snap = _read({"/brokers/ids/1": BROKER, path: data})
    [finding] = snap.malformed
    assert finding.path == path
    assert problem in finding.problem
    assert 1 in snap.brokers  # the rest of the tree still read


@pytest.mark.parametrize("error", [ValueError("a bug"), TypeError("a bug"), KeyError("a bug")])
def test_an_error_that_is_not_about_the_data_is_raised(
    monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    def parse_broker(path: str, raw: bytes | None, broker_id: int) -> brokers.BrokerRegistration:
        raise error

    monkeypatch.setattr(brokers, "parse_broker", parse_broker)
    with pytest.raises(type(error)) as info:
        _read({"/brokers/ids/1": BROKER})
    assert info.value is error
