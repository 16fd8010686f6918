"""The zk2kraft command: seeding, offsets export, and its errors (real processes)."""

from __future__ import annotations

import csv
import io
import json
import signal
import subprocess
import sys

import pytest

from migration.common.ports import unused_port
from migration.zk.client import ZkClient
from tests.support import zk2kraft


def test_seed_with_json_summary(zk: ZkClient, zk_connect: str) -> None:
    result = zk2kraft(
        "zk",
        "seed",
        "--zk",
        zk_connect,
        "--brokers",
        "4",
        "--topics",
        "12",
        "--partitions",
        "60",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["brokers"] == 4 and summary["topics"] == 12 and summary["partitions"] == 60
    assert summary["znodes"] > 60 * 2
    assert sorted(zk.kazoo.get_children("/brokers/ids")) == ["1", "2", "3", "4"]


def test_export_offsets_csv_and_json(zk: ZkClient, zk_connect: str) -> None:
    seeded = zk2kraft(
        "zk", "seed", "--zk", zk_connect, "--profile", "tiny", "--legacy-consumer-groups", "2"
    )
    assert seeded.returncode == 0, seeded.stderr
    as_csv = zk2kraft("zk", "export-offsets", "--zk", zk_connect)
    rows = list(csv.DictReader(io.StringIO(as_csv.stdout)))
    assert len(rows) == 8 and {r["group"] for r in rows} == {"legacy-group-0", "legacy-group-1"}
    as_json = json.loads(zk2kraft("zk", "export-offsets", "--zk", zk_connect, "--json").stdout)
    assert [(r["group"], r["topic"], r["partition"], r["offset"]) for r in as_json] == [
        (r["group"], r["topic"], int(r["partition"]), int(r["offset"])) for r in rows
    ]


def test_unreachable_zookeeper_is_one_clear_error() -> None:
    connect = f"127.0.0.1:{unused_port()}"
    result = zk2kraft("preflight", "--zk", connect, "--zk-connection-timeout-ms", "1000")
    assert result.returncode == 2
    assert f"could not connect to ZooKeeper at {connect}" in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_arguments() -> None:
    # an unresolvable host: the error at the connection timeout (Kafka's 18 s default)
    unresolved = zk2kraft("preflight", "--zk", "no-port", "--zk-connection-timeout-ms", "1000")
    assert unresolved.returncode == 2 and "could not connect to ZooKeeper" in unresolved.stderr
    bad = zk2kraft("zk", "seed", "--zk", "127.0.0.1:1", "--topics", "5", "--partitions", "2")
    assert bad.returncode == 2 and "bad cluster size" in bad.stderr


def test_seed_hold_keeps_brokers_registered_until_signalled(zk: ZkClient, zk_connect: str) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "migration.cli.main",
            "zk",
            "seed",
            "--zk",
            zk_connect,
            "--profile",
            "tiny",
            "--hold",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        summary = json.loads("".join(iter(holder.stdout.readline, "}\n")) + "}")
        assert summary["brokers"] == 3
        assert sorted(zk.kazoo.get_children("/brokers/ids")) == ["1", "2", "3"]
        holder.send_signal(signal.SIGTERM)
        assert holder.wait(timeout=30) == 0
    finally:
        holder.kill()
    with ZkClient(zk_connect) as after:
        assert after.kazoo.get_children("/brokers/ids") == []


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["quorum", "describe", "--bootstrap-controller", "bad host!:9093"],
         "host 'bad host!' is not a host name or IP address"),
        (["quorum", "describe", "--bootstrap-controller", "localhost:99999"],
         "port '99999' in 'localhost:99999' is out of range (1-65535)"),
        (["admin", "--bootstrap-controller", "localhost:1", "create-topic", "x",
          "--partitions", "2147483648", "--replication-factor", "1"],
         "argument --partitions: 2147483648 does not fit an int32"),
        (["log", "dump", "--log-dir", "/etc/passwd"], "/etc/passwd: not a directory"),
        (["--log-level", "chatty", "log", "verify", "--log-dir", "/tmp"], "--log-level"),
    ],
    ids=["bad-host", "bad-port", "int32", "not-a-directory", "log-level"],
)  # fmt: skip
def test_bad_arguments_get_one_clear_line(args: list[str], needle: str) -> None:
    result = zk2kraft(*args)
    assert result.returncode == 2, result
    assert needle in result.stderr and "Traceback" not in result.stderr
