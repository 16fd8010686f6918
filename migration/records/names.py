"""Kafka's rule for a topic name, the one every side applies: the controller to a
CreateTopics request, the ZooKeeper reader to ``/brokers/topics/<t>`` (a name the
controller would refuse is a malformed znode there, so the copy never offers it)."""

from __future__ import annotations

import re

from migration.common.text import shown

MAX_TOPIC_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


def topic_name_problem(name: str) -> str | None:
    """Why ``name`` is not a legal Kafka topic name (1 to 249 of ASCII letters, digits,
    ``.``, ``_``, ``-``; not ``.`` or ``..``), or None."""
    if not name:
        return "topic name is empty"
    if name in (".", ".."):
        return f"topic name cannot be {shown(name)}"
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        return f"topic name is longer than {MAX_TOPIC_NAME_LENGTH} characters"
    if not _LEGAL.fullmatch(name):
        return (
            f"topic name {shown(name)} has characters other than ASCII letters, digits, "
            "'.', '_', '-'"
        )
    return None
