"""The external tools the checks run, and what a test that needs one does without it.

:func:`require_tool` is the one place that decides: outside CI a missing tool skips the
test, with the reason and the make target that installs it; in CI (``$CI`` set, as
``.ci/run`` sets it) it fails the test, since CI installs every tool first (``make
test`` depends on ``deps browser tools kafka``). The tools: ``promtool``,
``prometheus``, ``pushgateway`` and ``helm`` (``make tools`` fetches them into
.tools/), ``chromium`` (``make browser``), ``zookeeper`` (Java and Debian's ZooKeeper,
``make deps``) and ``spark`` (pyspark and Java, ``make deps``).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import pytest

from migration.local.kafka_release import KafkaUnavailableError
from migration.local.zookeeper import ZooKeeperUnavailableError, java_binary, zookeeper_classpath

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "charts" / "zk2kraft"
RULES = CHART / "files" / "prometheus-rules.yaml"
DASHBOARD = CHART / "files" / "dashboards" / "zk2kraft-migration.json"
PATHS = {
    "promtool": ROOT / ".tools/prometheus/usr/bin/promtool",
    "prometheus": ROOT / ".tools/prometheus/usr/bin/prometheus",
    "pushgateway": ROOT / ".tools/pushgateway/usr/bin/prometheus-pushgateway",
    "helm": ROOT / ".tools/helm/helm",
}
_MAKE = dict.fromkeys(PATHS, "make tools") | {
    "chromium": "make browser",  # Debian's chromium
    "zookeeper": "make deps",  # Java and Debian's zookeeper
    "spark": "make deps",  # pyspark (from .[audit]) and Java
}


def in_ci() -> bool:
    """Whether this is a CI run: ``$CI`` set to anything but empty, 0, false or no."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def missing(reason: str) -> NoReturn:
    """Skip the test for ``reason`` (what is missing, and how to get it); in CI, fail it."""
    if in_ci():
        pytest.fail(f"{reason} [CI is set: a missing tool fails the run]", pytrace=False)
    pytest.skip(reason)


def _java() -> str:
    try:
        return java_binary()
    except ZooKeeperUnavailableError as exc:
        missing(str(exc))


def _zookeeper() -> str:
    java = _java()
    try:
        zookeeper_classpath()
    except ZooKeeperUnavailableError as exc:
        missing(str(exc))
    return java


def _spark() -> str:
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        missing(f"Spark (pyspark) is not installed: run `{_MAKE['spark']}`")
    _java()
    return str(Path(spec.origin).parent)  # SPARK_HOME: pyspark's own launcher and jars


_CHECKS: dict[str, Callable[[], str]] = {"zookeeper": _zookeeper, "spark": _spark}


def require_tool(name: str, path: str | Path | None = None) -> str:
    """Where ``name`` is -- an executable, or for ``zookeeper`` the java that runs it and
    for ``spark`` pyspark's directory -- else skip (outside CI) or fail (in CI) the test
    through :func:`missing`. ``path``: where to look instead of the known place (a path,
    or a command looked up on PATH); for a tool not listed, ``name`` itself on PATH."""
    if path is None and name in _CHECKS:
        return _CHECKS[name]()
    where = str(path if path is not None else PATHS.get(name, name))
    found = where if os.sep in where and os.access(where, os.X_OK) else None
    if os.sep not in where:
        found = shutil.which(where)
    if found is None:
        place = where if where != name else "not on PATH"
        how = f"run `{_MAKE[name]}`" if name in _MAKE else f"install {name}"
        missing(f"{name} is missing ({place}): {how}")
    return found


UNAVAILABLE = (ZooKeeperUnavailableError, KafkaUnavailableError)
"""What the project raises when Java, ZooKeeper's jars or a Kafka release is missing."""


def unavailable_as_skip(report: pytest.TestReport, call: pytest.CallInfo[None]) -> None:
    """Outside CI, a test that failed or errored on :data:`UNAVAILABLE` is reported as
    skipped with its message (which names the make target), as :func:`missing` would
    have; in CI it stays failed."""
    if call.excinfo is None or not report.failed or in_ci():
        return
    if call.excinfo.errisinstance(UNAVAILABLE):
        report.outcome = "skipped"
        path, line, _ = report.location
        report.longrepr = (path, line or 0, f"Skipped: {call.excinfo.value}")


def tool(name: str) -> str:
    """One of the fetched tools' paths (promtool, prometheus, pushgateway, helm)."""
    return require_tool(name)


def run(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run a tool; the caller reads its exit code and output."""
    return subprocess.run(
        [tool(name), *args], capture_output=True, text=True, timeout=120, check=False
    )
