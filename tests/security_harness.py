"""A secured cluster's material, made at run time (nothing secret is committed): a CA and
certificates (``cryptography``), a SASL-secured ZooKeeper's JAAS files, and the broker
and controller settings of a cluster that runs with security on where Kafka does:
ZooKeeper SASL with ``zookeeper.set.acl``, SASL_SSL client listeners (SCRAM, and PLAIN
for the admin), mutual TLS on every gRPC channel, and the ACL authorizer."""

from __future__ import annotations

import datetime
import ipaddress
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from migration.common.tls import TlsSettings, tls_settings
from migration.kafka.client import ClientSecurity
from migration.local.zookeeper import client_jaas
from migration.zk.security import ZkSecurity, zk_security

CLIENT_LISTENER = "SASL_SSL"
ADMIN = "admin"
NODE = "node"  # the certificate every broker and controller presents


def _name(cn: str) -> x509.Name:
    return x509.Name(
        [x509.NameAttribute(NameOID.ORGANIZATION_NAME, "zk2kraft tests"),
         x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    )  # fmt: skip


def principal(cn: str) -> str:
    """The principal of a certificate issued here, as Kafka's default builder names it
    (the subject, most specific first): what ``super.users`` and ACLs name."""
    return f"User:CN={cn},O=zk2kraft tests"


def _pem_key(key: ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def _pem_cert(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


@dataclass
class Authority:
    """A CA that signs leaf certificates for loopback (``localhost``, ``127.0.0.1``)."""

    name: str
    key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )
    cert: x509.Certificate | None = None

    def __post_init__(self) -> None:
        now = datetime.datetime.now(datetime.UTC)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(_name(self.name))
            .issuer_name(_name(self.name))
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .sign(self.key, hashes.SHA256())
        )

    @property
    def pem(self) -> str:
        assert self.cert is not None
        return _pem_cert(self.cert)

    def issue(self, cn: str) -> tuple[str, str]:
        """(private key PEM, certificate PEM) for ``cn``, valid as server and client."""
        assert self.cert is not None
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(cn))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
                ),
                critical=False,
            )
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
            .sign(self.key, hashes.SHA256())
        )
        return _pem_key(key), _pem_cert(cert)


@dataclass
class SecuredCluster:
    """Every secret and setting of one secured test cluster, written under ``root``."""

    root: Path
    zk_password: str = field(default_factory=lambda: secrets.token_urlsafe(12))
    admin_password: str = field(default_factory=lambda: secrets.token_urlsafe(12))
    ca: Authority = field(default_factory=lambda: Authority("zk2kraft test CA"))

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.ca_file = self.root / "ca.pem"
        self.ca_file.write_text(self.ca.pem)
        key, cert = self.ca.issue(NODE)
        self.node_key = key
        self.node_file = self._private(self.root / "node.pem", key + cert)
        client_key, client_cert = self.ca.issue("tool")
        self.tool_file = self._private(self.root / "tool.pem", client_key + client_cert)
        self.jaas = client_jaas(self.root / "zk-client-jaas.conf", "kafka", self.zk_password)
        self.command_config = self.root / "command.properties"
        self.command_config.write_text(
            "security.protocol=SSL\n"
            f"ssl.truststore.location={self.ca_file}\nssl.keystore.location={self.tool_file}\n"
        )
        self.zk_config = self.root / "zk-client.properties"
        self.zk_config.write_text(self.zk_lines())

    @staticmethod
    def _private(path: Path, text: str) -> Path:
        path.touch(mode=0o600)
        path.write_text(text)
        return path

    @property
    def zk_users(self) -> dict[str, str]:
        """The secured ZooKeeper's SASL users."""
        return {"kafka": self.zk_password}

    def zk_lines(self) -> str:
        return f"java.security.auth.login.config={self.jaas}\nzookeeper.set.acl=true\n"

    def zk_properties(self) -> dict[str, str]:
        return {"java.security.auth.login.config": str(self.jaas), "zookeeper.set.acl": "true"}

    def zk_security(self) -> ZkSecurity:
        problems: list[str] = []
        security = zk_security(self.zk_properties(), problems)
        assert not problems, problems
        return security

    def tls_properties(self) -> dict[str, str]:
        return {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(self.node_file),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.ca_file),
        }

    def broker_properties(self, inter_broker: str) -> dict[str, str]:
        """A ZooKeeper-mode broker's security settings (a KRaft broker keeps them)."""
        lower = CLIENT_LISTENER.lower()
        return {
            **self.zk_properties(),
            **self.tls_properties(),
            f"listener.name.{inter_broker.lower()}.ssl.client.auth": "required",
            "listener.name.controller.ssl.client.auth": "required",
            "listener.security.protocol.map": f"{CLIENT_LISTENER}:SASL_SSL,{inter_broker}:SSL,"
            "CONTROLLER:SSL",
            "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN",
            f"listener.name.{lower}.plain.sasl.jaas.config": (
                "org.apache.kafka.common.security.plain.PlainLoginModule required "
                f'user_{ADMIN}="{self.admin_password}";'
            ),
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            # as Kafka's operators do: the brokers' and controllers' own principals are
            # super users (their inter-broker requests need ClusterAction), with the admin
            "super.users": f"User:{ADMIN};{principal(NODE)}",
        }

    def controller_properties(self, inter_broker: str) -> dict[str, str]:
        return {
            **self.zk_properties(),
            **self.tls_properties(),
            "ssl.client.auth": "required",
            "listener.security.protocol.map": f"CONTROLLER:SSL,{inter_broker}:SSL",
        }

    def grpc_tls(self) -> TlsSettings:
        """What a tool (and the test process) presents to the controllers: the tools'
        certificate, read the way a --command-config file is."""
        problems: list[str] = []
        tls = tls_settings(
            {
                "ssl.keystore.location": str(self.tool_file),
                "ssl.truststore.location": str(self.ca_file),
            },
            None,
            problems,
        )
        assert not problems, problems
        return tls

    def admin_security(self) -> ClientSecurity:
        return ClientSecurity(
            "SASL_SSL", TlsSettings(trusted=self.ca.pem), "PLAIN", ADMIN, self.admin_password
        )

    def librdkafka(
        self, user: str, password: str, mechanism: str = "SCRAM-SHA-512"
    ) -> dict[str, str]:
        """confluent-kafka settings logging in as ``user``."""
        return {
            "security.protocol": "SASL_SSL",
            "sasl.mechanisms": mechanism,
            "sasl.username": user,
            "sasl.password": password,
            "ssl.ca.location": str(self.ca_file),
        }
