"""Kafka's ``metadata.version`` feature levels, and which record kinds need which.

A record kind the finalized metadata.version does not support is refused (Kafka answers
UNSUPPORTED_VERSION): a broker at that version could not read it.
"""

from __future__ import annotations

METADATA_VERSION = "metadata.version"

IBP_3_4_IV0 = 8  # the first metadata.version able to migrate from ZooKeeper
IBP_3_5_IV2 = 11  # SCRAM credentials in KRaft
IBP_3_6_IV0 = 12  # the controller no longer bumps the leader epoch on an ISR shrink
IBP_3_6_IV1 = 13  # metadata transactions (KIP-868)
IBP_3_6_IV2 = 14  # delegation tokens in KRaft
IBP_3_9_IV0 = 21
LATEST = IBP_3_9_IV0  # what a fresh quorum is formatted with (kafka-storage's default)

NAMES = {
    IBP_3_4_IV0: "3.4-IV0",
    IBP_3_5_IV2: "3.5-IV2",
    IBP_3_6_IV0: "3.6-IV0",
    IBP_3_6_IV1: "3.6-IV1",
    IBP_3_6_IV2: "3.6-IV2",
    IBP_3_9_IV0: "3.9-IV0",
}

# MetadataRecord oneof field -> the lowest metadata.version level that carries it.
MINIMUM_LEVEL = {
    "user_scram_credential_record": IBP_3_5_IV2,
    "remove_user_scram_credential_record": IBP_3_5_IV2,
    "begin_transaction_record": IBP_3_6_IV1,
    "end_transaction_record": IBP_3_6_IV1,
    "abort_transaction_record": IBP_3_6_IV1,
    "delegation_token_record": IBP_3_6_IV2,
    "remove_delegation_token_record": IBP_3_6_IV2,
}


def name(level: int) -> str:
    return NAMES.get(level, f"level {level}")


def unsupported(record_field: str, level: int | None) -> str | None:
    """Why a record (its oneof field name) cannot be written at ``level`` (None: it can;
    no finalized metadata.version is below everything)."""
    needed = MINIMUM_LEVEL.get(record_field)
    if needed is None or (level is not None and level >= needed):
        return None
    at = "no metadata.version" if level is None else f"metadata.version {name(level)}"
    return f"{record_field} needs metadata.version {name(needed)} or later; the cluster has {at}"


# inter.broker.protocol.version (a release, "3.4" or "3.4-IV0") -> the highest
# metadata.version level a broker of that release supports.
IBP_RELEASES = {
    "3.0": 1, "3.1": 2, "3.2": 3, "3.3": 7, "3.4": IBP_3_4_IV0, "3.5": IBP_3_5_IV2,
    "3.6": IBP_3_6_IV2, "3.7": 19, "3.8": 20, "3.9": IBP_3_9_IV0,
}  # fmt: skip
MIN_SUPPORTED_LEVEL = 1  # 3.0-IV1, the first metadata.version


def ibp_level(text: str) -> int | None:
    """The metadata.version level of an inter.broker.protocol.version (None: unknown)."""
    release = ".".join(text.strip().split("-")[0].split(".")[:2])
    return IBP_RELEASES.get(release)
