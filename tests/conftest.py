"""Shared fixtures: one real ZooKeeper server per test session, a fresh chroot per test."""

from __future__ import annotations

import re
import uuid
from collections.abc import Generator, Iterator

import pytest

from migration.local.zookeeper import EmbeddedZooKeeper
from migration.zk.client import ZkClient
from tests import tools
from tests.real_kafka import (  # noqa: F401 - fixtures: real Kafka's data (tests/real_kafka.py)
    kafka39_metadata_log,
    kafka41_metadata_log,
    kafka_metadata_logs,
    zk_data_dir_copy,
    zk_mode_cluster,
)


@pytest.fixture(scope="session")
def zk_server() -> Iterator[EmbeddedZooKeeper]:
    """A real ZooKeeper: without Java or Debian's zookeeper, the tests that ask for it
    skip saying so (fail in CI: tests/tools.py)."""
    tools.require_tool("zookeeper")
    with EmbeddedZooKeeper() as server:
        yield server


@pytest.fixture
def zk_connect(zk_server: EmbeddedZooKeeper, request: pytest.FixtureRequest) -> str:
    """A connect string with a chroot of this test's own (as kazoo's harness does)."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", request.node.name)[:60]
    return f"{zk_server.connect_string}/tests/{name}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def zk(zk_connect: str) -> Iterator[ZkClient]:
    with ZkClient(zk_connect) as client:
        client.ensure_chroot()
        yield client


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A test that reaches a missing ZooKeeper or Kafka some other way than the fixtures
    (an EmbeddedZooKeeper of its own, real Kafka's jars) is skipped the same way."""
    report = yield
    tools.unavailable_as_skip(report, call)
    return report
