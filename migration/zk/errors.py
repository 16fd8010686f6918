"""The one error type for bad ZooKeeper data."""

from __future__ import annotations

from migration.common.text import PATH_LIMIT, shown


class ZnodeFormatError(ValueError):
    """A znode's content is not what Kafka writes there.

    ``path`` is the znode concerned, ``problem`` says what is wrong with it; ``str()``
    gives both, so an operator can go straight to the znode: the path as it is when
    plain, else escaped and cut (:func:`.text.shown`); ``problem`` quotes any input
    through :func:`.text.shown` itself.
    """

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{shown(path, PATH_LIMIT, bare=True)}: {problem}")
        self.path = path
        self.problem = problem

    def __reduce__(self) -> tuple[type[ZnodeFormatError], tuple[str, str]]:
        return (ZnodeFormatError, (self.path, self.problem))
