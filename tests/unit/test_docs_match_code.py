"""The pages that describe the code, checked against the code: ARCHITECTURE.md's
packages and layering against the tree and pyproject.toml's import-linter contract,
docs/cli.md against what migration.cli.reference generates from the argparse tree the
``zk2kraft`` command builds, the README's command table against that tree, and the
top-level help's command lists against the subcommands they name. Pure: files read and
the parser built in-process."""

from __future__ import annotations

import argparse
import re
import tomllib
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from migration.cli.main import build_parser
from migration.cli.parser import commands
from migration.cli.reference import anchor, render

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "migration"
ARCHITECTURE = ROOT / "ARCHITECTURE.md"
CLI_MD = ROOT / "docs" / "cli.md"
README = ROOT / "README.md"

MAX_CELL = 600  # characters in a cli.md table cell: longer prose is a section of its own

FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
SPAN = re.compile(r"`([^`]+)`")
HEADING = re.compile(r"^(#{2,6}) (.*)$")


# --- the code ---------------------------------------------------------------------


@cache
def tree() -> dict[str, argparse.ArgumentParser]:
    """Every command's words ("admin create-topic"; groups too) and its parser; the
    program itself under ""."""
    parser = build_parser()
    return {"": parser, **dict(commands(parser))}


def children(words: str) -> dict[str, str]:
    """The subcommands of ``words``: each name and its words."""
    prefix = f"{words} " if words else ""
    return {
        w[len(prefix) :]: w
        for w in tree()
        if w.startswith(prefix) and w and " " not in w[len(prefix) :]
    }


def flags(words: str) -> set[str]:
    """Every long option ``words`` accepts, hidden ones too."""
    return {s for action in tree()[words]._actions for s in action.option_strings}


def family(words: Iterable[str]) -> set[str]:
    """The commands, their ancestors and their descendants: whose options a passage
    about them may name (a group's options, a verb's under its group's section)."""
    out: set[str] = set()
    for w in words:
        out |= {a for a in tree() if w == a or w.startswith(f"{a} ") or a.startswith(f"{w} ")}
    return out


def resolve(span: str, start: Iterable[str] = ("",)) -> list[str]:
    """The commands a code span names, walking the parser from ``start`` word by word
    (``a|b`` names both); [] when its first word names none."""
    words = span.replace("\\|", "|").split()
    if words and words[0] == "zk2kraft":
        words = words[1:]
    found: list[str] = []
    current = list(start)
    for word in words:
        step = [
            kids[name]
            for node in current
            for kids in [children(node)]
            for name in word.split("|")
            if name in kids
        ]
        if not step:
            break
        found = current = step
    return found


# --- Markdown ----------------------------------------------------------------------


def section(text: str, title: str) -> str:
    """The body under the heading ``title`` (up to the next heading of its level or above)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = HEADING.match(line)
        if m and m.group(2) == title:
            level = len(m.group(1))
            body = []
            for rest in lines[i + 1 :]:
                n = HEADING.match(rest)
                if n and len(n.group(1)) <= level:
                    break
                body.append(rest)
            return "\n".join(body)
    raise AssertionError(f"no heading {title!r}")


def cells(line: str) -> list[str]:
    """A table row's cells (``\\|`` is a pipe inside a cell)."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def table_rows(text: str) -> list[list[str]]:
    """Every table body row of a page (header and delimiter rows left out)."""
    rows, previous = [], ""
    for line in text.splitlines():
        delimiter = re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", line.strip())
        if line.startswith("|") and previous.startswith("|") and not delimiter:
            rows.append(cells(line))
        previous = line if line.startswith("|") else ""
    return [r for r in rows if r]


def first_span(cell: str) -> str | None:
    m = SPAN.match(cell)
    return m.group(1) if m else None


# --- ARCHITECTURE.md ---------------------------------------------------------------


def contract_layers() -> list[list[str]]:
    """pyproject.toml's layers contract: each layer's packages, top first."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    return [
        sorted(p.strip().removeprefix("migration.") for p in layer.split("|"))
        for layer in contract["layers"]
    ]


def documented_layers() -> list[list[str]]:
    """ARCHITECTURE.md's layering: the fenced block under "## Layering", a layer a line."""
    block = re.search(
        r"^```\n(.*?)^```", section(ARCHITECTURE.read_text(), "Layering"), re.S | re.M
    )
    assert block, "ARCHITECTURE.md's Layering section has no fenced block of the layers"
    return [sorted(p.strip() for p in line.split("|")) for line in block.group(1).splitlines()]


def documented_packages() -> list[str]:
    """The package table's first column, in its order."""
    rows = table_rows(section(ARCHITECTURE.read_text(), "Packages"))
    return [first_span(r[0]) or r[0] for r in rows]


def test_the_layering_is_the_import_contract() -> None:
    assert documented_layers() == contract_layers()


def test_every_package_is_in_the_table_and_in_the_tree() -> None:
    in_tree = {p.parent.name for p in PACKAGE.glob("*/__init__.py")} - {"proto"}
    table = documented_packages()
    assert sorted(in_tree - set(table)) == [], "packages ARCHITECTURE.md does not name"
    absent = [
        name
        for name in table
        if not (PACKAGE / name / "__init__.py").exists() and not (PACKAGE / f"{name}.py").exists()
    ]
    assert absent == [], "named in ARCHITECTURE.md, missing from migration/"
    assert "`migration/proto/`" in ARCHITECTURE.read_text()


def test_the_table_follows_the_layering() -> None:
    layers = contract_layers()
    order = {name: i for i, layer in enumerate(layers) for name in layer}
    table = documented_packages()
    assert sorted(table) == sorted(order), "the table and the contract name other packages"
    indices = [order[name] for name in table]
    assert indices == sorted(indices), "the table is not in the layering's order, top first"


def test_nested_packages_are_named() -> None:
    text = ARCHITECTURE.read_text()
    nested = [
        p.parent.relative_to(PACKAGE).as_posix()
        for p in PACKAGE.glob("*/*/**/__init__.py")
        if p.parent.relative_to(PACKAGE).parts[0] != "proto"
    ]
    assert nested  # zk/model at least
    assert [n for n in nested if f"`{n}" not in text] == []


# --- docs/cli.md -------------------------------------------------------------------

REGENERATE = (
    "docs/cli.md is generated from the parser (migration/cli) and docs/cli.template.md: "
    "edit those, then regenerate it with `make docs` (or `PYTHONPATH=. python -m "
    "migration.cli.reference --write`)"
)


def test_cli_md_is_what_the_generator_writes() -> None:
    assert CLI_MD.read_text() == render(), REGENERATE


def test_every_option_named_anywhere_exists() -> None:
    """In the template's prose and the parser's descriptions alike: every ``--flag`` not
    in a span of another tool (nor a fenced block: the usage lines argparse writes) is
    an option of some command."""
    every = set().union(*(flags(w) for w in tree()))
    text = re.sub(r"^```.*?^```", " ", CLI_MD.read_text(), flags=re.S | re.M)  # usage lines
    foreign = [
        s for s in SPAN.findall(text) if not s.startswith(("--", "zk2kraft")) and not resolve(s)
    ]
    for span in foreign:
        text = text.replace(f"`{span}`", " ")
    assert sorted(set(FLAG.findall(text)) - every) == []


def test_no_table_cell_is_a_page() -> None:
    long = [
        (row[0][:60], len(cell))
        for row in table_rows(CLI_MD.read_text())
        for cell in row
        if len(cell) > MAX_CELL
    ]
    assert long == [], f"cells over {MAX_CELL} characters: give them a section of their own"


def test_the_pages_links_to_its_sections_land() -> None:
    """Each ``](#anchor)`` of cli.md is a heading's anchor, as GitHub makes it; and the
    other pages' links into cli.md land too."""
    text = CLI_MD.read_text()
    anchors = {anchor(m.group(2)) for m in map(HEADING.match, text.splitlines()) if m}
    assert sorted(set(re.findall(r"\]\(#([^)]+)\)", text)) - anchors) == []
    inbound = {
        (page.name, target)
        for page in [README, *(ROOT / "docs").glob("*.md"), *(ROOT / "runbooks").glob("*.md")]
        for target in re.findall(r"cli\.md#([\w-]+)", page.read_text())
        if page != CLI_MD
    }
    assert sorted((page, t) for page, t in inbound if t not in anchors) == []


# --- README.md ---------------------------------------------------------------------


def test_the_readme_tables_are_whole() -> None:
    """A blank line inside a table ends it: the rows after it render as raw pipes."""
    text = README.read_text()
    assert re.search(r"^\|.*\n\s*\n\|", text, re.M) is None


def test_the_readme_commands_exist() -> None:
    spans = [
        span
        for row in table_rows(README.read_text())
        for span in [first_span(row[0])]
        if span and span.startswith("zk2kraft ")
    ]
    assert len(spans) >= 7
    wrong = []
    for span in spans:
        named = resolve(span)
        allowed = set().union(*(flags(w) for w in family(named))) if named else set()
        if not named or not set(FLAG.findall(span)) <= allowed:
            wrong.append(span)
    assert wrong == []


# --- the top-level help ------------------------------------------------------------


def top_level_help() -> dict[str, str]:
    """The command lists of ``zk2kraft --help``: each command's words and its help."""
    out: dict[str, str] = {}
    last = ""
    for line in (tree()[""].description or "").splitlines():
        m = re.match(r"^  (\S+(?: \S+)?)\s{2,}(.*)$", line)
        if m and m.group(1) in tree():
            last = m.group(1)
            out[last] = m.group(2)
        elif last and line.startswith("   "):
            out[last] += " " + line.strip()
        else:
            last = ""
    return out


def test_a_group_lists_its_subcommands() -> None:
    """A group whose help ends in a list of names ("the controller quorum: describe,
    add-controller, remove-controller") lists every subcommand it has, and no other."""
    helps = top_level_help()
    assert {"quorum", "log", "kafka-node"} <= set(helps)
    checked = 0
    for words, text in helps.items():
        kids = set(children(words))
        listed = {n.strip() for n in text.rsplit(":", 1)[-1].split(",")}
        if kids and listed & kids:
            checked += 1
            assert listed == kids, f"`{words}`'s help lists {sorted(listed)}"
    assert checked >= 4
