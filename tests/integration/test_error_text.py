"""Error text is bounded and inert (issue 55), through the command in a child process:
each reader fed control sequences and megabyte values -- a snapshot's znode paths and
data, a transaction log, a properties file -- makes the command print only bounded lines
holding no raw control character. ``shown()`` and ``iso()`` themselves:
tests/unit/test_error_text.py."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from migration.zkfiles.snapfile import SnapshotError, parse_snapshot
from migration.zkfiles.txnlog import TxnType
from tests.unit.test_error_text import HOSTILE, MEGABYTE, inert
from tests.unit.test_zk_datafiles import TREE, create_body, i32, log, seal, snapshot, txn


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "migration.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def data_dir(tmp_path: Path, snap: bytes, *logs: bytes) -> Path:
    version = tmp_path / "zk" / "version-2"
    version.mkdir(parents=True)
    (version / "snapshot.f").write_bytes(snap)
    for i, body in enumerate(logs):
        (version / f"log.{0x10 + i:x}").write_bytes(body)
    return tmp_path / "zk"


def preflight(directory: Path, *more: str) -> subprocess.CompletedProcess[str]:
    answer = run("preflight", "--zk-data-dir", str(directory), "--zk-chroot", "/kafka", *more)
    inert(answer.stdout)
    inert(answer.stderr)
    return answer


def test_a_path_length_past_the_end_is_refused_without_quoting_the_rest(tmp_path: Path) -> None:
    # the length 2^31-1 in front of a megabyte "znode": one bounded error, no slice
    good = snapshot(TREE[:3])
    cut = good.index(struct.pack("!i", len(b"/zookeeper/quota")) + b"/zookeeper/quota")
    bad = good[:cut] + i32(2**31 - 1) + b"\x1b[2J" * (MEGABYTE // 4)
    bad += seal(bad)
    with pytest.raises(SnapshotError, match="path length 2147483647 runs past the end") as e:
        parse_snapshot(bad, lambda _: None)
    assert len(str(e.value)) < 200
    for more in ((), ("--json",)):
        answer = preflight(data_dir(tmp_path / str(len(more)), bad), *more)
        assert answer.returncode != 0 and "runs past the end" in answer.stdout + answer.stderr


def test_a_hostile_znode_path_is_quoted_escaped(tmp_path: Path) -> None:
    # a path whose parent is not the znode before it: the error quotes the path
    bad = snapshot([*TREE[:4], ("/kafka/" + HOSTILE + "x" * MEGABYTE + "/y", b"", 0, 0)])
    with pytest.raises(SnapshotError, match="its parent is not") as e:
        parse_snapshot(bad, lambda _: None)
    assert "\x1b" not in str(e.value) and len(str(e.value)) < 500
    answer = preflight(data_dir(tmp_path, bad))
    assert answer.returncode != 0 and "\\x1b[2J" in answer.stderr


@pytest.mark.parametrize("json_out", [False, True])
def test_hostile_znodes_in_the_tree(tmp_path: Path, json_out: bool) -> None:
    quota = json.dumps({"version": 1, "config": {"consumer_byte_rate": HOSTILE * MEGABYTE}})
    tree = [
        *TREE[:4],
        ("/kafka/brokers", None, 0, 0),
        ("/kafka/brokers/ids", None, 0, 0),
        ("/kafka/brokers/ids/" + HOSTILE + "q" * MEGABYTE, b"{}", 0, 0),
        ("/kafka/config", None, 0, 0),
        ("/kafka/config/users", None, 0, 0),
        ("/kafka/config/users/" + HOSTILE, quota.encode(), 0, 0),
    ]
    answer = preflight(data_dir(tmp_path, snapshot(tree)), *(["--json"] if json_out else []))
    assert answer.returncode != 0
    assert "\\x1b" in answer.stdout + answer.stderr or "\\u001b" in answer.stdout


def test_a_hostile_create_in_the_transaction_log(tmp_path: Path) -> None:
    body = create_body("/kafka/" + HOSTILE + "w" * MEGABYTE, b"")
    cut = body[: -(1 + 4)]  # no ephemeral flag: "a create of ... cut short"
    answer = preflight(data_dir(tmp_path, snapshot(TREE), log(txn(TxnType.CREATE, cut))))
    assert answer.returncode != 0


def test_a_hostile_properties_value(tmp_path: Path) -> None:
    config = tmp_path / "controller.properties"
    config.write_text(
        f"node.id={HOSTILE}{'9' * MEGABYTE}\nprocess.roles={HOSTILE}\n"
        f"metadata.log.dir={tmp_path}\ncontroller.quorum.voters=1@127.0.0.1:1\n"
        "listeners=\\u001b[2J\n"
    )
    for more in ((), ("--json",)):
        answer = run("storage", "format", "--config", str(config), "--cluster-id", "x", *more)
        assert answer.returncode != 0, answer
        inert(answer.stdout)
        inert(answer.stderr)
