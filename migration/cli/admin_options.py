"""The options of ``zk2kraft admin`` its verbs share (see
:mod:`migration.cli.admin_commands`): where it connects, given before the verb or after
it, and which config or quota entity a verb means; and the command's description."""

from __future__ import annotations

import argparse

from migration.cli.parser import shared_default

ADMIN_DESCRIPTION = """Kafka's admin tools (kafka-topics, kafka-configs, kafka-acls):
against the quorum with --bootstrap-controller, or with --bootstrap-server over Kafka's
protocol through any broker (writes go to the broker Metadata names as controller: this
works against a ZooKeeper-mode cluster). The bootstrap and --timeout go before the verb
or after it. A refused request prints Kafka's error name and code (`error:
TOPIC_ALREADY_EXISTS (36): ...`) and exits 1. Against the quorum, the client follows
NOT_CONTROLLER to the active controller and retries retriable errors with backoff (100 ms
doubling to 1 s)."""


def connection_options(parser: argparse.ArgumentParser, *, copy: bool) -> None:
    """Where ``admin`` connects; ``copy``: a verb's copy (:func:`shared_default`)."""
    parser.add_argument(
        "--bootstrap-controller",
        metavar="HOST:PORT[,...]",
        default=shared_default(None, copy=copy),
        help="the KRaft controller quorum (or --bootstrap-server)",
    )
    parser.add_argument(
        "--bootstrap-server",
        metavar="HOST:PORT[,...]",
        default=shared_default(None, copy=copy),
        help="any broker, over Kafka's protocol, a ZooKeeper-mode cluster's too "
        "(or --bootstrap-controller)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=shared_default(30.0, copy=copy),
        metavar="SECONDS",
        help="how long a request may take, retries included (default 30)",
    )


def entity_args(parser: argparse.ArgumentParser, entities: list[str]) -> None:
    """``--entity-type`` (one of ``entities``, required) and exactly one of
    ``--entity-name`` or ``--entity-default``: which config or quota entity a verb means."""
    parser.add_argument("--entity-type", choices=entities, required=True, help="the kind of entity")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--entity-name", help="the entity (a topic, broker id, user...)")
    which.add_argument(
        "--entity-default", action="store_true", help="the default entity of the type"
    )
