"""docs/configuration.md's two properties listings are checked against the parsers: every
property they name is one the parser knows, and every default they state
(``name=value``) is the parser's (a config stating it parses equal to one leaving it out).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from migration.broker import config as broker_config
from migration.controller import config as controller_config

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
# a dotted lower-case name: Kafka's property spelling (files and hosts are told apart below)
PROPERTY = re.compile(r"(?<![\w./@-])([a-z][a-z0-9]*(?:\.[a-z0-9*]+)+)(?![\w/@-])")
DEFAULT = re.compile(r"(?<![\w.])([a-z][a-z0-9]*(?:\.[a-z0-9]+)+)=(\d+|true|false)(?![\w.])")
NOT_PROPERTIES = {"meta.properties", "controller.properties", "server.properties"}
# named in passing, not settings of the file listed: meta.properties' key, the feature level
IN_PASSING = {"cluster.id", "metadata.version"}
# ``metrics.ssl.keystore.location/.type/.password``: one name and its siblings
SIBLINGS = re.compile(r"\b([a-z][a-z0-9.]*)\.([a-z0-9]+)((?:/\.[a-z0-9]+)+)")

CONTROLLER_MINIMAL = {
    "node.id": "1", "process.roles": "controller", "controller.quorum.voters": "1@h:9093",
    "listeners": "CONTROLLER://h:9093", "metadata.log.dir": "/var/lib/zk2kraft",
}  # fmt: skip
BROKER_MINIMAL = {
    "broker.id": "1", "zookeeper.connect": "zk:2181/kafka",
    "listeners": "PLAINTEXT://:9092,INTERNAL://:9093",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
    "inter.broker.listener.name": "INTERNAL", "log.dirs": "/var/lib/kafka",
}  # fmt: skip


def listing(heading: str) -> str:
    """The first fenced block after ``heading`` in docs/configuration.md."""
    text = DOC.read_text()
    after = text[text.index(heading) :]
    start = after.index("```")
    body_start = after.index("\n", start) + 1
    return after[body_start : after.index("```", body_start)]


def _siblings(match: re.Match[str]) -> str:
    stem, first, rest = match.groups()
    return " ".join(f"{stem}.{leaf}" for leaf in [first, *rest.split("/.")[1:]])


def named(block: str, in_passing: set[str]) -> set[str]:
    """The property names ``block`` mentions (a trailing ``*`` marker dropped)."""
    names = {name.rstrip("*") for name in PROPERTY.findall(SIBLINGS.sub(_siblings, block))}
    return {n for n in names if n not in NOT_PROPERTIES | in_passing and not n.endswith(".md")}


def known_by(known: set[str], name: str) -> bool:
    if name.endswith("."):  # ``metrics.ssl.*``: a family
        return any(k.startswith(name) for k in known)
    return name in known or name.startswith("listener.name.")


@dataclass(frozen=True)
class Listing:
    """One properties listing of the doc and the parser it describes."""

    heading: str
    known: set[str]
    minimal: dict[str, str]  # the least the parser accepts
    in_passing: set[str]
    parse: Callable[[dict[str, str]], object]


CASES = [
    Listing("## A controller quorum", controller_config.KNOWN, CONTROLLER_MINIMAL, set(),
            lambda props: controller_config.parse_config(props, "doc")),
    Listing("Each broker's `server.properties`", broker_config.KNOWN, BROKER_MINIMAL,
            IN_PASSING, lambda props: broker_config.parse_broker_config(props, "doc")),
]  # fmt: skip
IDS = ["controller", "broker"]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_every_property_named_is_one_the_parser_knows(case: Listing) -> None:
    names = named(listing(case.heading), case.in_passing)
    assert len(names) > 10, names  # the listing was found
    unknown = sorted(n for n in names if not known_by(case.known, n))
    assert not unknown, f"docs/configuration.md names properties the parser ignores: {unknown}"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_every_default_stated_is_the_parsers(case: Listing) -> None:
    minimal, parse = case.minimal, case.parse
    stated = dict(DEFAULT.findall(listing(case.heading)))
    assert stated, "no `name=value` default found in the listing"
    base = parse(dict(minimal))
    wrong = {
        name: value
        for name, value in stated.items()
        if name not in minimal and parse({**minimal, name: value}) != base
    }
    assert not wrong, f"docs/configuration.md states defaults the parser does not have: {wrong}"
