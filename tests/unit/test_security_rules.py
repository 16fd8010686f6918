"""The security rules on their own: JAAS files, ZooKeeper ACL policy and client settings,
Kafka's authorizer semantics, the SASL server's steps (against scramp's client), TLS
settings, and the configs that turn them on."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from pathlib import Path

import pytest
from scramp import ScramClient

from migration.broker.config import BrokerConfigError, parse_broker_config
from migration.broker.modes import Mode, rewrite
from migration.common.jaas import JaasError, parse_jaas_config, parse_jaas_file
from migration.common.kafka_errors import ErrorCode
from migration.common.tls import tls_settings
from migration.controller.config import ControllerConfigError, parse_config
from migration.image.model import AclImage, ScramImage
from migration.kafka.authorizer import (
    ACL_AUTHORIZER,
    ALL,
    ALTER,
    ALTER_CONFIGS,
    CLUSTER,
    CLUSTER_NAME,
    CREATE,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    GROUP,
    READ,
    STANDARD_AUTHORIZER,
    TOPIC,
    WRITE,
    Authorizer,
    AuthorizerSettings,
    Principal,
    authorizer_settings,
)
from migration.kafka.sasl import SaslSession, SaslSettings, sasl_settings
from migration.kafka.server import certificate_principal
from migration.records.codes import ALLOW, DENY, PATTERN_LITERAL, PATTERN_PREFIXED
from migration.records.secrets import is_sensitive_config
from migration.zk.multiwrite import create
from migration.zk.security import DIGEST_MODULE, zk_security

ALICE = Principal("User:alice", "10.0.0.1")


# --- JAAS -------------------------------------------------------------------------------


def test_jaas_files_and_values_are_read_with_comments_and_quotes() -> None:
    text = f"""
    // the brokers' login to ZooKeeper
    Client {{
        {DIGEST_MODULE} required
        username="kafka"
        password="p\\"w;}}";   /* a quote, a semicolon and a brace inside */
    }};
    Server {{ {DIGEST_MODULE} required user_kafka="x"; }};
    """
    sections = parse_jaas_file(text, "jaas.conf")
    assert sorted(sections) == ["Client", "Server"]
    client = sections["Client"][0]
    assert (client.class_name, client.flag) == (DIGEST_MODULE, "required")
    assert client.options == {"username": "kafka", "password": 'p"w;}'}
    assert 'p"w' not in repr(client)  # options are never shown
    value = parse_jaas_config('a.B required username="u" password="p";', "sasl.jaas.config")
    assert value.options == {"username": "u", "password": "p"}


@pytest.mark.parametrize(
    "text",
    ["Client { x required a=; };", "Client { x maybe; };", 'Client { x required a="b"', "{"],
)
def test_a_broken_jaas_file_is_one_error_naming_it_and_no_value(text: str) -> None:
    with pytest.raises(JaasError, match=r"^jaas\.conf") as caught:
        parse_jaas_file(text, "jaas.conf")
    assert '"b"' not in str(caught.value)


# --- ZooKeeper ----------------------------------------------------------------------------


def _jaas(tmp_path: Path, module: str = DIGEST_MODULE) -> Path:
    path = tmp_path / "jaas.conf"
    path.write_text(f'Client {{ {module} required username="kafka" password="s3cret"; }};')
    return path


def test_zookeeper_acls_are_kafkas_with_set_acl(tmp_path: Path) -> None:
    problems: list[str] = []
    props = {"java.security.auth.login.config": str(_jaas(tmp_path)), "zookeeper.set.acl": "true"}
    security = zk_security(props, problems)
    assert not problems and security.sasl_username == "kafka" and security.set_acl
    assert "s3cret" not in repr(security)

    def acl(path: str) -> list[tuple[str, str, int]]:
        return [(a.id.scheme, a.id.id, a.perms) for a in security.acl_for(path)]

    creator, world_read = ("auth", "", 31), ("world", "anyone", 1)
    for sensitive in ("/config/users/alice", "/config/brokers/1", "/delegation_token/tokens/t"):
        assert acl(sensitive) == [creator]
    for public in ("/brokers/topics/t", "/config/topics/t", "/controller", "/migration"):
        assert acl(public) == [creator, world_read]
    assert acl("/consumers") == [("world", "anyone", 31)]
    # the multi encodes the same ACL, and sizes what it encodes
    op = create("/config/users/alice", b"{}")
    assert op.size("/chroot", security.acl_bytes) == len(op.encode("/chroot", security.acl_bytes))
    assert zk_security({}, []).acl_for("/config/users/a") == zk_security({}, []).acl_for("/x")


def test_zookeeper_security_problems_are_named(tmp_path: Path) -> None:
    problems: list[str] = []
    zk_security({"zookeeper.set.acl": "true", "zookeeper.auth.digest": "nocolon"}, problems, {})
    assert any("zookeeper.set.acl=true needs an authenticated" in p for p in problems)
    assert any("zookeeper.auth.digest is not user:password" in p for p in problems)
    problems = []
    wrong = _jaas(tmp_path, "com.example.Krb5LoginModule")
    zk_security({"java.security.auth.login.config": str(wrong)}, problems, {})
    assert problems and "only DIGEST-MD5" in problems[0]
    problems = []
    jks = tmp_path / "kafka.keystore.jks"
    jks.write_bytes(bytes.fromhex("feedfeed00000002"))  # JKS's magic and version
    zk_security(
        {
            "zookeeper.ssl.client.enable": "true",
            "zookeeper.ssl.keystore.type": "JKS",
            "zookeeper.ssl.keystore.location": str(jks),
        },
        problems,
    )
    assert len(problems) == 1 and "zookeeper.ssl.keystore.location" in problems[0]
    assert f"keytool -importkeystore -srckeystore {jks} -srcstoretype JKS" in problems[0]


def test_the_jaas_file_comes_from_kafka_opts_as_kafkas_scripts_pass_it(tmp_path: Path) -> None:
    env = {"KAFKA_OPTS": f"-Xmx1g -Djava.security.auth.login.config={_jaas(tmp_path)}"}
    assert zk_security({}, [], env).sasl_username == "kafka"
    assert zk_security({"zookeeper.sasl.client": "false"}, [], env).sasl_username is None


# --- the authorizer -----------------------------------------------------------------------


def _acl(
    name: str,
    operation: int,
    permission: int = ALLOW,
    *,
    principal: str = "User:alice",
    host: str = "*",
    pattern: int = PATTERN_LITERAL,
    resource: int = TOPIC,
) -> AclImage:
    return AclImage(resource, name, pattern, principal, host, operation, permission)


def _by_id(*acls: AclImage) -> dict[bytes, AclImage]:
    """ACLs keyed as an image keeps them (by id)."""
    return {i.to_bytes(16): a for i, a in enumerate(acls)}


def _authorizer(supers: tuple[str, ...] = (), allow_if_none: bool = False) -> Authorizer:
    return Authorizer(AuthorizerSettings(ACL_AUTHORIZER, frozenset(supers), allow_if_none))


def test_kafkas_authorizer_semantics() -> None:
    acls = _by_id(
        _acl("orders-", ALL, pattern=PATTERN_PREFIXED),
        _acl("orders-secret", READ, DENY),
        _acl("*", DESCRIBE, principal="User:*"),  # wildcard name and principal
        _acl("audit", ALTER_CONFIGS, host="10.0.0.1"),
        _acl("audit", WRITE, host="10.0.0.2"),
        _acl("reports", READ),
    )
    a = _authorizer()

    def may(op: int, name: str, who: Principal = ALICE, resource: int = TOPIC) -> bool:
        return a.authorize(acls, who, op, resource, name)

    assert may(WRITE, "orders-eu") and may(CREATE, "orders-new")  # prefixed, ALL
    assert not may(READ, "orders-secret")  # DENY over ALLOW
    assert may(WRITE, "orders-secret")  # the DENY names READ only
    assert may(DESCRIBE, "anything") and may(DESCRIBE, "x", Principal("User:bob", "h"))
    assert not may(READ, "anything")  # the wildcard grants DESCRIBE only
    assert may(DESCRIBE_CONFIGS, "audit")  # implied by ALTER_CONFIGS
    assert not may(WRITE, "audit")  # another host's grant
    assert may(DESCRIBE, "reports") and not may(WRITE, "reports")  # READ implies DESCRIBE only
    assert not may(READ, "reports", Principal("User:bob", "10.0.0.1"))
    # a resource with no ACL at all: allow.everyone.if.no.acl.found decides
    assert not may(DESCRIBE, "g", resource=GROUP)
    assert _authorizer(allow_if_none=True).authorize(acls, ALICE, READ, GROUP, "g")
    assert not _authorizer(allow_if_none=True).authorize(acls, ALICE, READ, TOPIC, "reports2x")
    # super users pass everything, DENY included
    assert _authorizer(("User:alice",)).authorize(acls, ALICE, READ, TOPIC, "orders-secret")
    cluster = _by_id(_acl(CLUSTER_NAME, ALTER, resource=CLUSTER, principal="User:ops"))
    assert not a.authorize(cluster, ALICE, DESCRIBE, CLUSTER, CLUSTER_NAME)


def test_the_authorizer_class_names_are_kafkas_for_each_mode() -> None:
    problems: list[str] = []
    assert authorizer_settings({}, False, problems) is None
    s = authorizer_settings(
        {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:a;User:b"},
        True,
        problems,
    )
    assert s is not None and s.super_users == {"User:a", "User:b"} and not problems
    authorizer_settings({"authorizer.class.name": STANDARD_AUTHORIZER}, False, problems)
    authorizer_settings(
        {"authorizer.class.name": ACL_AUTHORIZER, "super.users": "admin"}, False, problems
    )
    assert len(problems) == 2 and "uses kafka.security.authorizer.AclAuthorizer" in problems[0]
    assert "is not a principal" in problems[1]
    # the mode rewrite swaps Kafka's authorizer both ways
    zk = {"broker.id": "1", "zookeeper.connect": "zk:2181", "authorizer.class.name": ACL_AUTHORIZER}
    kraft = rewrite(zk, Mode.KRAFT, voters="3000@h:1")
    assert kraft["authorizer.class.name"] == STANDARD_AUTHORIZER
    back = rewrite(kraft, Mode.MIGRATING, zk_connect="zk:2181")
    assert back["authorizer.class.name"] == ACL_AUTHORIZER


# --- SASL ---------------------------------------------------------------------------------


def _credential(password: str, mechanism: str, iterations: int = 4096) -> ScramImage:
    digest = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}[mechanism]
    salt = os.urandom(16)
    salted = hashlib.pbkdf2_hmac(digest().name, password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    server_key = hmac.new(salted, b"Server Key", digest).digest()
    return ScramImage(salt, digest(client_key).digest(), server_key, iterations)


def _scram_login(session: SaslSession, mechanism: str, user: str, password: str) -> int:
    assert session.handshake(mechanism) == 0
    client = ScramClient([mechanism], user, password)
    first = session.authenticate(client.get_client_first().encode())
    if first.error_code:
        return first.error_code
    client.set_server_first(first.reply.decode())
    final = session.authenticate(client.get_client_final().encode())
    if final.error_code:
        return final.error_code
    client.set_server_final(final.reply.decode())  # the server proved it knows the key
    return 0


@pytest.mark.parametrize(("mechanism", "code"), [("SCRAM-SHA-256", 1), ("SCRAM-SHA-512", 2)])
def test_scram_logins_check_the_stored_credential(mechanism: str, code: int) -> None:
    creds = {("alice", code): _credential("right", mechanism)}
    settings = SaslSettings(("SCRAM-SHA-256", "SCRAM-SHA-512"))
    ok = SaslSession(settings, lambda: creds)
    assert _scram_login(ok, mechanism, "alice", "right") == 0
    assert ok.principal == "User:alice" and not ok.failed
    assert ok.handshake(mechanism) == ErrorCode.ILLEGAL_SASL_STATE  # no second login
    for user, password in (("alice", "wrong"), ("mallory", "right")):
        bad = SaslSession(settings, lambda: creds)
        assert _scram_login(bad, mechanism, user, password) == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert bad.principal is None and bad.failed


def test_plain_logins_and_mechanisms_a_listener_does_not_enable() -> None:
    session = SaslSession(SaslSettings(("PLAIN",), {"admin": "pw"}), dict)
    assert session.handshake("SCRAM-SHA-256") == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert session.authenticate(b"\0admin\0pw").error_code == ErrorCode.ILLEGAL_SASL_STATE
    assert session.handshake("PLAIN") == 0
    assert session.authenticate(b"\0admin\0pw").principal == "User:admin"
    other = SaslSession(SaslSettings(("PLAIN",), {"admin": "pw"}), dict)
    other.handshake("PLAIN")
    refused = other.authenticate(b"\0admin\0nope")
    assert refused.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert "nope" not in (refused.message or "") and "PLAIN" in (refused.message or "")


def test_listener_sasl_settings() -> None:
    problems: list[str] = []
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_ops="x";'
    s = sasl_settings(
        {
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "listener.name.secure.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
            "listener.name.secure.plain.sasl.jaas.config": jaas,
        },
        "SECURE",
        problems,
    )
    assert s.mechanisms == ("PLAIN", "SCRAM-SHA-256") and dict(s.plain_users) == {"ops": "x"}
    sasl_settings({"sasl.enabled.mechanisms": "GSSAPI,PLAIN"}, "X", problems)
    assert "GSSAPI is not one of" in problems[0] and "needs listener.name.x.plain" in problems[1]


# --- TLS and the configs --------------------------------------------------------------------


def test_tls_settings_take_a_listeners_own_first_and_inline_stores_are_pem(tmp_path: Path) -> None:
    store = tmp_path / "node.pem"
    store.write_text(
        "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
        "-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n"
    )
    problems: list[str] = []
    tls = tls_settings(
        {
            "ssl.keystore.location": str(store),
            "ssl.client.auth": "none",
            "listener.name.internal.ssl.client.auth": "required",
            "ssl.truststore.certificates": "-----BEGIN CERTIFICATE-----\nCCCC\n",
        },
        "INTERNAL",
        problems,
    )
    assert not problems and tls.client_auth == "required"
    assert (
        tls.private_key is not None and "AAAA" in tls.private_key and "BBBB" not in tls.private_key
    )
    assert tls.certificate_chain is not None and "BBBB" in tls.certificate_chain
    assert "AAAA" not in repr(tls)
    tls_settings({"ssl.keystore.type": "JKS", "ssl.client.auth": "maybe"}, None, problems)
    assert "ssl.keystore.type='JKS' needs ssl.keystore.location" in problems[0]
    assert "ssl.client.auth='maybe'" in problems[1]


BROKER = {
    "broker.id": "1",
    "zookeeper.connect": "zk:2181",
    "listeners": "SECURE://:9094,INTERNAL://:9093",
    "inter.broker.listener.name": "INTERNAL",
    "log.dirs": "/tmp/x",
}


def test_a_broker_with_a_secured_listener_names_every_missing_piece() -> None:
    with pytest.raises(BrokerConfigError) as caught:
        parse_broker_config(
            {
                **BROKER,
                "listener.security.protocol.map": "SECURE:SASL_SSL,INTERNAL:SASL_PLAINTEXT",
                "sasl.enabled.mechanisms": "PLAIN",
                "zookeeper.set.acl": "true",
            },
            "server.properties",
        )
    text = "\n".join(caught.value.problems)
    for needle in (
        "listener SECURE (SASL_SSL) needs a key store",
        "PLAIN on listener SECURE needs listener.name.secure.plain.sasl.jaas.config",
        "inter.broker.listener.name INTERNAL uses SASL_PLAINTEXT",
        "zookeeper.set.acl=true needs an authenticated ZooKeeper client",
    ):
        assert needle in text, (needle, text)


def test_a_process_grpc_is_tls_everywhere_or_nowhere() -> None:
    with pytest.raises(BrokerConfigError, match="must both be SSL or neither"):
        parse_broker_config(
            {
                **BROKER,
                "listener.security.protocol.map": "SECURE:PLAINTEXT,INTERNAL:PLAINTEXT,"
                "CONTROLLER:SSL",
                "controller.quorum.voters": "3000@h:9095",
                "controller.listener.names": "CONTROLLER",
                "ssl.truststore.certificates": "x",
            },
            "server.properties",
        )
    controller = {
        "node.id": "1",
        "process.roles": "controller",
        "controller.quorum.voters": "1@127.0.0.1:9093",
        "listeners": "CONTROLLER://127.0.0.1:9093",
        "metadata.log.dir": "/tmp/x",
        "listener.security.protocol.map": "CONTROLLER:SSL,INTERNAL:PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
    }
    with pytest.raises(ControllerConfigError) as caught:
        parse_config(controller, "controller.properties")
    text = "\n".join(caught.value.problems)
    assert "use SSL for both or neither" in text and "needs a key store" in text


def test_secrets_of_a_login_are_not_in_a_configs_repr(tmp_path: Path) -> None:
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_ops="pw-42";'
    s = sasl_settings(
        {"sasl.enabled.mechanisms": "PLAIN", "listener.name.x.plain.sasl.jaas.config": jaas},
        "X",
        [],
    )
    assert "pw-42" not in repr(s)
    assert base64.b64encode(b"pw-42").decode() not in repr(s)


def test_a_client_certificate_names_the_principal_as_kafka_does() -> None:
    cert = {
        "subject": (
            (("countryName", "DE"),),
            (("organizationName", "Example"),),
            (("organizationalUnitName", "ops"),),
            (("commonName", "alice"),),
        )
    }
    assert certificate_principal(cert) == "User:CN=alice,OU=ops,O=Example,C=DE"
    assert certificate_principal({}) is None and certificate_principal(None) is None


def test_zk2kraft_s_zookeeper_digest_login_is_a_secret_wherever_a_config_is_shown() -> None:
    # (broker-mode's diff shows the lines around a change: zookeeper.auth.digest sits
    # beside zookeeper.connect)
    assert is_sensitive_config("zookeeper.auth.digest")
    assert not is_sensitive_config("zookeeper.connect")
