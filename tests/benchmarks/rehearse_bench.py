"""``zk2kraft rehearse`` end to end (``python -m tests.benchmarks.run --only-rehearse``): a
"production" ZooKeeper seeded with a profile (``medium``: 10,000 partitions; ``large``:
100,000), its brokers' registrations live ephemerals, rehearsed by the real command in a
child process; reported: each phase's seconds, the copy (records, ms, the controllers'
write pause), the workload's changes and the write-behind lag, the audit, the restarts,
the whole run's wall time, and that production was left untouched (every znode's
version and mzxid compared before and after).

Figures are this machine's (see report.json's ``estimate`` for what carries over).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from migration.local import seed
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.zk.client import ZkClient

PROFILES = ("medium", "large")
TIMEOUT_S = 4 * 3600


def _stats(client: ZkClient) -> dict[str, tuple[int, int]]:
    """Every znode's (version, mzxid) under the chroot: what the rehearsal must not move."""
    out: dict[str, tuple[int, int]] = {}
    pending = ["/"]
    while pending:
        path = pending.pop()
        stat = client.kazoo.exists(path)
        if stat is None:
            continue
        out[path] = (stat.version, stat.mzxid)
        if stat.numChildren:
            base = path.rstrip("/")
            pending.extend(f"{base}/{c}" for c in client.kazoo.get_children(path))
    return out


def run(profile: str, workload_s: float = 10.0, engine: str = "zk2kraft") -> dict[str, Any]:
    """One rehearsal of ``profile``'s seeded tree on ``engine``; its figures."""
    spec = seed.PROFILES[profile]
    with EmbeddedZooKeeper(heap_mb=4096) as zk, tempfile.TemporaryDirectory() as tmp:
        connect = f"{zk.connect_string}/kafka"
        secret = Path(tmp) / "encoder-secret"
        secret.write_text(spec.password_encoder_secret)
        with ZkClient(connect) as production:
            started = time.monotonic()
            written = seed.write(production, seed.generate(spec), ephemeral=True)
            seeded_s = time.monotonic() - started
            before = _stats(production)
            started = time.monotonic()
            done = subprocess.run(
                [sys.executable, "-m", "migration.cli.main", "rehearse", "--zk", connect,
                 "--out", str(Path(tmp) / "out"), "--json", "--workload-seconds",
                 str(workload_s), "--password-encoder-secret-file", str(secret),
                 "--engine", engine],
                capture_output=True, text=True, timeout=TIMEOUT_S, check=False,
            )  # fmt: skip
            wall_s = time.monotonic() - started
            untouched = _stats(production) == before
    try:
        report: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        report = {}
    copy, dual, audit = (
        report.get("copy") or {},
        report.get("dual_write") or {},
        report.get("audit") or {},
    )
    restarts = report.get("restarts") or []
    return {
        "profile": profile,
        "partitions": spec.partitions,
        "znodes_seeded": written,
        "seed_seconds": round(seeded_s, 2),
        "exit_code": done.returncode,
        "problems": report.get("problems", [done.stderr[-500:]]),
        "production_untouched": untouched,
        "wall_seconds": round(wall_s, 2),
        "phases": {p["name"]: p["seconds"] for p in report.get("phases", [])},
        "copy_records": copy.get("records"),
        "copy_ms": copy.get("copy_ms"),
        "write_pause_ms": copy.get("write_pause_ms"),
        "workload_changes": dual.get("changes"),
        "workload_errors": dual.get("errors"),
        "max_lag": dual.get("max_lag"),
        "audit_seconds": audit.get("seconds"),
        "audit_ok": audit.get("ok"),
        "broker_restart_seconds_median": (
            sorted(r["seconds"] for r in restarts)[len(restarts) // 2] if restarts else None
        ),
    }


def report(results: list[dict[str, Any]]) -> None:
    for r in results:
        print(
            f"\nrehearse {r['profile']} ({r['partitions']:,} partitions, "
            f"{r['znodes_seeded']:,} znodes): exit {r['exit_code']}, "
            f"{r['wall_seconds']:.1f} s wall, production untouched: {r['production_untouched']}"
        )
        for name, seconds in r["phases"].items():
            print(f"  {name:<18} {seconds:>9.2f} s")
        print(
            f"  copy {r['copy_records']} records in {r['copy_ms']} ms; writes paused "
            f"{r['write_pause_ms']} ms; workload {r['workload_changes']} changes "
            f"({r['workload_errors']} errors), lag at most {r['max_lag']}; audit "
            f"{r['audit_seconds']} s (ok: {r['audit_ok']}); broker restart median "
            f"{r['broker_restart_seconds_median']} s"
        )
        for problem in r["problems"]:
            print(f"  problem: {problem}")
