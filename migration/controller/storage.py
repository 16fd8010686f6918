"""A controller's storage as ``kafka-storage format`` leaves it: ``meta.properties``
(version 1: ``node.id``, ``cluster.id``, ``directory.id``) and ``bootstrap.checkpoint``
(the metadata.version a fresh quorum starts with) in the metadata log directory.

Contract: :func:`format_storage` refuses a directory that already holds a log or a
``meta.properties`` of another cluster or node (nothing is overwritten), and a log
directory that is -- or lies under -- a symlink to nothing, naming the link and its
target: following the link would create the directory wherever the link's volume is
not (:func:`migration.common.files.ensure_dir`). It writes each file whole (temporary file,
fsync, rename). :func:`read_storage` returns what a formatted directory says, None for
an unformatted one, and raises :class:`StorageError` naming the file for anything
unreadable (``bootstrap.checkpoint`` is read a batch, never whole).

Format modes, as ``kafka-storage format``: by default the node bootstraps the quorum
(a voter of ``controller.quorum.voters``); ``initial_controllers=False``
(``--no-initial-controllers``) formats a controller *joining* an existing quorum -- a
replaced disk: its ``quorum-voters`` file says so, and it stays an observer until a
VotersRecord naming its node id and this ``directory.id`` is in its log
(:mod:`migration.raft.voters`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from migration.common.files import DanglingSymlinkError, ensure_dir, replace_contents
from migration.log.batch import decode_records, encode_batch, frame_record
from migration.log.errors import CorruptLogError
from migration.log.files import open_regular
from migration.log.frame_file import FrameFile
from migration.proto.metadata_pb2 import MetadataRecord
from migration.raft.voters import FileVoterStore, VoterState, VoterStoreError
from migration.records import versions
from migration.records.uuids import new_uuid, uuid_text

META_PROPERTIES = "meta.properties"
BOOTSTRAP = "bootstrap.checkpoint"
CLUSTER_ID_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


class StorageError(RuntimeError):
    """The storage directory cannot be formatted or read; the message names the file."""


@dataclass(frozen=True)
class Storage:
    node_id: int
    cluster_id: str
    directory_id: str
    metadata_version: int
    joining: bool = False  # formatted with --no-initial-controllers


def cluster_id_problem(cluster_id: str) -> str | None:
    if not cluster_id or len(cluster_id) > 64 or not set(cluster_id) <= CLUSTER_ID_CHARS:
        return (
            f"cluster id {cluster_id!r} is not Kafka's form (letters, digits, '-' and '_', "
            "as in ZooKeeper's /cluster/id)"
        )
    return None


def format_storage(
    directory: Path,
    node_id: int,
    cluster_id: str,
    metadata_version: int,
    *,
    initial_controllers: bool = True,
) -> Storage:
    problem = cluster_id_problem(cluster_id)
    if problem:
        raise StorageError(problem)
    existing = read_storage(directory)
    if existing is not None:
        raise StorageError(
            f"{directory / META_PROPERTIES} already exists (cluster {existing.cluster_id}, "
            f"node {existing.node_id}): this directory is formatted; refusing to overwrite it"
        )
    if directory.exists() and any(p.name.endswith(".log") for p in directory.iterdir()):
        raise StorageError(f"{directory} already holds a metadata log; refusing to format it")
    try:
        ensure_dir(directory)
    except DanglingSymlinkError as exc:
        raise StorageError(str(exc)) from None
    record = MetadataRecord()
    record.feature_level_record.name = versions.METADATA_VERSION
    record.feature_level_record.feature_level = metadata_version
    batch = encode_batch(0, 0, int(time.time() * 1000), [frame_record(record.SerializeToString())])
    replace_contents(directory / BOOTSTRAP, batch)
    storage = Storage(
        node_id, cluster_id, uuid_text(new_uuid()), metadata_version, not initial_controllers
    )
    if storage.joining:  # before meta.properties: a formatted directory always says so
        FileVoterStore(directory).write(VoterState(joining=True))
    replace_contents(directory / META_PROPERTIES, _render_meta(storage))
    return storage


def formatted_as(directory: Path, node_id: int, cluster_id: str) -> Storage | None:
    """The storage already in ``directory`` when it was formatted for this node and
    cluster (Kafka's ``--ignore-formatted``: a restarted pod formats again harmlessly);
    None when it is not formatted. StorageError when it belongs to another node or
    cluster."""
    existing = read_storage(directory)
    if existing is None:
        return None
    if (existing.node_id, existing.cluster_id) != (node_id, cluster_id):
        raise StorageError(
            f"{directory / META_PROPERTIES} is formatted for cluster {existing.cluster_id}, "
            f"node {existing.node_id}, not cluster {cluster_id}, node {node_id}"
        )
    return existing


def _properties(path: Path) -> dict[str, str]:
    return dict(
        line.split("=", 1)
        for line in path.read_text(errors="replace").splitlines()
        if "=" in line and not line.startswith("#")
    )


def _render_meta(storage: Storage) -> bytes:
    return (
        "#\n#" + time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime()) + "\n"
        f"node.id={storage.node_id}\ndirectory.id={storage.directory_id}\nversion=1\n"
        f"cluster.id={storage.cluster_id}\n"
    ).encode()


def broker_cluster_id(directory: Path, node_id: int) -> str:
    """The cluster id of a KRaft-mode broker, from its first log dir's ``meta.properties``:
    version 1 (formatted, or written by an earlier KRaft run), or version 0 left by
    ZooKeeper mode (``broker.id``), which is rewritten whole as version 1 with
    ``node.id``, as Kafka's brokers do when they move to KRaft. StorageError when the
    file is missing, names another node, or is unreadable."""
    path = directory / META_PROPERTIES
    if not path.exists():
        raise StorageError(
            f"{path} is missing: a KRaft broker needs the cluster id its ZooKeeper-mode "
            "run wrote there (or `zk2kraft storage format`)"
        )
    props = _properties(path)
    if problem := cluster_id_problem(props.get("cluster.id", "")):
        raise StorageError(f"{path}: {problem}")
    cluster_id = props["cluster.id"]
    key = "node.id" if props.get("version") == "1" else "broker.id"
    if props.get(key, str(node_id)) != str(node_id):
        raise StorageError(f"{path} names {key} {props[key]}, but the config says {node_id}")
    if props.get("version") != "1":
        storage = Storage(node_id, cluster_id, uuid_text(new_uuid()), versions.LATEST)
        replace_contents(path, _render_meta(storage))
    return cluster_id


def read_storage(directory: Path) -> Storage | None:
    path = directory / META_PROPERTIES
    if not path.exists():
        return None
    props = _properties(path)
    if props.get("version") != "1" or not props.get("node.id", "").isdigit():
        raise StorageError(f"{path}: not a KRaft meta.properties (version=1 with node.id)")
    if problem := cluster_id_problem(props.get("cluster.id", "")):
        raise StorageError(f"{path}: {problem}")
    try:
        voters = FileVoterStore(directory).read()
    except VoterStoreError as exc:
        raise StorageError(str(exc)) from None
    return Storage(
        int(props["node.id"]),
        props["cluster.id"],
        props.get("directory.id", ""),
        _bootstrap_version(directory / BOOTSTRAP),
        voters is not None and voters.joining,
    )


def _bootstrap_version(path: Path) -> int:
    if not path.exists():
        return versions.LATEST
    try:
        fd = open_regular(path, os.O_RDONLY)
    except CorruptLogError as exc:
        raise StorageError(str(exc)) from None
    try:
        found = FrameFile(fd).header(0)  # one batch read, never the whole file
    finally:
        os.close(fd)
    if isinstance(found, str):
        raise StorageError(f"{path}: {found}")
    data, header = found
    for record in decode_records(data, 0, header):
        if record.WhichOneof("record") == "feature_level_record":
            return int(record.feature_level_record.feature_level)
    raise StorageError(f"{path}: no metadata.version record")
