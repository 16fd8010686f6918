"""The chaos suite's rollback ending, without processes: ZooKeeper caught up only on a
steady answer, and a refusal for write-behind lag answered as the runbook says."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.chaos import checks
from tests.chaos import run as chaos_run

LAG = {"code": "write-behind-lag", "ok": False, "message": "3 records never written"}


def _status(
    lag: int = 0, hwm: int = 100, held: int = 99, phase: str = "DUAL_WRITE"
) -> dict[str, Any]:
    return {
        "driver_phase": phase, "zk_write_behind_lag": lag, "active_controller": 3000,
        "high_watermark": hwm, "migration_znode": {"kraft_metadata_offset": held},
    }  # fmt: skip


class _Quorum:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def stop_all(self, sig: int) -> None:
        self.calls.append("stop")

    def start_all(self) -> None:
        self.calls.append("start")


def _run(statuses: Iterator[dict[str, Any]]) -> SimpleNamespace:
    events: list[tuple[str, dict[str, Any]]] = []
    return SimpleNamespace(
        stage="", rig=SimpleNamespace(quorum=_Quorum()), events=events,
        status=lambda: next(statuses), note=lambda e, **d: events.append((e, d)),
    )  # fmt: skip


def _forever(*first: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield from first
    while True:
        yield _status()


@pytest.fixture(autouse=True)
def _fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chaos_run, "STEADY_S", 0.0)


def test_caught_up_only_on_two_agreeing_answers_with_no_lag() -> None:
    answers = [_status(lag=1), _status(), _status(hwm=101, held=99), _status(hwm=101, held=100),
               _status(lag=1, hwm=101, held=100), _status(hwm=101, held=100),
               _status(hwm=101, held=100)]  # fmt: skip
    seen = iter(answers)
    run = _run(seen)
    caught_up = chaos_run.wait_zk_caught_up(run)  # type: ignore[arg-type]
    assert caught_up == _status(hwm=101, held=100)
    assert next(seen, None) is None  # the last two agreeing answers, none earlier


def _rollback(
    monkeypatch: pytest.MonkeyPatch, dry_runs: list[list[dict[str, Any]]]
) -> tuple[SimpleNamespace, list[str]]:
    run = _run(_forever())
    order: list[str] = []
    answers = iter(dry_runs)

    def hand_back(_run: object, dry_run: bool = False) -> list[dict[str, Any]]:
        order.append("dry-run" if dry_run else "hand-back")
        return next(answers) if dry_run else []

    def checked(*_: object) -> list[str]:
        order.append("checks")
        return []

    monkeypatch.setattr(checks, "hand_back", hand_back)
    monkeypatch.setattr(checks, "before_hand_back", checked)
    monkeypatch.setattr(chaos_run, "zk_controller_elected", lambda *_: SimpleNamespace(broker_id=1))
    workload = SimpleNamespace(stop=lambda: None, ledger=None)
    chaos_run._rollback(run, workload, Path("."))  # type: ignore[arg-type]
    return run, order


def test_a_refusal_for_lag_starts_the_quorum_again_then_checks_what_is_handed_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run, order = _rollback(monkeypatch, [[LAG], []])
    assert run.rig.quorum.calls == ["stop", "start", "stop"]
    assert order == ["dry-run", "dry-run", "checks", "hand-back"]
    noted = [e for e, _ in run.events]
    assert noted == ["quorum stopped", "rollback refused", "quorum started again",
                     "quorum stopped", "ZooKeeper controller elected"]  # fmt: skip


def test_the_retries_are_bounded_and_any_other_refusal_is_final(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(RuntimeError, match="attempt 3"):
        _rollback(monkeypatch, [[LAG]] * 3)
    other = {"code": "kraft-brokers-remain", "ok": False, "message": "broker 2"}
    with pytest.raises(RuntimeError, match="attempt 1"):
        _rollback(monkeypatch, [[other, LAG]])
