"""Where a command reads ZooKeeper from: a live ensemble (``--zk``) or, for the commands
that only read, ZooKeeper's own files (``--zk-data-dir DIR [--zk-chroot PATH]``).

The options speak Kafka's settings: ``--zk`` is ``zookeeper.connect`` (chroot included),
``--zk-connection-timeout-ms`` is ``zookeeper.connection.timeout.ms``, ``--zk-config`` a
file with Kafka's ZooKeeper client settings. ``--zk-data-dir`` is ZooKeeper's ``dataDir``
(or a copy of it; a second one for ``dataLogDir`` when ZooKeeper keeps them apart) and
``--zk-chroot`` the chroot ``zookeeper.connect`` would carry. Nothing under a data
directory is written; what the read had to skip (a torn log tail, a damaged snapshot)
is printed as a warning on stderr.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from migration.cli.output import CliError, warning
from migration.observability.progress import Progress
from migration.zk.client import ZkClient
from migration.zk.security import ZkSecurity, zk_config_security
from migration.zkfiles.datadir import ZkDataDirError, open_data_dir
from migration.zkfiles.datatree import OfflineTree


def add_zk_argument(
    parser: argparse.ArgumentParser, *, offline: bool = False, required: bool = True
) -> None:
    """``--zk`` and its client settings; with ``offline`` (commands that only read),
    ``--zk-data-dir``/``--zk-chroot`` as the alternative to ``--zk``; ``required=False``
    when the command checks it itself (an option that needs it)."""
    source = parser.add_mutually_exclusive_group(required=True) if offline else parser
    source.add_argument(
        "--zk",
        "--zookeeper",
        dest="zk",
        required=required and not offline,
        metavar="HOST:PORT[/chroot]",
        help="the cluster's zookeeper.connect",
    )
    if offline:
        source.add_argument(
            "--zk-data-dir",
            dest="zk_data_dirs",
            action="append",
            type=Path,
            metavar="DIR",
            help="instead of --zk: read ZooKeeper's own files (its dataDir, or a copy; give "
            "dataLogDir as a second --zk-data-dir when ZooKeeper keeps them apart); "
            "nothing there is written",
        )
        parser.add_argument(
            "--zk-chroot",
            default="",
            metavar="PATH",
            help="with --zk-data-dir: the chroot zookeeper.connect carries (e.g. /kafka)",
        )
    parser.add_argument(
        "--zk-connection-timeout-ms",
        dest="zk_timeout_ms",
        type=int,
        default=18_000,
        metavar="MS",
        help="zookeeper.connection.timeout.ms (default 18000)",
    )
    parser.add_argument(
        "--zk-config",
        type=Path,
        metavar="FILE",
        help="Kafka's ZooKeeper client settings (java.security.auth.login.config, "
        "zookeeper.set.acl, zookeeper.ssl.*), e.g. a broker's server.properties",
    )


def connect(args: argparse.Namespace) -> ZkClient:
    """The ZooKeeper client ``add_zk_argument``'s options describe."""
    return ZkClient(args.zk, timeout_s=args.zk_timeout_ms / 1000, security=zk_security_of(args))


def zk_security_of(args: argparse.Namespace) -> ZkSecurity:
    return zk_config_security(args.zk_config)


def offline_dirs(args: argparse.Namespace) -> list[Path] | None:
    """The ``--zk-data-dir`` directories, or None when the command reads ``--zk``;
    CliError for ``--zk-chroot`` without them."""
    dirs: list[Path] | None = getattr(args, "zk_data_dirs", None)
    chroot: str = getattr(args, "zk_chroot", "")
    if not dirs and chroot:
        raise CliError("--zk-chroot goes with --zk-data-dir (with --zk, the chroot is in it)")
    return dirs or None


def open_tree(args: argparse.Namespace, progress: Progress | None = None) -> ZkClient | OfflineTree:
    """What the read-only commands read: the live ensemble, or the data directory read
    offline (its warnings printed on stderr). CliError names a bad directory."""
    dirs = offline_dirs(args)
    if dirs is None:
        return connect(args)
    try:
        tree = open_data_dir(dirs, args.zk_chroot, progress)
    except ZkDataDirError as exc:
        raise CliError(str(exc)) from None
    for problem in tree.warnings:
        warning(problem)
    return tree


def source_of(args: argparse.Namespace) -> str:
    """The source as reports name it: ``zookeeper.connect``, or the data directories
    with the chroot."""
    dirs = offline_dirs(args)
    if dirs is None:
        return str(args.zk)
    chroot = f" (chroot {args.zk_chroot})" if args.zk_chroot else ""
    return "ZooKeeper files in " + ", ".join(map(str, dirs)) + chroot


def source_phrase(args: argparse.Namespace) -> str:
    """The source as a sentence names it: ``ZooKeeper <connect>`` for a live ensemble,
    ``ZooKeeper files in <dirs>`` offline (:func:`source_of` names the files already)."""
    shown = source_of(args)
    return shown if offline_dirs(args) is not None else f"ZooKeeper {shown}"
