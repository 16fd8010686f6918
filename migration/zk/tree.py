"""Structure of a Kafka tree in ZooKeeper: its persistent parents and whole subtrees.

Shared by the seeder (which creates the parents a broker would) and the full sync
(which creates missing ones inside its fenced multis and lists subtrees it deletes).
"""

from __future__ import annotations

from collections.abc import Iterable

from migration.zk import paths
from migration.zk.multiread import NodeData, ReadOp, TreeReader
from migration.zk.multiwrite import Op, create


def persistent_parents() -> list[str]:
    """:data:`~migration.zk.paths.PERSISTENT_PARENTS` with their ancestors, parents first."""
    wanted: list[str] = []
    for path in paths.PERSISTENT_PARENTS:
        for p in [*paths.parents_of(path), path]:
            if p not in wanted:
                wanted.append(p)
    return wanted


def missing_parents(client: TreeReader) -> list[Op]:
    """Create operations for the persistent parents that do not exist, parents first."""
    wanted = persistent_parents()
    found = client.multi_read([(ReadOp.GET_DATA, p) for p in wanted])
    return [create(p) for p, r in zip(wanted, found, strict=True) if not isinstance(r, NodeData)]


def list_trees(client: TreeReader, roots: Iterable[str]) -> dict[str, frozenset[str]]:
    """Every existing znode under each root (the root included; an absent root maps to
    an empty set), listed breadth first with pipelined multi-reads."""
    found: dict[str, set[str]] = {root: set() for root in roots}
    level = [(root, root) for root in found]
    while level:
        results = client.multi_read([(ReadOp.GET_CHILDREN, path) for _, path in level])
        next_level: list[tuple[str, str]] = []
        for (root, path), result in zip(level, results, strict=True):
            if isinstance(result, tuple):
                found[root].add(path)
                next_level.extend((root, f"{path}/{child}") for child in result)
        level = next_level
    return {root: frozenset(tree) for root, tree in found.items()}
