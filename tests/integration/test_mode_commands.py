"""``broker-mode`` / ``controller-mode`` on real files: the operator's file kept (comments,
order, line ends, a continued line replaced whole, mode, owner), the previous file kept
as FILE.bak, ``--dry-run`` a diff that writes nothing, and a failed write that leaves
the file as it was. Besides one run of the real command, the runs are forked children of
the test process (no exec: quicker, and a child that drops to ``nobody`` needs no
interpreter that user can reach)."""

from __future__ import annotations

import json
import logging
import os
import signal
import stat
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from migration.cli.main import main
from tests.support import zk2kraft

VOTERS = "3000@c0:9093,3001@c1:9093"
NOBODY = 65534
OPERATORS_FILE = (
    b"# broker 2, rack r1 -- managed by hand\r\n"
    b"broker.id=2\r\n"
    b"\r\n"
    b"# ZooKeeper\r\n"
    b"zookeeper.connect = zk:2181/kafka\r\n"
    b"listeners=PLAINTEXT://:9092,INTERNAL://:9093\r\n"
    b"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,\\\r\n"
    b"    INTERNAL:PLAINTEXT\r\n"
    b"inter.broker.listener.name=INTERNAL\r\n"
    b"log.dirs=/data\r\n"
    b"ssl.key.password=caf\xe9-secret\r\n"
    b"# the end\r\n"
)
MIGRATING = (
    b"# broker 2, rack r1 -- managed by hand\r\n"
    b"broker.id=2\r\n"
    b"\r\n"
    b"# ZooKeeper\r\n"
    b"zookeeper.connect = zk:2181/kafka\r\n"
    b"listeners=PLAINTEXT://:9092,INTERNAL://:9093\r\n"
    b"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT\r\n"
    b"inter.broker.listener.name=INTERNAL\r\n"
    b"log.dirs=/data\r\n"
    b"ssl.key.password=caf\xe9-secret\r\n"
    b"# the end\r\n"
    b"controller.quorum.voters=3000@c0:9093,3001@c1:9093\r\n"
    b"controller.listener.names=CONTROLLER\r\n"
    b"zookeeper.metadata.migration.enable=true\r\n"
)
TO_MIGRATING = ("--to", "migrating", "--controller-quorum-voters", VOTERS)


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory ``nobody`` can reach (pytest's own are private to root)."""
    with tempfile.TemporaryDirectory(prefix="zk2kraft-mode-") as name:
        os.chmod(name, 0o755)
        yield Path(name)


def zk2kraft_forked(*args: str, uid: int | None = None) -> tuple[int, str, str]:
    """The zk2kraft command line run in a forked child of this process (as ``uid``, its
    groups dropped, when given): (exit code, stdout, stderr). A real process at a
    fraction of an interpreter's start."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:  # the child: never returns into pytest
            code = 70
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 - the child's to the end
                sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
                logging.getLogger().handlers.clear()  # main's own handler, on this stderr
                if uid is not None:
                    os.setgroups([])
                    os.setgid(uid)
                    os.setuid(uid)
                code = main(list(args))
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
        deadline = time.monotonic() + 60
        while (waited := os.waitpid(pid, os.WNOHANG)) == (0, 0):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                pytest.fail(f"zk2kraft {' '.join(args)} did not end within 60 s")
            time.sleep(0.01)
        out.seek(0)
        err.seek(0)
        code = os.waitstatus_to_exitcode(waited[1])
        return code, out.read().decode(), err.read().decode()


def test_the_rewrite_keeps_the_operators_file(tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_bytes(OPERATORS_FILE)
    config.chmod(0o600)
    os.chown(config, 1234, 2345)  # the operator's, not the root running zk2kraft

    done = zk2kraft("broker-mode", "--config", str(config), *TO_MIGRATING)
    assert done.returncode == 0, done.stderr
    assert config.read_bytes() == MIGRATING  # every other line as it was, byte for byte
    backup = tmp_path / "server.properties.bak"
    assert backup.read_bytes() == OPERATORS_FILE
    for path in (config, backup):
        st = path.stat()
        assert (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) == (0o600, 1234, 2345)
    assert sorted(p.name for p in tmp_path.iterdir()) == [config.name, backup.name]
    assert "ssl.key.password=<redacted>" in done.stdout and "secret" not in done.stdout

    code, stdout, stderr = zk2kraft_forked("broker-mode", "--config", str(config), *TO_MIGRATING)
    assert code == 0, stderr
    assert "already in migrating mode: nothing to change" in stdout
    assert backup.read_bytes() == OPERATORS_FILE  # nothing written: the .bak is the first

    code, stdout, stderr = zk2kraft_forked(
        "broker-mode", "--config", str(config), "--to", "kraft", "--json"
    )
    assert code == 0, stderr
    report = json.loads(stdout)
    assert report["removed"] == sorted(
        ["broker.id", "zookeeper.connect", "zookeeper.metadata.migration.enable"]
    )
    assert report["added"] == {"process.roles": "broker", "node.id": "2"}
    assert backup.read_bytes() == MIGRATING
    assert config.read_bytes() == (
        b"# broker 2, rack r1 -- managed by hand\r\n"
        b"\r\n"
        b"# ZooKeeper\r\n"
        + MIGRATING[MIGRATING.index(b"listeners=") : MIGRATING.index(b"zookeeper.metadata")]
        + b"process.roles=broker\r\nnode.id=2\r\n"
    )


def test_a_dry_run_shows_the_diff_and_writes_nothing(tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_bytes(OPERATORS_FILE)
    before = config.stat()

    code, shown, stderr = zk2kraft_forked(
        "broker-mode", "--config", str(config), *TO_MIGRATING, "--dry-run"
    )
    assert code == 0, stderr
    code, as_json, stderr = zk2kraft_forked(
        "broker-mode", "--config", str(config), *TO_MIGRATING, "--dry-run", "--json"
    )
    assert code == 0, stderr
    diff = json.loads(as_json)["diff"]
    assert shown == f"Would rewrite {config} for migrating mode:\n{diff}"
    assert diff.splitlines()[:3] == [
        f"--- {config}",
        f"+++ {config} (migrating mode)",
        "@@ -4,9 +4,11 @@",
    ]
    assert [line for line in diff.splitlines()[3:] if line[:1] in "+-"] == [
        "-listener.security.protocol.map=PLAINTEXT:PLAINTEXT,\\",
        "-    INTERNAL:PLAINTEXT",
        "+listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
        f"+controller.quorum.voters={VOTERS}",
        "+controller.listener.names=CONTROLLER",
        "+zookeeper.metadata.migration.enable=true",
    ]
    assert "ssl.key.password=<redacted>" in diff and "secret" not in diff
    after = config.stat()
    assert config.read_bytes() == OPERATORS_FILE
    assert (after.st_mtime_ns, after.st_ino) == (before.st_mtime_ns, before.st_ino)
    assert [p.name for p in tmp_path.iterdir()] == [config.name]  # no .bak, no temporary

    code, _, stderr = zk2kraft_forked("broker-mode", "--config", str(config), "--to", "kraft")
    assert code == 2
    assert "kraft mode needs the controllers: give --controller-quorum-voters" in stderr
    assert config.read_bytes() == OPERATORS_FILE


def test_a_failed_write_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_bytes(OPERATORS_FILE)
    (tmp_path / "server.properties.bak" / "in-the-way").mkdir(parents=True)

    code, _, stderr = zk2kraft_forked("broker-mode", "--config", str(config), *TO_MIGRATING)
    assert code == 2
    assert f"error: {config}: cannot write the rewritten file: " in stderr
    assert stderr.rstrip().endswith("the file is unchanged")
    assert config.read_bytes() == OPERATORS_FILE
    assert sorted(p.name for p in tmp_path.iterdir()) == [config.name, "server.properties.bak"]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run as another user")
def test_a_read_only_directory_leaves_the_file_as_it_was(shared_dir: Path) -> None:
    config = shared_dir / "server.properties"
    config.write_bytes(OPERATORS_FILE)
    config.chmod(0o644)
    os.chown(shared_dir, NOBODY, NOBODY)
    shared_dir.chmod(0o555)  # nobody may read the file, but not write beside it

    code, _, stderr = zk2kraft_forked(
        "broker-mode", "--config", str(config), *TO_MIGRATING, uid=NOBODY
    )
    assert code == 2, stderr
    assert "Permission denied" in stderr and "the file is unchanged" in stderr
    assert config.read_bytes() == OPERATORS_FILE
    assert [p.name for p in shared_dir.iterdir()] == [config.name]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run as another user")
def test_an_owner_that_cannot_be_kept_is_said(shared_dir: Path) -> None:
    config = shared_dir / "server.properties"
    config.write_bytes(OPERATORS_FILE)
    config.chmod(0o644)
    os.chown(config, 1234, 2345)
    os.chown(shared_dir, NOBODY, NOBODY)  # nobody may replace the file, not give it away

    code, _, stderr = zk2kraft_forked(
        "broker-mode", "--config", str(config), *TO_MIGRATING, uid=NOBODY
    )
    assert code == 0, stderr
    assert (
        f"{config}: not permitted to keep its owner and group 1234:2345; the new file's "
        f"are {NOBODY}:{NOBODY}"
    ) in stderr
    st = config.stat()
    assert (stat.S_IMODE(st.st_mode), st.st_uid) == (0o644, NOBODY)  # the mode kept still
    assert config.read_bytes() == MIGRATING
