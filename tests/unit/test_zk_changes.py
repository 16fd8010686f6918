"""targets_of: each path the copy reads maps to the smallest entity whose re-read covers
it; the paths it does not read map to nothing."""

from __future__ import annotations

import pytest

from migration.zk.changes import Targets, targets_of


@pytest.mark.parametrize(
    ("path", "want"),
    [
        ("/brokers/topics/t/partitions/3/state", Targets(partitions=frozenset({("t", 3)}))),
        ("/brokers/topics/t", Targets(topics=frozenset({"t"}))),
        ("/brokers/topics/t/partitions", Targets(topics=frozenset({"t"}))),
        ("/brokers/topics/t/partitions/3", Targets(topics=frozenset({"t"}))),
        ("/config/topics/t", Targets(topics=frozenset({"t"}))),
        ("/admin/delete_topics/t", Targets(topics=frozenset({"t"}))),
        ("/config/brokers/<default>", Targets(configs=frozenset({("brokers", "<default>")}))),
        ("/config/brokers/1", Targets(configs=frozenset({("brokers", "1")}))),
        ("/config/users/alice", Targets(configs=frozenset({("users", "alice")}))),
        ("/config/users/alice/clients", Targets(configs=frozenset({("users", "alice")}))),
        ("/config/users/alice/clients/c1", Targets(configs=frozenset({("users", "alice")}))),
        ("/config/clients/c1", Targets(configs=frozenset({("clients", "c1")}))),
        ("/config/ips/10.0.0.1", Targets(configs=frozenset({("ips", "10.0.0.1")}))),
        ("/kafka-acl/Topic/t", Targets(acls=frozenset({(False, "Topic", "t")}))),
        (
            "/kafka-acl-extended/prefixed/Group/g-",
            Targets(acls=frozenset({(True, "Group", "g-")})),
        ),
        ("/delegation_token/tokens/tok", Targets(tokens=frozenset({"tok"}))),
        ("/latest_producer_id_block", Targets(producer_id_block=True)),
    ],
)
def test_a_path_the_copy_reads_maps_to_its_entity(path: str, want: Targets) -> None:
    assert targets_of([path]) == want
    assert targets_of([path])


@pytest.mark.parametrize(
    "path",
    [
        "/brokers/ids/1",
        "/controller",
        "/controller_epoch",
        "/migration",
        "/feature",
        "/cluster/id",
        "/config/changes/config_change_0000000001",
        "/kafka-acl-changes/acl_changes_0000000001",
        "/isr_change_notification/isr_change_0000000001",
        "/admin/reassign_partitions",
        "/admin/preferred_replica_election",
        "/consumers/g/offsets/t/0",
        "/brokers/seqid",
        "/delegation_token/token_changes/token_change_0000000001",
    ],
)
def test_a_path_the_copy_does_not_read_maps_to_nothing(path: str) -> None:
    assert not targets_of([path])


def test_a_partition_of_a_topic_read_whole_is_not_listed_again() -> None:
    found = targets_of(
        [
            "/brokers/topics/t/partitions/0/state",
            "/brokers/topics/t",
            "/brokers/topics/u/partitions/1/state",
        ]
    )
    assert found.topics == {"t"}
    assert found.partitions == {("u", 1)}
    assert found.count() == 2
