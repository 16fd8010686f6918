"""How the demo shows itself: the one interface its orchestration narrates through.

The demo's modules print nothing; ``zk2kraft demo`` (:mod:`migration.cli.demo`) supplies
a :class:`DemoView` that prints the story to the terminal, with the very reports the
commands the story names print, so the demo shows what an operator running those
commands would see."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from migration.driver.copy import CopyManifest
    from migration.observability.progress import Progress
    from migration.zk.client import ZkClient


class DemoView(Protocol):
    """Where the demo's story, progress and reports go. Each call shows its part at once,
    in the order the story makes the calls."""

    def say(self, text: str = "", *, end: str = "\n") -> None:
        """A piece of the story (``end`` as :func:`print`'s: ``" "`` continues the line)."""

    def progress(self) -> Progress:
        """A fresh sink for one piece of long work's progress (the seeding, the copy)."""

    def preflight(self, client: ZkClient, connect: str) -> None:
        """Run ``zk2kraft preflight`` on ``client``'s tree (``connect`` names it) and show
        its report."""

    def manifest(self, manifest: CopyManifest, connect: str) -> None:
        """Show a dry-run copy of ``connect``'s tree as ``zk2kraft migrate --dry-run`` does."""

    def changes(self, changes: dict[str, dict[str, list[str]]]) -> None:
        """Show what a full sync would write (kind: action: keys) as ``zk2kraft zk diff``
        does."""

    def status(self, report: dict[str, Any]) -> None:
        """Show a migration status report as ``zk2kraft migration status`` does."""

    def kafka_status(self, report: dict[str, Any]) -> None:
        """Show a real Kafka cluster's status as ``zk2kraft migration status --kafka``
        does."""
