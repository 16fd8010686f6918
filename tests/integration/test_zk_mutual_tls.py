"""Mutual TLS to a real ZooKeeper (``ssl.clientAuth=need`` on its secure port): zk2kraft's
client presents the certificate of its ``zookeeper.ssl.keystore.*`` (PEM or PKCS12), reads
and writes, and ZooKeeper knows it by that certificate; a client with a trust store but no
certificate is refused, and the error says why."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kazoo.security import ACL, Id, Permissions

from migration.local.zookeeper import EmbeddedZooKeeper
from migration.zk.client import ZkClient, ZkConnectError
from migration.zk.security import ZkSecurity, zk_config_security
from tests.security_harness import Authority
from tests.tls_stores import pkcs12_keystore

STORE_PASSWORD = "p12-store-password"


@dataclass
class MutualTls:
    zk: EmbeddedZooKeeper
    ca: Authority
    root: Path

    def security(self, name: str, lines: str) -> ZkSecurity:
        """A ``--zk-config`` file of TLS to ZooKeeper (trusting the CA) plus ``lines``."""
        config = self.root / f"{name}.properties"
        config.write_text(
            "zookeeper.ssl.client.enable=true\n"
            "zookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty\n"
            f"zookeeper.ssl.truststore.location={self.root / 'ca.pem'}\n" + lines
        )
        return zk_config_security(config)


@pytest.fixture(scope="module")
def mutual_tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MutualTls]:
    """One ZooKeeper for the module, its secure port needing a client certificate."""
    root = tmp_path_factory.mktemp("zk-mtls")
    ca = Authority("zk2kraft ZooKeeper CA")
    (root / "ca.pem").write_text(ca.pem)
    key, cert = ca.issue("zookeeper")
    server = root / "zookeeper.pem"
    server.touch(mode=0o600)
    server.write_text(key + cert)
    tls = (server, root / "ca.pem")
    with EmbeddedZooKeeper(base_dir=root / "zk", tls=tls, tls_client_auth="need") as zk:
        yield MutualTls(zk, ca, root)


def _keystore_lines(mutual_tls: MutualTls, kind: str) -> str:
    if kind == "PKCS12":
        store = pkcs12_keystore(
            mutual_tls.root / "zk2kraft.p12", mutual_tls.ca, "zk2kraft", STORE_PASSWORD
        )
        return (
            f"zookeeper.ssl.keystore.location={store}\nzookeeper.ssl.keystore.type=PKCS12\n"
            f"zookeeper.ssl.keystore.password={STORE_PASSWORD}\n"
        )
    key, cert = mutual_tls.ca.issue("zk2kraft")
    store = mutual_tls.root / "zk2kraft.pem"
    store.touch(mode=0o600)
    store.write_text(key + cert)
    return f"zookeeper.ssl.keystore.location={store}\nzookeeper.ssl.keystore.type=PEM\n"


@pytest.mark.parametrize("kind", ["PEM", "PKCS12"])
def test_zk2kraft_presents_its_certificate_and_reads_and_writes(
    mutual_tls: MutualTls, kind: str
) -> None:
    security = mutual_tls.security(kind, _keystore_lines(mutual_tls, kind))
    connect = f"{mutual_tls.zk.secure_connect_string}/mtls-{kind.lower()}"
    with ZkClient(connect, timeout_s=20, security=security) as client:
        client.ensure_chroot()
        client.ensure_path("/brokers/ids")
        # "auth" stands for the identities the session authenticated as: ZooKeeper's
        # x509 provider names this client by the certificate it presented
        mine = [ACL(Permissions.ALL, Id("auth", ""))]
        client.kazoo.create("/brokers/ids/1", b'{"version":5}', acl=mine)
        assert client.get("/brokers/ids/1") == (b'{"version":5}', 0)
        acl, _ = client.kazoo.get_acls("/brokers/ids/1")
        assert [(a.id.scheme, a.id.id) for a in acl] == [("x509", "CN=zk2kraft,O=zk2kraft tests")]


def test_a_client_without_a_certificate_is_refused_and_told_why(mutual_tls: MutualTls) -> None:
    security = mutual_tls.security("no-keystore", "")
    with pytest.raises(ZkConnectError) as refused:
        ZkClient(mutual_tls.zk.secure_connect_string, timeout_s=3, security=security)
    message = str(refused.value)
    assert mutual_tls.zk.secure_connect_string in message
    assert "certificate" in message and "zookeeper.ssl.keystore.location" in message
