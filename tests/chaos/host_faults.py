"""Faults of one controller's host: its metadata disk full, its fsyncs failing with EIO,
its wall clock jumping -- each with a well-kept tool, on the real process.

* ``controller-disk-full``: every controller's metadata log directory is a tmpfs of
  its own (mounted by the run, :func:`host_tools`); the fault shrinks one of them to
  what it holds (``mount -o remount,size=``), so its next append that needs a page
  fails with ENOSPC, waits for the controller to halt, and grows it back.
* ``controller-fsync-eio``: the controllers run under libfiu's POSIX preload
  (``fiu-run -x``, remote control over named pipes); the fault enables
  ``posix/io/sync/*`` (fsync, fdatasync) with errno EIO in one of them
  (``fiu-ctrl``) and waits for it to halt. The failure point dies with the process.
* ``controller-clock-jump``: the controllers run under libfaketime, its offset read
  from a file of their own (re-read every second); the fault moves one controller's
  wall clock (CLOCK_REALTIME) forward or back, holds it there, then sets it right
  again (a second step, the other way). CLOCK_MONOTONIC is left alone: an NTP step
  moves the wall clock only, and a forward step of the monotonic clock is what a
  paused VM sees, which ``zombie-controller`` (SIGSTOP) already injects; a backward
  one never happens.

Each halting fault requires what :mod:`migration.raft.faults` promises: exit code 70
and one ``halting:`` line naming the errno. A controller that limps on, hangs or exits
otherwise fails the run; what it acknowledged is checked after the run as always.

libfaketime 0.9.10 (Debian bookworm) with its monotonic clock left alone breaks
``clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`` -- Python 3.11's ``time.sleep``
fails with EINVAL (wolfcw/libfaketime#426). Controllers under it get a
``sitecustomize`` that wraps each ``time.sleep`` call: the real sleep first, and only if
that fails with EINVAL the rest of the wait on a monotonic timed wait (whatever the
offset at the time); any other error is raised. It then runs the ``sitecustomize`` it
shadows, if the path has one. Everything else is the tool's.

``controller-disk-full`` mounts and remounts tmpfs: it needs root (:func:`need_root`
says so). A campaign removes mounts left under its records by an earlier, killed one
(:func:`unmount_stale`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from migration.local.quorum import LocalQuorum
from migration.raft.faults import FATAL_EXIT_CODE
from tests.broker_harness import eventually
from tests.chaos.plan import Fault

if TYPE_CHECKING:
    from tests.chaos.context import Run

DISK_FULL = "controller-disk-full"
FSYNC_EIO = "controller-fsync-eio"
CLOCK_JUMP = "controller-clock-jump"

TMPFS_SIZE = "1g"  # a bound, not a reservation: a tmpfs holds only what is written
HALT_S = 120.0  # hang guard: the controller halts once it writes (the workload writes)
EIO = 5
_PRELOAD = 'export LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD }$0"; exec "$@"'  # adds, execs
_SITE = '''"""Written by tests/chaos/host_faults.py: see there (libfaketime#426).

Each time.sleep call tries the real one first; only when it fails with EINVAL does it
wait out the rest on a monotonic timed wait. Then the next sitecustomize on the path
(the one this one shadows), if any, runs too."""
import errno
import importlib.machinery
import importlib.util
import os
import sys
import threading
import time

_real_sleep = time.sleep


def _sleep(seconds):
    began = time.monotonic()
    try:
        return _real_sleep(seconds)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
    threading.Event().wait(max(0.0, seconds - (time.monotonic() - began)))


time.sleep = _sleep


def _chain():
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["_chained_sitecustomize"] = module
    spec.loader.exec_module(module)


_chain()
'''


# --- the tools, per controller ------------------------------------------------------------


def faketime_library() -> Path:
    """Debian's libfaketime for threaded programs (MT), wherever the architecture puts it."""
    found = sorted(Path("/usr/lib").glob("*/faketime/libfaketimeMT.so.1"))
    if not found:
        raise FileNotFoundError("libfaketimeMT.so.1 not found: `make system-deps` installs it")
    return found[0]


def fiu_prefix(quorum: LocalQuorum) -> Path:
    """Where fiu-run's remote-control pipes are (``<prefix>-<pid>.in``/``.out``)."""
    return quorum.root / "fiu"


def clock_file(quorum: LocalQuorum, node: int) -> Path:
    """The libfaketime offset of one controller (``+0``: the real time)."""
    return quorum.root / f"faketime{node}.rc"


def launch_under(quorum: LocalQuorum, node: int, *, fiu: bool, faketime: bool) -> None:
    """Start ``node`` from now on under libfiu's POSIX preload (``fiu``) and/or
    libfaketime at offset 0 (``faketime``); both preloads coexist in one process."""
    wrapper: list[str] = []
    env: dict[str, str] = {}
    if fiu:
        wrapper += ["fiu-run", "-x", "-f", str(fiu_prefix(quorum))]
    if faketime:
        _set_clock(clock_file(quorum, node), 0)
        site = quorum.root / "faketime-site"
        site.mkdir(exist_ok=True)
        (site / "sitecustomize.py").write_text(_SITE)
        path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
        wrapper += ["sh", "-c", _PRELOAD, str(faketime_library())]  # fiu-run sets LD_PRELOAD whole
        env |= {
            "FAKETIME_TIMESTAMP_FILE": str(clock_file(quorum, node)),
            "FAKETIME_CACHE_DURATION": "1",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            "PYTHONPATH": path,
        }
    child = quorum.children[node]
    child.wrapper, child.env = wrapper, env


def _set_clock(path: Path, offset_s: int) -> None:
    """Written aside and renamed: libfaketime never reads half a file."""
    part = path.with_name(path.name + ".part")
    part.write_text(f"{offset_s:+d}\n")
    part.replace(path)


def mount(directory: Path) -> None:
    """``directory`` on a tmpfs of its own, holding what it held."""
    aside = directory.with_name(directory.name + ".on-disk")
    directory.mkdir(parents=True, exist_ok=True)  # formatted, or created at the start
    shutil.copytree(directory, aside)
    _run("mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE},mode=0755", "tmpfs", str(directory))
    shutil.copytree(aside, directory, dirs_exist_ok=True)
    shutil.rmtree(aside)


def unmount(directory: Path) -> None:
    """Back on the disk, with what the tmpfs held (a failed run's data is kept); nothing
    if it is not mounted."""
    if not os.path.ismount(directory):
        return
    held = directory.with_name(directory.name + ".tmpfs")
    shutil.rmtree(held, ignore_errors=True)
    shutil.copytree(directory, held, ignore=shutil.ignore_patterns(".lock"))
    if not _ran("umount", str(directory)):
        _run("umount", "--lazy", str(directory))  # a process still holds it: detached
    shutil.rmtree(directory)
    held.replace(directory)


def need_root(kinds: set[str]) -> str | None:
    """Why ``kinds`` cannot be injected by this user (None: they can): tmpfs mounts are
    root's."""
    if DISK_FULL in kinds and os.geteuid() != 0:
        return f"{DISK_FULL} mounts a tmpfs per controller: it needs root (run as root)"
    return None


def mounts_under(root: Path, mounts: str | None = None) -> list[Path]:
    """The mount points at or below ``root`` (``mounts``: /proc/self/mounts' text),
    deepest first."""
    if mounts is None:
        mounts = Path("/proc/self/mounts").read_text()
    top = Path(os.path.abspath(root))
    found = []
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 2:
            continue
        where = Path(_unescape(fields[1]))
        if where == top or top in where.parents:
            found.append(where)
    return sorted(set(found), key=lambda p: (-len(p.parts), str(p)))


def _unescape(field: str) -> str:
    """/proc/self/mounts' octal escapes (``\\040`` a space, ...)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def unmount_stale(root: Path) -> list[Path]:
    """Every mount at or below ``root`` unmounted (lazily if busy): the tmpfs an earlier
    campaign left when it was killed. What was unmounted."""
    stale = mounts_under(root)
    for where in stale:
        if not _ran("umount", str(where)):
            _run("umount", "--lazy", str(where))
    return stale


def _ran(*command: str) -> bool:
    return subprocess.run(command, check=False, capture_output=True, timeout=60).returncode == 0


def _run(*command: str) -> None:
    done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: {done.stderr.strip()}")


def _stale_faketime_files() -> None:
    """libfaketime's per-process semaphore and shared memory, left by processes that
    never exited normally (halted, SIGKILLed): its README says to delete them."""
    for path in Path("/dev/shm").glob("*faketime_s[eh][mm]_*"):
        pid = path.name.rsplit("_", 1)[-1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            path.unlink(missing_ok=True)


@contextmanager
def host_tools(quorum: LocalQuorum, kinds: set[str]) -> Iterator[None]:
    """What ``kinds`` need before the controllers start: tmpfs log directories
    (``controller-disk-full``), the libfiu preload (``controller-fsync-eio``),
    libfaketime (``controller-clock-jump``). On exit (after the controllers stop) the
    log directories are back on the disk with what they held, also on failure."""
    mounted: list[Path] = []
    if (why := need_root(kinds)) is not None:
        raise PermissionError(why)
    try:
        if DISK_FULL in kinds:
            for node in quorum.ids:
                mounted.append(quorum.log_dir(node))  # first: a mount that fails half-way
                mount(quorum.log_dir(node))
        for node in quorum.ids:
            launch_under(quorum, node, fiu=FSYNC_EIO in kinds, faketime=CLOCK_JUMP in kinds)
        yield
    finally:
        if CLOCK_JUMP in kinds:
            _stale_faketime_files()
        failed: list[BaseException] = []
        for directory in mounted:  # each, whatever happens to the others
            try:
                unmount(directory)
            except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
                failed.append(exc)
        if failed:
            raise failed[0]


# --- the faults -------------------------------------------------------------------------------


def _target(run: Run, fault: Fault) -> tuple[int, str]:
    """The active controller (``active`` 1) or the next running voter after it (0), and
    the phase: always a running process (hang guard). A status that still names a
    controller an earlier fault of the stage has just halted is waited out."""
    quorum = run.rig.quorum

    def running_target() -> tuple[int, str] | None:
        active, phase = run.active(fault)
        ids = quorum.ids
        after = [ids[(ids.index(active) + k) % len(ids)] for k in range(1, len(ids))]
        candidates = [active] if fault.params.get("active", 1.0) else after
        running = [n for n in candidates if quorum.children[n].running]
        return (running[0], phase) if running else None

    found = eventually(running_target, 120, "a running controller to fault")
    assert found is not None  # eventually returns only a truthy answer
    return found


def halted(quorum: LocalQuorum, node: int, since: int, errno_text: str) -> str:
    """Until ``node`` exits (hang guard): it must be a halt (exit 70) with one
    ``halting:`` line, naming ``errno_text``, in its output after character ``since``
    (AssertionError otherwise); that line."""
    child = quorum.children[node]

    def exit_code() -> list[int]:  # empty (not yet) or the code (0 included)
        code = child.wait(0.5)
        return [] if code is None else [code]

    code = eventually(exit_code, HALT_S, f"controller {node} halted")[0]
    said = quorum.output(node)[since:]
    halting = [line for line in said.splitlines() if "halting:" in line]
    if code != FATAL_EXIT_CODE or len(halting) != 1 or errno_text not in halting[0]:
        raise AssertionError(
            f"controller {node} exited {code}, not a halt ({FATAL_EXIT_CODE}) with one "
            f"'halting:' line naming {errno_text!r}: {halting or said[-1500:]}"
        )
    return halting[0]


def _used_bytes(directory: Path) -> int:
    s = os.statvfs(directory)
    return (s.f_blocks - s.f_bfree) * s.f_frsize


def fill(directory: Path) -> int:
    """The tmpfs at ``directory`` shrunk to what it holds (its bytes): full."""
    for _ in range(20):  # written meanwhile: a size below its use is refused
        used = _used_bytes(directory)
        if _ran("mount", "-o", f"remount,size={used}", str(directory)):
            return used
    raise RuntimeError(f"could not shrink {directory} to what it holds")


def grow(directory: Path) -> None:
    _run("mount", "-o", f"remount,size={TMPFS_SIZE}", str(directory))


def fail_fsync(quorum: LocalQuorum, pid: int, fail: bool = True) -> None:
    """fsync and fdatasync fail with EIO in the process ``pid`` (or no longer)."""
    command = (
        f"enable name=posix/io/sync/*,failinfo={EIO}" if fail else "disable name=posix/io/sync/*"
    )
    _run("fiu-ctrl", "-f", str(fiu_prefix(quorum)), "-c", command, str(pid))


def jump_clock(quorum: LocalQuorum, node: int, offset_s: int) -> None:
    """``node``'s wall clock ``offset_s`` from the real time (within a second)."""
    _set_clock(clock_file(quorum, node), offset_s)


def controller_disk_full(run: Run, fault: Fault) -> None:
    node, phase = _target(run, fault)
    quorum = run.rig.quorum
    since = len(quorum.output(node))
    used = fill(quorum.log_dir(node))
    run.note("metadata disk full", node=node, phase=phase, bytes=used)
    try:
        reason = halted(quorum, node, since, "No space left on device")
        run.note("controller halted", node=node, reason=reason[-200:])
    finally:
        grow(quorum.log_dir(node))
        run.note("metadata disk grown back", node=node)
    _started_again(run, node)


def controller_fsync_eio(run: Run, fault: Fault) -> None:
    node, phase = _target(run, fault)
    quorum = run.rig.quorum
    child = quorum.children[node]
    pid = child.pid
    assert pid is not None
    since = len(quorum.output(node))
    fail_fsync(quorum, pid)
    run.note("fsync fails with EIO", node=node, phase=phase, pid=pid)
    try:
        reason = halted(quorum, node, since, "Input/output error")
        run.note("controller halted", node=node, reason=reason[-200:])
    finally:
        if child.running:  # it did not halt (the run fails): the failure point goes
            fail_fsync(quorum, pid, fail=False)
        for end in (".in", ".out"):  # os._exit leaves its pipes behind
            Path(f"{fiu_prefix(quorum)}-{pid}{end}").unlink(missing_ok=True)
    _started_again(run, node)


def _started_again(run: Run, node: int) -> None:
    """The operator's part once the disk is fixed or replaced: the halted controller
    started again, on the same log (a fault puts back what it broke; a stage's later
    faults then find a quorum, not a voter left down until the stage ends)."""
    run.rig.quorum.start(node)
    run.note("controller started", node=node)


def controller_clock_jump(run: Run, fault: Fault) -> None:
    """The wall clock stepped by ``direction`` * ``seconds`` for ``hold_s``, then back.
    The process must ride it out (still running when the clock is put back); its
    leadership and the quorum's epoch are noted before and after."""
    node, phase = _target(run, fault)
    quorum = run.rig.quorum
    child = quorum.children[node]
    offset = int(fault.params["direction"] * fault.params["seconds"])
    before = run.status()
    jump_clock(quorum, node, offset)
    run.note("wall clock jumped", node=node, phase=phase, seconds=offset,
             active=before["active_controller"], epoch=before["kraft_epoch"])  # fmt: skip
    try:
        time.sleep(fault.params["hold_s"])
    finally:
        jump_clock(quorum, node, 0)
        after = run.status()
        run.note("wall clock back", node=node, running=child.running,
                 active=after["active_controller"], epoch=after["kraft_epoch"])  # fmt: skip
    if not child.running:
        code = child.process.returncode if child.process else None
        raise AssertionError(f"controller {node} exited ({code}) when its wall clock jumped")
