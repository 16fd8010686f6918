"""The audit's diff on Spark's DataFrame engine (the only module that imports PySpark).

Two passes, both joins on the executors, nothing but small results collected:

1. entities: ZooKeeper's (kind, entity, digest) full-outer-joined with KRaft's; a pair
   whose digests differ is a difference unless ZooKeeper's digest (ABSENT when it lacks
   the entity) is one the entity had while the read ran (the in-flight table). Entities
   on one side only are differences as they stand.
2. fields, for the entities on both sides whose digests differ (the driver writes their
   fields, usually few): full outer join on (kind, entity, field), classified.

Every difference is a row ``(kind, entity, field, zookeeper, kraft, difference)`` with
``difference`` one of ``only_in_zookeeper``, ``only_in_kraft``, ``value_differs``;
entity-level rows have no field and no values.
"""

from __future__ import annotations

import logging
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from threading import Event

from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark's own idiom

from migration.audit.handoff import WorkDir, is_local_master
from migration.audit.rows import ABSENT

log = logging.getLogger(__name__)

ZK_ENTITIES = "zookeeper-entities.parquet"
KRAFT_ENTITIES = "kraft-entities.parquet"
IN_FLIGHT = "in-flight.parquet"
ZK_FIELDS = "zookeeper-fields.parquet"
KRAFT_FIELDS = "kraft-fields.parquet"

ONLY_IN_ZOOKEEPER = "only_in_zookeeper"
ONLY_IN_KRAFT = "only_in_kraft"
VALUE_DIFFERS = "value_differs"
IN_FLIGHT_CLASS = "in_flight"
BOTH = "both"
"""Entity classes of the first pass: one-sided differences, ``both`` (to expand to
fields), and ``in_flight`` (accepted)."""
DIFFERENCE_COLUMNS = ("kind", "entity", "field", "zookeeper", "kraft", "difference")

LOG4J = Path(__file__).with_name("log4j2.properties")
LOCAL_SHUFFLE_PARTITIONS = "8"
"""local[N]: a handful of shuffle partitions (Spark's 200 are for clusters)."""


def start_session(
    master: str | None, jvm_log: Path | None = None, launched: Event | None = None
) -> SparkSession:
    """The audit's Spark session. ``master`` None: the one spark-submit configured
    (its ``--master`` and ``--conf`` settings are left alone; its JVM runs already).
    Otherwise a JVM is launched with Spark's logging kept to errors and the UI off;
    with ``jvm_log`` its stdout and stderr go to that file (the JVM's own start-up
    warnings included), so the audit's output stays the audit's. ``launched`` is set
    once that JVM's process has been forked and answers (the caller's cue that this
    process forks no more for Spark)."""
    conf = SparkConf().setAppName("zk2kraft-audit").set("spark.ui.showConsoleProgress", "false")
    if master is None:
        return SparkSession(SparkContext.getOrCreate(conf))
    conf.setMaster(master).set("spark.ui.enabled", "false")
    conf.set("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={LOG4J.as_uri()}")
    if is_local_master(master):
        conf.set("spark.sql.shuffle.partitions", LOCAL_SHUFFLE_PARTITIONS)
    with ExitStack() as stack:
        out = None if jvm_log is None else stack.enter_context(open(jvm_log, "ab"))
        popen = None if out is None else {"stdout": out, "stderr": out}
        gateway = launch_gateway(conf, popen_kwargs=popen)  # type: ignore[no-untyped-call]
    log.info("Spark's JVM launched (master %s)", master)
    if launched is not None:
        launched.set()
    return SparkSession(SparkContext(conf=conf, gateway=gateway))


def submitted_master() -> str:
    """The master spark-submit gave this driver (its JVM's ``spark.master``), read
    before any SparkContext starts ('' if none). Under spark-submit ``launch_gateway``
    launches nothing: it connects to the JVM ``PYSPARK_GATEWAY_PORT`` names."""
    gateway = launch_gateway()  # type: ignore[no-untyped-call]
    try:
        return str(gateway.jvm.System.getProperty("spark.master") or "")
    finally:
        gateway.close()  # this side's connections only: the JVM goes on for the session


WARM_UP_ROWS = 1000


def warm_up(spark: SparkSession, scratch: str) -> None:
    """The first pass's plan once over a few generated rows written as Parquet to
    ``scratch`` and read back: the JVM loads and compiles what the pass runs (most of a
    cold first pass's cost) while the driver is still reading the stores, on little
    CPU (a few rows: no work to compete with the reads)."""
    spark.range(0, WARM_UP_ROWS).selectExpr(
        "'partition' as kind", "cast(id as string) as entity", "id as digest"
    ).write.mode("overwrite").parquet(scratch)
    rows = spark.read.parquet(scratch)
    zk = rows.withColumnRenamed("digest", "zk")
    kr = rows.withColumn("kr", F.col("digest") * (F.col("digest") % 2)).drop("digest")
    _classified(zk.join(kr, ["kind", "entity"], "full_outer"), None).groupBy(
        "kind", "class"
    ).count().collect()


def _classified(joined: DataFrame, accepted: Column | None) -> DataFrame:
    """The pairs whose digests differ, each with its class (``accepted``: in flight)."""
    rules = [] if accepted is None else [(accepted, IN_FLIGHT_CLASS)]
    rules += [(F.col("kr").isNull(), ONLY_IN_ZOOKEEPER), (F.col("zk").isNull(), ONLY_IN_KRAFT)]
    cls = F.when(*rules[0])
    for condition, value in rules[1:]:
        cls = cls.when(condition, value)
    return (
        joined.where(~F.col("zk").eqNullSafe(F.col("kr")))
        .withColumn("class", cls.otherwise(BOTH))
        .select("kind", "entity", "zk", "kr", "class")
    )


@dataclass
class EntityDiff:
    tagged: DataFrame
    """(kind, entity, zk, kr, class) of every entity pair that is not equal (cached)."""
    counts: dict[tuple[str, str], int]
    """(kind, class) -> entities."""

    def count(self, cls: str) -> int:
        return sum(n for (_, c), n in self.counts.items() if c == cls)

    def both_sides(self) -> DataFrame:
        """(kind, entity) held by both sides with different fields: to expand."""
        return self.tagged.where(F.col("class") == BOTH).select("kind", "entity")


def diff_entities(spark: SparkSession, work: WorkDir, in_flight: bool) -> EntityDiff:
    """The first pass, in one Spark job (the counts); ``in_flight``: whether the
    in-flight table has rows (without, its join is skipped)."""
    zk = spark.read.parquet(work.spark_path(ZK_ENTITIES)).withColumnRenamed("digest", "zk")
    kr = spark.read.parquet(work.spark_path(KRAFT_ENTITIES)).withColumnRenamed("digest", "kr")
    joined = zk.join(kr, ["kind", "entity"], "full_outer")
    accepted = None
    if in_flight:
        table = spark.read.parquet(work.spark_path(IN_FLIGHT)).withColumn("accepted", F.lit(True))
        joined = joined.withColumn("digest", F.coalesce(F.col("zk"), F.lit(ABSENT))).join(
            table, ["kind", "entity", "digest"], "left"
        )
        accepted = F.coalesce(F.col("accepted"), F.lit(False))
    tagged = _classified(joined, accepted).cache()
    counts = {
        (r["kind"], r["class"]): r["count"]
        for r in tagged.groupBy("kind", "class").count().collect()
    }
    return EntityDiff(tagged, counts)


def field_differences(spark: SparkSession, work: WorkDir) -> DataFrame:
    """The second pass: the fields the driver wrote for ``both_sides()``, classified."""
    zf = spark.read.parquet(work.spark_path(ZK_FIELDS)).withColumnRenamed("value", "zookeeper")
    kf = spark.read.parquet(work.spark_path(KRAFT_FIELDS)).withColumnRenamed("value", "kraft")
    return (
        zf.join(kf, ["kind", "entity", "field"], "full_outer")
        .where(~F.col("zookeeper").eqNullSafe(F.col("kraft")))
        .withColumn(
            "difference",
            F.when(F.col("kraft").isNull(), ONLY_IN_ZOOKEEPER)
            .when(F.col("zookeeper").isNull(), ONLY_IN_KRAFT)
            .otherwise(VALUE_DIFFERS),
        )
        .select(*DIFFERENCE_COLUMNS)
    )


def differences(entities: EntityDiff, by_field: DataFrame | None) -> DataFrame:
    """Every difference: entity-level rows for one-sided entities, then ``by_field``."""
    none = F.lit(None).cast("string")
    one_sided = entities.tagged.where(F.col("class").isin(ONLY_IN_ZOOKEEPER, ONLY_IN_KRAFT)).select(
        "kind",
        "entity",
        none.alias("field"),
        none.alias("zookeeper"),
        none.alias("kraft"),
        F.col("class").alias("difference"),
    )
    return one_sided if by_field is None else one_sided.unionByName(by_field)
