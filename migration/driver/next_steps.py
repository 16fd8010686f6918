"""What the operator does next, and the way back valid now: the runbooks' steps as data.

Contract:

- A :class:`Step` is one ``## N. Title`` section of ``runbooks/migration.md``,
  ``runbooks/finalize.md`` or ``runbooks/rollback.md``: its anchor (GitHub's slug of the
  heading), its title and the verbatim lines of its ``sh`` block, the runbook's variables
  (``$ZK``, ``$BROKER_IDS`` ...) kept. ``tests/unit/test_next_steps.py`` checks each
  title is a heading and each command a line of that runbook, so they cannot drift.
- :func:`next_step` answers for every (:class:`ClusterState`, :class:`Phase`): the step
  whose commands move the cluster on (or wait for it to move on), in KRaft the last one
  (retire ZooKeeper). It never returns ``None`` today; callers still handle it.
- :func:`rollback_step` is the first rollback step valid in a state, ``None`` in KRaft
  (finalized: there is no way back). Brokers in KRaft mode must be rolled back first
  (rollback.md step 2): MigrationFinished always has them; during MigrationActive a roll
  into KRaft mode may have begun, which only the caller knows (``kraft_brokers``).
- :func:`fill` substitutes ``$NAME`` and ``${NAME}`` for the names given, other
  variables left as they are.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from migration.driver.states import ClusterState, Phase

MIGRATION = "runbooks/migration.md"
FINALIZE = "runbooks/finalize.md"
ROLLBACK = "runbooks/rollback.md"


@dataclass(frozen=True)
class Step:
    runbook: str  # "runbooks/migration.md#3-enable-the-migration-on-the-brokers"
    title: str  # the section's title, without its number
    commands: tuple[str, ...]  # the verbatim lines of the section's sh block


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes."""
    kept = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return kept.replace(" ", "-")


def _step(runbook: str, number: int | None, title: str, *commands: str) -> Step:
    heading = f"{number}. {title}" if number is not None else title
    return Step(f"{runbook}#{_slug(heading)}", title, commands)


PREFLIGHT = _step(MIGRATION, 1, "Preflight", 'zk2kraft preflight --zk "$ZK"')
PROVISION = _step(
    MIGRATION,
    2,
    "Provision the KRaft controllers",
    "for id in $CONTROLLER_IDS; do",
    '  zk2kraft storage format --config "$(printf "$CONTROLLER_CONFIG" "$id")" --zk "$ZK"',
    '  $START_CONTROLLER "$id"',
    "done",
    'zk2kraft migration status --bootstrap-controller "$BOOTSTRAP_CONTROLLER" '
    "--wait-for MigrationEligible --timeout 300",
)
ENABLE = _step(
    MIGRATION,
    3,
    "Enable the migration on the brokers",
    "for id in $BROKER_IDS; do",
    '  zk2kraft broker-mode --config "$(printf "$BROKER_CONFIG" "$id")" --to migrating '
    '--controller-quorum-voters "$CONTROLLER_QUORUM_VOTERS"',
    '  $RESTART_BROKER "$id"',
    "done",
    'zk2kraft migration status --bootstrap-controller "$BOOTSTRAP_CONTROLLER" '
    "--wait-for DUAL_WRITE --timeout 600",
    'zk2kraft migration status --bootstrap-controller "$BOOTSTRAP_CONTROLLER"',
)
TO_KRAFT = _step(
    MIGRATION,
    4,
    "Restart the brokers into KRaft mode",
    "for id in $BROKER_IDS; do",
    '  zk2kraft broker-mode --config "$(printf "$BROKER_CONFIG" "$id")" --to kraft',
    '  $RESTART_BROKER "$id"',
    "done",
    'zk2kraft migration status --bootstrap-controller "$BOOTSTRAP_CONTROLLER" '
    "--wait-for MigrationFinished --timeout 300",
)
CHECK_FINISHED = _step(
    FINALIZE,
    1,
    "Check every broker is in KRaft mode",
    'zk2kraft migration status --bootstrap-controller "$BOOTSTRAP_CONTROLLER" '
    "--wait-for MigrationFinished --timeout 60",
)
AUDIT = _step(
    FINALIZE,
    2,
    "Audit: ZooKeeper holds what KRaft committed",
    'zk2kraft audit --zk "$ZK" --bootstrap-controller "$BOOTSTRAP_CONTROLLER"',
)
CAUGHT_UP = _step(
    FINALIZE,
    3,
    "Wait for ZooKeeper to catch up",
    'zk2kraft migration status --bootstrap-controller "$BOOTSTRAP_CONTROLLER" '
    "--wait-for ZkCaughtUp --timeout 120",
)
CONTROLLERS_TO_KRAFT = _step(
    FINALIZE,
    4,
    "Restart the controllers without the migration flag",
    "for id in $CONTROLLER_IDS; do",
    '  zk2kraft controller-mode --config "$(printf "$CONTROLLER_CONFIG" "$id")" --to kraft',
    '  $RESTART_CONTROLLER "$id"',
    '  zk2kraft migration status --bootstrap-controller "$BOOTSTRAP_CONTROLLER" '
    "--wait-for MigrationFinished,KRaft --timeout 120",
    "done",
    'zk2kraft migration status --bootstrap-controller "$BOOTSTRAP_CONTROLLER" '
    "--wait-for KRaft --timeout 120",
)
RETIRE = _step(FINALIZE, 5, "Retire ZooKeeper")

_STOP_CONTROLLERS = ("for id in $CONTROLLER_IDS; do", '  $STOP_CONTROLLER "$id"', "done")
_BROKERS_TO_ZOOKEEPER = (
    "for id in $BROKER_IDS; do",
    '  zk2kraft broker-mode --config "$(printf "$BROKER_CONFIG" "$id")" --to zookeeper',
    '  $RESTART_BROKER "$id"',
    "done",
)
_CLEAR_STORAGE = (
    "for id in $CONTROLLER_IDS; do",
    '  rm -rf "$(printf "$CONTROLLER_LOG_DIR" "$id")"',
    "done",
)
ROLL_BROKERS_BACK = _step(
    ROLLBACK,
    2,
    "From MigrationFinished (brokers in KRaft mode): roll them back first",
    "for id in $BROKER_IDS; do",
    '  zk2kraft broker-mode --config "$(printf "$BROKER_CONFIG" "$id")" --to migrating --zk "$ZK"',
    '  $RESTART_BROKER "$id"',
    "done",
    'zk2kraft migration status --bootstrap-controller "$BOOTSTRAP_CONTROLLER" '
    "--wait-for MigrationActive --timeout 300",
)
HAND_BACK = _step(
    ROLLBACK,
    3,
    "From MigrationActive: stop the controllers, hand ZooKeeper back",
    *_STOP_CONTROLLERS,
    'logs=""',
    "for id in $CONTROLLER_IDS; do",
    '  logs="$logs --log-dir $(printf "$CONTROLLER_LOG_DIR" "$id")"',
    "done",
    'zk2kraft rollback --zk "$ZK" $logs --dry-run',
    'zk2kraft rollback --zk "$ZK" $logs',
)
# The section has no block of its own: it names step 3's first loop, then steps 4 and 5.
UNPROVISION = _step(
    ROLLBACK,
    None,
    'From "controllers provisioned" (nothing copied yet)',
    *_STOP_CONTROLLERS,
    *_BROKERS_TO_ZOOKEEPER,
    *_CLEAR_STORAGE,
)

_BEFORE_DUAL_WRITE = {Phase.SYNC_KRAFT_TO_ZK, Phase.KRAFT_CONTROLLER_TO_BROKER_COMM}


def production_steps() -> tuple[Step, ...]:
    """migration.md 1-4 then finalize.md 1-5, in the order an operator runs them."""
    return (
        PREFLIGHT,
        PROVISION,
        ENABLE,
        TO_KRAFT,
        CHECK_FINISHED,
        AUDIT,
        CAUGHT_UP,
        CONTROLLERS_TO_KRAFT,
        RETIRE,
    )


def next_step(state: ClusterState, phase: Phase) -> Step | None:
    """What the operator does next in ``state`` with the active controller in ``phase``.

    ZooKeeper: the preflight while no quorum is up (INACTIVE), else the controllers'
    provisioning (the quorum forming). Eligible, Ready and Active before DUAL_WRITE: the
    brokers' flag and the wait for DUAL_WRITE. Active in DUAL_WRITE: the roll into KRaft
    mode. Finished: the audit (the state itself is finalize.md's step 1 check) while the
    controllers still carry the flag; a controller active without it (``INACTIVE`` in
    MigrationFinished) means the controllers' restarts are under way. KRaft: retire
    ZooKeeper."""
    if state == ClusterState.ZooKeeper:
        return PREFLIGHT if phase == Phase.INACTIVE else PROVISION
    if state in (ClusterState.MigrationEligible, ClusterState.MigrationReady):
        return ENABLE
    if state == ClusterState.MigrationActive:
        return ENABLE if phase in _BEFORE_DUAL_WRITE else TO_KRAFT
    if state == ClusterState.MigrationFinished:
        return CONTROLLERS_TO_KRAFT if phase == Phase.INACTIVE else AUDIT
    if state == ClusterState.KRaft:
        return RETIRE
    return None


def rollback_step(state: ClusterState, *, kraft_brokers: bool = False) -> Step | None:
    """The first step of the way back valid in ``state``; ``None`` after finalization.

    ZooKeeper or Eligible (nothing claimed, nothing copied): stop the controllers, take
    the flag off the brokers, clear the controllers' storage. Ready (the controller has
    claimed ``/controller``; the copy under way) and Active: stop the controllers and hand
    ZooKeeper back. Finished, or Active with ``kraft_brokers`` (a broker already in KRaft
    mode): roll the brokers back first."""
    if state == ClusterState.KRaft:
        return None
    if state in (ClusterState.ZooKeeper, ClusterState.MigrationEligible):
        return UNPROVISION
    if state == ClusterState.MigrationFinished or kraft_brokers:
        return ROLL_BROKERS_BACK
    return HAND_BACK


_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def fill(command: str, variables: Mapping[str, str]) -> str:
    """``command`` with ``$NAME`` and ``${NAME}`` replaced for every name in ``variables``;
    any other variable (``$id``, ``$logs``) kept as written."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return variables[name] if name in variables else match.group(0)

    return _VARIABLE.sub(one, command)
