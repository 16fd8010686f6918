"""The values of kafka-acls' options (``--operation``, ``--resource-type``,
``--resource-pattern-type``, ``--permission``) as the ``admin`` ACL verbs take them.

Contract: a value is accepted in Kafka's spellings (``Read``, ``DescribeConfigs``,
``TransactionalId``, ``PREFIXED``, ``Allow``) whatever its case, and in the Java enum's
(``DESCRIBE_CONFIGS``) or the kebab-case one (``describe-configs``) too: the words
compare with case, ``-`` and ``_`` ignored. The names and codes are Kafka's, from
:mod:`migration.records.codes` (one table per enum); ``Any`` is a value for the verbs
that filter (``list-acls``, ``delete-acl``) only. A wrong value is an argparse error
naming the option and listing Kafka's spellings.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass

from migration.common.text import shown
from migration.records import codes


def _key(word: str) -> str:
    return word.replace("-", "").replace("_", "").lower()


@dataclass(frozen=True)
class KafkaEnum:
    """One of Kafka's ACL enums as an option's values: ``what`` names it in errors,
    ``names`` maps Kafka's spellings to the codes."""

    what: str
    names: Mapping[str, int]

    def parse(self, text: str) -> int:
        """An argparse type: the code of ``text`` (see the module's contract)."""
        by_key = {_key(name): code for name, code in self.names.items()}
        code = by_key.get(_key(text))
        if code is None:
            only_filters = " (Any only selects ACLs: list-acls, delete-acl)"
            raise argparse.ArgumentTypeError(
                f"{shown(text)} is not one of Kafka's {self.what}s: {self.spellings()}"
                + (only_filters if _key(text) == "any" else "")
            )
        return code

    def spellings(self) -> str:
        """Kafka's spellings, comma-separated (for help and errors)."""
        return ", ".join(self.names)

    def constant(self, code: int) -> str:
        """The Java enum's name of ``code`` (``DESCRIBE_CONFIGS``), as kafka-acls prints
        it; the number for a code Kafka does not name."""
        for name, known in self.names.items():
            if known == code:
                return name if name.isupper() else codes.cli_word(name).upper().replace("-", "_")
        return str(code)


def _with_any(enum: KafkaEnum) -> KafkaEnum:
    """The filters' form of ``enum``: ``Any`` (code 1) accepted too."""
    return KafkaEnum(enum.what, {**enum.names, "Any": codes.ANY})


OPERATION = KafkaEnum("operation", codes.OPERATIONS)
RESOURCE_TYPE = KafkaEnum("resource type", codes.RESOURCE_TYPES)
PERMISSION = KafkaEnum("permission type", codes.PERMISSIONS)
# An ACL is LITERAL or PREFIXED; MATCH and ANY only select ACLs.
PATTERN_TYPE = KafkaEnum(
    "pattern type",
    {
        n: c
        for n, c in codes.PATTERN_TYPES.items()
        if c in (codes.PATTERN_LITERAL, codes.PATTERN_PREFIXED)
    },
)
FILTER_OPERATION = _with_any(OPERATION)
FILTER_RESOURCE_TYPE = _with_any(RESOURCE_TYPE)
FILTER_PERMISSION = _with_any(PERMISSION)
FILTER_PATTERN_TYPE = KafkaEnum("pattern type", codes.PATTERN_TYPES)


def add_acl_options(parser: argparse.ArgumentParser, *, create: bool) -> None:
    """kafka-acls' options of one ACL: required, with Kafka's defaults, for ``create``;
    otherwise a filter, each option narrowing it (``Any`` where it is not given)."""
    operation, resource, permission, pattern = (
        (OPERATION, RESOURCE_TYPE, PERMISSION, PATTERN_TYPE)
        if create
        else (FILTER_OPERATION, FILTER_RESOURCE_TYPE, FILTER_PERMISSION, FILTER_PATTERN_TYPE)
    )
    which = "the ACL's" if create else "only ACLs of this"
    parser.add_argument(
        "--principal",
        required=create,
        help=f"{which} principal, e.g. User:alice",
    )
    parser.add_argument(
        "--host",
        default="*" if create else None,
        help=f"{which} host" + (" (default *: any host)" if create else ""),
    )
    parser.add_argument(
        "--operation",
        type=operation.parse,
        required=create,
        default=None if create else codes.ANY,
        help=f"{which} operation: {operation.spellings()} (any case"
        + (")" if create else "; default Any)"),
    )
    parser.add_argument(
        "--resource-type",
        type=resource.parse,
        required=create,
        default=None if create else codes.ANY,
        help=f"{which} resource type: {resource.spellings()} (any case"
        + (")" if create else "; default Any)"),
    )
    parser.add_argument(
        "--resource-name",
        required=create,
        help=f"{which} resource name (a topic, a group, kafka-cluster...)",
    )
    parser.add_argument(
        "--resource-pattern-type",
        type=pattern.parse,
        metavar="TYPE",
        default=codes.PATTERN_LITERAL if create else codes.PATTERN_ANY,
        help=f"{which} pattern type: {pattern.spellings()} (any case; default "
        + ("LITERAL)" if create else "ANY)"),
    )
    parser.add_argument(
        "--permission",
        type=permission.parse,
        default=codes.ALLOW if create else codes.ANY,
        help=f"{which} permission type: {permission.spellings()} (any case; default "
        + ("Allow)" if create else "Any)"),
    )
