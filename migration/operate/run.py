"""``kafka migrate``: the plan run, step by step, gated, resumable.

Contracts:

- The plan is built afresh at each start (:func:`~migration.operate.plan.build_plan`:
  the files and ZooKeeper as they are now). A journal beside the inventory
  (:class:`Journal`: ``<inventory>.run.json``, replaced atomically after every step)
  records each step done, the baselines the gates compare with, the step under way and
  the reason a gate is closed. A run killed at any point and started again skips the
  steps done and redoes the one under way; each step is idempotent (an edit writes only
  what its file lacks, a restart is a restart, ``kafka-storage format`` takes
  ``--ignore-formatted``, a start of a running node starts nothing), and every gate is
  decided again on what the cluster reports now.
- A fresh run (nothing done) refuses a plan with problems. Before every step past the
  preflight, :func:`~migration.operate.gates.refusal` (and, once the controllers run,
  :func:`~migration.operate.gates.quorum_refusal`) is checked: a refusal stops the run
  with :class:`RefusedError`, naming what to do.
- An edit rewrites its file atomically, keeping its mode and owner (a controller's new
  file is 0600: it may hold ZooKeeper's client secrets), every other line, and the
  previous content as ``<file>.before-<phase>.bak``; a file changed by someone between
  the read and the write is left alone (the run stops; run again).
- A command that fails or outlives ``command_timeout_s`` stops the run
  (:class:`StepFailedError`), its output's tail in the error; every command's output is
  appended to ``<inventory>.run.log``.
- A gate is polled every ``poll_s`` until it opens or ``gate_timeout_s`` passes
  (:class:`GateTimedOutError`, with the last reason); those of :data:`REFUSING_GATES`
  refuse at once instead. The audit gates run ``zk2kraft audit``
  (ZooKeeper against a controller's metadata log): CONSISTENT opens them, differences
  refuse.
- ``say`` gets one line per step and per change of a closed gate's reason (progress on a
  terminal and in logs alike). Nothing here prints.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import assert_never

from migration.common.files import replace_contents
from migration.common.properties import ConfigError, load_properties
from migration.common.text import shown
from migration.image.model import ZK_MIGRATION_POST
from migration.operate.edits import apply
from migration.operate.gates import (
    TOPICS_FREE,
    Baseline,
    View,
    addresses,
    broker_baseline,
    gate_for,
    no_zk_brokers_open,
    quorum_refusal,
    read_view,
    refusal,
)
from migration.operate.inventory import Broker, Controller, Inventory
from migration.operate.journal import Journal
from migration.operate.plan import Plan, Step, build_plan
from migration.operate.reading import read_cluster, read_files
from migration.operate.rollback_plan import build_rollback_plan
from migration.records.secrets import is_sensitive_config
from migration.rollback import assess, hand_back
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.errors import ZnodeFormatError
from migration.zk.security import zk_config_security

NEW_CONTROLLER_FILE_MODE = 0o600
REFUSING_GATES = frozenset({"finalize.brokers", "rollback-controllers.brokers"})
"""Gates that refuse at once instead of waiting: finalizing with a broker still in
ZooKeeper mode or unregistered is the operator's to fix (KAFKA-20960,
docs/field-bugs.md#fb-30), never to wait out."""
BEGAN = "preflight.endpoints"  # the journal's baseline: each broker's endpoints at the start


class RunStoppedError(Exception):
    """The run stopped before the end; ``step`` is the step it stopped at."""

    def __init__(self, step: str, message: str) -> None:
        super().__init__(f"{step}: {message}")
        self.step = step


class RefusedError(RunStoppedError):
    """The cluster is not in a state to take the step (the operator acts, then runs again)."""


class StoppedAtError(RunStoppedError):
    """Stopped before the step ``--until`` names, as asked."""


class GateTimedOutError(RunStoppedError):
    """A gate stayed closed for the whole timeout."""


class StepFailedError(RunStoppedError):
    """An edit or a command failed."""


def readable_log_dirs(inv: Inventory) -> tuple[Path, ...]:
    """The controllers' metadata directories readable here (those that hold a log)."""
    return tuple(
        c.metadata_log_dir for c in inv.controllers
        if (c.metadata_log_dir / "__cluster_metadata-0").is_dir()
    )  # fmt: skip


def readable_log_dir(inv: Inventory) -> Path | None:
    """The first of :func:`readable_log_dirs`, or None."""
    return next(iter(readable_log_dirs(inv)), None)


def _holds_metadata(directory: Path) -> bool:
    return (directory / "__cluster_metadata-0").exists() or (directory / "meta.properties").exists()


@dataclass(frozen=True)
class RunOptions:
    gate_timeout_s: float = 900.0
    command_timeout_s: float = 600.0
    poll_s: float = 1.0
    until: str | None = None
    """Stop before the first step of this phase (or before this step id)."""
    step_taken: Callable[[str, float], None] | None = None
    """Told each step's id and its seconds once it is taken (the rehearsal times them)."""


class Runner:
    """One run of an inventory's migration (the module doc)."""

    def __init__(
        self, inv: Inventory, say: Callable[[str], None], options: RunOptions | None = None
    ) -> None:
        self.inv, self.say = inv, say
        self.options = options or RunOptions()
        self.journal = Journal.open(inv)
        self.nodes: dict[int, Broker | Controller] = {b.id: b for b in inv.brokers}
        self.nodes |= {c.id: c for c in inv.controllers}
        self.command_log = inv.path.with_name(inv.path.name + ".run.log")
        self.quorum_needed = True  # the quorum must lead (not while rolling back)

    def migrate(self) -> Plan:
        """Take every step of the migration not done yet; returns the plan run. Raises
        a :class:`RunStoppedError` where it stops."""
        if self.journal.rolling_back:
            raise RefusedError(
                "migrate", "a rollback is under way: finish it (zk2kraft kafka rollback) first"
            )
        cluster = read_cluster(self.inv)
        plan = build_plan(self.inv, read_files(self.inv), cluster)
        if not self.journal.done:
            if plan.problems:
                raise RefusedError("preflight", "; ".join(plan.problems))
            if stale := [str(c.metadata_log_dir) for c in self.inv.controllers
                         if _holds_metadata(c.metadata_log_dir)]:  # fmt: skip
                raise RefusedError(
                    "preflight", f"{', '.join(stale)}: a controller's metadata from an "
                    "earlier attempt (a controller would take its log for a finished copy): "
                    "move it aside, then run again"
                )  # fmt: skip
        elif cluster.error is not None or cluster.cluster_id is None:
            raise RefusedError("resume", cluster.error or "ZooKeeper holds no /cluster/id")
        self._take_all(plan)
        self.say("done: the migration is finalized")
        return plan

    def rollback(self) -> Plan:
        """Take every step of the way back not done yet (see
        :mod:`~migration.operate.rollback_plan`); refused once the migration is
        finalized. The journal is set aside at the end, so the next migration starts
        afresh."""
        if any(
            step.startswith("finalize.") and step.endswith(".edit") for step in self.journal.done
        ):
            raise RefusedError(
                "rollback", "the migration is finalized: ZooKeeper has not been written since, "
                "so there is no way back without losing every change made after"
            )  # fmt: skip
        self.quorum_needed = False
        view = self._view()
        if view.snap is None:
            raise RefusedError("rollback", f"ZooKeeper not read: {view.zk_error}")
        if view.image is not None and view.image.zk_migration_state == ZK_MIGRATION_POST:
            raise RefusedError(
                "rollback", "the controllers' log says POST_MIGRATION: the migration is "
                "finalized, and there is no way back"
            )  # fmt: skip
        migration = view.snap.migration
        dual_writing = migration is not None and migration.value.kraft_metadata_offset > 0
        plan = build_rollback_plan(
            self.inv, read_files(self.inv), read_cluster(self.inv), dual_writing,
            self.journal.done,
        )  # fmt: skip
        if plan.problems:
            raise RefusedError("rollback", "; ".join(plan.problems))
        if not self.journal.rolling_back:
            self.journal.rolling_back = True
            self.journal.rollback_began = int(time.time())
        self.journal.save()
        self._take_all(plan)
        self.journal.retire()
        self.say("done: the cluster is back on ZooKeeper; the journal is set aside")
        return plan

    def _take_all(self, plan: Plan) -> None:
        steps = [(phase.name, step) for phase in plan.phases for step in phase.steps]
        until = self.options.until
        if until is not None and until not in {n for p, s in steps for n in (p, s.id)}:
            raise RefusedError(
                "--until", f"{shown(until)} is neither a phase nor a step of the plan "
                f"(phases: {', '.join(dict.fromkeys(p for p, _ in steps))})"
            )  # fmt: skip
        if self.journal.done:
            self.say(f"resuming: {len(self.journal.done)} step(s) done")
        for number, (phase, step) in enumerate(steps, 1):
            if step.id in self.journal.done:
                continue
            if self.options.until in (phase, step.id):
                self.say(f"stopping before {step.id} (--until {self.options.until})")
                raise StoppedAtError(step.id, "stopped as asked (--until)")
            self.say(f"[{number}/{len(steps)}] {step.id}: {step.what}")
            self.journal.current = step.id
            self.journal.save()
            if phase != "preflight" and step.kind != "gate":
                self._guard(step)
            began = time.monotonic()
            self._take(phase, step)
            self.journal.mark(step.id)
            if self.options.step_taken is not None:
                self.options.step_taken(step.id, time.monotonic() - began)

    # --- refusals -----------------------------------------------------------------------

    def _view(self, topics: bool = True) -> View:
        return read_view(self.inv, self._log_dir(), topics=topics)

    def _log_dir(self) -> Path | None:
        return readable_log_dir(self.inv)

    def _guard(self, step: Step) -> None:
        view = self._view()
        began = {int(k): v for k, v in self.journal.baselines.get(BEGAN, {}).items()}
        # a broker's own push and restart: it may be down (a run killed mid-restart)
        restarting = step.node if step.id.endswith((".push", ".restart")) else None
        why = refusal(self.inv, view, restarting=restarting, began=began)
        if why is None and self.quorum_needed and "controllers.quorum" in self.journal.done:
            why = quorum_refusal(view)
        if why is None and step.id.startswith("finalize."):  # re-checked at every step
            why = no_zk_brokers_open(self.inv, view, Baseline())
        if why is not None:
            raise RefusedError(step.id, why)

    # --- steps ------------------------------------------------------------------------------

    def _take(self, phase: str, step: Step) -> None:
        match step.kind:
            case "edit":
                self._edit(phase, step)
            case "run":
                self._command(step)
            case "zookeeper":
                self._hand_back(step)
            case "deprovision":
                self._deprovision(step)
            case "gate":
                self._gate(step)
            case _:
                assert_never(step.kind)

    def _edit(self, phase: str, step: Step) -> None:
        assert step.node is not None and step.change is not None
        path = self.nodes[step.node].properties
        exists = path.exists()
        try:
            before = load_properties(path).text if exists else ""
        except ConfigError as exc:
            raise StepFailedError(step.id, str(exc)) from None
        changes = step.change(before)
        if not changes:
            self.say(f"  {path}: as wanted already")
            return
        after = apply(before, changes)
        # a file gaining a secret (ZooKeeper's client passwords) is its owner's alone
        secret = any(is_sensitive_config(k) for k, v in changes.items() if v is not None)
        try:
            if not exists:
                path.parent.mkdir(parents=True, exist_ok=True)
            replace_contents(
                path,
                after.encode("latin-1"),
                backup=f".before-{phase}.bak" if exists else None,
                expected=before.encode("latin-1") if exists else None,
                mode=None if exists and not secret else NEW_CONTROLLER_FILE_MODE,
            )
        except OSError as exc:
            raise StepFailedError(step.id, f"{path}: {exc.strerror or exc}") from None
        keys = ", ".join(f"{k}{'' if v is not None else ' (removed)'}" for k, v in changes.items())
        self.say(f"  {path}: {keys}")

    def _command(self, step: Step) -> None:
        assert step.command is not None and step.node is not None
        gate = _gate_of(step.id)
        if gate is not None and gate not in self.journal.baselines:
            self.journal.baselines[gate] = broker_baseline(self._view(), step.node).to_json()
            self.journal.save()
        argv = list(step.command)
        self.say(f"  $ {shlex.join(argv)}")
        try:
            done = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=self.options.command_timeout_s,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            raise StepFailedError(
                step.id, f"{argv[0]} still running after {self.options.command_timeout_s:g}s"
            ) from None
        except OSError as exc:
            raise StepFailedError(step.id, f"{argv[0]}: {exc.strerror or exc}") from None
        with self.command_log.open("a") as log:
            log.write(f"--- {step.id}: {argv} exited {done.returncode}\n{done.stdout}{done.stderr}")
        if done.returncode != 0:
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
            raise StepFailedError(
                step.id, f"{argv[0]} exited {done.returncode}: {shown(tail, bare=True)}"
            )

    def _hand_back(self, step: Step) -> None:
        """ZooKeeper handed back in one checked multi (:mod:`migration.rollback`)."""
        log_dirs = readable_log_dirs(self.inv)
        security = zk_config_security(self.inv.zookeeper_client_config)
        with ZkClient(self.inv.zookeeper_connect, timeout_s=15, security=security) as client:
            try:
                assessment = assess(client, log_dirs=log_dirs)
            except ZnodeFormatError as exc:
                if exc.path != paths.MIGRATION:
                    raise StepFailedError(step.id, str(exc)) from None
                _, stat = client.kazoo.get(paths.MIGRATION)
                client.kazoo.delete(paths.MIGRATION, version=stat.version)
                self.say(f"  {paths.MIGRATION} held no migration state ({exc.problem}): deleted")
                assessment = assess(client, log_dirs=log_dirs)
            if assessment.blocked:
                raise RefusedError(step.id, "; ".join(f.message for f in assessment.blocked))
            epoch = assessment.controller_epoch[0] if assessment.controller_epoch else None
            self.say(
                f"  /controller_epoch {epoch}, the KRaft controller's epoch "
                f"{assessment.kraft_controller_epoch}, the highest partition state's "
                f"{assessment.max_state_epoch}: /controller_epoch set to "
                f"{assessment.new_controller_epoch}"
            )
            ops = hand_back(client, assessment)
        written = ", ".join(f"{op.kind.name.lower()} {op.path}" for op in ops)
        self.say(f"  written: {written or 'nothing'}")

    def _deprovision(self, step: Step) -> None:
        """The controller's metadata directory's contents moved into
        ``<dir>.rolled-back-<time the rollback began>`` (a mount point stays)."""
        assert step.node is not None
        controller = self.nodes[step.node]
        assert isinstance(controller, Controller)
        directory = controller.metadata_log_dir
        aside = directory.with_name(f"{directory.name}.rolled-back-{self.journal.rollback_began}")
        if not directory.is_dir():
            if aside.is_dir():
                return  # moved by a run killed after
            raise RefusedError(
                step.id, f"{directory} is not here: move it aside on the controller's host "
                "(a controller must never start from it again), then run again"
            )  # fmt: skip
        try:
            aside.mkdir(exist_ok=True)
            for entry in sorted(directory.iterdir()):
                entry.rename(aside / entry.name)
        except OSError as exc:
            raise StepFailedError(step.id, f"{directory}: {exc.strerror or exc}") from None
        self.say(f"  {directory}: its contents moved to {aside}")

    def _gate(self, step: Step) -> None:
        if step.id.startswith("audit."):
            self._audit(step)
            return
        gate = gate_for(step.id)
        assert gate is not None, step.id
        baseline = Baseline.from_json(self.journal.baselines.get(step.id, {}))
        deadline = time.monotonic() + self.options.gate_timeout_s
        last = None
        while True:
            view = self._view(topics=gate not in TOPICS_FREE)
            if step.id.endswith(("dual-write", "written-behind")) and baseline.log_end is None:
                baseline.log_end = view.log_end
                self.journal.baselines[step.id] = baseline.to_json()
            why = gate(self.inv, view, baseline)
            if why is None:
                if step.id == "preflight.brokers":  # where each broker is, to tell a replaced one
                    self.journal.baselines[BEGAN] = {str(k): v for k, v in addresses(view).items()}
                self.say(f"  open: {step.waits_for}")
                return
            if step.id in REFUSING_GATES:
                raise RefusedError(step.id, why)
            if why != last:
                self.say(f"  waiting: {why}")
                self.journal.waiting = why
                self.journal.save()
                last = why
            if time.monotonic() > deadline:
                raise GateTimedOutError(
                    step.id, f"still closed after {self.options.gate_timeout_s:g}s: {why}"
                )
            time.sleep(self.options.poll_s)

    def _audit(self, step: Step) -> None:
        log_dir = self._log_dir()
        if log_dir is None:
            raise RefusedError(step.id, "no controller's metadata log is readable here to audit")
        argv = [
            sys.executable, "-m", "migration.cli.main", "audit",
            "--zk", str(self.inv.zookeeper_connect),
            "--zk-config", str(self.inv.zookeeper_client_config),
            "--log-dir", str(log_dir), "--json",
        ]  # fmt: skip
        self.say(f"  auditing ZooKeeper against {log_dir}")
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
                timeout=self.options.command_timeout_s,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise StepFailedError(
                step.id, f"the audit still running after {self.options.command_timeout_s:g}s"
            ) from None
        try:
            report = json.loads(done.stdout)
        except ValueError:
            report = {}
        verdict = {0: "CONSISTENT", 1: "DIFFERENCES FOUND"}.get(done.returncode, "NOT COMPARED")
        self.journal.audits.append({
            "step": step.id, "at": datetime.now(UTC).isoformat(timespec="seconds"),
            "verdict": verdict, "differences": report.get("differences"),
            "offset": report.get("offset"),
        })  # fmt: skip
        self.journal.save()
        if done.returncode == 0:
            self.say("  open: zk2kraft audit: CONSISTENT")
            return
        if done.returncode == 1:
            raise RefusedError(
                step.id,
                f"the audit found {report.get('differences', 'some')} difference(s) between "
                f"ZooKeeper and the metadata log ({shown(report.get('by_difference', {}))}); "
                "see `zk2kraft audit --out DIR` for each",
            )
        tail = "\n".join(done.stderr.strip().splitlines()[-5:])
        raise StepFailedError(step.id, f"the audit could not compare: {shown(tail, bare=True)}")


def _gate_of(step_id: str) -> str | None:
    """The gate that follows a broker's restart step (its baseline is taken before)."""
    if step_id.endswith(".restart") and step_id.startswith(
        ("brokers-migration.", "brokers-kraft.")
    ):
        return step_id.removesuffix(".restart") + ".back"
    return None
