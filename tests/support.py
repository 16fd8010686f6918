"""Helpers shared by the tests."""

from __future__ import annotations

import subprocess
import sys

from migration.local import seed
from migration.proto.metadata_pb2 import MetadataRecord


def config_record(i: int) -> MetadataRecord:
    """A small, distinct record for log tests: topic-<i>'s retention.ms = i."""
    r = MetadataRecord()
    r.config_record.resource_type = 2
    r.config_record.resource_name = f"topic-{i}"
    r.config_record.name = "retention.ms"
    r.config_record.value = str(i)
    return r


def zk2kraft(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run the zk2kraft command in a real child process (``timeout``: a hang guard)."""
    return subprocess.run(
        [sys.executable, "-m", "migration.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


EVERYTHING = seed.ClusterSpec(
    brokers=5,
    topics=30,
    partitions=300,
    offline_partitions=3,
    reassignment=True,
    pending_deletions=2,
    legacy_consumer_groups=3,
    legacy_brokers=1,
    quota_entities=12,
    scram_users=6,
    acl_resources=20,
)
"""A cluster with every kind of metadata and every irregularity the seeder makes."""
