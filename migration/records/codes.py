"""Kafka's enum codes, in one home: every layer (ZooKeeper codecs, records, the
controller, the CLI) takes them from here.

Names are Kafka's own spellings (ZooKeeper paths and Java enums: ``TransactionalId``,
``DescribeConfigs``); the CLI derives its kebab-case words from them."""

from __future__ import annotations

# ConfigResource.Type
TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4

# ResourceType (ACLs); 1 is ANY in filters.
RESOURCE_TYPES = {
    "Topic": 2,
    "Group": 3,
    "Cluster": 4,
    "TransactionalId": 5,
    "DelegationToken": 6,
    "User": 7,
}
RESOURCE_TYPE_NAMES = {code: name for name, code in RESOURCE_TYPES.items()}

# PatternType
PATTERN_ANY, PATTERN_MATCH, PATTERN_LITERAL, PATTERN_PREFIXED = 1, 2, 3, 4
PATTERN_TYPES = {
    "ANY": PATTERN_ANY,
    "MATCH": PATTERN_MATCH,
    "LITERAL": PATTERN_LITERAL,
    "PREFIXED": PATTERN_PREFIXED,
}

# AclOperation; 1 is ANY in filters.
OPERATIONS = {
    "All": 2,
    "Read": 3,
    "Write": 4,
    "Create": 5,
    "Delete": 6,
    "Alter": 7,
    "Describe": 8,
    "ClusterAction": 9,
    "DescribeConfigs": 10,
    "AlterConfigs": 11,
    "IdempotentWrite": 12,
    "CreateTokens": 13,
    "DescribeTokens": 14,
}
OPERATION_NAMES = {code: name for name, code in OPERATIONS.items()}

# AclPermissionType; 1 is ANY in filters.
ANY = 1
PERMISSIONS = {"Deny": 2, "Allow": 3}
PERMISSION_NAMES = {code: name for name, code in PERMISSIONS.items()}
DENY, ALLOW = PERMISSIONS["Deny"], PERMISSIONS["Allow"]

# SecurityProtocol (broker endpoints)
SECURITY_PROTOCOLS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}

# ScramMechanism
SCRAM_MECHANISMS = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
SCRAM_MECHANISM_NAMES = {code: name for name, code in SCRAM_MECHANISMS.items()}

# Client quotas: each key's config type (LONG and INT take whole numbers), and which
# keys each entity type takes.
QUOTA_TYPES = {
    "producer_byte_rate": "long",
    "consumer_byte_rate": "long",
    "request_percentage": "double",
    "controller_mutation_rate": "double",
    "connection_creation_rate": "int",
}
_CLIENT_QUOTAS = frozenset(
    {"producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"}
)
QUOTA_KEYS_BY_ENTITY = {
    "user": _CLIENT_QUOTAS,
    "client-id": _CLIENT_QUOTAS,
    "ip": frozenset({"connection_creation_rate"}),
}

# DescribeConfigs' config_source: where a value comes from (Kafka's ConfigSource codes).
TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, DEFAULT_CONFIG = 1, 2, 3, 5


def cli_word(name: str) -> str:
    """Kafka's CamelCase name as a command-line word: ``TransactionalId`` ->
    ``transactional-id``."""
    out = []
    for i, char in enumerate(name):
        if char.isupper() and i:
            out.append("-")
        out.append(char.lower())
    return "".join(out)
