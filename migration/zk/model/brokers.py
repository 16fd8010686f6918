"""Broker registrations: ``/brokers/ids/<id>``, versions 1 to 5.

Version history (what each adds): 1 host/port/jmx_port/timestamp; 2 ``endpoints``;
3 ``rack``; 4 ``listener_security_protocol_map``; 5 ``features`` (supported ranges,
which tell whether the broker can take part in a migration).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from migration.common.text import shown
from migration.zk.model.jsonfields import Fields, render_json

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def parse_protocol_map(text: str | None, problems: list[str]) -> dict[str, str]:
    """``listener.security.protocol.map`` (Kafka's default maps each protocol name to
    itself); each bad entry appended to ``problems``."""
    if text is None:
        return {p: p for p in SECURITY_PROTOCOLS}
    out: dict[str, str] = {}
    for entry in (e.strip() for e in text.split(",") if e.strip()):
        name, colon, protocol = entry.partition(":")
        if not colon or protocol not in SECURITY_PROTOCOLS or not name:
            problems.append(
                f"listener.security.protocol.map: {shown(entry)} is not NAME:PROTOCOL "
                f"({', '.join(SECURITY_PROTOCOLS)})"
            )
            continue
        out[name] = protocol
    return out


RESERVED_BROKER_MAX_ID = 1000  # Kafka's reserved.broker.max.id default; ids above are generated


@dataclass(frozen=True, slots=True)
class Endpoint:
    listener: str
    host: str
    port: int
    security_protocol: str

    def uri(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener}://{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class FeatureRange:
    min_version: int
    max_version: int


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    broker_id: int
    endpoints: tuple[Endpoint, ...]
    timestamp: int
    jmx_port: int = -1
    rack: str | None = None
    features: dict[str, FeatureRange] = field(default_factory=dict)
    version: int = 5

    @property
    def host(self) -> str:
        return self.endpoints[0].host if self.endpoints else ""

    @property
    def port(self) -> int:
        return self.endpoints[0].port if self.endpoints else -1


def _parse_endpoint(f: Fields, uri: str, protocol_map: dict[str, str] | None) -> Endpoint:
    listener, sep, rest = uri.partition("://")
    host, colon, port_text = rest.rpartition(":")
    if not sep or not colon or not listener or not port_text.isdecimal():
        f.fail(f"endpoint {shown(uri)} is not LISTENER://host:port")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if protocol_map is None:
        protocol = listener
    elif listener in protocol_map:
        protocol = protocol_map[listener]
    else:
        f.fail(f"listener {shown(listener)} is missing from listener_security_protocol_map")
    if protocol not in SECURITY_PROTOCOLS:
        f.fail(f"endpoint {shown(uri)}: unknown security protocol {shown(protocol)}")
    port = int(port_text)
    if port > 65535:
        f.fail(f"endpoint {shown(uri)}: port out of range")
    return Endpoint(listener, host, port, protocol)


def parse_broker(path: str, raw: bytes | None, broker_id: int) -> BrokerRegistration:
    f = Fields.load(path, raw)
    version = f.version(range(1, 6))
    timestamp = f.int_or_text("timestamp")
    jmx_port = f.opt_integer("jmx_port", -1)
    if version == 1:
        endpoints: tuple[Endpoint, ...] = (
            Endpoint("PLAINTEXT", f.text("host"), f.integer("port"), "PLAINTEXT"),
        )
    else:
        protocol_map = f.str_map("listener_security_protocol_map") if version >= 4 else None
        endpoints = tuple(_parse_endpoint(f, u, protocol_map) for u in f.str_list("endpoints"))
        if not endpoints:
            f.fail("endpoints is empty")
    features: dict[str, FeatureRange] = {}
    if version >= 5:
        for name, body in f.opt_mapping("features").items():
            sub = f.sub(f"features.{name}", body)
            rng = FeatureRange(sub.integer("min_version"), sub.integer("max_version"))
            if rng.min_version > rng.max_version:
                sub.fail(f"min_version {rng.min_version} > max_version {rng.max_version}")
            features[name] = rng
    return BrokerRegistration(
        broker_id=broker_id,
        endpoints=endpoints,
        timestamp=timestamp,
        jmx_port=jmx_port,
        rack=f.opt_text("rack") if version >= 3 else None,
        features=features,
        version=version,
    )


def render_broker(value: BrokerRegistration) -> bytes:
    first = value.endpoints[0]
    obj: dict[str, object] = {"version": value.version, "host": first.host, "port": first.port}
    if value.version >= 2:
        obj["endpoints"] = [e.uri() for e in value.endpoints]
    obj["jmx_port"] = value.jmx_port
    obj["timestamp"] = str(value.timestamp)
    if value.version >= 3:
        obj["rack"] = value.rack
    if value.version >= 4:
        obj["listener_security_protocol_map"] = {
            e.listener: e.security_protocol for e in value.endpoints
        }
    if value.version >= 5:
        obj["features"] = {
            name: {"min_version": r.min_version, "max_version": r.max_version}
            for name, r in value.features.items()
        }
    return render_json(obj)
