"""Every ``zk2kraft`` command a runbook shows (executed blocks and the alert pages'
examples alike) parses with the real command line: no page names a command or an option
that does not exist."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from migration.cli.main import build_parser
from migration.cli.parser import UsageError

RUNBOOKS = Path(__file__).resolve().parents[2] / "runbooks"
FENCE = re.compile(r"^```(?:sh|text)\n(.*?)^```", re.S | re.M)


def commands() -> list[tuple[str, str]]:
    out = []
    for page in sorted(RUNBOOKS.rglob("*.md")):
        for block in FENCE.findall(page.read_text()):
            for raw in block.splitlines():
                if raw.strip().startswith("zk2kraft "):
                    out.append((page.relative_to(RUNBOOKS).as_posix(), raw.strip()))
    return out


def test_the_runbooks_show_commands() -> None:
    pages = {page for page, _ in commands()}
    assert {"migration.md", "finalize.md", "rollback.md"} <= pages
    assert len([p for p in pages if p.startswith("alerts/")]) >= 6


@pytest.mark.parametrize(("page", "line"), commands())
def test_each_command_parses(page: str, line: str) -> None:
    shell = line.replace("$logs", "--log-dir /logs")  # the loop before it builds that
    words = shlex.split(shell.split(" || ")[0], comments=True)[1:]
    try:
        build_parser().parse_args(words)
    except UsageError as exc:  # argparse's refusal
        pytest.fail(f"{page}: `{line}` does not parse ({exc})")
