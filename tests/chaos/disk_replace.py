"""``controller-disk-replaced``: a non-active voter's metadata disk replaced, and the
controller brought back the way Kafka allows (KIP-853; docs/operations.md, "Replacing
a controller's disk").

First every controller an earlier fault of the stage has halted (a full disk, an fsync
EIO: nothing else restarts them before the stage settles) is started again, as an
operator brings the quorum back before replacing a disk: with three voters, removing one
needs both others (a VotersRecord counts from its append: the set without the old disk
has two voters), and the upgrade needs every voter heard. Then ``features upgrade
--feature kraft.version=1`` (the voter set pinned with its directory ids; a no-op once
done; retried while a voter is not heard -- another fault may hold one down): before it
a quorum is static, as Kafka's kraft.version 0, and a replaced disk has no protection.
Then SIGKILL the voter, empty its metadata directory (its contents: the directory may be
a mount of its own), ``storage format --no-initial-controllers`` (a new directory.id),
start it -- an observer that never votes -- then ``quorum remove-controller`` of the old
directory and ``quorum add-controller`` of the new one, each waiting for its commit. The
fault puts back what it broke: at its end the controller is a voter again, on its new
disk. Its timing (each step) is in the run's events.
"""

from __future__ import annotations

import shutil
import signal
import time

from migration.common.kafka_errors import KafkaError
from migration.controller.client import change_voter, upgrade_kraft_version
from migration.controller.storage import read_storage
from tests.chaos.context import Run, start_exited_controllers
from tests.chaos.plan import Fault
from tests.migration_harness import format_storage

DISK_REPLACED = "controller-disk-replaced"
CHANGE_TIMEOUT_S = 180.0  # hang guard: other faults may hold the quorum meanwhile


def controller_disk_replaced(run: Run, fault: Fault) -> None:
    quorum = run.rig.quorum
    start_exited_controllers(run, "halted controller restarted")
    active, phase = run.active(fault)
    others = [n for n in quorum.ids if n != active]
    node = others[int(fault.params["voter"]) % len(others)]
    old = read_storage(quorum.log_dir(node))
    assert old is not None and old.directory_id, f"controller {node} is not formatted"
    upgrade(run, quorum.bootstrap)
    if node in quorum.running():
        quorum.kill(node, signal.SIGKILL)
    for entry in quorum.log_dir(node).iterdir():  # a new, empty disk
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    run.note("controller disk replaced", node=node, active=active, phase=phase)
    time.sleep(fault.params["down_s"])
    formatted = format_storage(
        quorum, node, run.rig.cluster_id, "--no-initial-controllers", "--json"
    )
    assert formatted.returncode == 0, formatted.stderr
    new = read_storage(quorum.log_dir(node))
    assert new is not None and new.joining and new.directory_id != old.directory_id
    quorum.start(node)
    run.note("controller started as an observer", node=node, directory_id=new.directory_id)
    bootstrap = quorum.bootstrap
    change_voter(bootstrap, node, old.directory_id, add=False, timeout_s=CHANGE_TIMEOUT_S)
    run.note("remove-controller committed", node=node, directory_id=old.directory_id)
    change_voter(bootstrap, node, new.directory_id, add=True, timeout_s=CHANGE_TIMEOUT_S)
    run.note("add-controller committed", node=node, directory_id=new.directory_id)


def upgrade(run: Run, bootstrap: list[str]) -> None:
    """kraft.version 1, committed (answered at once when it is already)."""
    deadline = time.monotonic() + CHANGE_TIMEOUT_S
    while True:
        try:
            upgrade_kraft_version(bootstrap, 1, timeout_s=CHANGE_TIMEOUT_S)
        except KafkaError as exc:  # a voter not heard yet (down, cut off): try again
            if time.monotonic() > deadline:
                raise
            run.note("kraft.version upgrade refused, retrying", reason=str(exc)[:200])
            time.sleep(1.0)
            continue
        run.note("kraft.version 1 committed")
        return
