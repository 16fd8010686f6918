"""Against a real ZooKeeper: seed a cluster, dry-run the migration into a local log,
dump it, and find every seeded entity with the right values; bad data fails with the
named error and leaves no partial log behind."""

from __future__ import annotations

import base64
import json
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from migration.bridge.preflight import CopyRefusedError
from migration.bridge.translate import CopyError
from migration.controller.config import DEFAULT_MIN_BATCH_SIZE
from migration.driver.copy import dry_run
from migration.local import seed
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.model import passwords
from migration.zk.model.topics import TopicAssignment, render_topic
from migration.zk.multiwrite import set_data
from migration.zk.reader import read_snapshot
from migration.zk.tree_read import ZkSnapshot
from tests.support import EVERYTHING, zk2kraft

SECRET = seed.SEED_PASSWORD_ENCODER_SECRET


def dump(log_dir: Path, *extra: str) -> list[dict[str, Any]]:
    result = zk2kraft("log", "dump", "--log-dir", str(log_dir), "--json", *extra)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def by_type(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        out[r["type"]].append(r)
    return out


@pytest.fixture
def seeded(zk: ZkClient) -> ZkSnapshot:
    snap = seed.generate(EVERYTHING)
    seed.write(zk, snap)
    return snap


def test_every_seeded_entity_is_in_the_log(
    zk: ZkClient, seeded: ZkSnapshot, tmp_path: Path
) -> None:
    log_dir = tmp_path / "log"
    manifest = dry_run(zk, log_dir, batch_bytes=16 * 1024, password_encoder_secret=SECRET)
    # min.batch.size records a batch, fewer where 16 KiB bounds them
    assert manifest.batches >= -(-manifest.total_records // DEFAULT_MIN_BATCH_SIZE)
    assert manifest.batches > 1
    records = dump(log_dir, "--show-secrets")
    assert [r["offset"] for r in records] == list(range(len(records)))
    assert records[0]["type"] == "BeginTransactionRecord"
    assert [r["type"] for r in records[-2:]] == ["ZkMigrationStateRecord", "EndTransactionRecord"]
    assert records[-2]["zk_migration_state"] == 1
    assert manifest.total_records == len(records)
    assert manifest.transaction == {"begin_offset": 0, "end_offset": len(records) - 1}
    t = by_type(records)
    assert {k: len(v) for k, v in t.items()} == manifest.records

    # Topics and partitions, pending deletions left out.
    live = {n: s for n, s in seeded.topics.items() if n not in seeded.pending_deletions}
    assert seeded.pending_deletions and len(live) < len(seeded.topics)
    assert {r["name"]: r["topic_id"] for r in t["TopicRecord"]} == {
        n: s.assignment.topic_id for n, s in live.items()
    }
    names = {r["topic_id"]: r["name"] for r in t["TopicRecord"]}
    partitions = {(names[r["topic_id"]], r["partition_id"]): r for r in t["PartitionRecord"]}
    assert len(partitions) == sum(len(s.assignment.partitions) for s in live.values())
    for name, topic in live.items():
        a = topic.assignment
        for pid, replicas in a.partitions.items():
            p = partitions[(name, pid)]
            assert p["replicas"] == list(replicas)
            assert p["adding_replicas"] == list(a.adding.get(pid, ()))
            assert p["removing_replicas"] == list(a.removing.get(pid, ()))
            ps = topic.partitions.get(pid)
            if ps is None or ps.state is None:
                assert (p["isr"], p["leader"], p["leader_epoch"]) == (
                    list(replicas),
                    replicas[0],
                    0,
                )
            else:
                assert p["isr"] == list(ps.state.isr)
                assert (p["leader"], p["leader_epoch"]) == (ps.state.leader, ps.state.leader_epoch)
                assert p["partition_epoch"] == ps.zk_version

    # Configs: topics (migrated ones only) and brokers, <default> as "".
    configs = {
        (r["resource_type"], r["resource_name"], r["name"]): r["value"] for r in t["ConfigRecord"]
    }
    expected = {
        (2, n, k): v for n, c in seeded.topic_configs.items() if n in live for k, v in c.items()
    }
    expected |= {
        (4, b or "", k): passwords.decode(v, SECRET) if passwords.is_encoded(v) else v
        for b, c in seeded.broker_configs.items()
        for k, v in c.items()
    }
    assert configs == expected
    assert ("", 4) in {(r["resource_name"], r["resource_type"]) for r in t["ConfigRecord"]}

    # Client quotas: desanitized names, <default> as null.
    quotas = {
        (tuple((e["entity_type"], e["entity_name"]) for e in r["entity"]), r["key"]): r["value"]
        for r in t["ClientQuotaRecord"]
    }
    assert quotas == {
        (entity, key): value
        for entity, values in seeded.quotas.items()
        for key, value in values.items()
    }
    assert any(name is None for (entity, _) in quotas for _, name in entity)

    # SCRAM, shown in full with --show-secrets.
    scram = {(r["name"], r["mechanism"]): r for r in t["UserScramCredentialRecord"]}
    assert len(scram) == sum(len(c) for c in seeded.scram.values())
    for user, creds in seeded.scram.items():
        for mechanism, cred in creds.items():
            r = scram[(user, mechanism)]
            assert base64.b64decode(r["salt"]) == cred.salt
            assert base64.b64decode(r["stored_key"]) == cred.stored_key
            assert r["iterations"] == cred.iterations

    # ACLs: one record per entry, Kafka's codes.
    acls = sorted(
        (
            r["resource_type"],
            r["resource_name"],
            r["pattern_type"],
            r["principal"],
            r["host"],
            r["operation"],
            r["permission_type"],
        )
        for r in t["AccessControlEntryRecord"]
    )
    assert acls == sorted(
        (
            a.resource_type,
            a.resource_name,
            a.pattern_type,
            e.principal,
            e.host,
            e.operation,
            e.permission_type,
        )
        for a in seeded.acls
        for e in a.entries
    )
    assert len({r["id"] for r in t["AccessControlEntryRecord"]}) == len(acls)

    # Delegation tokens, the producer-id block, brokers, metadata.version.
    tokens = {r["token_id"]: r for r in t["DelegationTokenRecord"]}
    for token_id, tok in seeded.delegation_tokens.items():
        r = tokens[token_id]
        assert (r["owner"], r["renewers"], r["expiration_timestamp"]) == (
            tok.owner,
            list(tok.renewers),
            tok.expiration_timestamp,
        )
    assert seeded.producer_id_block is not None
    assert t["ProducerIdsRecord"][0]["next_producer_id"] == seeded.producer_id_block.block_end + 1
    # ZooKeeper brokers register themselves over RPC: the copy lists them, writes none.
    assert "RegisterBrokerRecord" not in t
    assert manifest.zk_brokers == sorted(seeded.brokers)
    assert [r["name"] for r in t["FeatureLevelRecord"]] == ["metadata.version"]
    assert manifest.image["topics"] == len(live)


def test_secrets_are_redacted_by_default(zk: ZkClient, seeded: ZkSnapshot, tmp_path: Path) -> None:
    dry_run(zk, tmp_path / "log", password_encoder_secret=SECRET)
    result = zk2kraft("log", "dump", "--log-dir", str(tmp_path / "log"), "--json")
    scram = [json.loads(line) for line in result.stdout.splitlines() if "Scram" in line]
    assert scram and all(r["salt"] == r["stored_key"] == "<redacted>" for r in scram)
    for creds in seeded.scram.values():
        for cred in creds.values():
            assert base64.b64encode(cred.salt).decode() not in result.stdout
    assert "listener.name.ssl.ssl.key.password" in result.stdout
    for config in seeded.broker_configs.values():
        secret = config.get("listener.name.ssl.ssl.key.password")
        assert secret is None or secret not in result.stdout


def test_the_cli_dry_run_manifest_verify_and_dump_from(
    zk_connect: str, zk: ZkClient, tmp_path: Path
) -> None:
    seed.write(zk, seed.generate(seed.PROFILES["small"]))
    log_dir = tmp_path / "log"
    secret_file = tmp_path / "encoder-secret"
    secret_file.write_text(SECRET + "\n")
    with_secret = ("--password-encoder-secret-file", str(secret_file))
    result = zk2kraft(
        "migrate", "--dry-run", "--zk", zk_connect, "--log-dir", str(log_dir), "--json",
        *with_secret,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    manifest = json.loads(result.stdout)
    assert manifest["records"]["PartitionRecord"] == 200
    assert manifest["read_seconds"] > 0 and manifest["write_seconds"] > 0
    assert manifest["metadata_version"] >= 8

    text = zk2kraft(
        "migrate", "--dry-run", "--zk", zk_connect, "--log-dir", str(tmp_path / "t"), *with_secret
    )
    assert (
        text.returncode == 0
        and "one transaction" in text.stdout
        and "PartitionRecord" in text.stdout
    )

    verify = zk2kraft("log", "verify", "--log-dir", str(log_dir), "--json")
    assert verify.returncode == 0, verify.stdout
    check = json.loads(verify.stdout)
    assert check["ok"] and check["records"] == manifest["total_records"]
    assert check["image"]["partitions"] == 200

    tail = dump(log_dir, "--from", "5")
    assert tail[0]["offset"] == 5 and len(tail) == manifest["total_records"] - 5

    # The export names the cluster ZooKeeper's /cluster/id holds, without --cluster-id,
    # and its snapshot dumps.
    exported = tmp_path / "kafka"
    out = zk2kraft("log", "export", "--log-dir", str(log_dir), "--format", "kafka",
                   "--out", str(exported), "--json")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["cluster_id"] == read_snapshot(zk).cluster_id.id  # type: ignore[union-attr]
    from_export = dump(exported)
    assert {r["type"] for r in from_export} >= {"TopicRecord", "PartitionRecord"}
    assert all(r["snapshot"] for r in from_export)

    again = zk2kraft("migrate", "--dry-run", "--zk", zk_connect, "--log-dir", str(log_dir))
    assert again.returncode == 2 and "not an empty directory" in again.stderr
    live = zk2kraft("migrate", "--zk", zk_connect, "--log-dir", str(tmp_path / "x"))
    assert live.returncode == 2 and "zookeeper.metadata.migration.enable=true" in live.stderr


def _no_log_left(tmp_path: Path) -> None:
    assert [p.name for p in tmp_path.iterdir() if p.name != "encoder-secret"] == []


def test_password_configs_are_decrypted_never_copied_as_ciphertext(
    zk: ZkClient, seeded: ZkSnapshot, tmp_path: Path
) -> None:
    broker, config = next((b, c) for b, c in seeded.broker_configs.items() if b is not None)
    stored = config["listener.name.ssl.ssl.key.password"]
    assert passwords.is_encoded(stored)  # as Kafka keeps it in ZooKeeper
    with pytest.raises(CopyError, match=r"/config/brokers/\d+: listener.name.ssl.ssl.key.password"):
        dry_run(zk, tmp_path / "log")  # no secret: refused, naming the config
    _no_log_left(tmp_path)
    with pytest.raises(CopyError, match=r"password\.encoder\.secret is not the one"):
        dry_run(zk, tmp_path / "log", password_encoder_secret="not-the-secret")
    _no_log_left(tmp_path)
    dry_run(zk, tmp_path / "log", password_encoder_secret=SECRET)
    copied = [
        r["value"]
        for r in dump(tmp_path / "log", "--show-secrets")
        if r["type"] == "ConfigRecord" and r["name"] == "listener.name.ssl.ssl.key.password"
    ]
    assert copied == [passwords.decode(stored, SECRET)] and stored not in copied
    assert broker is not None


def _refusal(zk: ZkClient, tmp_path: Path) -> CopyRefusedError:
    """The dry run's refusal of ``zk``'s tree, which leaves no log behind."""
    with pytest.raises(CopyRefusedError) as refused:
        dry_run(zk, tmp_path / "log")
    _no_log_left(tmp_path)
    return refused.value


def test_a_malformed_znode_fails_the_copy_and_leaves_no_log(zk: ZkClient, tmp_path: Path) -> None:
    snap = seed.generate(seed.PROFILES["tiny"])
    seed.write(zk, snap)
    name = next(iter(snap.topics))
    zk.multi_write([set_data(paths.partition_state(name, 0), b'{"version":1,"leader":"x"}')])
    refused = _refusal(zk, tmp_path)
    assert refused.path == paths.partition_state(name, 0)
    assert str(refused).startswith(f"{paths.partition_state(name, 0)}: MALFORMED_ZNODE: ")


def test_a_topic_without_an_id_fails_the_copy_and_leaves_no_log(
    zk_connect: str, zk: ZkClient, tmp_path: Path
) -> None:
    snap = seed.generate(seed.PROFILES["tiny"])
    seed.write(zk, snap)
    name, topic = next(iter(snap.topics.items()))
    old = TopicAssignment(name, topic.assignment.partitions, None, version=1)
    zk.multi_write([set_data(paths.topic(name), render_topic(old))])
    refused = _refusal(zk, tmp_path)
    assert [(f.code, f.path) for f in refused.findings] == [("TOPIC_ID_MISSING", paths.topic(name))]
    result = zk2kraft(
        "migrate", "--dry-run", "--zk", zk_connect, "--log-dir", str(tmp_path / "log")
    )
    assert result.returncode == 2
    assert f"error: {paths.topic(name)}: TOPIC_ID_MISSING: topic {name} has no topic_id" in (
        result.stderr
    )
    _no_log_left(tmp_path)


def _bad_topic_id(zk: ZkClient) -> str:
    """A topic whose id Kafka's Uuid.fromString refuses too (a character outside the
    URL-safe alphabet)."""
    snap = seed.generate(seed.PROFILES["tiny"])
    seed.write(zk, snap)
    name, topic = next(iter(snap.topics.items()))
    bad = TopicAssignment(name, topic.assignment.partitions, "K16VvIw3TLmaYnQ6XjK4P!")
    zk.multi_write([set_data(paths.topic(name), render_topic(bad))])
    return paths.topic(name)


def _no_cluster(zk: ZkClient) -> str:
    return paths.CLUSTER_ID  # an empty chroot: no Kafka cluster under it


@pytest.mark.parametrize("damage", [_bad_topic_id, _no_cluster], ids=["bad-topic-id", "empty"])
def test_the_dry_run_refuses_what_the_preflight_blocks_with_its_codes_and_znodes(
    zk_connect: str, zk: ZkClient, tmp_path: Path, damage: Callable[[ZkClient], str]
) -> None:
    """The copy refuses exactly the preflight's blockers about the data, each named by
    its code and znode, from the command line too."""
    path = damage(zk)
    preflight = zk2kraft("preflight", "--zk", zk_connect, "--json")
    assert preflight.returncode == 1, preflight.stderr
    blockers = [(b["code"], b["path"]) for b in json.loads(preflight.stdout)["blockers"]]
    refused = _refusal(zk, tmp_path)
    assert [(f.code, f.path) for f in refused.findings] == blockers
    assert blockers[0][1] == path
    result = zk2kraft(
        "migrate", "--dry-run", "--zk", zk_connect, "--log-dir", str(tmp_path / "log")
    )
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {path}: {blockers[0][0]}: ")
    _no_log_left(tmp_path)


def test_a_topic_id_kafka_reads_despite_its_trailing_bits_is_copied_canonically(
    zk_connect: str, zk: ZkClient, tmp_path: Path
) -> None:
    """``K16VvIw3TLmaYnQ6XjK4P2``: its last character carries bits past the 128th, which
    Kafka's Uuid.fromString drops. The preflight is ready; the copy writes the uuid Kafka
    reads, in the form Kafka prints it (``...4Pw``); the writer finds the topic in sync."""
    snap = seed.generate(seed.PROFILES["tiny"])
    seed.write(zk, snap)
    name, topic = next(iter(snap.topics.items()))
    odd = TopicAssignment(name, topic.assignment.partitions, "K16VvIw3TLmaYnQ6XjK4P2")
    zk.multi_write([set_data(paths.topic(name), render_topic(odd))])
    preflight = zk2kraft("preflight", "--zk", zk_connect, "--json")
    assert preflight.returncode == 0, preflight.stdout + preflight.stderr
    assert json.loads(preflight.stdout)["blockers"] == []
    log_dir, secret_file = tmp_path / "log", tmp_path / "encoder-secret"
    secret_file.write_text(SECRET)
    where = ("--zk", zk_connect, "--log-dir", str(log_dir))
    secret = ("--password-encoder-secret-file", str(secret_file))
    copied = zk2kraft("migrate", "--dry-run", *where, *secret)
    assert copied.returncode == 0, copied.stderr
    ids = {r["name"]: r["topic_id"] for r in by_type(dump(log_dir))["TopicRecord"]}
    assert ids[name] == "K16VvIw3TLmaYnQ6XjK4Pw"
    diff = zk2kraft("zk", "diff", *where, *secret, "--json")
    assert diff.returncode in (0, 1), diff.stderr
    assert "topics" not in json.loads(diff.stdout)["changes"]  # the writer agrees too
