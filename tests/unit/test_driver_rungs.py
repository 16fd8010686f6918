"""The migration driver's ladder: every phase has its rung in one typed table, and a
failure while ZooKeeper comes back is "unreachable" only when ZooKeeper's connection
says so; anything else fails the poll, logged with its traceback."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from kazoo.exceptions import ConnectionLoss, SessionExpiredError

from migration.controller.config import parse_config
from migration.driver import rungs as rungs_module
from migration.driver.controller_port import Inputs
from migration.driver.driver import MigrationDriver
from migration.driver.rungs import RUNGS
from migration.driver.states import Phase
from migration.image.model import ZK_MIGRATION_MIGRATION, MetadataImage
from migration.zk.errors import ZnodeFormatError
from migration.zk.fence import ZkFence
from migration.zk.model.cluster import MigrationZnode

EPOCH = 5


def test_every_phase_has_its_rung_or_none_and_only_inactive_has_none() -> None:
    assert set(RUNGS) == set(Phase)
    for phase, rung in RUNGS.items():
        if phase == Phase.INACTIVE:
            assert rung is None
        else:
            assert rung is not None
            assert rung.__name__ == "_" + phase.value.lower()  # the rung named for it
            assert getattr(MigrationDriver, rung.__name__) is rung


class _Port:
    """An active controller's port in MIGRATION, at epoch EPOCH."""

    def inputs(self) -> Inputs:
        image = MetadataImage(zk_migration_state=ZK_MIGRATION_MIGRATION, offset=10)
        return Inputs(1, True, 1, EPOCH, image, 10)

    def committed_offset(self) -> int:
        return 10

    def refuse_admin_writes(self, why: str | None) -> None:
        pass


def _dual_writing_without_a_fence(tmp_path: Path) -> MigrationDriver:
    """A driver in DUAL_WRITE whose last write met ZooKeeper out of reach: its next
    poll recovers the fence."""
    config = parse_config(
        {
            "node.id": "1", "process.roles": "controller", "controller.quorum.voters": "1@h:9093",
            "listeners": "CONTROLLER://h:9093", "metadata.log.dir": str(tmp_path),
            "zookeeper.metadata.migration.enable": "true", "zookeeper.connect": "zk:2181",
            "inter.broker.listener.name": "INTERNAL",
        },
        "t",
    )  # fmt: skip
    driver = MigrationDriver(config, "cluster", _Port())  # type: ignore[arg-type]
    driver._epoch = EPOCH
    driver._phase = Phase.DUAL_WRITE
    driver._writer = object()  # type: ignore[assignment]
    driver._rpcs = object()  # type: ignore[assignment]
    fence = ZkFence(1, EPOCH, 7, 3, 4, MigrationZnode(1, EPOCH, 9, EPOCH))
    driver._view = replace(driver._view, fence=fence)
    driver._client = object  # type: ignore[method-assign]  # never connects
    return driver


def _one_poll(driver: MigrationDriver, monkeypatch: pytest.MonkeyPatch, error: Exception) -> str:
    """One poll of the driver's own loop, ``fence.recover`` raising ``error``."""

    def recover(client: Any, fence: ZkFence) -> ZkFence:
        driver._stopped.set()  # the loop ends after this poll
        raise error

    monkeypatch.setattr(rungs_module, "recover", recover)
    driver._run()
    return driver._view.outcome


@pytest.mark.parametrize("error", [ConnectionLoss(), SessionExpiredError()])
def test_a_connection_error_while_recovering_is_zookeeper_still_unreachable(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    error: Exception,
) -> None:
    driver = _dual_writing_without_a_fence(tmp_path)
    caplog.set_level(logging.INFO, logger="migration.driver.driver")
    outcome = _one_poll(driver, monkeypatch, error)
    assert outcome == f"ZooKeeper still unreachable ({type(error).__name__}); changes kept"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert driver._phase == Phase.DUAL_WRITE and driver._fence is None  # tries again


@pytest.mark.parametrize(
    "error",
    [TypeError("a bug in the recovery"), ZnodeFormatError("/migration", "not JSON")],
    ids=["bug", "malformed-migration"],
)
def test_any_other_failure_while_recovering_fails_the_poll_with_its_traceback(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    error: Exception,
) -> None:
    driver = _dual_writing_without_a_fence(tmp_path)
    caplog.set_level(logging.INFO, logger="migration.driver.driver")
    outcome = _one_poll(driver, monkeypatch, error)
    assert outcome == f"the poll failed ({type(error).__name__}: {error}); retrying"
    assert "unreachable" not in outcome
    [failed] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert failed.getMessage() == "migration driver: poll failed"
    assert failed.exc_info is not None and failed.exc_info[1] is error  # the traceback
    assert driver._phase == Phase.DUAL_WRITE and driver._fence is None  # tries again
