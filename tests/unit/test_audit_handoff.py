"""Which Spark masters keep the audit's hand-off on one host, and how a work
directory's URI is shown (no Spark, no Arrow filesystem beyond the local one)."""

from __future__ import annotations

import pytest

from migration.audit.errors import AuditError
from migration.audit.handoff import (
    check_location,
    check_shared,
    is_local_master,
    without_credentials,
)


@pytest.mark.parametrize("master", ["local", "local[1]", "local[2]", "local[*]", "local[4,3]"])
def test_local_masters_need_no_shared_work_dir(master: str) -> None:
    assert is_local_master(master)
    check_shared(master, None)


@pytest.mark.parametrize(
    "master",
    ["spark://m:7077", "spark://a:7077,b:7077", "yarn", "k8s://https://k:6443",
     "local-cluster[2,1,1024]", "local[0]", "localhost", "local[2"],
)  # fmt: skip
def test_other_masters_need_one(master: str) -> None:
    assert not is_local_master(master)
    with pytest.raises(AuditError, match="give --work-dir"):
        check_shared(master, None)
    with pytest.raises(AuditError, match=r"^Spark's master k8s://<redacted>@k:6443 runs"):
        check_shared("k8s://https://token@k:6443", None)
    check_shared(master, "/mnt/shared/zk2kraft")


def test_a_uri_is_shown_without_its_credentials() -> None:
    assert without_credentials("s3://key:secret@bucket/dir?x=1") == (
        "s3://<redacted>@bucket/dir?<redacted>"
    )
    assert without_credentials("s3://AKIA:a/b+c@bucket/dir") == "s3://<redacted>@bucket/dir"
    assert without_credentials("k8s://https://token@k:6443") == "k8s://<redacted>@k:6443"
    assert without_credentials("hdfs://nn:8020/tmp/zk2kraft") == "hdfs://nn:8020/tmp/zk2kraft"
    assert without_credentials("spark://a:7077,b:7077") == "spark://a:7077,b:7077"


def test_a_work_dir_uri_with_a_query_is_refused_before_anything_is_written() -> None:
    # The run's directory is a path segment added to the URI: after a query it would be
    # lost, and the clean-up would remove the operator's own directory.
    with pytest.raises(AuditError) as refused:
        check_location("s3://bucket/dir?endpoint_override=minio:9000", "--work-dir")
    assert "query" in str(refused.value) and "minio" not in str(refused.value)
