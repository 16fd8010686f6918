"""The one error type for bad ZooKeeper data."""

from __future__ import annotations


class ZnodeFormatError(ValueError):
    """A znode's content is not what Kafka writes there.

    ``path`` is the znode concerned, ``problem`` says what is wrong with it; ``str()``
    gives both, so an operator can go straight to the znode.
    """

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem

    def __reduce__(self) -> tuple[type[ZnodeFormatError], tuple[str, str]]:
        return (ZnodeFormatError, (self.path, self.problem))
