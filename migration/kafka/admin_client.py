"""``zk2kraft admin --bootstrap-server``: the admin verbs over Kafka's protocol, through
any broker. It offers the :class:`~migration.controller.client.ControllerClient` call
(``call(method, request)`` with the controller's messages), so every verb is written
once; here each call becomes Kafka's request (kio encodes it), sent to the broker that
Metadata names as controller (admin writes) or to the bootstrap broker (reads), and the
answer comes back as the controller's message. Retriable errors are retried until the
timeout, as Kafka's admin client does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kio.index import load_request_schema

from migration.common.kafka_errors import RETRIABLE, ErrorCode, KafkaError, error_name
from migration.controller.client import parse_bootstrap
from migration.controller.topics import broker_resource_id
from migration.kafka.client import KafkaConnection
from migration.kafka.security_wire import (
    creation_to_wire,
    entity_components,
    entity_to_wire,
    filter_to_wire,
)
from migration.kafka.wire import build
from migration.proto import controller_pb2 as cpb
from migration.records.acls import acl_values
from migration.records.codes import BROKER_RESOURCE, DEFAULT_CONFIG
from migration.records.quotas import entity_of, op_values
from migration.records.scram import deletion_values, upsertion_values
from migration.records.secrets import REDACTED
from migration.records.uuids import uuid_text

WRITES = {
    "CreateTopics", "DeleteTopics", "CreatePartitions", "IncrementalAlterConfigs",
    "CreateAcls", "DeleteAcls", "AlterClientQuotas", "AlterUserScramCredentials",
}  # fmt: skip


def _request(api_key: int, version: int, values: dict[str, Any]) -> Any:
    return build(load_request_schema(api_key, version), values)


def _binding(resource: Any, entry: Any) -> cpb.AclBinding:
    """An ACL from Kafka's answer: its resource pattern and its entry (one object or two)."""
    return cpb.AclBinding(**acl_values(resource, entry))


def _items(results: Any, name: Callable[[Any], str]) -> cpb.ItemsResponse:
    out = cpb.ItemsResponse()
    for r in results:
        out.results.add(
            name=name(r), error_code=int(r.error_code), error_message=r.error_message or ""
        )
    return out


def _broker_of(method: str, request: Any) -> int | None:
    """The broker a request must go to: a broker's own configs are described by that
    broker only (Kafka's admin client sends them there); None for any broker."""
    if method != "DescribeConfigs" or request.resource_type != BROKER_RESOURCE:
        return None
    return broker_resource_id(request.resource_name)


class KafkaAdminClient:
    def __init__(self, bootstrap: str, timeout_s: float = 30.0) -> None:
        self._bootstrap = [tuple(e.rsplit(":", 1)) for e in parse_bootstrap(bootstrap)]
        self._timeout = timeout_s

    def close(self) -> None:
        pass

    def _metadata(self, conn: KafkaConnection, topics: list[str] | None) -> Any:
        return conn.request(
            _request(3, 12, {"topics": None if topics is None else [{"name": t} for t in topics]})
        )

    def _connect(self, to_controller: bool, broker: int | None = None) -> KafkaConnection:
        """A connection to the controller Metadata names, to ``broker``, or (neither) to
        the first bootstrap broker that answers."""
        last: Exception | None = None
        for host, port in self._bootstrap:
            try:
                conn = KafkaConnection(host, int(port), self._timeout)
            except OSError as exc:
                last = exc
                continue
            if not to_controller and broker is None:
                return conn
            with conn:
                m = self._metadata(conn, [])
            wanted = m.controller_id if broker is None else broker
            found = next((b for b in m.brokers if b.node_id == wanted), None)
            if found is None and broker is not None:
                raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"broker {broker} is not live")
            if found is None:
                raise KafkaError(ErrorCode.NOT_CONTROLLER, "Metadata names no live controller")
            return KafkaConnection(found.host, found.port, self._timeout)
        raise KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, f"no bootstrap broker answered: {last}")

    def call(self, method: str, request: Any) -> Any:
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                with self._connect(method in WRITES, _broker_of(method, request)) as conn:
                    response = getattr(self, f"_{method}")(conn, request)
            except OSError as exc:
                response, retriable = None, str(exc)
            else:
                error = response.error if response.HasField("error") else None
                code = error.error_code if error is not None else 0
                if code not in RETRIABLE:
                    return response
                retriable = f"{error_name(code)}: {error.error_message if error else ''}"
            if time.monotonic() > deadline:
                raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"{method}: {retriable}")
            time.sleep(0.2)

    # --- one method per controller RPC the admin verbs use ------------------------------

    def _CreateTopics(  # noqa: N802
        self, conn: KafkaConnection, r: cpb.CreateTopicsRequest
    ) -> cpb.CreateTopicsResponse:
        topics = [
            {
                "name": t.name,
                "num_partitions": t.num_partitions,
                "replication_factor": t.replication_factor,
                "configs": [{"name": k, "value": v} for k, v in t.configs.items()],
            }
            for t in r.topics
        ]
        answer = conn.request(
            _request(19, 7, {"topics": topics, "timeout": int(self._timeout * 1000)})
        )
        out = cpb.CreateTopicsResponse()
        for t in answer.topics:
            out.topics.add(
                name=t.name,
                topic_id=uuid_text(t.topic_id.bytes) if t.topic_id and t.topic_id.int else "",
                error_code=int(t.error_code),
                error_message=t.error_message or "",
                num_partitions=t.num_partitions,
                replication_factor=t.replication_factor,
            )
        return out

    def _DeleteTopics(self, conn: KafkaConnection, r: cpb.DeleteTopicsRequest) -> cpb.ItemsResponse:  # noqa: N802
        answer = conn.request(
            _request(
                20, 5, {"topic_names": list(r.topic_names), "timeout": int(self._timeout * 1000)}
            )
        )
        return _items(answer.responses, lambda x: x.name)

    def _CreatePartitions(  # noqa: N802
        self, conn: KafkaConnection, r: cpb.CreatePartitionsRequest
    ) -> cpb.ItemsResponse:
        topics = [{"name": t.name, "count": t.count, "assignments": None} for t in r.topics]
        answer = conn.request(
            _request(37, 3, {"topics": topics, "timeout": int(self._timeout * 1000)})
        )
        return _items(answer.results, lambda x: x.name)

    def _Metadata(self, conn: KafkaConnection, r: cpb.MetadataRequest) -> cpb.MetadataResponse:  # noqa: N802
        answer = self._metadata(conn, list(r.topics) or None)
        out = cpb.MetadataResponse()
        for t in answer.topics:
            topic = out.topics.add(
                name=t.name or "",
                topic_id=uuid_text(t.topic_id.bytes) if t.topic_id and t.topic_id.int else "",
                error_code=int(t.error_code),
            )
            for p in t.partitions:
                topic.partitions.add(
                    partition_index=p.partition_index,
                    leader_id=p.leader_id,
                    leader_epoch=p.leader_epoch,
                    replicas=p.replica_nodes,
                    isr=p.isr_nodes,
                )
        return out

    def _IncrementalAlterConfigs(  # noqa: N802
        self, conn: KafkaConnection, r: cpb.IncrementalAlterConfigsRequest
    ) -> cpb.ItemsResponse:
        resources = [
            {
                "resource_type": x.resource_type,
                "resource_name": x.resource_name,
                "configs": [
                    {"name": c.name, "config_operation": c.config_operation, "value": c.value}
                    for c in x.configs
                ],
            }
            for x in r.resources
        ]
        answer = conn.request(_request(44, 1, {"resources": resources}))
        return _items(answer.responses, lambda x: x.resource_name)

    def _DescribeConfigs(  # noqa: N802
        self, conn: KafkaConnection, r: cpb.DescribeConfigsRequest
    ) -> cpb.DescribeConfigsResponse:
        resource = {"resource_type": r.resource_type, "resource_name": r.resource_name}
        answer = conn.request(_request(32, 4, {"resources": [resource]}))
        result = answer.results[0]
        return cpb.DescribeConfigsResponse(
            error_code=int(result.error_code),
            error_message=result.error_message or "",
            configs={  # what is set (the controller's answer has no defaults either)
                c.name: REDACTED if c.is_sensitive else (c.value or "")
                for c in result.configs
                if c.config_source != DEFAULT_CONFIG
            },
        )

    def _CreateAcls(self, conn: KafkaConnection, r: cpb.CreateAclsRequest) -> cpb.AclsResponse:  # noqa: N802
        creations = [creation_to_wire(b) for b in r.creations]
        answer = conn.request(_request(30, 3, {"creations": creations}))
        out = cpb.AclsResponse()
        for x in answer.results:
            out.results.add(error_code=int(x.error_code), error_message=x.error_message or "")
        return out

    def _DeleteAcls(self, conn: KafkaConnection, r: cpb.DeleteAclsRequest) -> cpb.AclsResponse:  # noqa: N802
        answer = conn.request(_request(31, 3, {"filters": [filter_to_wire(f) for f in r.filters]}))
        out = cpb.AclsResponse()
        for x in answer.filter_results:
            out.results.add(error_code=int(x.error_code), error_message=x.error_message or "")
            out.acls.extend(_binding(a, a) for a in x.matching_acls)
        return out

    def _DescribeAcls(self, conn: KafkaConnection, r: cpb.DescribeAclsRequest) -> cpb.AclsResponse:  # noqa: N802
        answer = conn.request(_request(29, 3, filter_to_wire(r.filter)))
        out = cpb.AclsResponse()
        if answer.error_code:
            out.error.error_code = int(answer.error_code)
            out.error.error_message = answer.error_message or ""
        for res in answer.resources:
            out.acls.extend(_binding(res, a) for a in res.acls)
        return out

    def _AlterClientQuotas(  # noqa: N802
        self, conn: KafkaConnection, r: cpb.AlterClientQuotasRequest
    ) -> cpb.ItemsResponse:
        entries = [
            {
                "entity": entity_to_wire(entity_of(entry.entity)),
                "ops": [op_values(o) for o in entry.ops],
            }
            for entry in r.entries
        ]
        answer = conn.request(_request(49, 1, {"entries": entries}))
        return _items(answer.entries, lambda x: ",".join(e.entity_type for e in x.entity))

    def _DescribeClientQuotas(  # noqa: N802
        self, conn: KafkaConnection, r: cpb.DescribeClientQuotasRequest
    ) -> cpb.DescribeClientQuotasResponse:
        components = entity_components(entity_of(r.entity))
        answer = conn.request(_request(48, 1, {"components": components, "strict": True}))
        out = cpb.DescribeClientQuotasResponse()
        if answer.error_code:  # a refusal, never read as "no quotas"
            out.error.error_code = int(answer.error_code)
            out.error.error_message = answer.error_message or ""
            return out
        for entry in answer.entries or ():
            for v in entry.values:
                out.quotas[v.key] = v.value
        return out

    def _AlterUserScramCredentials(  # noqa: N802
        self, conn: KafkaConnection, r: cpb.AlterUserScramCredentialsRequest
    ) -> cpb.ItemsResponse:
        values = {
            "deletions": [deletion_values(d) for d in r.deletions],
            "upsertions": [upsertion_values(u) for u in r.upsertions],
        }
        answer = conn.request(_request(51, 0, values))
        return _items(answer.results, lambda x: x.user)
