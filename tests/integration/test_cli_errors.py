"""How the real ``zk2kraft`` process reports an error: text on stderr, or under
``--json`` (before or after the command) one ``{"error": ...}`` object on stdout, with
the same exit code either way."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from migration.cli.output import EXIT_ERROR
from tests.support import zk2kraft


def json_error(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The run's ``--json`` error: the only thing on stdout, nothing of it on stderr."""
    assert "error:" not in result.stderr, result.stderr
    document = json.loads(result.stdout)
    assert list(document) == ["error"]
    assert set(document["error"]) == {"code", "message", "exit_code", "details"}
    assert document["error"]["exit_code"] == result.returncode
    return document["error"]  # type: ignore[no-any-return]


def test_a_usage_error_as_text_and_as_json() -> None:
    words = ["admin", "--bootstrap-controller", "h:1", "create-acl", "--principal", "User:a",
             "--resource-name", "t", "--resource-type", "Topic", "--operation", "Reed"]  # fmt: skip
    text = zk2kraft(*words)
    assert text.returncode == EXIT_ERROR and text.stdout == ""
    assert text.stderr.startswith("usage: zk2kraft admin create-acl")
    assert "zk2kraft admin create-acl: error: argument --operation: 'Reed'" in text.stderr
    as_json = zk2kraft("--json", *words)
    assert as_json.returncode == text.returncode
    error = json_error(as_json)
    assert error["code"] == "INVALID_ARGUMENT"
    assert error["message"].startswith("argument --operation: 'Reed' is not one of Kafka's")
    assert error["details"][0].startswith("usage: zk2kraft admin create-acl")


def test_a_command_error_as_text_and_as_json(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-log"
    text = zk2kraft("log", "dump", "--log-dir", str(missing))
    assert text.returncode == EXIT_ERROR and text.stdout == ""
    assert text.stderr == f"error: {missing}: no such log directory\n"
    as_json = zk2kraft("log", "dump", "--log-dir", str(missing), "--json")
    assert as_json.returncode == text.returncode
    assert json_error(as_json) == {
        "code": "NOT_FOUND",
        "message": f"{missing}: no such log directory",
        "exit_code": EXIT_ERROR,
        "details": [],
    }


def test_a_bad_config_file_as_json_lists_every_problem(tmp_path: Path) -> None:
    config = tmp_path / "controller.properties"
    config.write_text("node.id=x\nprocess.roles=controller\n")
    result = zk2kraft("controller", "--config", str(config), "--json")
    assert result.returncode == EXIT_ERROR
    error = json_error(result)
    assert error["code"] == "CONFIG_ERROR"
    assert error["message"] == f"{config}: invalid controller configuration"
    assert "node.id='x' is not an integer" in error["details"]
    assert len(error["details"]) > 1


def test_a_rehearsal_of_a_chroot_production_does_not_have_is_named(
    zk_server: Any, tmp_path: Path
) -> None:
    """Production cannot be read: exit 2 naming the chroot, not an internal error, and
    nothing written to --out."""
    connect = f"{zk_server.connect_string}/no-such-cluster"
    result = zk2kraft("rehearse", "--zk", connect, "--out", str(tmp_path / "out"), "--json")
    assert result.returncode == EXIT_ERROR
    error = json_error(result)
    assert error["code"] == "DATA_ERROR"
    assert "the chroot /no-such-cluster does not exist" in error["message"]
    assert not any((tmp_path / "out").glob("*"))
