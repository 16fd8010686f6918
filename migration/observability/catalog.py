"""Every metric zk2kraft exports: its Prometheus name, type, meaning, where it is
reported and the Kafka MBean it mirrors. The one list the collectors, docs/metrics.md's
table, the alert rules' and dashboard's tests all read.

Names are what the Prometheus JMX exporter makes of Kafka's MBeans under the rules most
deployments use (Strimzi's): ``kafka.<domain><type=T, name=N><>Value`` becomes
``kafka_<domain>_<t>_<n>`` lower-cased, other key properties become labels, a timer's
percentiles become a ``quantile`` label beside ``_count``; ``kafka.server<type=
raft-metrics><>current-leader`` becomes ``kafka_server_raftmetrics_current_leader``. So
dashboards and alerts written for Kafka read zk2kraft unchanged. What Kafka has no MBean
for carries the ``zk2kraft_`` prefix.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    GAUGE = "gauge"
    COUNTER = "counter"
    SUMMARY = "summary"


class Where(StrEnum):
    CONTROLLER = "controllers"
    ACTIVE = "the active controller"
    BROKER = "brokers"
    ZK_CONTROLLER = "the ZooKeeper controller (a broker)"
    RAFT = "controllers, KRaft brokers"
    AUDIT = "the audit (pushed to a Pushgateway: `zk2kraft audit --pushgateway`)"
    DRIVEN = (
        "the driven migration (`zk2kraft kafka migrate\\|rollback --page`, `kafka status --serve`)"
    )


@dataclass(frozen=True)
class Spec:
    name: str
    kind: Kind
    help: str
    where: tuple[Where, ...]
    mbean: str = ""  # Kafka's, when there is one
    labels: tuple[str, ...] = ()
    designed: bool = False  # in Kafka's migration design (KIP-866), never built there


def _kc(name: str) -> str:
    return f"kafka.controller:type=KafkaController,name={name}"


def _events(name: str) -> str:
    return f"kafka.controller:type=ControllerEventManager,name={name}"


def _raft(name: str) -> str:
    return f"kafka.server:type=raft-metrics,name={name}"


_CONTROLLERS = (Where.CONTROLLER, Where.ZK_CONTROLLER)

ACTIVE_CONTROLLER_COUNT = Spec(
    "kafka_controller_kafkacontroller_activecontrollercount",
    Kind.GAUGE,
    "1 on the active controller (KRaft leader or the ZooKeeper controller), else 0",
    _CONTROLLERS,
    _kc("ActiveControllerCount"),
)
ZK_MIGRATION_STATE = Spec(
    "kafka_controller_kafkacontroller_zkmigrationstate",
    Kind.GAUGE,
    "ZkMigrationState in the log: NONE 0, MIGRATION 1, PRE_MIGRATION 2, POST_MIGRATION 3; "
    "the ZooKeeper controller reports ZK 4",
    (*_CONTROLLERS, Where.DRIVEN),
    _kc("ZkMigrationState"),
)
MIGRATION_STATE = Spec(
    "kafka_controller_kafkacontroller_migrationstate",
    Kind.GAUGE,
    "The cluster's migration state: ZooKeeper 1, MigrationEligible 2, MigrationReady 3, "
    "MigrationActive 4, MigrationFinished 5, KRaft 6 (0 unknown: nothing replayed yet)",
    (Where.CONTROLLER,),
    _kc("MigrationState"),
    designed=True,
)
MIGRATING_ZK_BROKER_COUNT = Spec(
    "kafka_controller_kafkacontroller_migratingzkbrokercount",
    Kind.GAUGE,
    "ZooKeeper-mode brokers registered with the KRaft controllers",
    (Where.CONTROLLER, Where.DRIVEN),
    _kc("MigratingZkBrokerCount"),
)
ZK_WRITE_BEHIND_LAG = Spec(
    "kafka_controller_kafkacontroller_zkwritebehindlag",
    Kind.GAUGE,
    "Committed records ZooKeeper does not hold yet (0 unless dual-writing)",
    (Where.ACTIVE, Where.DRIVEN),
    _kc("ZkWriteBehindLag"),
)
ZK_WRITE_SNAPSHOT_TIME = Spec(
    "kafka_controller_kafkacontroller_zkwritesnapshottimems",
    Kind.SUMMARY,
    "Milliseconds of each full sync of the image to ZooKeeper",
    (Where.ACTIVE,),
    _kc("ZkWriteSnapshotTimeMs"),
    ("quantile",),
)
ZK_WRITE_DELTA_TIME = Spec(
    "kafka_controller_kafkacontroller_zkwritedeltatimems",
    Kind.SUMMARY,
    "Milliseconds of each dual-write of committed changes to ZooKeeper",
    (Where.ACTIVE,),
    _kc("ZkWriteDeltaTimeMs"),
    ("quantile",),
)
OFFLINE_PARTITIONS = Spec(
    "kafka_controller_kafkacontroller_offlinepartitionscount",
    Kind.GAUGE,
    "Partitions without a leader",
    _CONTROLLERS,
    _kc("OfflinePartitionsCount"),
)
GLOBAL_TOPICS = Spec(
    "kafka_controller_kafkacontroller_globaltopiccount",
    Kind.GAUGE,
    "Topics in the metadata",
    _CONTROLLERS,
    _kc("GlobalTopicCount"),
)
GLOBAL_PARTITIONS = Spec(
    "kafka_controller_kafkacontroller_globalpartitioncount",
    Kind.GAUGE,
    "Partitions in the metadata",
    _CONTROLLERS,
    _kc("GlobalPartitionCount"),
)
FENCED_BROKERS = Spec(
    "kafka_controller_kafkacontroller_fencedbrokercount",
    Kind.GAUGE,
    "Registered brokers that are fenced",
    (Where.CONTROLLER,),
    _kc("FencedBrokerCount"),
)
ACTIVE_BROKERS = Spec(
    "kafka_controller_kafkacontroller_activebrokercount",
    Kind.GAUGE,
    "Registered brokers that are unfenced",
    (Where.CONTROLLER,),
    _kc("ActiveBrokerCount"),
)
EVENT_QUEUE_TIME = Spec(
    "kafka_controller_controllereventmanager_eventqueuetimems",
    Kind.SUMMARY,
    "Milliseconds each event waited in the controller's event queue before it ran",
    (Where.CONTROLLER,),
    _events("EventQueueTimeMs"),
    ("quantile",),
)
EVENT_QUEUE_PROCESSING_TIME = Spec(
    "kafka_controller_controllereventmanager_eventqueueprocessingtimems",
    Kind.SUMMARY,
    "Milliseconds each event held the controller's event thread",
    (Where.CONTROLLER,),
    _events("EventQueueProcessingTimeMs"),
    ("quantile",),
)
LAST_APPLIED_RECORD_OFFSET = Spec(
    "kafka_controller_kafkacontroller_lastappliedrecordoffset",
    Kind.GAUGE,
    "The offset of the last record this controller replayed into its image (-1 none)",
    (Where.CONTROLLER,),
    _kc("LastAppliedRecordOffset"),
)
LAST_APPLIED_RECORD_TIMESTAMP = Spec(
    "kafka_controller_kafkacontroller_lastappliedrecordtimestamp",
    Kind.GAUGE,
    "The append time (ms since the epoch) of the last record replayed (0 none)",
    (Where.CONTROLLER,),
    _kc("LastAppliedRecordTimestamp"),
)
LAST_APPLIED_RECORD_LAG_MS = Spec(
    "kafka_controller_kafkacontroller_lastappliedrecordlagms",
    Kind.GAUGE,
    "Milliseconds from the last replayed record's append to its replay on this controller",
    (Where.CONTROLLER,),
    _kc("LastAppliedRecordLagMs"),
)
NEW_ACTIVE_CONTROLLERS = Spec(
    "kafka_controller_kafkacontroller_newactivecontrollerscount",
    Kind.GAUGE,
    "Leaders this controller has seen elected since it started (grows only; its rate is "
    "leader churn)",
    (Where.CONTROLLER,),
    _kc("NewActiveControllersCount"),
)
METADATA_ERRORS = Spec(
    "kafka_controller_kafkacontroller_metadataerrorcount",
    Kind.GAUGE,
    "Errors processing the metadata log since the process started: a record that failed "
    "to replay (the controller then halts) or a publisher that failed to apply a change",
    (Where.CONTROLLER,),
    _kc("MetadataErrorCount"),
)
TIMED_OUT_BROKER_HEARTBEATS = Spec(
    "kafka_controller_kafkacontroller_timedoutbrokerheartbeatcount",
    Kind.GAUGE,
    "Broker heartbeats this controller did not answer in time since it started",
    (Where.CONTROLLER,),
    _kc("TimedOutBrokerHeartbeatCount"),
)
METADATA_TYPE = Spec(
    "kafka_server_kafkaserver_metadatatype",
    Kind.GAUGE,
    "Where this broker's metadata comes from: ZooKeeper 1, Dual 2 (a migrating broker led "
    "by a KRaft controller), KRaft 3",
    (Where.BROKER,),
    "kafka.server:type=KafkaServer,name=MetadataType",
    designed=True,
)
FEATURES = Spec(
    "kafka_server_kafkaserver_features",
    Kind.GAUGE,
    "1 for each finalized feature, with its level",
    (Where.CONTROLLER, Where.BROKER),
    "kafka.server:type=KafkaServer,name=Features",
    ("feature", "level"),
    designed=True,
)
RAFT_CURRENT_STATE = Spec(
    "kafka_server_raftmetrics_current_state",
    Kind.GAUGE,
    "1 for this node's Raft role (leader, follower, candidate, prospective, unattached, "
    "voted, resigned, observer)",
    (Where.RAFT,),
    _raft("current-state"),
    ("current_state",),
)
RAFT_CURRENT_LEADER = Spec(
    "kafka_server_raftmetrics_current_leader",
    Kind.GAUGE,
    "The leader this node knows (-1 none)",
    (Where.RAFT,),
    _raft("current-leader"),
)
RAFT_CURRENT_EPOCH = Spec(
    "kafka_server_raftmetrics_current_epoch",
    Kind.GAUGE,
    "The quorum epoch this node is in",
    (Where.RAFT,),
    _raft("current-epoch"),
)
RAFT_CURRENT_VOTE = Spec(
    "kafka_server_raftmetrics_current_vote",
    Kind.GAUGE,
    "The voter this node voted for in the current epoch (-1 none)",
    (Where.RAFT,),
    _raft("current-vote"),
)
RAFT_HIGH_WATERMARK = Spec(
    "kafka_server_raftmetrics_high_watermark",
    Kind.GAUGE,
    "The committed offset this node knows",
    (Where.RAFT,),
    _raft("high-watermark"),
)
RAFT_LOG_END_OFFSET = Spec(
    "kafka_server_raftmetrics_log_end_offset",
    Kind.GAUGE,
    "The end offset of this node's metadata log",
    (Where.RAFT,),
    _raft("log-end-offset"),
)
RAFT_COMMIT_LATENCY_AVG = Spec(
    "kafka_server_raftmetrics_commit_latency_avg",
    Kind.GAUGE,
    "Mean milliseconds from the leader's append to commit (recent batches)",
    (Where.RAFT,),
    _raft("commit-latency-avg"),
)
RAFT_COMMIT_LATENCY_MAX = Spec(
    "kafka_server_raftmetrics_commit_latency_max",
    Kind.GAUGE,
    "Longest milliseconds from the leader's append to commit (recent batches)",
    (Where.RAFT,),
    _raft("commit-latency-max"),
)
RAFT_APPEND_RATE = Spec(
    "kafka_server_raftmetrics_append_records_rate",
    Kind.GAUGE,
    "Records appended by the leader per second (last 30 s)",
    (Where.RAFT,),
    _raft("append-records-rate"),
)
RAFT_FETCH_RATE = Spec(
    "kafka_server_raftmetrics_fetch_records_rate",
    Kind.GAUGE,
    "Records fetched from the leader per second (last 30 s)",
    (Where.RAFT,),
    _raft("fetch-records-rate"),
)
DRIVER_PHASE = Spec(
    "zk2kraft_migration_driver_phase",
    Kind.GAUGE,
    "1 for the migration driver's phase (Kafka's MigrationDriverState), 0 for the others",
    (Where.CONTROLLER,),
    labels=("phase",),
)
DRIVER_PHASE_SECONDS = Spec(
    "zk2kraft_migration_driver_phase_seconds",
    Kind.GAUGE,
    "Seconds the migration driver has been in its current phase",
    (Where.CONTROLLER,),
)
DUAL_WRITE_ERRORS = Spec(
    "zk2kraft_zk_dual_write_errors_total",
    Kind.COUNTER,
    "Failed writes to ZooKeeper by error: fenced (another controller claimed it), drift "
    "(ZooKeeper changed behind the writer: full sync), unavailable",
    (Where.ACTIVE,),
    labels=("error",),
)
MIGRATION_ENABLED = Spec(
    "zk2kraft_migration_enabled",
    Kind.GAUGE,
    "1 when this controller runs with zookeeper.metadata.migration.enable=true (0: it "
    "finalizes a migration it finds in MIGRATION)",
    (Where.CONTROLLER,),
)
MAX_WRITE_BEHIND = Spec(
    "zk2kraft_migration_max_write_behind_records",
    Kind.GAUGE,
    "zookeeper.metadata.migration.max.write.behind.records: the lag past which admin "
    "writes are refused until ZooKeeper catches up",
    (Where.CONTROLLER,),
)
ZK_CONNECTED = Spec(
    "zk2kraft_zookeeper_connected",
    Kind.GAUGE,
    "1 while the migration driver's ZooKeeper session is connected (present once it has one)",
    (Where.CONTROLLER,),
)

AUDIT_LAST_RUN = Spec(
    "zk2kraft_audit_last_run_timestamp_seconds",
    Kind.GAUGE,
    "When the last audit finished (seconds since the epoch), whatever it found",
    (Where.AUDIT, Where.DRIVEN),
)
AUDIT_SUCCESS = Spec(
    "zk2kraft_audit_success",
    Kind.GAUGE,
    "1 when the last audit found ZooKeeper and the metadata log consistent, 0 when it found "
    "differences or could not run",
    (Where.AUDIT, Where.DRIVEN),
)
AUDIT_DIFFERENCES = Spec(
    "zk2kraft_audit_differences",
    Kind.GAUGE,
    "Differences the last audit found, by kind (every kind, 0 when clean; absent when it "
    "could not run)",
    (Where.AUDIT,),
    labels=("kind",),
)

DRIVEN_PHASE = Spec(
    "zk2kraft_kafka_migrate_phase",
    Kind.GAUGE,
    "1 for the phase of the driven migration or rollback the run is in (of the step under "
    "way, else of the last step done), 0 for the others",
    (Where.DRIVEN,),
    labels=("phase",),
)
DRIVEN_STEPS_DONE = Spec(
    "zk2kraft_kafka_migrate_steps_done",
    Kind.GAUGE,
    "Steps the run's journal records as done (the migration's, then the rollback's)",
    (Where.DRIVEN,),
)
DRIVEN_GATE_CLOSED_SECONDS = Spec(
    "zk2kraft_kafka_migrate_gate_closed_seconds",
    Kind.GAUGE,
    "Seconds the gate the run waits on has been seen closed (present only while one is)",
    (Where.DRIVEN,),
    labels=("gate",),
)
DRIVEN_BROKERS = Spec(
    "zk2kraft_kafka_migrate_brokers",
    Kind.GAUGE,
    "The inventory's brokers by mode as the cluster reports them: kraft, migrating, "
    "zookeeper, unregistered",
    (Where.DRIVEN,),
    labels=("mode",),
)
DRIVEN_ROLLING_BACK = Spec(
    "zk2kraft_kafka_migrate_rolling_back",
    Kind.GAUGE,
    "1 while the run's journal is a rollback's, else 0",
    (Where.DRIVEN,),
)
DRIVEN_WAY_BACK = Spec(
    "zk2kraft_kafka_migrate_way_back",
    Kind.GAUGE,
    "1 while `zk2kraft kafka rollback` is a valid way back, 0 once the migration is finalized",
    (Where.DRIVEN,),
)
DRIVEN_READ_ERRORS = Spec(
    "zk2kraft_kafka_migrate_read_error",
    Kind.GAUGE,
    "1 when the newest reading could not read a part (zookeeper, metadata_log, status: the "
    "journal or the reading itself), else 0",
    (Where.DRIVEN,),
    labels=("part",),
)

ALL: tuple[Spec, ...] = tuple(v for v in dict(globals()).values() if isinstance(v, Spec))


def names() -> set[str]:
    """Every exported name, with a summary's ``_count`` and ``_sum`` series."""
    out: set[str] = set()
    for spec in ALL:
        out.add(spec.name)
        if spec.kind is Kind.SUMMARY:
            out |= {spec.name + "_count", spec.name + "_sum"}
    return out


def markdown_table() -> str:
    """The table of docs/metrics.md."""
    rows = ["| metric | type | meaning | where | Kafka's MBean |", "|---|---|---|---|---|"]
    for spec in ALL:
        labels = "{" + ",".join(spec.labels) + "}" if spec.labels else ""
        mbean = f"`{spec.mbean}`" if spec.mbean else "—"
        if spec.designed:
            mbean += " (designed in KIP-866, never built in Kafka)"
        rows.append(
            f"| `{spec.name}{labels}` | {spec.kind} | {spec.help} | "
            f"{', '.join(spec.where)} | {mbean} |"
        )
    return "\n".join(rows)
