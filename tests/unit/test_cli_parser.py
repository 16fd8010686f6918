"""The command line's shape, walked over the real parser: help on every option and
command, exit codes in every command's help, operator and development commands listed
apart, the common options before or after a command, kafka-acls' spellings, and a
command line parsed by its command's module alone as by every command."""

from __future__ import annotations

import argparse
import re
from dataclasses import fields
from pathlib import Path

import pytest

from migration.cli.main import COMMANDS, build_parser, main, named_command, parse
from migration.cli.output import EPILOG_WIDTH, EXIT_CODES, EXIT_ERROR
from migration.cli.parser import DEVELOPMENT_COMMANDS, UsageError, commands, subcommand_help
from migration.cli.zk_commands import SEED_OPTIONS
from migration.local.seed import ClusterSpec
from migration.records import codes

ROOT = build_parser()
EVERY_COMMAND = [("zk2kraft", ROOT), *((f"zk2kraft {w}", p) for w, p in commands(ROOT))]
# The commands a user runs (no subcommands of their own).
LEAVES = [
    (words, p)
    for words, p in EVERY_COMMAND
    if not any(isinstance(a, argparse._SubParsersAction) for a in p._actions)
]


def test_every_option_argument_and_subcommand_has_help() -> None:
    missing = []
    for words, parser in EVERY_COMMAND:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                if parser is not ROOT:  # (the top level lists them in its description)
                    missing += [f"{words} {n}" for n, h in subcommand_help(parser).items() if not h]
            elif not (action.help or "").strip():
                missing.append(f"{words} {'/'.join(action.option_strings) or action.dest}")
    assert missing == []
    assert len(LEAVES) > 25  # the walk reached the commands


def test_every_command_lists_its_exit_codes_from_the_one_table() -> None:
    for words, parser in LEAVES:
        text = parser.format_help()
        assert "\nexit codes:\n" in text, words
        codes_listed = [
            int(m[1]) for m in re.finditer(r"^  (\d+) ", text.split("\nexit codes:\n", 1)[1], re.M)
        ]
        assert {0, EXIT_ERROR} <= set(codes_listed) <= set(EXIT_CODES), words
        assert max(map(len, (parser.epilog or "").splitlines())) <= EPILOG_WIDTH, words
    preflight = dict(LEAVES)["zk2kraft preflight"].format_help()
    assert "  1    blockers found" in preflight
    assert f"  2    {EXIT_CODES[EXIT_ERROR]}" in preflight  # the general meaning, not a copy
    assert "  70   halted on a fault" in dict(LEAVES)["zk2kraft controller"].format_help()
    assert "  1    refused" in dict(LEAVES)["zk2kraft admin create-acl"].format_help()


def _listed(section: str) -> list[str]:
    """The commands a section of the top-level help lists (``zk seed``, ``preflight``)."""
    return [m[1] for line in section.splitlines() if (m := re.match(r"  (\S+(?: \S+)?)  ", line))]


def test_top_level_help_lists_operator_and_development_commands_apart() -> None:
    text = ROOT.format_help()
    operator = _listed(text.split("operator commands:\n", 1)[1].split("\n\n", 1)[0])
    development = _listed(text.split("development commands", 1)[1].split("\n\n", 1)[0])
    assert development == list(DEVELOPMENT_COMMANDS)
    assert {"preflight", "migrate", "admin", "migration", "rollback", "zk diff"} <= set(operator)
    top_level = {words.split()[0] for words in operator + development}
    assert top_level == set(subcommand_help(ROOT))  # every command, in one list or the other
    assert not set(operator) & set(development)


@pytest.mark.parametrize(
    "argv",
    [
        ["--command-config", "c.properties", "--json", "--log-level", "debug",
         "migration", "status", "--bootstrap-controller", "h:1"],
        ["migration", "status", "--bootstrap-controller", "h:1",
         "--command-config", "c.properties", "--json", "--log-level", "debug"],
        ["--json", "migration", "status", "--log-level", "debug",
         "--bootstrap-controller", "h:1", "--command-config", "c.properties"],
    ],
)  # fmt: skip
def test_common_options_before_or_after_the_command(argv: list[str]) -> None:
    args = ROOT.parse_args(argv)
    assert (args.command_config, args.json, args.log_level) == (Path("c.properties"), True, "DEBUG")


def test_a_value_before_the_command_is_not_reset_by_its_default() -> None:
    plain = ROOT.parse_args(["log", "verify", "--log-dir", "d"])
    assert (plain.command_config, plain.json, plain.log_level) == (None, False, "WARNING")
    before = ROOT.parse_args(["--json", "--log-level", "ERROR", "log", "verify", "--log-dir", "d"])
    assert (before.json, before.log_level) == (True, "ERROR")  # log verify has its own --json
    later = ROOT.parse_args(
        ["--command-config", "a", "preflight", "--zk", "h:1", "--command-config", "b"]
    )
    assert later.command_config == Path("b")  # given twice: the last, as argparse takes it


@pytest.mark.parametrize(
    "argv",
    [
        ["admin", "--bootstrap-server", "h:1", "--timeout", "5", "list-topics"],
        ["admin", "list-topics", "--bootstrap-server", "h:1", "--timeout", "5"],
        ["admin", "--timeout", "5", "list-topics", "--bootstrap-server", "h:1"],
    ],
)
def test_admin_connection_options_before_or_after_the_verb(argv: list[str]) -> None:
    args = ROOT.parse_args(argv)
    assert (args.bootstrap_server, args.bootstrap_controller, args.timeout) == ("h:1", None, 5.0)


CREATE = ["admin", "--bootstrap-controller", "h:1", "create-acl", "--principal", "User:a",
          "--resource-name", "t"]  # fmt: skip
LIST = ["admin", "--bootstrap-controller", "h:1", "list-acls"]


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        # kafka-acls' spellings
        (["--operation", "Read", "--resource-type", "Topic", "--permission", "Allow"],
         (codes.OPERATIONS["Read"], codes.RESOURCE_TYPES["Topic"], codes.ALLOW,
          codes.PATTERN_LITERAL)),
        (["--operation", "DescribeConfigs", "--resource-type", "TransactionalId",
          "--permission", "Deny", "--resource-pattern-type", "PREFIXED"],
         (10, 5, codes.DENY, codes.PATTERN_PREFIXED)),
        # any case, the Java enum's and the kebab-case words used so far
        (["--operation", "IDEMPOTENT_WRITE", "--resource-type", "delegation-token",
          "--permission", "deny", "--resource-pattern-type", "prefixed"],
         (12, 6, codes.DENY, codes.PATTERN_PREFIXED)),
        (["--operation", "cluster-action", "--resource-type", "CLUSTER",
          "--resource-pattern-type", "Literal"],
         (9, 4, codes.ALLOW, codes.PATTERN_LITERAL)),
    ],
)  # fmt: skip
def test_acl_values_in_kafkas_spellings_any_case(
    words: list[str], expected: tuple[int, int, int, int]
) -> None:
    args = ROOT.parse_args([*CREATE, *words])
    assert (args.operation, args.resource_type, args.permission, args.resource_pattern_type) == (
        expected
    )


def test_acl_filters_take_any_and_match() -> None:
    args = ROOT.parse_args(
        [*LIST, "--operation", "Any", "--resource-type", "ANY", "--permission", "any",
         "--resource-pattern-type", "MATCH"]
    )  # fmt: skip
    assert (args.operation, args.resource_type, args.permission) == (codes.ANY,) * 3
    assert args.resource_pattern_type == codes.PATTERN_MATCH
    unset = ROOT.parse_args(LIST)
    assert (unset.operation, unset.resource_type, unset.permission) == (codes.ANY,) * 3
    assert unset.resource_pattern_type == codes.PATTERN_ANY


@pytest.mark.parametrize(
    ("words", "needle"),
    [
        (["--operation", "Reed", "--resource-type", "Topic"],
         "argument --operation: 'Reed' is not one of Kafka's operations: All, Read, Write, "
         "Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, "
         "IdempotentWrite, CreateTokens, DescribeTokens"),
        (["--operation", "Read", "--resource-type", "Any"],
         "Kafka's resource types: Topic, Group, Cluster, TransactionalId, DelegationToken, "
         "User (Any only selects ACLs: list-acls, delete-acl)"),
        (["--operation", "Read", "--resource-type", "Topic", "--resource-pattern-type", "MATCH"],
         "Kafka's pattern types: LITERAL, PREFIXED"),
        (["--operation", "Read", "--resource-type", "Topic", "--permission", "maybe"],
         "Kafka's permission types: Deny, Allow"),
    ],
)  # fmt: skip
def test_a_wrong_acl_value_lists_kafkas_spellings(words: list[str], needle: str) -> None:
    with pytest.raises(UsageError) as raised:
        ROOT.parse_args([*CREATE, *words])
    assert needle in str(raised.value)
    assert raised.value.prog == "zk2kraft admin create-acl"


def test_every_seed_knob_is_an_option() -> None:
    knobs = {f.name for f in fields(ClusterSpec) if f.type in ("int", "bool")}
    assert set(SEED_OPTIONS) == knobs
    args = ROOT.parse_args(["zk", "seed", "--zk", "h:1", "--topics", "4", "--reassignment"])
    assert (args.topics, args.reassignment, args.brokers) == (4, True, None)


@pytest.mark.parametrize(
    "bootstraps",
    [[], ["--bootstrap-controller", "h:1", "--bootstrap-server", "h:2"]],
    ids=["neither", "both"],
)
def test_admin_takes_exactly_one_bootstrap(
    bootstraps: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["admin", "list-topics", *bootstraps]) == EXIT_ERROR
    assert capsys.readouterr().err == (
        "error: give exactly one of --bootstrap-controller, --bootstrap-server\n"
    )


def test_the_table_of_commands_names_each_module_s_own() -> None:
    top = [words for words, _ in commands(ROOT) if " " not in words]
    assert top == list(COMMANDS)  # every command, in the order the help lists them
    for command, module in COMMANDS.items():
        alone = [words for words, _ in commands(build_parser(command)) if " " not in words]
        assert alone == [c for c, m in COMMANDS.items() if m == module], command


def test_a_command_parsed_alone_has_the_same_help_as_among_every_command() -> None:
    alone = {c: dict(commands(build_parser(c))) for c in COMMANDS}
    for words, parser in commands(ROOT):
        assert alone[words.split()[0]][words].format_help() == parser.format_help(), words


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["admin", "--bootstrap-controller", "h:1", "list-topics"], "admin"),
        (["--log-level", "debug", "zk", "seed", "--zk", "h:1"], "zk"),
        (["--command-config", "admin", "zk", "seed", "--zk", "h:1"], "admin"),  # a value
        (["--help", "admin"], None),
        (["--json"], None),
    ],
)  # fmt: skip
def test_a_command_line_is_parsed_by_its_command_alone_as_by_every_command(
    argv: list[str], named: str | None
) -> None:
    assert named_command(argv) == named
    if named is not None:
        assert parse(argv) == ROOT.parse_args(argv)


@pytest.mark.parametrize(
    "argv",
    [["admin", "no-such-verb"], ["no-such-command"], ["--log-level", "loud", "log", "verify"]],
)
def test_a_usage_error_is_the_whole_command_line_s(argv: list[str]) -> None:
    with pytest.raises(UsageError) as alone:
        parse(argv)
    with pytest.raises(UsageError) as every:
        ROOT.parse_args(argv)
    assert (str(alone.value), alone.value.usage) == (str(every.value), every.value.usage)
