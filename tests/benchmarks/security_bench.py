"""What security costs (``make bench``, ``run.py --only-security``): the same cluster run
twice in this process, open and secured (SASL to ZooKeeper with ``zookeeper.set.acl``,
SASL_SSL listeners, the authorizer, mutual TLS on gRPC), each figure against the open
run measured beside it.

* ZooKeeper: seeding the tree through the project's multis (ACL'd creates over a SASL
  session) against the same seed without.
* Metadata for every topic through Kafka's protocol, p50 on one connection: the open
  cluster (answers a repeated request from its encoded copy) against the super user over
  SASL_SSL (every topic authorized, the answer built afresh) and a principal whose
  prefixed ACLs let it see a tenth of the topics (filtered through the ACL index).
* Connections: connect + ApiVersions in plaintext, then with a TLS handshake, then TLS +
  a SCRAM-SHA-512 login at 4096 and at 8192 iterations (median of many).
* The migration itself (:mod:`migration_bench`'s copy figures): controller unavailability
  (the claim to every broker told) and the copy, open against secured (SASL and ACL'd
  writes to ZooKeeper, the copy through Raft over mutual TLS).
"""

from __future__ import annotations

import socket
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.metadata.v12.request import MetadataRequest

from migration.common import rpc
from migration.common.tls import TlsSettings
from migration.kafka.client import ClientSecurity, KafkaConnection
from migration.local import seed
from migration.local.cluster import INTERNAL_LISTENER, LocalCluster
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.zk.client import ZkClient
from migration.zk.security import OPEN, ZkSecurity
from tests.benchmarks import migration_bench
from tests.security_harness import CLIENT_LISTENER, SecuredCluster

EVERY_TOPIC = MetadataRequest(
    topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
)
HELLO = ApiVersionsRequest(client_software_name="bench", client_software_version="1")
SPEC = seed.ClusterSpec(brokers=3, topics=2_000, partitions=40_000, acl_resources=300)
PASSWORD = "bench-password"


def _seed(connect: str, security: ZkSecurity, snap: Any) -> float:
    with ZkClient(connect, security=security) as zk:
        zk.ensure_chroot()
        t0 = time.perf_counter()
        seed.write(zk, seed.without_registrations(snap))
        return time.perf_counter() - t0


def _p50(conn: KafkaConnection, rounds: int) -> float:
    conn.request(EVERY_TOPIC)
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        conn.request(EVERY_TOPIC)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _connect(port: int, security: ClientSecurity, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        with KafkaConnection("127.0.0.1", port, 30, security=security) as conn:
            conn.request(HELLO)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _scram_user(cluster: LocalCluster, secured: SecuredCluster, user: str, iterations: int) -> None:
    admin = AdminClient(
        {
            "bootstrap.servers": cluster.bootstrap,
            **secured.librdkafka("admin", secured.admin_password, "PLAIN"),
        }
    )
    upsert = UserScramCredentialUpsertion(
        user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, iterations), PASSWORD.encode()
    )
    next(iter(admin.alter_user_scram_credentials([upsert]).values())).result(60)
    grant = AclBinding(
        ResourceType.TOPIC, "orders-", ResourcePatternType.PREFIXED, f"User:{user}", "*",
        AclOperation.DESCRIBE, AclPermissionType.ALLOW,
    )  # fmt: skip
    next(iter(admin.create_acls([grant]).values())).result(60)


def _wait_scram(cluster: LocalCluster, security: ClientSecurity) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            KafkaConnection("127.0.0.1", cluster.brokers[1].port, 30, security=security).close()
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def migration(partitions: int = SPEC.partitions) -> dict[str, Any]:
    """The copy's figures, open and secured, each on its own ZooKeeper."""
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        secured = SecuredCluster(home / "security")
        with EmbeddedZooKeeper(base_dir=home / "zk-open", heap_mb=2048) as zk:
            plain = migration_bench.run(zk, partitions, latency_rounds=0)
        rpc.use_tls(secured.grpc_tls())
        try:
            with EmbeddedZooKeeper(
                base_dir=home / "zk-secured", heap_mb=2048, sasl_users=secured.zk_users
            ) as zk:
                locked = migration_bench.run(
                    zk,
                    partitions,
                    latency_rounds=0,
                    broker_props=secured.broker_properties(INTERNAL_LISTENER),
                    controller_props=secured.controller_properties(INTERNAL_LISTENER),
                    zk_security=secured.zk_security(),
                    client_listener=CLIENT_LISTENER,
                    client_security=secured.admin_security(),
                )
        finally:
            rpc.use_tls(None)
    return {"open": plain, "secured": locked}


def run(rounds: int = 30, connects: int = 40) -> dict[str, Any]:
    out = {**listeners(rounds, connects), "migration": migration()}
    return out


def listeners(rounds: int, connects: int) -> dict[str, Any]:
    """Seeding, Metadata and connection figures, open against secured."""
    snap = seed.generate(SPEC)
    out: dict[str, Any] = {"partitions": SPEC.partitions, "topics": SPEC.topics}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        secured = SecuredCluster(home / "security")
        with (
            EmbeddedZooKeeper(base_dir=home / "zk-open", heap_mb=2048) as open_zk,
            EmbeddedZooKeeper(
                base_dir=home / "zk-secured", heap_mb=2048, sasl_users=secured.zk_users
            ) as secured_zk,
        ):
            open_connect = f"{open_zk.connect_string}/bench"
            secured_connect = f"{secured_zk.connect_string}/bench"
            out["seed_open_s"] = _seed(open_connect, OPEN, snap)
            out["seed_secured_s"] = _seed(secured_connect, secured.zk_security(), snap)
            ids = sorted(snap.brokers)
            props = {"password.encoder.secret": seed.SEED_PASSWORD_ENCODER_SECRET}
            plain = LocalCluster(open_connect, ids, home / "open", properties=props)
            locked = LocalCluster(
                secured_connect,
                ids,
                home / "secured",
                properties={
                    **props,
                    **secured.broker_properties(INTERNAL_LISTENER),
                    "listener.security.protocol.map": f"{CLIENT_LISTENER}:SASL_SSL,"
                    f"{INTERNAL_LISTENER}:SSL",
                },
                client_listener=CLIENT_LISTENER,
                client_security=secured.admin_security(),
            )
            for cluster in (plain, locked):
                cluster.start()
            try:
                plain.wait_ready(120)
                locked.wait_ready(120)
                with KafkaConnection("127.0.0.1", plain.brokers[1].port, 60) as conn:
                    out["metadata_open_p50_s"] = _p50(conn, rounds)
                port = locked.brokers[1].port
                with KafkaConnection(
                    "127.0.0.1", port, 60, security=secured.admin_security()
                ) as conn:
                    out["metadata_super_user_p50_s"] = _p50(conn, rounds)
                tls = TlsSettings(trusted=secured.ca.pem)
                logins = {}
                for iterations in (4096, 8192):
                    user = f"bench-{iterations}"
                    _scram_user(locked, secured, user, iterations)
                    logins[iterations] = ClientSecurity(
                        "SASL_SSL", tls, "SCRAM-SHA-512", user, PASSWORD
                    )
                    _wait_scram(locked, logins[iterations])
                with KafkaConnection("127.0.0.1", port, 60, security=logins[4096]) as conn:
                    out["metadata_filtered_p50_s"] = _p50(conn, rounds)
                    out["filtered_topics"] = len(conn.request(EVERY_TOPIC).topics)
                out["connect_plaintext_s"] = _connect(
                    plain.brokers[1].port, ClientSecurity(), connects
                )
                tls_only = ClientSecurity("SSL", tls)
                out["connect_tls_s"] = _connect_tls(port, tls_only, connects)
                out["connect_scram_4096_s"] = _connect(port, logins[4096], connects)
                out["connect_scram_8192_s"] = _connect(port, logins[8192], connects)
            finally:
                plain.stop()
                locked.stop()
    return out


def _connect_tls(port: int, security: ClientSecurity, rounds: int) -> float:
    """A TLS handshake alone (the listener serves nothing else before a login)."""
    assert security.tls is not None
    context = security.tls.client_context()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        with (
            socket.create_connection(("127.0.0.1", port), timeout=30) as raw,
            context.wrap_socket(raw, server_hostname="127.0.0.1"),
        ):
            pass
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def report(r: dict[str, Any]) -> None:
    print(f"security, 3 brokers, {r['partitions']:,} partitions / {r['topics']:,} topics:")
    print(
        f"  seed through multis: open {r['seed_open_s']:.2f} s, SASL + zookeeper.set.acl "
        f"{r['seed_secured_s']:.2f} s (ratio {r['seed_secured_s'] / r['seed_open_s']:.2f})"
    )
    base = r["metadata_open_p50_s"]
    print(f"  Metadata (every topic) p50: open PLAINTEXT {base * 1000:.1f} ms")
    print(
        f"    SASL_SSL + authorizer, super user: {r['metadata_super_user_p50_s'] * 1000:.1f} ms "
        f"(ratio {r['metadata_super_user_p50_s'] / base:.2f})"
    )
    print(
        f"    SASL_SSL + authorizer, prefixed ACLs ({r['filtered_topics']} topics seen): "
        f"{r['metadata_filtered_p50_s'] * 1000:.1f} ms "
        f"(ratio {r['metadata_filtered_p50_s'] / base:.2f})"
    )
    m = r["migration"]
    for label, key in (("controller unavailability", "unavailable_s"), ("copy", "copy_s")):
        o, s = m["open"][key], m["secured"][key]
        print(f"  migration {label}: open {o:.2f} s, secured {s:.2f} s (ratio {s / o:.2f})")
    plain = r["connect_plaintext_s"]
    print(f"  connect + ApiVersions p50: plaintext {plain * 1000:.2f} ms")
    for key, label in (
        ("connect_tls_s", "TLS handshake"),
        ("connect_scram_4096_s", "TLS + SCRAM-SHA-512 (4096 iterations)"),
        ("connect_scram_8192_s", "TLS + SCRAM-SHA-512 (8192 iterations)"),
    ):
        print(f"    {label}: {r[key] * 1000:.2f} ms (ratio {r[key] / plain:.1f})")
