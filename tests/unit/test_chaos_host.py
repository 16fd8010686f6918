"""The chaos suite's host side, without a cluster or a process: mounts left under a
campaign's records found deepest first, and the root that host faults need. The
libfaketime sitecustomize, a real tmpfs mount and a campaign whose worker process dies:
tests/integration/test_chaos_host.py."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.chaos import __main__ as campaign
from tests.chaos.host_faults import DISK_FULL, mounts_under, need_root
from tests.chaos.plan import make_plan


def test_mounts_under_a_campaigns_records_deepest_first() -> None:
    mounts = (
        "proc /proc proc rw 0 0\n"
        "tmpfs /out/seed-1/controller-3000 tmpfs rw 0 0\n"
        "tmpfs /out/seed\\0402/c tmpfs rw 0 0\n"
        "tmpfs /out/seed-1/controller-3000/inner tmpfs rw 0 0\n"
        "tmpfs /outside tmpfs rw 0 0\n"
    )
    assert mounts_under(Path("/out"), mounts) == [
        Path("/out/seed-1/controller-3000/inner"),
        Path("/out/seed 2/c"),
        Path("/out/seed-1/controller-3000"),
    ]
    assert mounts_under(Path("/elsewhere"), mounts) == []


def test_host_faults_say_they_need_root(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert need_root({"zk-quorum-loss"}) is None
    why = need_root({DISK_FULL, "zk-quorum-loss"})
    assert why is not None and "needs root" in why
    seed = next(s for s in range(1000) if DISK_FULL in {f.kind for f in make_plan(s).faults})
    monkeypatch.setattr(sys, "argv", ["chaos", "--seed", str(seed), "--out", str(tmp_path)])
    assert campaign.main() == 2
    said = capsys.readouterr().err
    assert "host faults need root" in said and f"[{seed}]" in said
    assert list(tmp_path.iterdir()) == []  # nothing run
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert need_root({DISK_FULL}) is None
