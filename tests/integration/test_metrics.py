"""A metrics port that cannot be had, with real sockets and processes: a busy port is
named, a broker whose metrics port is taken stops before it starts, and a port on an
address not of this machine names the address. The measurements:
tests/unit/test_metrics.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from migration.observability.endpoint import MetricsEndpoint, MetricsServer
from tests.support import zk2kraft
from tests.unit.test_broker_config import GOOD as BROKER


def test_a_busy_metrics_port_is_named() -> None:
    server = MetricsServer(MetricsEndpoint("127.0.0.1", 0), [])
    try:
        with pytest.raises(OSError, match=rf"metrics\.port={server.port}"):
            MetricsServer(MetricsEndpoint("127.0.0.1", server.port), [])
    finally:
        server.close()


def test_a_broker_whose_metrics_port_is_taken_stops_before_it_starts(tmp_path: Path) -> None:
    busy = MetricsServer(MetricsEndpoint("127.0.0.1", 0), [])
    try:
        config = tmp_path / "server.properties"
        props = {**BROKER, "log.dirs": str(tmp_path / "data"), "zookeeper.connect": "nowhere:1"}
        props |= {"metrics.port": str(busy.port), "metrics.host": "127.0.0.1"}
        config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        done = zk2kraft("broker", "--config", str(config))
    finally:
        busy.close()
    assert done.returncode == 2
    assert f"broker 3: metrics.port={busy.port}: port {busy.port} on 127.0.0.1 is in use" in (
        done.stderr
    )
    assert not (tmp_path / "data").exists()  # nothing was started


def test_any_free_port_on_an_address_not_of_this_machine_names_the_address_problem() -> None:
    """Port 0 is in range: the failure is the host's (TEST-NET-1 is no machine's)."""
    with pytest.raises(OSError, match=r"^metrics.port=0: ") as raised:
        MetricsServer(MetricsEndpoint("192.0.2.1", 0), [])
    assert "out of range" not in str(raised.value)
