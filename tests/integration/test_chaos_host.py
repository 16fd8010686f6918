"""The chaos suite's host side, in child processes: the libfaketime sitecustomize (each
sleep tried for real, the monotonic wait only on EINVAL, the shadowed sitecustomize
still run), a tmpfs mount left under a campaign's records unmounted (as root), and a
campaign whose worker process dies. The pure parts: tests/unit/test_chaos_host.py."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.chaos import __main__ as campaign
from tests.chaos.host_faults import _SITE, mounts_under, unmount_stale
from tests.chaos.plan import make_plan


def test_the_faketime_sitecustomize_wraps_each_sleep_and_chains_the_one_it_shadows(
    tmp_path: Path,
) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    ours.mkdir()
    theirs.mkdir()
    (ours / "sitecustomize.py").write_text(_SITE)
    (theirs / "sitecustomize.py").write_text("import builtins\nbuiltins.CHAINED = True\n")
    probe = textwrap.dedent(
        """
        import builtins, errno, time
        import sitecustomize
        assert builtins.CHAINED
        time.sleep(0.01)  # the real one, when it works
        real, calls = sitecustomize._real_sleep, []
        def einval(seconds):
            calls.append(seconds)
            raise OSError(errno.EINVAL, "Invalid argument")
        sitecustomize._real_sleep = einval
        began = time.monotonic()
        time.sleep(0.2)
        assert time.monotonic() - began >= 0.19 and calls == [0.2]
        sitecustomize._real_sleep = real  # works again: used again, each call decides
        time.sleep(0.01)
        assert calls == [0.2]
        def eio(seconds):
            raise OSError(errno.EIO, "Input/output error")
        sitecustomize._real_sleep = eio
        try:
            time.sleep(0.01)
        except OSError as exc:
            assert exc.errno == errno.EIO
        else:
            raise SystemExit("EIO was swallowed")
        sitecustomize._real_sleep = real
        try:
            time.sleep(-1)
        except ValueError:
            pass
        print("ok")
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ours), str(theirs)])}
    done = subprocess.run(
        [sys.executable, "-c", probe],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr
    alone = {**os.environ, "PYTHONPATH": str(ours)}  # nothing to chain: fine too
    plain = subprocess.run(
        [sys.executable, "-c", "import time; time.sleep(0.01)"],
        check=False, env=alone, timeout=60,
    )  # fmt: skip
    assert plain.returncode == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a tmpfs: needs root (run as root)")
def test_a_campaign_unmounts_what_an_earlier_one_left(tmp_path: Path) -> None:
    left = tmp_path / "seed-7" / "controller-3000"
    left.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(left)], check=True)
    try:
        assert mounts_under(tmp_path) == [left]
        assert unmount_stale(tmp_path) == [left]
        assert mounts_under(tmp_path) == [] and not os.path.ismount(left)
    finally:
        if os.path.ismount(left):
            subprocess.run(["umount", "--lazy", str(left)], check=False)


def fake_run(seed: int, root: Path, faults: int | None) -> dict[str, Any]:
    """A run for :func:`test_a_worker_that_dies_fails_its_run_and_the_campaign_goes_on`:
    seed 2's worker process dies."""
    root.mkdir(parents=True, exist_ok=True)
    if seed == 2:
        os._exit(3)
    plan = make_plan(seed, faults).to_json()
    return {"seed": seed, "root": str(root), "plan": plan, "ok": True, "seconds": 0.0}


def test_a_worker_that_dies_fails_its_run_and_the_campaign_goes_on(tmp_path: Path) -> None:
    seeds = [1, 2, 3, 4]
    roots = {s: tmp_path / f"seed-{s}" for s in seeds}
    records = campaign.in_pool(seeds, roots, None, 1, False, target=fake_run)
    assert [(r["seed"], r["ok"]) for r in records] == [(1, True), (2, False), (3, True), (4, True)]
    assert "worker process died" in records[1]["failure"]
    assert (roots[2] / "run.json").exists()
