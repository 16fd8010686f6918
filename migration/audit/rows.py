"""Both stores as the same normalized rows: ``(kind, entity, field, value)``.

One exporter reads either side through the mirror's :class:`~migration.bridge.mirror.ZkView`
(ZooKeeper as read: :class:`~migration.bridge.mirror.SnapshotView`; the metadata image as
the writer makes ZooKeeper hold it: :class:`~migration.bridge.mirror.ImageView`), so the
audit compares exactly what the ZooKeeper writer keeps equal, by the writer's own rules
(content, not bytes: JSON key order, ACL order and ids make no difference), and a
difference can only come from the data.

An entity is one znode's meaning, so that a read racing the writer sees each entity at
some offset, whole:

============== ================================ ================================================
kind           entity                           fields
============== ================================ ================================================
topic          topic name                       ``topic_id``; per partition ``p<N>.replicas``,
                                                ``p<N>.adding``, ``p<N>.removing``
partition      ``<topic>-<N>`` (the state znode) ``leader``, ``leader_epoch``, ``isr``,
                                                ``leader_recovery_state``, ``controller_epoch``
                                                (``<= E`` while within the claimed epoch E)
topic_config   topic name                       config name -> value
broker_config  broker id or ``<default>``       config name -> value (passwords hashed)
client_quota   path under ``/config``           quota key -> value (also SCRAM-only user
                                                znodes and the ``clients`` parents: no fields)
scram_credential sanitized user name            ``<mechanism>.iterations``,
                                                ``<mechanism>.credential`` (hashed)
acl            ACL znode path (no leading /)    one field per entry, by content
delegation_token token id                       ``token`` (the token's fields, hashed)
pending_deletion topic name                     none (ZooKeeper only)
============== ================================ ================================================

Secrets (SCRAM material, password configs, delegation tokens) become keyed hashes
(:class:`Hasher`): equal material gives equal hashes within one audit, and nothing
printed or written lets anyone recover or test a password offline. Each entity also
gets a 64-bit keyed digest of its fields, so that two stores are compared entity by
entity and expanded to fields only where digests differ.

The producer-id block, broker registrations and legacy consumer offsets are not rows:
the job checks the first with its own rule and reports the others as not compared.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass

from migration.bridge.mirror import MisstoredPassword, ZkView, is_entity
from migration.bridge.plan import acl_path
from migration.common.text import shown
from migration.records import codes
from migration.records.secrets import is_sensitive_config
from migration.records.tokens import token_values
from migration.zk import paths
from migration.zk.model import configs
from migration.zk.model.configs import ScramCredential

KINDS = (
    "topic",
    "partition",
    "topic_config",
    "broker_config",
    "client_quota",
    "scram_credential",
    "acl",
    "delegation_token",
    "pending_deletion",
)

Fields = tuple[tuple[str, str], ...]
"""An entity's (field, value) pairs, in an order both sides produce alike."""

ABSENT = 0
"""The digest of an entity that does not exist (never the digest of one that does)."""

_CONFIG_ROOT = paths.CONFIG + "/"
_BROKERS = _CONFIG_ROOT + "brokers/"
_USERS = _CONFIG_ROOT + "users/"


class Hasher:
    """Keyed BLAKE2b with a key drawn for one audit (never written anywhere): hashes
    of secrets to compare, and entity digests. Thread-safe (stateless after init)."""

    def __init__(self, key: bytes | None = None) -> None:
        self._key = key if key is not None else os.urandom(32)

    def secret(self, material: bytes) -> str:
        return "hash:" + hashlib.blake2b(material, key=self._key, digest_size=16).hexdigest()

    def digest(self, fields: Fields) -> int:
        """A signed 64-bit digest of ``fields`` (Parquet's and Spark's long), never ABSENT."""
        return self.digest_text(encode(fields))

    def digest_text(self, text: str) -> int:
        """The digest of fields already encoded (:func:`encode`)."""
        raw = hashlib.blake2b(text.encode(), key=self._key, digest_size=8).digest()
        return int.from_bytes(raw, "big", signed=True) or 1


def encode(fields: Fields) -> str:
    """Fields as one text: ``name\\x01value`` pairs joined by ``\\x00``."""
    return "\x00".join(map("\x01".join, fields))


def decode(text: str) -> Fields:
    """The fields :func:`encode` made ``text`` of."""
    return tuple(
        (name, value) for name, _, value in (p.partition("\x01") for p in text.split("\x00"))
    )


@dataclass(frozen=True, slots=True)
class Entity:
    kind: str
    key: str
    fields: Fields


def config_keys(path: str) -> tuple[tuple[str, str], ...]:
    """The entities a config znode holds: (kind, key) pairs."""
    if path.startswith(paths.TOPIC_CONFIGS):
        return (("topic_config", path[len(paths.TOPIC_CONFIGS) :]),)
    if path.startswith(_BROKERS):
        return (("broker_config", path[len(_BROKERS) :]),)
    key = path[len(_CONFIG_ROOT) :]
    user = key[len("users/") :]
    if path.startswith(_USERS) and is_entity(path) and "/" not in user:
        return (("client_quota", key), ("scram_credential", user))
    return (("client_quota", key),)


def _ints(values: tuple[int, ...]) -> str:
    return ",".join(map(str, values))


class Exporter:
    """The rows of one side. ``excluded_topics``: topics left out of the comparison
    (ZooKeeper's topics pending deletion that KRaft never had: the copy skips them and
    the full sync finishes deleting them). ``controller_epoch``: the claimed ZooKeeper
    controller epoch, which partition states must not exceed (docs/field-bugs.md#fb-24).
    ``excluded_kinds``: kinds of entity left out (the log's metadata.version predates
    them in KRaft). ``kafka_rules``: the log is Kafka's, whose writer leaves config
    znodes without fields behind (a removed quota entity, a topic's last config): such an
    entity counts as absent. Not thread-safe (the views cache)."""

    def __init__(
        self,
        view: ZkView,
        hasher: Hasher,
        controller_epoch: int,
        excluded_topics: frozenset[str] = frozenset(),
        *,
        excluded_kinds: frozenset[str] = frozenset(),
        kafka_rules: bool = False,
    ) -> None:
        self.view = view
        self.excluded_kinds = excluded_kinds
        self.kafka_rules = kafka_rules
        self.hasher = hasher
        self.controller_epoch = controller_epoch
        self._within = f"<= {controller_epoch}"
        self.excluded = excluded_topics
        self._acl_paths = {acl_path(p).removeprefix("/"): p for p in view.acl_patterns()}

    # --- every entity -------------------------------------------------------------------------

    def entities(self) -> Iterator[Entity]:
        """Every entity the side holds, kind by kind."""
        for kind, key, fields in self._walk():
            yield Entity(kind, key, decode(fields) if isinstance(fields, str) else fields)

    def digests(self) -> Iterator[tuple[str, str, int, int]]:
        """(kind, key, digest, number of fields) of every entity: :meth:`entities`
        digested, without a tuple per field for topics and partitions (a million)."""
        digest, digest_text = self.hasher.digest, self.hasher.digest_text
        for kind, key, fields in self._walk():
            if isinstance(fields, str):
                yield kind, key, digest_text(fields), fields.count("\x00") + 1
            else:
                yield kind, key, digest(fields), len(fields)

    def _walk(self) -> Iterator[tuple[str, str, Fields | str]]:
        """Every entity; topics' and partitions' fields as their encoded text (never
        empty: a topic has its id, a partition its leader)."""
        view = self.view
        for name in view.topic_names():
            if name in self.excluded:
                continue
            topic = self._topic_text(name)
            if topic is None:
                continue
            yield "topic", name, topic
            assignment = view.assignment(name)
            assert assignment is not None
            for pid in assignment.partitions:
                text = self._partition_text(name, pid)
                if text is not None:
                    yield "partition", f"{name}-{pid}", text
        yield from self._other_entities()

    def _other_entities(self) -> Iterator[tuple[str, str, Fields]]:
        view = self.view
        for path in view.config_paths():
            yield from self._config_entities(path)
        for key in self._acl_paths:
            yield "acl", key, self._acl(key)
        for token_id in view.token_ids():
            found = self.fields("delegation_token", token_id)
            if found is not None:
                yield "delegation_token", token_id, found
        for name in sorted(view.pending_deletions() - self.excluded):
            yield "pending_deletion", name, ()

    def _config_entities(self, path: str) -> Iterator[tuple[str, str, Fields]]:
        for kind, key in config_keys(path):
            found = self.fields(kind, key)
            if found is not None:
                yield kind, key, found

    # --- one entity ---------------------------------------------------------------------------

    def fields(self, kind: str, key: str) -> Fields | None:
        """The fields of entity ``key`` of ``kind``; None when the side does not hold it."""
        view = self.view
        if kind in self.excluded_kinds:
            return None
        if kind == "topic":
            if key in self.excluded:
                return None
            text = self._topic_text(key)
            return None if text is None else decode(text)
        if kind == "partition":
            name, _, number = key.rpartition("-")
            if name in self.excluded or not number.isdigit():
                return None
            text = self._partition_text(name, int(number))
            return None if text is None else decode(text)
        if kind == "topic_config":
            return None if key in self.excluded else self._config(paths.TOPIC_CONFIGS + key, kind)
        if kind == "broker_config":
            return self._config(_BROKERS + key, kind)
        if kind == "client_quota":
            return self._config(_CONFIG_ROOT + key, kind)
        if kind == "scram_credential":
            return self._config(_USERS + key, kind)
        if kind == "acl":
            return self._acl(key) if key in self._acl_paths else None
        if kind == "delegation_token":
            t = view.token(key)
            if t is None:
                return None
            material = "\x00".join(
                ",".join(v) if name == "renewers" else str(v) for name, v in token_values(t).items()
            )
            return (("token", self.hasher.secret(material.encode())),)
        if kind == "pending_deletion":
            return () if key in view.pending_deletions() - self.excluded else None
        raise ValueError(f"unknown entity kind {shown(kind)}")

    def _topic_text(self, name: str) -> str | None:
        """A topic znode's fields, encoded (the hot path: a field per partition)."""
        a = self.view.assignment(name)
        if a is None:
            return None
        out = [f"topic_id\x01{a.topic_id or ''}"]
        for pid, replicas in sorted(a.partitions.items()):
            out.append(f"p{pid}.replicas\x01{_ints(replicas)}")
            if pid in a.adding:
                out.append(f"p{pid}.adding\x01{_ints(a.adding[pid])}")
            if pid in a.removing:
                out.append(f"p{pid}.removing\x01{_ints(a.removing[pid])}")
        return "\x00".join(out)

    def _partition_text(self, name: str, pid: int) -> str | None:
        """A partition state's fields, encoded (the hot path: a million partitions)."""
        s = self.view.state(name, pid)
        if s is None:
            return None
        claimed = self.controller_epoch
        epoch = self._within if s.controller_epoch <= claimed else str(s.controller_epoch)
        return (
            f"leader\x01{s.leader}\x00leader_epoch\x01{s.leader_epoch}\x00isr\x01"
            f"{_ints(s.isr)}\x00leader_recovery_state\x01{s.leader_recovery_state}"
            f"\x00controller_epoch\x01{epoch}"
        )

    def _config(self, path: str, kind: str) -> Fields | None:
        content = self.view.config(path)
        if content is None:
            return None
        out: list[tuple[str, str]] = []
        scram = kind == "scram_credential"
        for name, value in sorted(content.items()):
            if isinstance(value, ScramCredential) != scram:
                continue
            if isinstance(value, ScramCredential):
                material = value.salt + b"\x00" + value.stored_key + b"\x00" + value.server_key
                out.append((f"{name}.iterations", str(value.iterations)))
                out.append((f"{name}.credential", self.hasher.secret(material)))
            elif isinstance(value, float):
                out.append((name, configs.render_quota_value(value)))
            elif isinstance(value, MisstoredPassword):
                out.append((name, f"<password stored {value.how}>"))
            elif is_sensitive_config(name):
                out.append((name, self.hasher.secret(str(value).encode())))
            else:
                out.append((name, str(value)))
        if not out and (scram or self.kafka_rules):
            return None  # a user znode without SCRAM credentials; Kafka's empty znodes
        return tuple(out)

    def _acl(self, key: str) -> Fields:
        entries = self.view.acl_entries(self._acl_paths[key])
        return tuple(
            sorted(
                (
                    f"{e.principal} {e.host} {codes.OPERATION_NAMES.get(e.operation, e.operation)}"
                    f" {codes.PERMISSION_NAMES.get(e.permission_type, e.permission_type)}",
                    "present",
                )
                for e in entries
            )
        )
