"""Apache Kafka's releases (3.9.2, 4.1.2) as installed by ``make kafka``, and its
command-line tools run to the end.

The jars are Kafka's own, from Maven Central: ``make kafka`` copies each release's
runtime classpath (pinned by ``migration/local/maven/kafka-<version>/pom.xml``) into
``.tools/kafka-<version>/libs``. :func:`kafka_release` finds them (``ZK2KRAFT_TOOLS_DIR``
replaces ``.tools``) and raises :class:`KafkaUnavailableError`, naming ``make kafka``,
when they are absent. Every JVM runs ``java -cp '<libs>/*' <main class>``, with the
class names a Kafka distribution's scripts use (:data:`TOOL_CLASSES`), and the JVM
settings of a small shared machine (:data:`JVM_OPTIONS`: the serial collector, C1 only).
Kafka's servers: :mod:`migration.local.kafka`.
"""

from __future__ import annotations

import base64
import os
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from migration.local.zookeeper import java_binary

KAFKA_VERSIONS = ("3.9.2", "4.1.2")
REPO_ROOT = Path(__file__).resolve().parents[2]
JVM_OPTIONS = (
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:-UsePerfData",
    "-Djava.awt.headless=true",
)

# Each tool's main class, as Kafka's scripts name it (kafka-storage.sh, kafka-topics.sh,
# ...); a release missing from a tool's map runs its default.
TOOL_CLASSES: dict[str, dict[str, str]] = {
    "storage": {"": "kafka.tools.StorageTool"},
    "topics": {"": "org.apache.kafka.tools.TopicCommand"},
    "configs": {"": "kafka.admin.ConfigCommand"},
    "acls": {"3": "kafka.admin.AclCommand", "": "org.apache.kafka.tools.AclCommand"},
    "metadata-quorum": {"": "org.apache.kafka.tools.MetadataQuorumCommand"},
    "dump-log": {"": "kafka.tools.DumpLogSegments"},
    "metadata-shell": {"": "org.apache.kafka.shell.MetadataShell"},
    "delegation-tokens": {"": "org.apache.kafka.tools.DelegationTokenCommand"},
    "reassign-partitions": {"": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"},
    "producer-perf": {"": "org.apache.kafka.tools.ProducerPerformance"},
}

# Logging for a node (into ``${kafka.logs.dir}/server.log``) and a tool (onto stderr): log4j
# 1 (reload4j) for 3.x, log4j2 for 4.x (a .properties file name: log4j2 reads a
# configuration by its extension); {level} is replaced.
_LOG4J1 = (
    "log4j.rootLogger={level}, out\nlog4j.appender.out.layout=org.apache.log4j.PatternLayout\n"
)
_LOG4J2 = "status = warn\nrootLogger.level = {level}\nrootLogger.appenderRef.out.ref = OUT\n"
_LOG_CONFIGS = {
    (3, True): _LOG4J1 + "log4j.appender.out=org.apache.log4j.FileAppender\n"
    "log4j.appender.out.File=${kafka.logs.dir}/server.log\n"
    "log4j.appender.out.layout.ConversionPattern=[%d] %p %m (%c)%n\n",
    (3, False): _LOG4J1 + "log4j.appender.out=org.apache.log4j.ConsoleAppender\n"
    "log4j.appender.out.Target=System.err\n"
    "log4j.appender.out.layout.ConversionPattern=[%d] %p %m (%c)%n\n",
    (4, True): _LOG4J2 + "appender.out.type = File\nappender.out.name = OUT\n"
    "appender.out.fileName = ${sys:kafka.logs.dir}/server.log\n"
    "appender.out.layout.type = PatternLayout\nappender.out.layout.pattern = [%d] %p %m (%c)%n\n",
    (4, False): _LOG4J2 + "appender.out.type = Console\nappender.out.name = OUT\n"
    "appender.out.target = SYSTEM_ERR\n"
    "appender.out.layout.type = PatternLayout\nappender.out.layout.pattern = [%d] %p %m (%c)%n\n",
}


class KafkaUnavailableError(RuntimeError):
    """The Kafka release's jars are not installed (``make kafka`` installs them)."""


class KafkaToolError(RuntimeError):
    """A Kafka tool exited non-zero; the message carries its command and output."""


def tools_dir() -> Path:
    """Where ``make kafka`` puts the releases: ``ZK2KRAFT_TOOLS_DIR`` or ``<repo>/.tools``."""
    env = os.environ.get("ZK2KRAFT_TOOLS_DIR")
    return Path(env) if env else REPO_ROOT / ".tools"


def random_cluster_id() -> str:
    """A cluster id as Kafka makes one: 16 random bytes, URL-safe base64, unpadded,
    never starting with ``-`` (a command line would read it as an option)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


@dataclass(frozen=True)
class KafkaRelease:
    """One installed Kafka release: its version and the directory of its jars."""

    version: str
    libs: Path

    @property
    def major(self) -> int:
        return int(self.version.split(".", 1)[0])

    @property
    def classpath(self) -> str:
        return f"{self.libs}/*"

    def tool_class(self, tool: str) -> str:
        """The main class of ``tool`` (a key of :data:`TOOL_CLASSES`) in this release."""
        names = TOOL_CLASSES[tool]
        return names.get(str(self.major), names[""])

    def log_config(self, path: Path, *, to_file: bool, level: str = "INFO") -> Path:
        """Write a logging configuration this release reads (log4j 1 for 3.x, log4j2
        for 4.x) to ``path``: everything at ``level`` and above, into
        ``${kafka.logs.dir}/server.log`` (``to_file``) or onto stderr."""
        text = _LOG_CONFIGS[(min(self.major, 4), to_file)].replace("{level}", level)
        path.write_text(text)
        return path

    def java_command(
        self, main_class: str, args: list[str], *, log_config: Path, logs_dir: Path,
        heap_mb: int, jvm_options: tuple[str, ...] = (),
    ) -> list[str]:  # fmt: skip
        """The command line that runs ``main_class`` on this release's classpath
        (``jvm_options`` after the fixed ones, e.g. a ``-javaagent:``)."""
        log_property = (
            "log4j2.configurationFile=" if self.major >= 4 else "log4j.configuration=file:"
        )
        return [
            java_binary(),
            f"-Xmx{heap_mb}m",
            f"-Xms{min(heap_mb, 256)}m",
            *JVM_OPTIONS,
            *jvm_options,
            f"-D{log_property}{log_config}",
            f"-Dkafka.logs.dir={logs_dir}",
            "-cp",
            self.classpath,
            main_class,
            *args,
        ]

    def tool_command(self, tool: str, *args: str, work_dir: Path, heap_mb: int = 256) -> list[str]:
        """The command line of one of Kafka's tools (``tool``: a key of
        :data:`TOOL_CLASSES`), its own log (WARN and above) on its stderr; ``work_dir``
        (made if missing) holds the logging configuration."""
        work_dir.mkdir(parents=True, exist_ok=True)
        config = self.log_config(
            work_dir / f"tools-log4j-{self.version}.properties", to_file=False, level="WARN"
        )
        return self.java_command(
            self.tool_class(tool), list(args), log_config=config, logs_dir=work_dir, heap_mb=heap_mb
        )

    def run_tool(
        self, tool: str, *args: str, work_dir: Path, timeout_s: float = 120.0,
        check: bool = True, heap_mb: int = 256,
    ) -> subprocess.CompletedProcess[str]:  # fmt: skip
        """Run one of Kafka's tools (``tool``: a key of :data:`TOOL_CLASSES`) to the end,
        in ``work_dir``, its own log (WARN and above) on its stderr. ``check``: a
        non-zero exit raises :class:`KafkaToolError` with the command and its output."""
        cmd = self.tool_command(tool, *args, work_dir=work_dir, heap_mb=heap_mb)
        done = subprocess.run(cmd, cwd=work_dir, capture_output=True, text=True,
                              timeout=timeout_s, check=False, stdin=subprocess.DEVNULL)  # fmt: skip
        if check and done.returncode != 0:
            raise KafkaToolError(
                f"Kafka {self.version} {tool} exited {done.returncode}: "
                f"{' '.join(args)}\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
            )
        return done

    def format_storage(self, config: Path, cluster_id: str, *extra: str) -> str:
        """``kafka-storage format`` of the node whose ``server.properties`` is
        ``config`` (``extra``: e.g. ``--standalone`` for a dynamic 4.x quorum);
        returns the tool's output. The id is passed as one ``--cluster-id=ID`` word: a
        random id may begin with ``-``, which the tool would take for an option."""
        done = self.run_tool(
            "storage",
            "format",
            f"--cluster-id={cluster_id}",
            "-c",
            str(config),
            *extra,
            work_dir=config.parent,
        )  # fmt: skip
        return done.stdout


def kafka_release(version: str = "3.9.2") -> KafkaRelease:
    """The installed release ``version``; :class:`KafkaUnavailableError` (naming
    ``make kafka``) when its jars are not there."""
    libs = tools_dir() / f"kafka-{version}" / "libs"
    if not any(libs.glob(f"kafka_2.13-{version}.jar")):
        raise KafkaUnavailableError(
            f"Apache Kafka {version} is not installed ({libs} has no kafka_2.13-{version}.jar):"
            " run `make kafka` (make test does)"
        )
    return KafkaRelease(version, libs)
