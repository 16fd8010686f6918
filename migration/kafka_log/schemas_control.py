"""Kafka's KRaft control record schemas, transcribed as data.

The ``"type": "data"`` schemas that KRaft writes as control records (the record key is
the int16 key version 0 and the int16 control type of ``ControlRecordType``; the value is
the message below in its flexible encoding), from apache/kafka
``clients/src/main/resources/common/message/`` and checked against the ``kio`` package
generated from the same files. Each message's first field, ``Version`` (int16), is part
of the message: Kafka writes the body with ``MessageUtil.toByteBuffer`` and puts no
other version in front of it.

Control types 0 (ABORT) and 1 (COMMIT) are transaction markers, which the metadata log
never holds, so they have no schema here.
"""

from __future__ import annotations

from migration.kafka_log.schema import Field as F  # noqa: N817
from migration.kafka_log.schema import MessageSchema

__all__ = ["CONTROL_RECORDS"]

# LeaderChangeMessage's common struct "Voter".
_LEADER_CHANGE_VOTER = (
    F("VoterId", "int32", "0+"),
    F("VoterDirectoryId", "uuid", "1+"),
)

CONTROL_RECORDS: tuple[MessageSchema, ...] = (
    MessageSchema(
        name="LeaderChangeMessage", api_key=None, control_type=2, valid_versions="0-1",
        flexible_versions="0+",
        fields=(
            F("Version", "int16", "0+"),
            F("LeaderId", "int32", "0+", entity_type="brokerId"),
            F("Voters", "[]Voter", "0+", fields=_LEADER_CHANGE_VOTER),
            F("GrantingVoters", "[]Voter", "0+", fields=_LEADER_CHANGE_VOTER),
        ),
        notes="First record a new leader writes in its epoch. v1 (schema since 3.9, "
        "KIP-853): VoterDirectoryId in each voter; Kafka through 4.1 still writes and "
        "reads v0 (ControlRecordUtils.LEADER_CHANGE_CURRENT_VERSION = 0).",
    ),
    MessageSchema(
        name="SnapshotHeaderRecord", api_key=None, control_type=3, valid_versions="0",
        flexible_versions="0+",
        fields=(
            F("Version", "int16", "0+"),
            F("LastContainedLogTimestamp", "int64", "0+"),
        ),
        notes="Opens every snapshot (and bootstrap.checkpoint), alone in the first batch.",
    ),
    MessageSchema(
        name="SnapshotFooterRecord", api_key=None, control_type=4, valid_versions="0",
        flexible_versions="0+",
        fields=(F("Version", "int16", "0+"),),
        notes="Closes every snapshot, alone in the last batch.",
    ),
    MessageSchema(
        name="KRaftVersionRecord", api_key=None, control_type=5, valid_versions="0",
        flexible_versions="0+",
        fields=(
            F("Version", "int16", "0+"),
            F("KRaftVersion", "int16", "0+"),
        ),
        notes="The finalized kraft.version (KIP-853; schema from 3.8, written when "
        "kraft.version is 1, 3.9+).",
    ),
    MessageSchema(
        name="VotersRecord", api_key=None, control_type=6, valid_versions="0",
        flexible_versions="0+",
        fields=(
            F("Version", "int16", "0+"),
            F("Voters", "[]Voter", "0+", fields=(
                F("VoterId", "int32", "0+", entity_type="brokerId"),
                F("VoterDirectoryId", "uuid", "0+"),
                F("Endpoints", "[]Endpoint", "0+", fields=(
                    F("Name", "string", "0+"),
                    F("Host", "string", "0+"),
                    F("Port", "uint16", "0+"),
                )),
                F("KRaftVersionFeature", "KRaftVersionFeature", "0+", fields=(
                    F("MinSupportedVersion", "int16", "0+"),
                    F("MaxSupportedVersion", "int16", "0+"),
                )),
            )),
        ),
        notes="The voter set (KIP-853, dynamic quorum; written when kraft.version is 1).",
    ),
)  # fmt: skip
