"""A real controller process started on a dry-run copy's log cut inside its migration
transaction -- the cut leaves the log's only metadata.version inside the open
transaction -- writes the AbortTransactionRecord as the first record of its epoch after
its leader-change record: no bootstrap metadata.version before it, and the transaction
closed on disk (read back with the project's log reader and loader)."""

from __future__ import annotations

import signal
from pathlib import Path

from migration.driver.copy import TRANSACTION_NAME, dry_run
from migration.image.loader import MetadataLoader
from migration.local import seed
from migration.log.metadata_log import MetadataLog
from migration.proto import controller_pb2 as cpb
from migration.proto.metadata_pb2 import MetadataRecord
from migration.records import versions
from migration.zk.client import ZkClient
from tests.quorum_harness import Quorum

SECRET = seed.SEED_PASSWORD_ENCODER_SECRET


def _kind(record: MetadataRecord) -> str:
    return str(record.WhichOneof("record"))


def cut_inside_the_transaction(log_dir: Path) -> int:
    """Truncate the copy at the first batch boundary past its metadata.version (and before
    its EndTransactionRecord); the offset it is cut at."""
    with MetadataLog(log_dir) as log:
        records = list(log.records())
        assert _kind(records[0][2]) == "begin_transaction_record"
        assert records[0][2].begin_transaction_record.name == TRANSACTION_NAME
        versions_at = [
            o
            for o, _, r in records
            if _kind(r) == "feature_level_record"
            and r.feature_level_record.name == versions.METADATA_VERSION
        ]
        assert len(versions_at) == 1  # the log's only metadata.version, inside the copy
        end_at = records[-1][0]
        assert _kind(records[-1][2]) == "end_transaction_record"
        cut = log.batch_end(versions_at[0])
        assert versions_at[0] < cut < end_at  # inside the transaction, past the version
        log.truncate_to(cut)
        return cut


def test_a_controller_on_a_copy_cut_inside_its_transaction_aborts_it_first(
    zk: ZkClient, tmp_path: Path
) -> None:
    seed.write(zk, seed.generate(seed.ClusterSpec(topics=4, partitions=12)))
    copy = tmp_path / "copy"
    dry_run(zk, copy, batch_bytes=512, password_encoder_secret=SECRET)
    quorum = Quorum(tmp_path / "quorum", size=1)
    copy.rename(quorum.log_dir(1))
    # The dry run's meta.properties names the cluster but no node: the controller's own
    # storage is what it starts on.
    (quorum.log_dir(1) / "meta.properties").unlink()
    cut = cut_inside_the_transaction(quorum.log_dir(1))

    quorum.start_all()
    try:
        client = quorum.client(timeout_s=60)
        request = cpb.CreateTopicsRequest()
        request.topics.add(name="after-the-abort", num_partitions=1, replication_factor=1)
        client.call("CreateTopics", request)  # answered once what is ahead of it commits
        client.close()
        assert quorum.kill(1, signal.SIGTERM) == 0, quorum.output(1)
    finally:
        quorum.stop_all()

    output = quorum.output(1)
    assert f"aborting transaction '{TRANSACTION_NAME}' left open at offset 0" in output
    assert "halting" not in output
    with MetadataLog(quorum.log_dir(1), read_only=True) as log:
        records = list(log.records())
    new_epoch = [(o, e, r) for o, e, r in records if o >= cut]
    assert new_epoch and all(e > 0 for _, e, _ in new_epoch)  # the copy was epoch 0
    kinds = [_kind(r) for _, _, r in new_epoch]
    assert kinds[0] == "leader_change_message", kinds  # how a new epoch starts
    assert kinds[1] == "abort_transaction_record", kinds  # then the abort, before all else
    assert kinds.count("abort_transaction_record") == 1
    bootstrap = kinds.index("feature_level_record")
    assert bootstrap > 1  # the bootstrap metadata.version comes after the abort
    assert new_epoch[bootstrap][2].feature_level_record.feature_level == versions.LATEST

    loader = MetadataLoader()
    loader.replay_all(records)
    assert loader.open_transaction is None  # the transaction is closed
    image = loader.image
    assert image.features[versions.METADATA_VERSION] == versions.LATEST
    assert set(image.topic_ids) <= {"after-the-abort"}  # nothing of the aborted copy
