"""tests/tools.py's rule for a missing tool: outside CI the test is skipped, the reason
naming what is missing and the make target that installs it; in CI (``$CI`` set, as
.ci/run sets it) the test fails. The project's own "unavailable" errors (no Java, no
ZooKeeper jars, no Kafka release) reached some other way follow the same rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from migration.local.kafka_release import KafkaUnavailableError
from tests import tools

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("value", "ci"),
    [("", False), ("0", False), ("false", False), ("No", False), ("true", True), ("1", True)],
)
def test_ci_is_ci_set_to_anything_but_empty_or_false(
    value: str, ci: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", value)
    assert tools.in_ci() is ci


def test_a_missing_tool_skips_outside_ci_and_fails_in_ci(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = tmp_path / "helm"
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(
        pytest.skip.Exception, match=r"helm is missing \(.*/helm\): run `make tools`"
    ):
        tools.require_tool("helm", gone)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI is set: a missing tool fails the run"):
        tools.require_tool("helm", gone)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(pytest.fail.Exception, match="run `make browser"):
        tools.require_tool("chromium")


def test_a_tool_that_is_there_is_its_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    helm = tmp_path / "helm"
    helm.write_text("#!/bin/sh\n")
    helm.chmod(0o755)
    assert tools.require_tool("helm", helm) == str(helm)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert tools.require_tool("helm", "helm") == str(helm)  # a command: looked up on PATH


def test_zookeeper_and_spark_need_java(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    for name in ("zookeeper", "spark"):
        with pytest.raises(pytest.skip.Exception, match=r"(?i)java"):
            tools.require_tool(name)


def test_the_makefile_fetches_the_tools_where_they_are_looked_for() -> None:
    makefile = (ROOT / "Makefile").read_text()
    for name in ("promtool", "pushgateway", "helm"):
        where = tools.PATHS[name].relative_to(ROOT)
        assert str(where).split("/", 1)[1] in makefile, name


class _Report:
    def __init__(self) -> None:
        self.outcome = "failed"
        self.failed = True
        self.location = ("tests/integration/test_x.py", 7, "test_x")
        self.longrepr: object = "trace"


def _call(exc: BaseException) -> pytest.CallInfo[None]:
    def boom() -> None:
        raise exc

    return pytest.CallInfo.from_call(boom, "setup")


def test_an_unavailable_error_is_a_skip_outside_ci_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    report = _Report()
    tools.unavailable_as_skip(report, _call(KafkaUnavailableError("run `make kafka`")))  # type: ignore[arg-type]
    assert report.outcome == "skipped"
    assert report.longrepr == ("tests/integration/test_x.py", 7, "Skipped: run `make kafka`")

    other = _Report()
    tools.unavailable_as_skip(other, _call(RuntimeError("a bug")))  # type: ignore[arg-type]
    assert other.outcome == "failed"

    monkeypatch.setenv("CI", "true")
    in_ci = _Report()
    tools.unavailable_as_skip(in_ci, _call(KafkaUnavailableError("run `make kafka`")))  # type: ignore[arg-type]
    assert in_ci.outcome == "failed"
