"""``zk2kraft admin --bootstrap-controller HOST:PORT VERB``: Kafka's admin tools
(kafka-topics, kafka-configs, kafka-acls) against the controller quorum, or against any
broker with ``--bootstrap-server``. A refused request prints Kafka's error name and
code and exits 1 (under ``--json``, the error's code is Kafka's error name).

Where to connect (``--bootstrap-controller``/``--bootstrap-server``, ``--timeout``) may
be given before the verb or after it, as Kafka's tools take their options in any order;
exactly one of the two bootstraps is required."""

from __future__ import annotations

import argparse
import hashlib
import os
from typing import TYPE_CHECKING, Any

from migration.cli.acl_options import (
    OPERATION,
    PATTERN_TYPE,
    PERMISSION,
    RESOURCE_TYPE,
    add_acl_options,
)
from migration.cli.admin_options import ADMIN_DESCRIPTION, connection_options, entity_args
from migration.cli.output import (
    EXIT_NOT_READY,
    EXIT_OK,
    CliError,
    error,
    exit_codes,
    int32,
    print_json,
    prose,
    read_secret_file,
)
from migration.common.kafka_errors import ErrorCode, KafkaError
from migration.common.text import inert, shown
from migration.controller.client import ControllerClient, parse_bootstrap
from migration.controller.security import MAX_ITERATIONS, MIN_ITERATIONS, quota_value_problem
from migration.proto import controller_pb2 as cpb
from migration.records import codes
from migration.records.codes import BROKER_RESOURCE, TOPIC_RESOURCE

if TYPE_CHECKING:
    from migration.kafka.admin_client import KafkaAdminClient

    AdminClient = ControllerClient | KafkaAdminClient  # the quorum's, or a broker's

EXIT_REFUSED = EXIT_NOT_READY  # Kafka refused the request: its error name and code printed
REFUSED = {EXIT_REFUSED: "refused: Kafka's error name and code are printed"}
MECHANISMS = codes.SCRAM_MECHANISMS
CONFIG_ENTITIES = {"topics": TOPIC_RESOURCE, "brokers": BROKER_RESOURCE}
QUOTA_ENTITIES = {"users": "user", "clients": "client-id", "ips": "ip"}
BOOTSTRAPS = ("--bootstrap-controller", "--bootstrap-server")


def _verb(
    verbs: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help_text: str
) -> argparse.ArgumentParser:
    v = verbs.add_parser(name, help=help_text)
    connection_options(v, copy=True)
    exit_codes(v, REFUSED)
    return v


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``admin`` group, its connection options and its verbs, in the help's order."""
    admin = sub.add_parser(
        "admin",
        help="topics, configs, ACLs, quotas, SCRAM: on the quorum, or through a broker",
        description=prose(ADMIN_DESCRIPTION),
    )
    connection_options(admin, copy=False)
    exit_codes(admin, REFUSED)
    admin.set_defaults(run=run)
    verbs = admin.add_subparsers(dest="verb", required=True, metavar="VERB")
    _topic_verbs(verbs)
    _config_verbs(verbs)
    _acl_verbs(verbs)
    _scram_verb(verbs)


def _topic_verbs(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """create-topic, delete-topic, list-topics, describe-topic (kafka-topics)."""
    v = _verb(verbs, "create-topic", "create a topic (`kafka-topics --create`)")
    v.add_argument("name", metavar="NAME", help="the topic's name")
    v.add_argument(
        "--partitions", type=int32, required=True, metavar="N", help="how many partitions"
    )
    v.add_argument(
        "--replication-factor",
        type=int32,
        required=True,
        metavar="N",
        help="replicas of each partition",
    )
    v.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="K=V",
        help="a topic config (repeatable; K=V,K=V also)",
    )
    v.set_defaults(verb_run=create_topic)
    v = _verb(verbs, "delete-topic", "delete a topic (`kafka-topics --delete`)")
    v.add_argument("name", metavar="NAME", help="the topic's name")
    v.set_defaults(verb_run=delete_topic)
    v = _verb(verbs, "list-topics", "the topics' names (`kafka-topics --list`)")
    v.add_argument("--json", action="store_true", help="print the names as a JSON array")
    v.set_defaults(verb_run=list_topics)
    v = _verb(verbs, "describe-topic", "a topic's partitions (`kafka-topics --describe`)")
    v.add_argument("name", metavar="NAME", help="the topic's name")
    v.add_argument("--json", action="store_true", help="print the topic as JSON")
    v.set_defaults(verb_run=describe_topic)


def _config_verbs(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """alter-config, alter-quota, describe-config (kafka-configs)."""
    for verb, entities, what in (
        ("alter-config", [*CONFIG_ENTITIES, *QUOTA_ENTITIES], "configs or quotas"),
        ("alter-quota", list(QUOTA_ENTITIES), "client quotas"),
    ):
        v = _verb(verbs, verb, f"set or delete {what} (`kafka-configs --alter`)")
        entity_args(v, entities)
        v.add_argument("--add-config", default="", metavar="K=V,...", help="the configs to set")
        v.add_argument("--delete-config", default="", metavar="K,...", help="the configs to delete")
        v.set_defaults(verb_run=alter_config)
    v = _verb(verbs, "describe-config", "dynamic configs or quotas (`kafka-configs --describe`)")
    entity_args(v, [*CONFIG_ENTITIES, *QUOTA_ENTITIES])
    v.add_argument("--json", action="store_true", help="print the configs as JSON")
    v.set_defaults(verb_run=describe_config)


def _acl_verbs(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """create-acl, delete-acl, list-acls (kafka-acls)."""
    acl_verbs = (
        ("create-acl", create_acl, True, "add an ACL (`kafka-acls --add`)"),
        (
            "delete-acl",
            delete_acl,
            False,
            "remove the ACLs the options select (`kafka-acls --remove`)",
        ),
        ("list-acls", list_acls, False, "the ACLs the options select (`kafka-acls --list`)"),
    )
    for verb, handler, create, help_text in acl_verbs:
        v = _verb(verbs, verb, help_text)
        add_acl_options(v, create=create)
        v.add_argument("--json", action="store_true", help="print the ACLs as JSON")
        v.set_defaults(verb_run=handler)


def _scram_verb(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """alter-scram: a SCRAM credential set from a secret, or deleted (kafka-configs)."""
    v = _verb(verbs, "alter-scram", "set or delete a SCRAM credential (kafka-configs)")
    v.add_argument("--user", required=True, help="the user's name")
    v.add_argument(
        "--mechanism",
        choices=sorted(MECHANISMS),
        default="SCRAM-SHA-256",
        help="the SCRAM mechanism (default SCRAM-SHA-256)",
    )
    v.add_argument(
        "--iterations",
        type=int32,
        default=8192,
        help=f"PBKDF2 iterations, {MIN_ITERATIONS} to {MAX_ITERATIONS} (default 8192)",
    )
    how = v.add_mutually_exclusive_group(required=True)
    how.add_argument(
        "--password-env", metavar="VAR", help="read the password from this environment variable"
    )
    how.add_argument("--password-file", metavar="FILE", help="read the password from this file")
    how.add_argument("--delete", action="store_true", help="delete the user's credential")
    v.set_defaults(verb_run=alter_scram)


def run(args: argparse.Namespace) -> int:
    """The verb against the quorum or a broker; a refused request reported with Kafka's
    error name (its ``--json`` code) and :data:`EXIT_REFUSED`."""
    given = [b for b in BOOTSTRAPS if getattr(args, b[2:].replace("-", "_"))]
    if len(given) != 1:
        raise CliError(f"give exactly one of {', '.join(BOOTSTRAPS)}")
    client: ControllerClient | KafkaAdminClient
    if args.bootstrap_server:
        from migration.kafka.admin_client import KafkaAdminClient  # noqa: PLC0415 - kio: see migration.cli

        client = KafkaAdminClient(args.bootstrap_server, timeout_s=args.timeout)
    else:
        bootstrap = parse_bootstrap(args.bootstrap_controller)
        client = ControllerClient(bootstrap, timeout_s=args.timeout)
    try:
        code: int = args.verb_run(client, args)
        return code
    except KafkaError as exc:
        error(f"{exc.code.name} ({int(exc.code)}): {exc.message}", exc.code.name)
        return EXIT_REFUSED
    finally:
        client.close()


def _check(name: str, code: int, message: str) -> None:
    if code != ErrorCode.NONE:
        raise KafkaError(ErrorCode(code), f"{name}: {message}" if name else message)


def _pairs(text: str, source: str) -> dict[str, str]:
    out = {}
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise CliError(f"{source}: {shown(item)} is not key=value")
        out[key.strip()] = value.strip()
    return out


# --- topics --------------------------------------------------------------------------------


def create_topic(client: AdminClient, args: argparse.Namespace) -> int:
    configs: dict[str, str] = {}
    for item in args.config:
        configs.update(_pairs(item, "--config"))
    request = cpb.CreateTopicsRequest()
    request.topics.add(
        name=args.name,
        num_partitions=args.partitions,
        replication_factor=args.replication_factor,
        configs=configs,
    )
    result = client.call("CreateTopics", request).topics[0]
    _check(args.name, result.error_code, result.error_message)
    print(f"Created topic {args.name} (topic id {result.topic_id}).")
    return EXIT_OK


def delete_topic(client: AdminClient, args: argparse.Namespace) -> int:
    result = client.call("DeleteTopics", cpb.DeleteTopicsRequest(topic_names=[args.name])).results[
        0
    ]
    _check(args.name, result.error_code, result.error_message)
    print(f"Deleted topic {args.name}.")
    return EXIT_OK


def list_topics(client: AdminClient, args: argparse.Namespace) -> int:
    names = [t.name for t in client.call("Metadata", cpb.MetadataRequest()).topics]
    if args.json:
        print_json(names)
    else:
        print(inert("\n".join(names)))
    return EXIT_OK


def topic_json(topic: Any) -> dict[str, Any]:
    return {
        "name": topic.name,
        "topic_id": topic.topic_id,
        "partitions": [
            {
                "partition": p.partition_index,
                "leader": p.leader_id,
                "leader_epoch": p.leader_epoch,
                "replicas": list(p.replicas),
                "isr": list(p.isr),
                "partition_epoch": p.partition_epoch,
            }
            for p in topic.partitions
        ],
    }


def describe_topic(client: AdminClient, args: argparse.Namespace) -> int:
    topic = client.call("Metadata", cpb.MetadataRequest(topics=[args.name])).topics[0]
    _check(args.name, topic.error_code, f"topic {shown(args.name)} does not exist")
    report = topic_json(topic)
    if args.json:
        print_json(report)
        return EXIT_OK
    rf = len(report["partitions"][0]["replicas"]) if report["partitions"] else 0
    print(
        f"Topic: {topic.name}\tTopicId: {topic.topic_id}\t"
        f"PartitionCount: {len(topic.partitions)}\tReplicationFactor: {rf}"
    )
    for p in report["partitions"]:
        replicas = ",".join(map(str, p["replicas"]))
        isr = ",".join(map(str, p["isr"]))
        print(
            f"\tTopic: {topic.name}\tPartition: {p['partition']}\tLeader: {p['leader']}\t"
            f"Replicas: {replicas}\tIsr: {isr}"
        )
    return EXIT_OK


# --- configs and quotas ----------------------------------------------------------------------


def _entity_name(args: argparse.Namespace) -> str | None:
    return None if args.entity_default else args.entity_name


def alter_config(client: AdminClient, args: argparse.Namespace) -> int:
    add = _pairs(args.add_config, "--add-config")
    delete = [k.strip() for k in args.delete_config.split(",") if k.strip()]
    if not add and not delete:
        raise CliError("nothing to change: give --add-config and/or --delete-config")
    name = _entity_name(args)
    label = f"{args.entity_type} {name if name is not None else '<default>'}"
    if args.entity_type in QUOTA_ENTITIES:
        entry = cpb.QuotaEntry()
        entity = entry.entity.add(entity_type=QUOTA_ENTITIES[args.entity_type])
        if name is not None:
            entity.entity_name = name
        for key, value in add.items():
            try:
                number = float(value)
            except ValueError:
                raise CliError(
                    f"--add-config: quota {key}={shown(value)} is not a number"
                ) from None
            problem = quota_value_problem(key, number)
            if problem:
                raise CliError(f"--add-config: {problem}")
            entry.ops.add(key=key, value=number)
        for key in delete:
            entry.ops.add(key=key, remove=True)
        result = client.call(
            "AlterClientQuotas", cpb.AlterClientQuotasRequest(entries=[entry])
        ).results[0]
    else:
        if args.entity_type == "topics" and name is None:
            raise CliError("topics have no default entity; give --entity-name")
        resource = cpb.AlterConfigsResource(
            resource_type=CONFIG_ENTITIES[args.entity_type], resource_name=name or ""
        )
        for key, value in add.items():
            resource.configs.add(name=key, config_operation=0, value=value)
        for key in delete:
            resource.configs.add(name=key, config_operation=1)
        request = cpb.IncrementalAlterConfigsRequest(resources=[resource])
        result = client.call("IncrementalAlterConfigs", request).results[0]
    _check(label, result.error_code, result.error_message)
    print(f"Completed updating config for {label}.")
    return EXIT_OK


def describe_config(client: AdminClient, args: argparse.Namespace) -> int:
    name = _entity_name(args)
    values: dict[str, Any]
    if args.entity_type in QUOTA_ENTITIES:
        entity = cpb.QuotaEntity(entity_type=QUOTA_ENTITIES[args.entity_type])
        if name is not None:
            entity.entity_name = name
        response = client.call(
            "DescribeClientQuotas", cpb.DescribeClientQuotasRequest(entity=[entity])
        )
        _check(name or "<default>", response.error.error_code, response.error.error_message)
        values = dict(sorted(response.quotas.items()))
    else:
        request = cpb.DescribeConfigsRequest(
            resource_type=CONFIG_ENTITIES[args.entity_type], resource_name=name or ""
        )
        response = client.call("DescribeConfigs", request)
        _check(name or "<default>", response.error_code, response.error_message)
        values = dict(sorted(response.configs.items()))
    if args.json:
        print_json({"entity_type": args.entity_type, "entity_name": name, "configs": values})
        return EXIT_OK
    label = name if name is not None else "<default>"
    print(f"Dynamic configs for {args.entity_type} {label} are:")
    for key, value in values.items():
        print(inert(f"  {key}={value}"))
    return EXIT_OK


# --- ACLs --------------------------------------------------------------------------------------


def _filter(args: argparse.Namespace) -> cpb.AclFilter:
    f = cpb.AclFilter(
        resource_type=args.resource_type,
        pattern_type=args.resource_pattern_type,
        operation=args.operation,
        permission_type=args.permission,
    )
    for field in ("resource_name", "principal", "host"):
        if getattr(args, field) is not None:
            setattr(f, field, getattr(args, field))
    return f


def acl_json(b: Any) -> dict[str, Any]:
    """One ACL as ``--json`` prints it: Kafka's enum names (``READ``, ``ALLOW``)."""
    return {
        "principal": b.principal,
        "host": b.host,
        "operation": OPERATION.constant(b.operation),
        "permission_type": PERMISSION.constant(b.permission_type),
        "resource_type": RESOURCE_TYPE.constant(b.resource_type),
        "resource_name": b.resource_name,
        "pattern_type": PATTERN_TYPE.constant(b.pattern_type),
    }


def _print_acls(acls: list[Any], as_json: bool) -> None:
    rows = [acl_json(b) for b in acls]
    if as_json:
        print_json(rows)
        return
    for r in rows:
        print(inert(
            f"(principal={r['principal']}, host={r['host']}, operation={r['operation']}, "
            f"permissionType={r['permission_type']}) on {r['resource_type']}:"
            f"{r['pattern_type']}:{r['resource_name']}"
        ))  # fmt: skip


def create_acl(client: AdminClient, args: argparse.Namespace) -> int:
    binding = cpb.AclBinding(
        resource_type=args.resource_type,
        resource_name=args.resource_name,
        pattern_type=args.resource_pattern_type,
        principal=args.principal,
        host=args.host,
        operation=args.operation,
        permission_type=args.permission,
    )
    result = client.call("CreateAcls", cpb.CreateAclsRequest(creations=[binding])).results[0]
    _check("", result.error_code, result.error_message)
    _print_acls([binding], args.json)
    return EXIT_OK


def delete_acl(client: AdminClient, args: argparse.Namespace) -> int:
    response = client.call("DeleteAcls", cpb.DeleteAclsRequest(filters=[_filter(args)]))
    _check("", response.results[0].error_code, response.results[0].error_message)
    _print_acls(list(response.acls), args.json)
    return EXIT_OK


def list_acls(client: AdminClient, args: argparse.Namespace) -> int:
    response = client.call("DescribeAcls", cpb.DescribeAclsRequest(filter=_filter(args)))
    _print_acls(list(response.acls), args.json)
    return EXIT_OK


# --- SCRAM ---------------------------------------------------------------------------------------


def _read_password(args: argparse.Namespace) -> str:
    """The password from --password-env or --password-file; never echoed in errors."""
    if not args.password_env:
        return read_secret_file(args.password_file, "--password-file")
    password = os.environ.get(args.password_env)
    if password is None:
        raise CliError(f"--password-env: {args.password_env} is not set")
    if not password:
        raise CliError(f"--password-env {args.password_env}: the password is empty")
    return password


def alter_scram(client: AdminClient, args: argparse.Namespace) -> int:
    mechanism = MECHANISMS[args.mechanism]
    request = cpb.AlterUserScramCredentialsRequest()
    if args.delete:
        request.deletions.add(name=args.user, mechanism=mechanism)
    else:
        if not MIN_ITERATIONS <= args.iterations <= MAX_ITERATIONS:  # before minutes of hashing
            raise CliError(
                f"--iterations {args.iterations} is outside [{MIN_ITERATIONS}, {MAX_ITERATIONS}]"
            )
        password = _read_password(args)
        salt = os.urandom(32)
        digest = "sha256" if mechanism == 1 else "sha512"
        salted = hashlib.pbkdf2_hmac(digest, password.encode(), salt, args.iterations)
        request.upsertions.add(
            name=args.user,
            mechanism=mechanism,
            iterations=args.iterations,
            salt=salt,
            salted_password=salted,
        )
    result = client.call("AlterUserScramCredentials", request).results[0]
    _check(args.user, result.error_code, result.error_message)
    action = "Deleted" if args.delete else "Updated"
    print(f"{action} {args.mechanism} credential for user {args.user}.")
    return EXIT_OK
