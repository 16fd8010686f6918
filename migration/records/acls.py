"""An ACL's fields, one list for every form that carries them under Kafka's names:
ZooKeeper's :class:`~migration.zk.model.acls.ResourceAcls` (the pattern) with its
:class:`~migration.zk.model.acls.AclEntry` entries, the AccessControlEntryRecord, the
image's AclImage, the admin API's AclBinding and Kafka's wire structures (through
:mod:`migration.kafka.security_wire`, which adds the wire's spellings).

Kafka splits an ACL in two, as here: its resource pattern and its access control entry.
"""

from __future__ import annotations

from typing import Any

PATTERN_FIELDS = ("resource_type", "resource_name", "pattern_type")
ENTRY_FIELDS = ("principal", "host", "operation", "permission_type")
ACL_FIELDS = PATTERN_FIELDS + ENTRY_FIELDS


def pattern_values(pattern: object) -> dict[str, Any]:
    """The resource pattern's fields of ``pattern`` (any form above), by name."""
    return {name: getattr(pattern, name) for name in PATTERN_FIELDS}


def entry_values(entry: object) -> dict[str, Any]:
    """The access control entry's fields of ``entry`` (any form above), by name."""
    return {name: getattr(entry, name) for name in ENTRY_FIELDS}


def acl_values(pattern: object, entry: object | None = None) -> dict[str, Any]:
    """An ACL's fields by name: the pattern's from ``pattern``, the entry's from
    ``entry`` (``pattern`` itself when None, for the forms that hold both)."""
    return pattern_values(pattern) | entry_values(pattern if entry is None else entry)


def acl_content(record: Any) -> bytes:
    """An AccessControlEntryRecord's content without its id, serialized: what tells two
    entries apart (the id is a name the copy gives each)."""
    bare = type(record)()
    bare.CopyFrom(record)
    bare.ClearField("id")
    return bytes(bare.SerializeToString(deterministic=True))
