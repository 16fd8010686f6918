"""The pages that describe the code, checked against the code: ARCHITECTURE.md's
packages and layering against the tree and pyproject.toml's import-linter contract,
docs/cli.md and the README's command table against the argparse tree the ``zk2kraft``
command builds, and the top-level help's command lists against the subcommands they
name. Pure: files read and the parser built in-process."""

from __future__ import annotations

import argparse
import re
import tomllib
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import pytest

from migration.cli.main import build_parser
from migration.cli.parser import commands

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "migration"
ARCHITECTURE = ROOT / "ARCHITECTURE.md"
CLI_MD = ROOT / "docs" / "cli.md"
README = ROOT / "README.md"

# Options every command takes (copied onto each by migration.cli.parser.finish), and
# those every command with its own ZooKeeper client takes: cli.md states them once,
# above its command table, not in each command's row.
SHARED = ("--log-level", "--command-config", "--json")
ZK_SHARED = ("--zk-config", "--zk-connection-timeout-ms")
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


def option_groups(words: str) -> list[tuple[str, ...]]:
    """The long options of a command, one tuple per option (its spellings: ``--zk``,
    ``--zookeeper``), hidden ones left out."""
    return [
        tuple(s for s in action.option_strings if s.startswith("--"))
        for action in tree()[words]._actions
        if action.help != argparse.SUPPRESS
        and any(s.startswith("--") for s in action.option_strings)
        and "--help" not in action.option_strings
    ]


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


def cli_passages() -> list[tuple[list[str], str]]:
    """The passages of cli.md about commands, each with the commands it is about: a table
    row whose first cell names a command (its other cells with it), a section whose
    heading names one (its body with it)."""
    text = CLI_MD.read_text()
    out = []
    for row in table_rows(text):
        span = first_span(row[0])
        named = resolve(span) if span else []
        if named:
            out.append((named, " | ".join(row)))
    for line in text.splitlines():
        m = HEADING.match(line)
        if m:
            named = [w for span in SPAN.findall(m.group(2)) for w in resolve(span)]
            if named:
                out.append((named, section(text, m.group(2))))
    return out


def preamble() -> str:
    """cli.md's text above its command table, where the shared options are stated."""
    return section(CLI_MD.read_text(), "Commands").split("\n|", 1)[0]


def test_every_command_is_documented() -> None:
    passages = cli_passages()
    named = {w for ws, _ in passages for w in ws}
    named |= {w.rsplit(" ", n)[0] for w in set(named) for n in range(1, w.count(" ") + 1)}
    # a verb listed in its group's passage (`create-topic NAME ...` under admin)
    for ws, body in passages:
        for span in SPAN.findall(body):
            named.update(resolve(span, ws))
    assert sorted(set(tree()) - {""} - named) == []


@pytest.mark.parametrize("words", sorted(w for w in tree() if w))
def test_every_option_of_a_command_is_in_its_passages(words: str) -> None:
    about = family([words]) - {w for w in tree() if w.startswith(f"{words} ")}
    text = "\n".join(body for ws, body in cli_passages() if about & set(ws))
    documented = set(FLAG.findall(text))
    missing = [
        group[0]
        for group in option_groups(words)
        if not set(group) & (documented | set(SHARED) | set(ZK_SHARED))
    ]
    assert missing == [], f"docs/cli.md does not name these options of `{words}`"


def test_the_shared_options_are_stated_once() -> None:
    text = preamble()
    assert [f for f in SHARED + ZK_SHARED if f not in text] == []
    # a command with --zk but no --zk-config is named there as the exception
    without = [w for w in tree() if w and "--zk" in flags(w) and not set(ZK_SHARED) <= flags(w)]
    stated = {w for span in SPAN.findall(text) for w in resolve(span)}
    assert [w for w in without if w not in stated] == []
    # and the ZooKeeper client options come with --zk
    assert [w for w in tree() if w and set(ZK_SHARED) & flags(w) and "--zk" not in flags(w)] == []


def documented_flags() -> list[tuple[str, str, set[str]]]:
    """Each ``--flag`` cli.md shows of one of zk2kraft's commands, with where it is and the
    options it may be: in a code span that names commands (their family's); in a code
    span or prose of a passage about commands (theirs, or a verb's its span names). Spans
    that begin with another word (Kafka's own tools, JSON) are not zk2kraft's options."""
    out = []
    for ws, body in cli_passages():
        prose = SPAN.sub(" ", body)
        allowed = set().union(*(flags(w) for w in family(ws)))
        out += [(f, f"prose about {ws}", allowed) for f in FLAG.findall(prose)]
        for span in SPAN.findall(body):
            named = resolve(span) or resolve(span, ws)
            if named:
                allowed_here = set().union(*(flags(w) for w in family(named)))
            elif span.lstrip("([").startswith("--"):
                allowed_here = allowed
            else:
                continue
            out += [(f, f"`{span}` about {ws}", allowed_here) for f in FLAG.findall(span)]
    return out


def test_no_documented_option_is_missing_from_the_parser() -> None:
    wrong = [(flag, where) for flag, where, allowed in documented_flags() if flag not in allowed]
    assert wrong == []


def test_every_option_named_anywhere_exists() -> None:
    """Outside the passages too (the preamble, the error and JSON sections): every
    ``--flag`` not in a span of another tool is an option of some command."""
    every = set().union(*(flags(w) for w in tree()))
    text = CLI_MD.read_text()
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
    """Each ``](#anchor)`` of cli.md is a heading's anchor, as GitHub makes it (the long
    cells' "more" links point at the sections that hold their prose)."""
    text = CLI_MD.read_text()
    anchors = {
        re.sub(r"[^\w\- ]", "", m.group(2).lower()).replace(" ", "-")
        for m in map(HEADING.match, text.splitlines())
        if m
    }
    assert sorted(set(re.findall(r"\]\(#([^)]+)\)", text)) - anchors) == []


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
