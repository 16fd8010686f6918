"""Which function answers which controller RPC: writes (run against the pending image,
their records committed before the answer) and reads (answered from the committed
image)."""

from __future__ import annotations

from migration.controller import brokers, reassignment, security, topics
from migration.controller.context import Handler, Reader, WriteContext
from migration.image.model import MetadataImage
from migration.proto import controller_pb2 as cpb
from migration.records.secrets import REDACTED, is_sensitive_config

__all__ = ["ADMIN_WRITES", "HANDLERS", "READERS", "Handler", "Reader", "WriteContext"]


def describe_configs(
    image: MetadataImage, _: object, req: cpb.DescribeConfigsRequest
) -> cpb.DescribeConfigsResponse:
    problem = topics.resource_problem(image, req.resource_type, req.resource_name)
    if problem:
        return cpb.DescribeConfigsResponse(error_code=problem[0], error_message=problem[1])
    values = image.config(req.resource_type, req.resource_name)
    return cpb.DescribeConfigsResponse(
        configs={k: REDACTED if is_sensitive_config(k) else v for k, v in values.items()}
    )


HANDLERS: dict[str, Handler] = {
    "CreateTopics": topics.create_topics,
    "DeleteTopics": topics.delete_topics,
    "CreatePartitions": topics.create_partitions,
    "IncrementalAlterConfigs": topics.alter_configs,
    "CreateAcls": security.create_acls,
    "DeleteAcls": security.delete_acls,
    "AlterClientQuotas": security.alter_client_quotas,
    "AlterUserScramCredentials": security.alter_scram,
    "AllocateProducerIds": brokers.allocate_producer_ids,
    "AlterPartition": brokers.alter_partition,
    "AlterPartitionReassignments": reassignment.alter_partition_reassignments,
    "BrokerRegistration": brokers.register,
    "BrokerHeartbeat": brokers.heartbeat,
    "fence_expired": brokers.fence_expired,
}

ADMIN_WRITES = frozenset(
    {
        "CreateTopics",
        "DeleteTopics",
        "CreatePartitions",
        "IncrementalAlterConfigs",
        "CreateAcls",
        "DeleteAcls",
        "AlterClientQuotas",
        "AlterUserScramCredentials",
        "AlterPartitionReassignments",
    }
)
"""The writes users make (refused while the ZooKeeper write-behind is over its bound);
the brokers' own (registration, heartbeats, ISR changes) are always served."""

READERS: dict[str, Reader] = {
    "DescribeConfigs": describe_configs,
    "DescribeAcls": security.describe_acls,
    "DescribeClientQuotas": security.describe_client_quotas,
    "DescribeCluster": brokers.describe_cluster,
    "Metadata": brokers.metadata,
    "ListPartitionReassignments": reassignment.list_partition_reassignments,
}
