"""The hand-over to real Kafka 4.1: ``zk2kraft log export --format kafka`` of a dry run
that holds every entity kind, read by Kafka 4.1.2's own tools (MetadataShell,
DumpLogSegments) and served by a Kafka 4.1.2 KRaft controller started on the exported
directory plus a broker, as a real admin client (kafka-python) sees them; then Kafka's
own snapshot of what it loaded, read back by zk2kraft.

What Kafka does that is not a difference in the export (docs/kafka-log.md, "Handing
the export to Kafka 4.1"): the shell can answer before its loader has published the
whole snapshot (asked again here, in one interactive shell), it names a default
client-quota entity by an empty string, and logs each snapshot control record as an
error; the controller leads no partition whose replicas never register and so writes
leader -1 for those; a 4.x snapshot no longer carries the ZkMigrationStateRecord.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

import pytest
from kafka.admin import (
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ConfigResource,
    ConfigResourceType,
    KafkaAdminClient,
    ResourcePatternFilter,
    ResourceType,
)
from kafka.protocol.admin import DescribeClientQuotasRequest

from migration.image.at_offset import image_at
from migration.image.model import ZK_MIGRATION_MIGRATION, ZK_MIGRATION_NONE, MetadataImage
from migration.local import seed
from migration.local.kafka import KafkaGroup, KafkaNode
from migration.local.kafka_release import KafkaRelease, kafka_release
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.records.uuids import uuid_text
from migration.zk.client import ZkClient
from tests.support import EVERYTHING, zk2kraft

VERSION = "4.1.2"
CONTROLLER_ID = 3000  # the export's meta.properties names it (--node-id)
BROKER_ID = 1  # a broker of the ZooKeeper cluster, come back in KRaft mode
TOPIC, BROKER = 2, 4  # ConfigResource types
TOPIC_SOURCE = "DYNAMIC_TOPIC_CONFIG"  # a topic's own config, as DescribeConfigs says
SHELL_WAIT_S = 120.0  # hang guard: the shell publishes the snapshot well within it
SHELL_PROMPT = b">> "
# Kafka's tokens carry no HMAC in the log: each node recomputes it with this key (the
# ZooKeeper brokers' delegation.token.secret.key), and without one Kafka's
# DelegationTokenPublisher faults on every publication.
SECURITY = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
    "delegation.token.secret.key": "zk2kraft-handover-token-key",
}
_PAYLOAD_TYPE = re.compile(r'payload: \{"type":"([A-Z_]+)"')
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


@dataclass(frozen=True)
class Handover:
    """The dry run's log, its manifest, its image and the export of it."""

    log_dir: Path
    manifest: dict[str, Any]
    image: MetadataImage
    export: Path
    snapshot: Path
    cluster_id: str
    work: Path


@pytest.fixture(scope="module")
def handover(
    zk_server: EmbeddedZooKeeper, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Handover]:
    """A tree with every entity kind (tests/support.py EVERYTHING: topics and configs,
    broker configs with an encrypted password, quotas with defaults, SCRAM users, literal
    and prefixed ACLs, delegation tokens), dry-run and exported for Kafka."""
    work = tmp_path_factory.mktemp("handover")
    connect = f"{zk_server.connect_string}/handover-{uuid.uuid4().hex[:8]}"
    with ZkClient(connect) as zk:
        zk.ensure_chroot()
        seed.write(zk, seed.generate(EVERYTHING))
    secret = work / "encoder-secret"
    secret.write_text(seed.SEED_PASSWORD_ENCODER_SECRET)
    log_dir = work / "log"
    copied = zk2kraft("migrate", "--dry-run", "--zk", connect, "--log-dir", str(log_dir),
                      "--password-encoder-secret-file", str(secret), "--json")  # fmt: skip
    assert copied.returncode == 0, copied.stdout + copied.stderr
    export = work / "export"
    done = zk2kraft("log", "export", "--log-dir", str(log_dir), "--format", "kafka",
                    "--out", str(export), "--node-id", str(CONTROLLER_ID), "--json")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    exported = json.loads(done.stdout)
    image = image_at(log_dir, None).image
    yield Handover(log_dir, json.loads(copied.stdout), image, export,
                   Path(exported["snapshot"]), exported["cluster_id"], work)  # fmt: skip


def _kafka_type(name: str) -> str:
    """zk2kraft's record type name as Kafka's decoder prints it: ``TopicRecord`` ->
    ``TOPIC_RECORD``."""
    return _CAMEL.sub("_", name).upper()


def _listings(text: str, paths: list[str]) -> dict[str, list[str]] | None:
    """The shell's ``ls`` of several ``paths``: each listing under a line naming it
    (``byName:``) and ending with an empty line (an entry may be empty). None when a
    listing is missing (the path was not there)."""
    lines = text.split("\n")
    heads = []
    at = 0
    for path in paths:
        head = f"{path.rsplit('/', 1)[-1]}:"
        if head not in lines[at:]:
            return None
        at = lines.index(head, at)
        heads.append(at)
        at += 1
    listed = {}
    for path, start, end in zip(paths, heads, [*heads[1:], len(lines)], strict=True):
        block = lines[start + 1 : end]
        listed[path] = block[:-1] if block and block[-1] == "" else block
    return listed


class _Shell:
    """Kafka's MetadataShell on a snapshot, interactive on pipes: one JVM, asked again
    until its loader has published the whole snapshot. The shell answers while its
    loader still applies the snapshot batch by batch; run once per command, on a busy
    machine it answered from a part of the image eight times running."""

    def __init__(self, release: KafkaRelease, snapshot: Path, work: Path) -> None:
        cmd = release.tool_command("metadata-shell", "--snapshot", str(snapshot), work_dir=work)
        self._stderr = (work / "metadata-shell.stderr").open("wb")
        self._proc = subprocess.Popen(cmd, cwd=work, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=self._stderr)  # fmt: skip
        self._pending = b""
        try:
            self._answer()  # the banner
        except BaseException:
            self.close()  # no prompt: the JVM must not outlive the test
            raise

    def __enter__(self) -> _Shell:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the shell: ``exit`` on its stdin, killed if it has not gone in 30 s."""
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.write(b"exit\n")
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._stderr.close()

    def _answer(self) -> str:
        """What the shell prints up to its next prompt (it does not echo the input)."""
        assert self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        deadline = time.monotonic() + SHELL_WAIT_S
        while not self._pending.endswith(SHELL_PROMPT):
            ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0.0))
            chunk = os.read(fd, 1 << 16) if ready else b""
            assert chunk, f"Kafka's metadata shell gave no prompt; it printed {self._pending!r}"
            self._pending += chunk
        answer = self._pending[: -len(SHELL_PROMPT)].decode()
        self._pending = b""
        return answer

    def ask(self, command: str, complete: Callable[[str], bool]) -> tuple[str, int]:
        """``command``'s answer and how many times it was asked: asked again while
        ``complete`` says no, until :data:`SHELL_WAIT_S` (the last answer then)."""
        assert self._proc.stdin is not None
        deadline = time.monotonic() + SHELL_WAIT_S
        asked = 0
        while True:
            self._proc.stdin.write(command.encode() + b"\n")
            self._proc.stdin.flush()
            asked += 1
            answer = self._answer()
            if complete(answer) or time.monotonic() > deadline:
                return answer, asked
            time.sleep(0.2)


def _shell_ls(shell: _Shell, expected: dict[str, list[str]]) -> dict[str, list[str]] | None:
    """``ls`` of the paths ``expected`` names (two or more) by Kafka's MetadataShell:
    ``{path: sorted entries}``, once it shows ``expected`` or gives up waiting; None when
    it never listed every path."""
    names = list(expected)
    want = {path: sorted(entries) for path, entries in expected.items()}

    def _sorted(text: str) -> dict[str, list[str]] | None:
        listed = _listings(text, names)
        return None if listed is None else {p: sorted(e) for p, e in listed.items()}

    answer, asked = shell.ask("ls " + " ".join(names), lambda text: _sorted(text) == want)
    print(f"Kafka's metadata shell listed {len(names)} paths after {asked} ask(s)")
    return _sorted(answer)


def _shell_cat(shell: _Shell, *paths: str) -> list[str]:
    """``cat`` of ``paths`` by Kafka's MetadataShell, asked again while some path is not
    found or the metadata.version is not yet published: the answer's lines."""
    answer, asked = shell.ask(
        "cat " + " ".join(paths),
        lambda text: not any(s in text for s in ("No such file or directory", "Optional.empty")),
    )
    print(f"Kafka's metadata shell showed {len(paths)} paths after {asked} ask(s)")
    return [line for line in answer.split("\n") if line]


def test_kafka_41_tools_read_the_export(handover: Handover) -> None:
    """Kafka 4.1.2's DumpLogSegments decodes every record of the exported snapshot (the
    dry run's records, the transaction markers aside) and its bootstrap.checkpoint;
    its MetadataShell loads the snapshot into the same topics, configs, quotas, SCRAM
    users, ACLs, tokens and metadata.version as zk2kraft's image."""
    release = kafka_release(VERSION)
    work = handover.work / "tools"
    image = handover.image
    dumped = release.run_tool("dump-log", "--cluster-metadata-decoder", "--files",
                              str(handover.snapshot), work_dir=work).stdout  # fmt: skip
    assert "Exception" not in dumped and "isvalid: false" not in dumped
    kafka_counts = Counter(_PAYLOAD_TYPE.findall(dumped))
    copied = {
        _kafka_type(name): count
        for name, count in handover.manifest["records"].items()
        if name not in {"BeginTransactionRecord", "EndTransactionRecord"}
    }
    assert kafka_counts == Counter(copied)
    assert dumped.count(" SnapshotHeader {") == dumped.count(" SnapshotFooter {") == 1
    assert set(re.findall(r'"TOPIC_RECORD".*?"name":"([^"]+)"', dumped)) == set(image.topic_ids)
    bootstrap = release.run_tool("dump-log", "--cluster-metadata-decoder", "--files",
                                 str(handover.export / "bootstrap.checkpoint"),
                                 work_dir=work).stdout  # fmt: skip
    level = image.features["metadata.version"]
    assert f'"name":"metadata.version","featureLevel":{level}' in bootstrap

    resources = ["BROKER" if name == "" else f"{('TOPIC', 'BROKER')[t == BROKER]}:{name}"
                 for (t, name), configs in image.configs.items() if configs]  # fmt: skip
    # the shell names an entity by its parts, a default one by an empty string
    kinds = {"user": "user", "client-id": "clientId", "ip": "ip"}
    entities = [
        "" if any(n is None for _, n in key) else "_".join(f"{kinds[t]}({n})" for t, n in key)
        for key in image.quotas
    ]
    expected = {
        "/image/topics/byName": list(image.topic_ids),
        "/image/configs": resources,
        "/image/clientQuotas": entities,
        **{
            f"/image/scram/{name}": [u for u, m in image.scram if m == mechanism]
            for mechanism, name in ((1, "SCRAM-SHA-256"), (2, "SCRAM-SHA-512"))
        },
        "/image/acls/byId": [uuid_text(i) for i in image.acls],
        "/image/delegationToken": list(image.delegation_tokens),
    }
    (user, mechanism), credential = next(iter(image.scram.items()))
    topic, configs = next(((n, c) for (t, n), c in image.configs.items() if t == TOPIC and c))
    key, value = next(iter(configs.items()))
    with _Shell(release, handover.snapshot, work) as shell:
        listed = _shell_ls(shell, expected)
        version, text, scram = _shell_cat(
            shell, "/image/features/metadataVersion", f"/image/configs/TOPIC:{topic}/{key}",
            f"/image/scram/SCRAM-SHA-{(256, 512)[mechanism - 1]}/{user}",
        )  # fmt: skip
    assert listed == {path: sorted(entries) for path, entries in expected.items()}
    assert level == 19 and version == "Optional[3.7-IV4]"
    assert text == value
    assert f"salt={credential.salt.hex()}," in scram
    assert f"iterations={credential.iterations})" in scram


def _acl_key(acl: Any) -> tuple[int, str, int, str, str, int, int]:
    """A kafka-python ACL as the image holds one (Kafka's codes)."""
    pattern = acl.resource_pattern
    return (int(pattern.resource_type), pattern.resource_name, int(pattern.pattern_type),
            acl.principal, acl.host, int(acl.operation), int(acl.permission_type))  # fmt: skip


def _image_view(image: MetadataImage) -> dict[str, Any]:
    """The image in the terms of :func:`_admin_view`."""
    topics = {
        topic.name: (str(uuid.UUID(bytes=topic.topic_id)),
                     {p: part.replicas for p, part in topic.partitions.items()})
        for topic in image.topics.values()
    }  # fmt: skip
    scram: dict[str, set[tuple[int, int]]] = {}
    for (user, mechanism), credential in image.scram.items():
        scram.setdefault(user, set()).add((mechanism, credential.iterations))
    return {
        "topics": topics,
        "topic_configs": {n: dict(c) for (t, n), c in image.configs.items() if t == TOPIC and c},
        "acls": {astuple(acl) for acl in image.acls.values()},
        "quotas": {key: dict(values) for key, values in image.quotas.items()},
        "scram": scram,
    }


def _admin_view(admin: KafkaAdminClient, topics: list[str]) -> dict[str, Any]:
    """What the broker serves, in the image's terms: topics (id, replicas per
    partition), topic configs (the topics' own), ACLs, client quotas, SCRAM users
    (mechanism, iterations); and broker ``BROKER_ID``'s configs, all of them."""
    served_topics = {
        t["name"]: (t["topic_id"], {p["partition_index"]: tuple(p["replica_nodes"])
                                    for p in t["partitions"]})
        for t in admin.describe_topics(topics)
    }  # fmt: skip
    configs = admin.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, name) for name in topics]
    )["topic"]
    broker = admin.describe_configs(
        [ConfigResource(ConfigResourceType.BROKER, str(BROKER_ID))], config_filter="all"
    )["broker"][str(BROKER_ID)]
    acl_filter = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                           ResourcePatternFilter(ResourceType.ANY, None,
                                                 ACLResourcePatternType.ANY))  # fmt: skip
    acls, error = admin.describe_acls(acl_filter)
    assert error.errno == 0, error

    async def quotas() -> Any:  # kafka-python has the request, not the method
        return await admin._manager.send(DescribeClientQuotasRequest(components=[], strict=False))

    answer = admin._manager.run(quotas)
    assert answer.error_code == 0, answer
    return {
        "topics": served_topics,
        "topic_configs": {
            name: {k: c["value"] for k, c in entries.items() if c["config_source"] == TOPIC_SOURCE}
            for name, entries in configs.items()
            if entries
        },
        "acls": {_acl_key(acl) for acl in acls},
        "quotas": {
            tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity)): {
                v.key: v.value for v in entry.values
            }
            for entry in answer.entries
        },
        "scram": {
            user: {(int(i["mechanism"]), i["iterations"]) for i in found["credential_infos"]}
            for user, found in admin.describe_user_scram_credentials().items()
        },
        "broker": broker,
    }


def _newest_checkpoint(partition: Path) -> Path | None:
    found = sorted(partition.glob("*.checkpoint"))
    return found[-1] if found else None


@pytest.mark.timeout(300)
def test_kafka_41_serves_the_export(handover: Handover) -> None:
    """A Kafka 4.1.2 controller started on the export (node id from its meta.properties)
    and a broker formatted with its cluster id serve, to kafka-python's admin client,
    the image's topics (ids, replicas), topic configs, broker configs (the password
    hidden), ACLs, client quotas and SCRAM users; no publisher of either node faults.
    Kafka's own snapshot of what it loaded reads back in zk2kraft to the same image,
    but for what the controller itself changed."""
    release = kafka_release(VERSION)
    nodes = handover.work / "kafka"
    shutil.copytree(handover.export, nodes / "controller" / "data")
    snapshot_soon = {"metadata.log.max.snapshot.interval.ms": "1000"}
    controller = KafkaNode.kraft(release, nodes / "controller", CONTROLLER_ID,
                                 roles=("controller",), extra=SECURITY | snapshot_soon)  # fmt: skip
    assert controller.controller_port is not None
    broker = KafkaNode.kraft(release, nodes / "broker", BROKER_ID, roles=("broker",),
                             voters={CONTROLLER_ID: controller.controller_port},
                             extra=SECURITY)  # fmt: skip
    broker.format(handover.cluster_id)
    image = handover.image
    exported = handover.snapshot.name
    with KafkaGroup() as group:
        group.start(controller)
        group.start(broker)
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="handover")
        try:
            served = _admin_view(admin, sorted(image.topic_ids))
        finally:
            admin.close()
        deadline = time.monotonic() + 60
        while (newest := _newest_checkpoint(controller.metadata_dir)) is None or (
            newest.name <= exported
        ):
            assert time.monotonic() < deadline, f"no snapshot of Kafka's:\n{controller.log_tail()}"
            time.sleep(0.25)
        group.stop()
    assert not controller.running and not broker.running

    expected = _image_view(image)
    counts = handover.manifest["image"]
    assert (len(expected["topics"]), len(expected["acls"]), len(expected["quotas"])) == (
        counts["topics"], counts["acl_entries"], counts["quota_entities"]
    )  # fmt: skip
    assert sum(len(found) for found in expected["scram"].values()) == counts["scram_credentials"]
    broker_configs = served.pop("broker")
    assert served == expected
    # broker 1's own configs, the password hidden as Kafka hides it; the cluster
    # default's dynamic configs (a non-dynamic one, log.retention.hours, Kafka ignores
    # as its ZooKeeper-mode brokers do)
    by_source: dict[str, dict[str, str | None]] = {}
    for name, entry in broker_configs.items():
        by_source.setdefault(entry["config_source"], {})[name] = entry["value"]
    own = image.config(BROKER, str(BROKER_ID))
    sensitive = {n for n, e in broker_configs.items() if e["is_sensitive"]}
    assert by_source["DYNAMIC_BROKER_CONFIG"] == {
        n: (None if n in sensitive else v) for n, v in own.items()
    }
    assert sensitive & set(own) == {"listener.name.ssl.ssl.key.password"}
    default = dict(image.config(BROKER, ""))
    assert default.pop("log.retention.hours") == "168"
    assert by_source["DYNAMIC_DEFAULT_BROKER_CONFIG"] == default
    for node in (controller, broker):
        log = node.log_path.read_text()
        assert "publishing fault" not in log, node.log_tail()
        assert "Non-dynamic configs will be ignored: Set(log.retention.hours)" in log

    # Kafka's own snapshot, alone, read by zk2kraft
    alone = handover.work / "kafka-snapshot" / "__cluster_metadata-0"
    alone.mkdir(parents=True)
    shutil.copy(newest, alone / newest.name)
    theirs = image_at(alone.parent, None, log_format="kafka").image
    assert _image_view(theirs) | {"topics": None} == expected | {"topics": None}
    for name, topic_id in image.topic_ids.items():
        ours, kafka = image.topics[topic_id], theirs.topic(name)
        assert kafka is not None and kafka.topic_id == topic_id
        assert {p: (k.replicas, k.adding_replicas, k.removing_replicas)
                for p, k in kafka.partitions.items()} == {
            p: (o.replicas, o.adding_replicas, o.removing_replicas)
            for p, o in ours.partitions.items()
        }  # fmt: skip
    assert theirs.configs == {k: v for k, v in image.configs.items() if v}
    assert theirs.scram == image.scram
    assert theirs.acls == image.acls
    assert theirs.delegation_tokens == image.delegation_tokens
    assert theirs.features["metadata.version"] == image.features["metadata.version"]
    assert set(theirs.brokers) == {BROKER_ID}
    assert (image.zk_migration_state, theirs.zk_migration_state) == (
        ZK_MIGRATION_MIGRATION,
        ZK_MIGRATION_NONE,
    )
