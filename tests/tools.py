"""The external tools the checks run (`make tools` fetches them into .tools/)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "charts" / "zk2kraft"
RULES = CHART / "files" / "prometheus-rules.yaml"
DASHBOARD = CHART / "files" / "dashboards" / "zk2kraft-migration.json"
_PATHS = {
    "promtool": ROOT / ".tools/prometheus/usr/bin/promtool",
    "prometheus": ROOT / ".tools/prometheus/usr/bin/prometheus",
    "pushgateway": ROOT / ".tools/pushgateway/usr/bin/prometheus-pushgateway",
    "helm": ROOT / ".tools/helm/helm",
}


def tool(name: str) -> str:
    path = _PATHS[name]
    if not path.exists():
        pytest.fail(f"{path} is missing: run `make tools` (make test does)")
    return str(path)


def run(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run a tool; the caller reads its exit code and output."""
    return subprocess.run(
        [tool(name), *args], capture_output=True, text=True, timeout=120, check=False
    )
