"""A SCRAM credential's fields, one list for every form that carries them under Kafka's
names: ZooKeeper's :class:`~migration.zk.model.configs.ScramCredential`, the
UserScramCredentialRecord and the image's ScramImage (the user and mechanism are each
form's key); and an upsertion's, for the admin API's ScramUpsertion and Kafka's wire.
Secret material: the values are passed along, never shown."""

from __future__ import annotations

from typing import Any

CREDENTIAL_FIELDS = ("salt", "stored_key", "server_key", "iterations")
UPSERTION_FIELDS = ("name", "mechanism", "iterations", "salt", "salted_password")
DELETION_FIELDS = ("name", "mechanism")


def credential_values(credential: object) -> dict[str, Any]:
    """The credential's material by name."""
    return {name: getattr(credential, name) for name in CREDENTIAL_FIELDS}


def upsertion_values(upsertion: object) -> dict[str, Any]:
    """An upsertion's fields by name (the salted password the server derives keys from)."""
    return {name: getattr(upsertion, name) for name in UPSERTION_FIELDS}


def deletion_values(deletion: object) -> dict[str, Any]:
    """A deletion's fields by name."""
    return {name: getattr(deletion, name) for name in DELETION_FIELDS}
