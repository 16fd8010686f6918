"""Where Kafka keeps its metadata in ZooKeeper (paths relative to the cluster's chroot)."""

from __future__ import annotations

from migration.records.codes import RESOURCE_TYPES

CLUSTER_ID = "/cluster/id"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
BROKER_IDS = "/brokers/ids"
BROKER_SEQID = "/brokers/seqid"
TOPICS = "/brokers/topics"
CONFIG = "/config"
TOPIC_CONFIGS = f"{CONFIG}/topics/"  # the prefix of every topic's config znode
CONFIG_CHANGES = "/config/changes"
ACL_LITERAL = "/kafka-acl"
ACL_PREFIXED = "/kafka-acl-extended/prefixed"
ACL_CHANGES = "/kafka-acl-changes"
ACL_EXTENDED_CHANGES = "/kafka-acl-extended-changes"
DELEGATION_TOKENS = "/delegation_token/tokens"
TOKEN_CHANGES = "/delegation_token/token_changes"  # Kafka's token change notifications
DELETE_TOPICS = "/admin/delete_topics"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
ISR_CHANGES = "/isr_change_notification"
LOG_DIR_EVENTS = "/log_dir_event_notification"
PRODUCER_ID_BLOCK = "/latest_producer_id_block"
FEATURE = "/feature"
CONSUMERS = "/consumers"
MIGRATION = "/migration"

# The persistent znodes a Kafka broker creates at start-up (with null data), and the
# authorizer's. ``/latest_producer_id_block`` is one: empty until a first block is
# allocated, so writers set it and never create it.
PERSISTENT_PARENTS = (
    "/cluster",
    BROKER_IDS,
    TOPICS,
    "/brokers/seqid",
    "/config/topics",
    "/config/brokers",
    "/config/users",
    "/config/clients",
    "/config/ips",
    CONFIG_CHANGES,
    "/admin",
    DELETE_TOPICS,
    ISR_CHANGES,
    LOG_DIR_EVENTS,
    PRODUCER_ID_BLOCK,
    "/kafka-acl",
    ACL_CHANGES,
    "/kafka-acl-extended",
    ACL_PREFIXED,
    ACL_EXTENDED_CHANGES,
    "/delegation_token",
    DELEGATION_TOKENS,
    CONSUMERS,
    # The ACL resource-type directories, as the authorizer creates them at start-up.
    *(f"{root}/{name}" for root in ("/kafka-acl", ACL_PREFIXED) for name in RESOURCE_TYPES),
)

CONFIG_ENTITY_TYPES = ("topics", "brokers", "users", "clients", "ips")
DEFAULT_ENTITY = "<default>"


def broker(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic(name: str) -> str:
    return f"{TOPICS}/{name}"


def topic_partitions(name: str) -> str:
    return f"{TOPICS}/{name}/partitions"


def partition(name: str, partition_id: int) -> str:
    return f"{TOPICS}/{name}/partitions/{partition_id}"


def partition_state(name: str, partition_id: int) -> str:
    return f"{TOPICS}/{name}/partitions/{partition_id}/state"


def config_entity(entity_type: str, sanitized_name: str) -> str:
    return f"{CONFIG}/{entity_type}/{sanitized_name}"


def user_client_config(sanitized_user: str, sanitized_client: str) -> str:
    return f"{CONFIG}/users/{sanitized_user}/clients/{sanitized_client}"


def acl_resource(prefixed: bool, resource_type: str, name: str) -> str:
    return f"{ACL_PREFIXED if prefixed else ACL_LITERAL}/{resource_type}/{name}"


def delegation_token(token_id: str) -> str:
    return f"{DELEGATION_TOKENS}/{token_id}"


def delete_topic(name: str) -> str:
    return f"{DELETE_TOPICS}/{name}"


def consumer_group(group: str) -> str:
    return f"{CONSUMERS}/{group}"


def consumer_offset(group: str, topic_name: str, partition_id: int) -> str:
    return f"{CONSUMERS}/{group}/offsets/{topic_name}/{partition_id}"


def parents_of(path: str) -> list[str]:
    """Every proper ancestor of ``path``, shallowest first (``/a/b/c`` -> ``/a``, ``/a/b``)."""
    parts = path.strip("/").split("/")
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]
