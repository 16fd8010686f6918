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
replaced disk -- and stays an observer until a VotersRecord naming its node id and this
``directory.id`` is in its log (:mod:`migration.raft.voters`).

Where "joining" is kept: in ``bootstrap.checkpoint``, as Kafka's format keeps it. Kafka's
``--no-initial-controllers`` formats for a dynamic quorum (a ``kraft.version`` 1
FeatureLevelRecord in the bootstrap metadata) with no voter set of its own, so the node
can only learn the voters from the leader; the default format with
``controller.quorum.voters`` is kraft.version 0 (static). The file is written whole at
format, before ``meta.properties`` (a formatted directory always says how), and never
rewritten; ``read_storage`` reads its first batch.

A directory formatted without a ``directory.id`` gets one at startup
(:func:`ensure_directory_id`, as Kafka's controller does), written into
``meta.properties``.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path

from migration.common.files import DanglingSymlinkError, ensure_dir, replace_contents
from migration.common.text import shown
from migration.log.batch import decode_records, encode_batch, frame_record
from migration.log.errors import CorruptLogError
from migration.log.files import open_regular
from migration.log.frame_file import FrameFile
from migration.proto.metadata_pb2 import MetadataRecord
from migration.raft.voters import valid_directory_id
from migration.records import versions
from migration.records.uuids import new_uuid, uuid_text

log = logging.getLogger(__name__)

META_PROPERTIES = "meta.properties"
KRAFT_VERSION = "kraft.version"
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
            f"cluster id {shown(cluster_id)} is not Kafka's form (letters, digits, '-' and '_', "
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
    levels = {versions.METADATA_VERSION: metadata_version}
    if not initial_controllers:
        levels[KRAFT_VERSION] = 1  # Kafka's --no-initial-controllers: a dynamic quorum
    records = []
    for name, level in levels.items():
        record = MetadataRecord()
        record.feature_level_record.name = name
        record.feature_level_record.feature_level = level
        records.append(frame_record(record.SerializeToString()))
    batch = encode_batch(0, 0, int(time.time() * 1000), records)
    replace_contents(directory / BOOTSTRAP, batch)  # before meta.properties (the module)
    storage = Storage(
        node_id, cluster_id, uuid_text(new_uuid()), metadata_version, not initial_controllers
    )
    replace_contents(directory / META_PROPERTIES, _render_meta(storage))
    return storage


def ensure_directory_id(directory: Path) -> Storage | None:
    """What ``directory`` says (None: not formatted), with a ``directory.id`` assigned
    and written into ``meta.properties`` first if it had none (Kafka assigns a missing
    one at startup)."""
    storage = read_storage(directory)
    if storage is None or storage.directory_id:
        return storage
    storage = replace(storage, directory_id=uuid_text(new_uuid()))
    replace_contents(directory / META_PROPERTIES, _render_meta(storage))
    log.info("%s: assigned directory.id %s", directory / META_PROPERTIES, storage.directory_id)
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
    directory_id = props.get("directory.id", "")
    if directory_id and not valid_directory_id(directory_id):
        raise StorageError(f"{path}: directory.id {shown(directory_id)} is not a directory id")
    metadata_version, joining = _bootstrap(directory / BOOTSTRAP)
    return Storage(
        int(props["node.id"]), props["cluster.id"], directory_id, metadata_version, joining
    )


def _bootstrap(path: Path) -> tuple[int, bool]:
    """The metadata.version of ``bootstrap.checkpoint`` and whether it says kraft.version
    1 (formatted with --no-initial-controllers)."""
    if not path.exists():
        return versions.LATEST, False
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
    levels = {
        r.feature_level_record.name: int(r.feature_level_record.feature_level)
        for r in decode_records(data, 0, header)
        if r.WhichOneof("record") == "feature_level_record"
    }
    if versions.METADATA_VERSION not in levels:
        raise StorageError(f"{path}: no metadata.version record")
    return levels[versions.METADATA_VERSION], levels.get(KRAFT_VERSION, 0) >= 1
