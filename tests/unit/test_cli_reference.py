"""migration.cli.reference (docs/cli.md generated from the parser) and the exit codes it
documents, checked against real runs where that is cheap: a usage error, a refused
``migrate``, ``kafka-node status`` of a server that does not run. (docs/cli.md being
what the generator writes: tests/unit/test_docs_match_code.py.)"""

from __future__ import annotations

import argparse
from functools import cache
from pathlib import Path

import pytest

from migration.cli.main import build_parser, main
from migration.cli.output import (
    ALWAYS,
    EXIT_CODES,
    EXIT_ERROR,
    EXIT_NOT_READY,
    declared_exit_codes,
    prose,
)
from migration.cli.parser import commands
from migration.cli.reference import MARKER, md, paragraphs, reference, render


@cache
def leaves() -> dict[str, argparse.ArgumentParser]:
    """Every command without subcommands, by its words."""
    tree = dict(commands(build_parser()))
    return {w: p for w, p in tree.items() if not any(o.startswith(f"{w} ") for o in tree)}


def codes(words: str) -> dict[int, str]:
    return declared_exit_codes(leaves()[words])


@pytest.mark.parametrize("words", sorted(leaves()))
def test_each_command_declares_its_codes_from_the_one_table(words: str) -> None:
    declared = codes(words)
    assert set(ALWAYS) <= set(declared) <= set(EXIT_CODES)
    assert all(declared.values())


@pytest.mark.parametrize("words", sorted(leaves()))
def test_a_usage_error_exits_with_the_documented_2(
    words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*words.split(), "--no-such-option"]) == EXIT_ERROR
    assert "error:" in capsys.readouterr().err
    assert EXIT_ERROR in codes(words)


def test_migrate_without_dry_run_is_refused_with_2(tmp_path: Path) -> None:
    argv = ["migrate", "--zk-data-dir", str(tmp_path), "--log-dir", str(tmp_path / "log")]
    assert main(argv) == EXIT_ERROR
    assert EXIT_ERROR in codes("migrate")


def test_kafka_node_status_of_a_stopped_server_exits_1_as_documented(tmp_path: Path) -> None:
    properties = tmp_path / "server.properties"
    properties.write_text(f"process.roles=broker\nnode.id=1\nlog.dirs={tmp_path / 'logs'}\n")
    assert main(["kafka-node", "status", "--properties", str(properties)]) == EXIT_NOT_READY
    assert codes("kafka-node status")[EXIT_NOT_READY] == "it does not run"


def test_the_reference_has_a_section_and_exit_codes_per_command() -> None:
    page = reference(build_parser())
    for words, parser in leaves().items():
        section = page.split(f"### `zk2kraft {words}`\n", 1)[1].split("\n### ", 1)[0]
        for code, meaning in declared_exit_codes(parser).items():
            assert f"| {code} | {md(meaning).replace('|', chr(92) + '|')} |" in section


def test_the_page_does_not_depend_on_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    wide = render()
    monkeypatch.setenv("COLUMNS", "40")
    assert render() == wide


def test_the_template_holds_the_marker_once() -> None:
    with pytest.raises(ValueError, match="once"):
        render(template="# no marker")
    page = render(template=f"# Title\n\n{MARKER}\n\n## After\n")
    assert page.index("# Title") < page.index("### Common options") < page.index("## After")


def test_markdown_from_argparse() -> None:
    assert md("print <redacted> `a <b>` docs/operations.md#going-back") == (
        "print &lt;redacted> `a <b>` [operations.md#going-back](operations.md#going-back)"
    )
    assert md("see docs/cli.md#preflight-findings") == (
        "see [cli.md#preflight-findings](#preflight-findings)"
    )
    assert paragraphs("one\ntwo\n\n- a\n  b\n- c") == ["one two", "- a b\n- c"]


def test_prose_wraps_without_breaking_an_option() -> None:
    text = prose("word " * 30 + "--ignore-formatted and more\n\n- an item " + "x " * 50)
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "--ignore-formatted" in text.replace("\n", " ")
    assert paragraphs(text)[1].startswith("- an item x")
