"""What one audit is asked to do: the command line's choices, as the job takes them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from migration.zk.security import OPEN, ZkSecurity


@dataclass
class AuditOptions:
    zk: str
    """``zookeeper.connect``; unused when ``zk_data_dirs`` names ZooKeeper's files."""
    log_dir: Path | None = None
    bootstrap: list[str] | None = None
    spark_master: str | None = "local[2]"
    """None: the master spark-submit configured."""
    out: str | None = None
    work_dir: str | None = None
    password_encoder_secret: str | None = None
    samples: int = 20
    zk_timeout_s: float = 18.0
    zk_security: ZkSecurity = OPEN
    zk_data_dirs: list[Path] | None = None
    """ZooKeeper's dataDir (and dataLogDir), read offline instead of ``zk``."""
    zk_chroot: str = ""
