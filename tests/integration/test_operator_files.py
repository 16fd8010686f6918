"""Every properties file the local clusters write -- the rehearsal's, holding
``password.encoder.secret`` -- is 0600, and a secret with escapes reads back equal
(issue 55, deliverable 6); the clusters' ports are bound to find free ones. The rest:
tests/unit/test_operator_files.py."""

from __future__ import annotations

import os
from pathlib import Path

from migration.broker.modes import Mode
from migration.common.files import PRIVATE_MODE
from migration.common.properties import read_properties
from migration.local.cluster import PROTOCOLS, LocalCluster
from migration.local.quorum import LocalQuorum, broker_migration_properties
from migration.rehearse.procedure import migration_quorum
from tests.unit.test_operator_files import SECRET, _mode


def _holding_secret(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and SECRET in p.read_text(errors="replace")]


def test_a_rehearsals_brokers_and_controllers_write_the_secret_0600(tmp_path: Path) -> None:
    # What `rehearse` builds (run.py: the brokers with password.encoder.secret, then
    # procedure.migration_quorum), without starting a process; then a broker's mode
    # rewrite and a controller's reconfiguration, which rewrite existing files.
    old = os.umask(0o022)
    try:
        cluster = LocalCluster(
            "127.0.0.1:2181/x",
            [1, 2],
            tmp_path / "cluster",
            properties={"password.encoder.secret": SECRET},
        )
        quorum: LocalQuorum = migration_quorum(cluster, tmp_path / "quorum", SECRET)
        cluster.reconfigure(**broker_migration_properties(quorum, PROTOCOLS))
        cluster.set_mode(1, Mode.MIGRATING)
        quorum.reconfigure(quorum.ids[0], **{"metrics.port": "1"})
    finally:
        os.umask(old)
    written = _holding_secret(tmp_path)
    expected = {b.config for b in cluster.brokers.values()} | {quorum.config(i) for i in quorum.ids}
    assert set(written) == expected
    assert {p: _mode(p) for p in written} == {p: PRIVATE_MODE for p in written}


def test_a_controller_secret_with_escapes_reads_back_equal(tmp_path: Path) -> None:
    # The quorum's files were once written as raw k=v lines: a backslash in a secret
    # came back changed. Now rendered as Java reads them.
    secret = "a\\b=c:d#e"
    quorum = LocalQuorum(tmp_path, size=1, extra={"password.encoder.secret": secret})
    assert read_properties(quorum.config(1))["password.encoder.secret"] == secret
