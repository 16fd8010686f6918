"""The JSON form of metadata records: what ``zk2kraft log dump --json`` prints.

A contract that the Spark audit and the tests depend on. One object per record::

    {"offset": 12, "epoch": 1, "type": "TopicRecord", "name": "orders", "topic_id": "..."}

- field names are the records' snake_case names, in declaration order;
- integers are JSON numbers (also 64-bit ones), doubles are numbers;
- Kafka uuids (``topic_id``, ``incarnation_id``, an ACL entry's ``id``) are their
  22-character base64 form, other bytes plain base64;
- enum-valued fields are Kafka's numeric codes, as stored;
- unset optional fields are ``null`` (a config deletion, a default quota entity);
  a PartitionChangeRecord's replica lists are plain arrays or ``null`` (unchanged);
- secret material (SCRAM salt and keys, password-type config values) is the string
  ``"<redacted>"`` unless ``show_secrets`` is set.
"""

from __future__ import annotations

import base64
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from migration.proto.metadata_pb2 import MetadataRecord
from migration.records.kinds import kind_of, payload
from migration.records.secrets import REDACTED, SECRET_FIELDS, is_sensitive_config
from migration.records.uuids import uuid_text

UUID_FIELDS = frozenset(
    {"topic_id", "incarnation_id", "id", "directories", "log_dirs", "voter_directory_id"}
)
_ID_LISTS = frozenset({"ReplicaList", "UuidList"})  # a nullable list: its ids, or null


def record_json(
    record: MetadataRecord, offset: int, epoch: int, show_secrets: bool = False
) -> dict[str, Any]:
    """The JSON object of one record at ``offset`` written in leader ``epoch``."""
    inner = payload(record)
    out: dict[str, Any] = {"offset": offset, "epoch": epoch, "type": kind_of(record).type_name}
    out.update(message_json(inner))
    if not show_secrets:
        redact(out)
    return out


def message_json(msg: Message) -> dict[str, Any]:
    """Fields of ``msg`` as JSON values (no redaction)."""
    desc = msg.DESCRIPTOR
    out: dict[str, Any] = {}
    for f in desc.fields:
        if f.is_repeated:
            out[f.name] = [_value(f, v) for v in getattr(msg, f.name)]
        elif f.has_presence and not msg.HasField(f.name):
            out[f.name] = None
        else:
            out[f.name] = _value(f, getattr(msg, f.name))
    return out


def _id(name: str, value: Any) -> Any:
    """A broker id as it is; a uuid (16 bytes of a uuid field) as its 22 characters."""
    if isinstance(value, bytes):
        if name in UUID_FIELDS and len(value) == 16:
            return uuid_text(value)
        return base64.b64encode(value).decode()
    return value


def _value(f: Any, value: Any) -> Any:  # f: a FieldDescriptor (python or upb)
    if f.type == FieldDescriptor.TYPE_BYTES:
        return _id(f.name, value)
    if f.type == FieldDescriptor.TYPE_MESSAGE:
        if f.message_type is not None and f.message_type.name in _ID_LISTS:
            return [_id(f.name, v) for v in value.ids]
        return message_json(value)
    return value


def redact(obj: dict[str, Any]) -> None:
    """Replace the secret fields of one record's JSON object in place."""
    rtype = obj.get("type", "")
    for name in SECRET_FIELDS.get(rtype, ()):
        if name in obj:
            obj[name] = REDACTED
    if (
        rtype == "ConfigRecord"
        and obj.get("value") is not None
        and is_sensitive_config(obj.get("name", ""))
    ):
        obj["value"] = REDACTED
