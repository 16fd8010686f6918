"""Files reached through symlinks (real files, real links, the real command):
``broker-mode`` / ``controller-mode`` write through a symlinked config to the file it
links to and keep the link; ``storage format`` names a log directory that is a symlink
to nothing; ``audit --out`` refuses a symlinked or foreign ``report.json`` and never
writes through a link."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from migration.audit.errors import AuditError
from migration.audit.handoff import WorkDir
from migration.audit.out_dir import REPORT, SAMPLES, check_out, report_bytes, write_file
from migration.common.files import DanglingSymlinkError
from migration.common.ports import unused_port
from migration.common.properties import parse_properties, render_properties
from migration.log.metadata_log import MetadataLog
from tests.support import config_record, zk2kraft

VOTERS = "3000@c0:9093,3001@c1:9093"
ZK_BROKER = {
    "broker.id": "2",
    "zookeeper.connect": "zk:2181/kafka",
    "listeners": "PLAINTEXT://:9092,INTERNAL://:9093",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
    "inter.broker.listener.name": "INTERNAL",
    "log.dirs": "/data",
    "inter.broker.protocol.version": "3.9",
}
MIGRATING_CONTROLLER = {
    "process.roles": "controller",
    "node.id": "3000",
    "controller.quorum.voters": VOTERS,
    "listeners": "CONTROLLER://c0:9093",
    "metadata.log.dir": "/m",
    "zookeeper.metadata.migration.enable": "true",
    "zookeeper.connect": "zk:2181/kafka",
    "inter.broker.listener.name": "INTERNAL",
}
MODE_CHANGES = {
    "broker-mode": (
        ZK_BROKER,
        ["--to", "migrating", "--controller-quorum-voters", VOTERS],
        ("zookeeper.metadata.migration.enable", "true"),
    ),
    "controller-mode": (
        MIGRATING_CONTROLLER,
        ["--to", "kraft"],
        ("zookeeper.metadata.migration.enable", "false"),
    ),
}


@pytest.mark.parametrize("command", sorted(MODE_CHANGES))
def test_a_mode_change_writes_through_a_symlinked_config(tmp_path: Path, command: str) -> None:
    before, args, (key, value) = MODE_CHANGES[command]
    managed, etc = tmp_path / "managed", tmp_path / "etc"
    managed.mkdir()
    etc.mkdir()
    real = managed / "server.properties"
    real.write_text(render_properties(before))
    real.chmod(0o600)  # configs hold secrets
    link = etc / "server.properties"
    link.symlink_to(real)

    done = zk2kraft(command, "--config", str(link), *args)
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and os.readlink(link) == str(real)  # the link is kept
    assert parse_properties(real.read_text())[key] == value  # the real file is rewritten
    assert stat.S_IMODE(real.stat().st_mode) == 0o600  # and still private
    assert f"(the file it links to: {real})" in done.stdout
    backup = managed / "server.properties.bak"  # the previous file, beside the real one
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert sorted(p.name for p in managed.iterdir()) == [real.name, backup.name]  # no leftovers
    assert sorted(p.name for p in etc.iterdir()) == ["server.properties"]


def test_storage_format_names_a_dangling_symlinked_log_dir(tmp_path: Path) -> None:
    target = tmp_path / "volume" / "metadata"  # the volume is not mounted
    link = tmp_path / "metadata"
    link.symlink_to(target)
    config = tmp_path / "controller.properties"
    config.write_text(
        render_properties(
            {
                "process.roles": "controller",
                "node.id": "1",
                "controller.quorum.voters": "1@127.0.0.1:9093",
                "listeners": "CONTROLLER://127.0.0.1:9093",
                "metadata.log.dir": str(link),
            }
        )
    )
    result = zk2kraft(
        "storage", "format", "--config", str(config), "--cluster-id", "MkU3OEVBNTcwNTJENDM2Qg"
    )
    assert result.returncode == 2
    assert f"{link} is a symlink to {target}, which does not exist" in result.stderr
    assert "File exists" not in result.stderr
    assert not (tmp_path / "volume").exists()  # nothing created through the link


def test_a_log_is_never_created_through_a_symlink_to_nothing(tmp_path: Path) -> None:
    """The directory itself or a parent of it: refused, naming the link."""
    volume = tmp_path / "volume"  # not mounted
    (tmp_path / "data").symlink_to(volume)
    for log_dir in (tmp_path / "data", tmp_path / "data" / "metadata"):
        with pytest.raises(DanglingSymlinkError, match=f"{tmp_path / 'data'} is a symlink to"):
            MetadataLog(log_dir)
    assert not volume.exists()


def audit_into(out: Path, log_dir: Path) -> tuple[int, str]:
    """The audit command pointed at ``--out``: (exit code, the error's message, which
    ``--json`` puts on stdout). ZooKeeper is not there: the --out check comes before
    anything is read."""
    result = zk2kraft(
        "audit", "--zk", f"127.0.0.1:{unused_port()}", "--log-dir", str(log_dir),
        "--out", str(out), "--json",
    )  # fmt: skip
    assert result.stderr == ""
    return result.returncode, json.loads(result.stdout)["error"]["message"]


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    with MetadataLog(tmp_path / "log") as log:
        log.append([config_record(0)], epoch=1)
    return tmp_path / "log"


def test_audit_refuses_a_symlinked_or_foreign_report(tmp_path: Path, log_dir: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    elsewhere = tmp_path / "important.json"
    elsewhere.write_text('{"precious": true}\n')
    (out / REPORT).symlink_to(elsewhere)
    code, err = audit_into(out, log_dir)
    assert code == 2
    assert f"{out / REPORT} is a symlink (to {elsewhere})" in err
    assert elsewhere.read_text() == '{"precious": true}\n'

    (out / REPORT).unlink()
    (out / REPORT).write_text('{"precious": true}\n')
    code, err = audit_into(out, log_dir)
    assert code == 2 and f"{out / REPORT} exists and is not an audit report" in err
    assert (out / REPORT).read_text() == '{"precious": true}\n'


def test_an_earlier_audit_is_replaced_through_a_symlinked_dir(tmp_path: Path) -> None:
    """--out itself may be a link (to a volume); what an audit wrote there is its own to
    replace, whole."""
    volume = tmp_path / "volume"
    volume.mkdir()
    out = tmp_path / "out"
    out.symlink_to(volume)
    (volume / REPORT).write_bytes(report_bytes({"consistent": True, "offset": 1}))
    (volume / SAMPLES).write_text("")
    check_out(str(out))
    check_out(out.as_uri())
    write_file(WorkDir.of(str(out)), REPORT, report_bytes({"consistent": False, "offset": 2}))
    assert (volume / REPORT).read_bytes() == report_bytes({"consistent": False, "offset": 2})
    assert sorted(p.name for p in volume.iterdir()) == [REPORT, SAMPLES]


def test_a_link_put_in_place_after_the_check_is_replaced_not_written_through(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    check_out(str(out))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("untouched")
    (out / SAMPLES).symlink_to(elsewhere)
    with pytest.raises(AuditError, match="is a symlink"):
        check_out(str(out))
    write_file(WorkDir.of(str(out)), SAMPLES, b'{"kind": "topics"}\n')
    assert not (out / SAMPLES).is_symlink()
    assert (out / SAMPLES).read_text() == '{"kind": "topics"}\n'
    assert elsewhere.read_text() == "untouched"
