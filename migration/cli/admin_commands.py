"""``zk2kraft admin --bootstrap-controller HOST:PORT VERB``: Kafka's admin tools
(kafka-topics, kafka-configs, kafka-acls) against the controller quorum. A refused
request prints Kafka's error name and code and exits 1."""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from typing import TYPE_CHECKING, Any

from migration.cli.output import EXIT_OK, CliError, int32, print_json, read_secret_file
from migration.common.kafka_errors import ErrorCode, KafkaError
from migration.common.text import shown
from migration.controller.client import ControllerClient, parse_bootstrap
from migration.controller.security import (
    LITERAL,
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    PREFIXED,
    quota_value_problem,
)
from migration.proto import controller_pb2 as cpb
from migration.records import codes
from migration.records.codes import (
    ALLOW,
    ANY,
    BROKER_RESOURCE,
    DENY,
    PATTERN_MATCH,
    TOPIC_RESOURCE,
    cli_word,
)

if TYPE_CHECKING:
    from migration.kafka.admin_client import KafkaAdminClient

EXIT_REFUSED = 1
RESOURCE_TYPES = {cli_word(name): code for name, code in codes.RESOURCE_TYPES.items()}
OPERATIONS = {cli_word(name): code for name, code in codes.OPERATIONS.items()}
PATTERNS = {"literal": LITERAL, "prefixed": PREFIXED, "match": PATTERN_MATCH, "any": ANY}
MECHANISMS = codes.SCRAM_MECHANISMS
CONFIG_ENTITIES = {"topics": TOPIC_RESOURCE, "brokers": BROKER_RESOURCE}
QUOTA_ENTITIES = {"users": "user", "clients": "client-id", "ips": "ip"}


def _name(table: dict[str, int], code: int) -> str:
    return next((k.upper().replace("-", "_") for k, v in table.items() if v == code), str(code))


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    admin = sub.add_parser("admin", help="topics, configs, ACLs, quotas, SCRAM on the quorum")
    where = admin.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--bootstrap-controller", metavar="HOST:PORT[,...]", help="the KRaft controller quorum"
    )
    where.add_argument(
        "--bootstrap-server",
        metavar="HOST:PORT[,...]",
        help="any broker, over Kafka's protocol (a ZooKeeper-mode cluster too)",
    )
    admin.add_argument("--timeout", type=float, default=30.0, help="seconds (default 30)")
    admin.set_defaults(run=run)
    verbs = admin.add_subparsers(dest="verb", required=True)

    v = verbs.add_parser("create-topic")
    v.add_argument("name")
    v.add_argument("--partitions", type=int32, required=True)
    v.add_argument("--replication-factor", type=int32, required=True)
    v.add_argument("--config", action="append", default=[], metavar="K=V")
    v.set_defaults(verb_run=create_topic)
    v = verbs.add_parser("delete-topic")
    v.add_argument("name")
    v.set_defaults(verb_run=delete_topic)
    v = verbs.add_parser("list-topics")
    v.add_argument("--json", action="store_true")
    v.set_defaults(verb_run=list_topics)
    v = verbs.add_parser("describe-topic")
    v.add_argument("name")
    v.add_argument("--json", action="store_true")
    v.set_defaults(verb_run=describe_topic)

    for verb, entities in (
        ("alter-config", [*CONFIG_ENTITIES, *QUOTA_ENTITIES]),
        ("alter-quota", list(QUOTA_ENTITIES)),
    ):
        v = verbs.add_parser(verb)
        _entity_args(v, entities)
        v.add_argument("--add-config", default="", metavar="K=V,...")
        v.add_argument("--delete-config", default="", metavar="K,...")
        v.set_defaults(verb_run=alter_config)
    v = verbs.add_parser("describe-config")
    _entity_args(v, [*CONFIG_ENTITIES, *QUOTA_ENTITIES])
    v.add_argument("--json", action="store_true")
    v.set_defaults(verb_run=describe_config)

    acl_verbs = (
        ("create-acl", create_acl, True),
        ("delete-acl", delete_acl, False),
        ("list-acls", list_acls, False),
    )
    for verb, handler, strict in acl_verbs:
        v = verbs.add_parser(verb)
        v.add_argument("--principal", required=strict, help="e.g. User:alice")
        v.add_argument("--host", default="*" if strict else None)
        v.add_argument("--operation", choices=sorted(OPERATIONS), required=strict)
        v.add_argument("--resource-type", choices=sorted(RESOURCE_TYPES), required=strict)
        v.add_argument("--resource-name", required=strict)
        v.add_argument(
            "--resource-pattern-type",
            choices=["literal", "prefixed"] if strict else sorted(PATTERNS),
            default="literal" if strict else "any",
        )
        v.add_argument(
            "--permission", choices=["allow", "deny"], default="allow" if strict else None
        )
        v.add_argument("--json", action="store_true")
        v.set_defaults(verb_run=handler)

    v = verbs.add_parser("alter-scram")
    v.add_argument("--user", required=True)
    v.add_argument("--mechanism", choices=sorted(MECHANISMS), default="SCRAM-SHA-256")
    v.add_argument("--iterations", type=int32, default=8192)
    how = v.add_mutually_exclusive_group(required=True)
    how.add_argument(
        "--password-env", metavar="VAR", help="read the password from this environment variable"
    )
    how.add_argument("--password-file", metavar="FILE", help="read the password from this file")
    how.add_argument("--delete", action="store_true", help="delete the user's credential")
    v.set_defaults(verb_run=alter_scram)


def _entity_args(parser: argparse.ArgumentParser, entities: list[str]) -> None:
    parser.add_argument("--entity-type", choices=entities, required=True)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--entity-name")
    which.add_argument("--entity-default", action="store_true")


def run(args: argparse.Namespace) -> int:
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
        print(f"Error: {exc.code.name} ({int(exc.code)}): {exc.message}", file=sys.stderr)
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


def create_topic(client: Any, args: argparse.Namespace) -> int:
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


def delete_topic(client: Any, args: argparse.Namespace) -> int:
    result = client.call("DeleteTopics", cpb.DeleteTopicsRequest(topic_names=[args.name])).results[
        0
    ]
    _check(args.name, result.error_code, result.error_message)
    print(f"Deleted topic {args.name}.")
    return EXIT_OK


def list_topics(client: Any, args: argparse.Namespace) -> int:
    names = [t.name for t in client.call("Metadata", cpb.MetadataRequest()).topics]
    if args.json:
        print_json(names)
    else:
        print("\n".join(names))
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


def describe_topic(client: Any, args: argparse.Namespace) -> int:
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


def alter_config(client: Any, args: argparse.Namespace) -> int:
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


def describe_config(client: Any, args: argparse.Namespace) -> int:
    name = _entity_name(args)
    values: dict[str, Any]
    if args.entity_type in QUOTA_ENTITIES:
        entity = cpb.QuotaEntity(entity_type=QUOTA_ENTITIES[args.entity_type])
        if name is not None:
            entity.entity_name = name
        response = client.call(
            "DescribeClientQuotas", cpb.DescribeClientQuotasRequest(entity=[entity])
        )
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
        print(f"  {key}={value}")
    return EXIT_OK


# --- ACLs --------------------------------------------------------------------------------------


def _filter(args: argparse.Namespace) -> cpb.AclFilter:
    f = cpb.AclFilter(
        resource_type=RESOURCE_TYPES[args.resource_type] if args.resource_type else ANY,
        pattern_type=PATTERNS[args.resource_pattern_type],
        operation=OPERATIONS[args.operation] if args.operation else ANY,
        permission_type={"allow": ALLOW, "deny": DENY}[args.permission] if args.permission else ANY,
    )
    for field in ("resource_name", "principal", "host"):
        if getattr(args, field) is not None:
            setattr(f, field, getattr(args, field))
    return f


def acl_json(b: Any) -> dict[str, Any]:
    return {
        "principal": b.principal,
        "host": b.host,
        "operation": _name(OPERATIONS, b.operation),
        "permission_type": "ALLOW" if b.permission_type == ALLOW else "DENY",
        "resource_type": _name(RESOURCE_TYPES, b.resource_type),
        "resource_name": b.resource_name,
        "pattern_type": "PREFIXED" if b.pattern_type == PREFIXED else "LITERAL",
    }


def _print_acls(acls: list[Any], as_json: bool) -> None:
    rows = [acl_json(b) for b in acls]
    if as_json:
        print_json(rows)
        return
    for r in rows:
        print(
            f"(principal={r['principal']}, host={r['host']}, operation={r['operation']}, "
            f"permissionType={r['permission_type']}) on {r['resource_type']}:"
            f"{r['pattern_type']}:{r['resource_name']}"
        )


def create_acl(client: Any, args: argparse.Namespace) -> int:
    binding = cpb.AclBinding(
        resource_type=RESOURCE_TYPES[args.resource_type],
        resource_name=args.resource_name,
        pattern_type=PATTERNS[args.resource_pattern_type],
        principal=args.principal,
        host=args.host,
        operation=OPERATIONS[args.operation],
        permission_type=ALLOW if args.permission == "allow" else DENY,
    )
    result = client.call("CreateAcls", cpb.CreateAclsRequest(creations=[binding])).results[0]
    _check("", result.error_code, result.error_message)
    _print_acls([binding], args.json)
    return EXIT_OK


def delete_acl(client: Any, args: argparse.Namespace) -> int:
    response = client.call("DeleteAcls", cpb.DeleteAclsRequest(filters=[_filter(args)]))
    _check("", response.results[0].error_code, response.results[0].error_message)
    _print_acls(list(response.acls), args.json)
    return EXIT_OK


def list_acls(client: Any, args: argparse.Namespace) -> int:
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


def alter_scram(client: Any, args: argparse.Namespace) -> int:
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
