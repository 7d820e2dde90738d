"""The real Apache Kafka and ZooKeeper servers kmigrate runs locally (sandbox, tests, benchmarks).

Jars come from Maven Central through the small Maven project beside this file, resolved once
into a per-version directory of the user's cache and reused after. Java and Maven are checked
first, with a message that says what to install.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from migrate.adapters.class_data import class_data_options
from migrate.core.versions import uses_log4j2
from migrate.errors import BadInput, MissingTool

KAFKA_VERSION = "3.9.2"
ZOOKEEPER_VERSION = "3.8.6"

# Stock Kafka tools, by the name of their shell script, mapped to their main class in the jars.
KAFKA_TOOLS = {
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-console-producer": "kafka.tools.ConsoleProducer",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-configs": "kafka.admin.ConfigCommand",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
}

# Tools whose main class moved to the kafka-tools jar in Kafka 4 (checked on 4.4.0's jars)
KAFKA4_TOOLS = {
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-configs": "org.apache.kafka.tools.ConfigCommand",
}

KAFKA_MAIN = "kafka.Kafka"
MIRROR_MAKER_MAIN = "org.apache.kafka.connect.mirror.MirrorMaker"
ZOOKEEPER_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"


def cache_dir() -> Path:
    """Where kmigrate keeps downloaded jars: $KMIGRATE_CACHE, else $XDG_CACHE_HOME/kmigrate, else ~/.cache/kmigrate."""
    if os.environ.get("KMIGRATE_CACHE"):
        return Path(os.environ["KMIGRATE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kmigrate"


def find_java() -> str:
    """Path of the java executable ($JAVA_HOME/bin/java first), or MissingTool."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    java = shutil.which("java")
    if not java:
        raise MissingTool(
            "java not found: install a JDK 17 or later (e.g. apt-get install openjdk-17-jdk-headless) "
            "or set JAVA_HOME"
        )
    return java


def _find_maven() -> str:
    mvn = shutil.which("mvn")
    if not mvn:
        raise MissingTool(
            "mvn not found: install Apache Maven (e.g. apt-get install maven) so kmigrate can fetch the "
            "Kafka and ZooKeeper jars from Maven Central"
        )
    return mvn


@dataclass(frozen=True)
class Distribution:
    """Resolved jars: ``lib_dir``, the classpath of the brokers and Kafka's tools (with the ZooKeeper
    client their release was built with), and ``zookeeper_lib_dir``, the ZooKeeper servers'."""

    kafka_version: str
    zookeeper_version: str
    lib_dir: Path
    zookeeper_lib_dir: Path

    @property
    def classpath(self) -> str:
        return str(self.lib_dir / "*")

    @property
    def log4j2(self) -> bool:
        """True when this Kafka logs through log4j2 (4.0+: ``-Dlog4j2.configurationFile``), not log4j 1 (reload4j)."""
        return uses_log4j2(self.kafka_version)

    def quiet_logging(self) -> list[str]:
        """The JVM options of a tool run without a logging config of its own: warnings and errors only."""
        if self.log4j2:
            return ["-Dlog4j2.configurationFile=" + str(_quiet_log4j2(self.lib_dir.parent))]
        return ["-Dlog4j.configuration=file:/dev/null"]

    def java_command(self, main_class: str, args: list[str], jvm_opts: list[str] | None = None,
                     class_data: bool = False) -> list[str]:
        """``java <jvm_opts> -cp <jars> <main_class> <args>``; with ``class_data``, also the options of the
        server's class-data-sharing archive (``migrate.adapters.class_data``: kept beside the jars)."""
        lib = self.zookeeper_lib_dir if main_class == ZOOKEEPER_MAIN else self.lib_dir
        java, classpath = find_java(), str(lib / "*")
        shared = class_data_options(java, classpath, [lib], main_class, lib.parent / "cds") if class_data else []
        return [java, *(jvm_opts or []), *shared, "-cp", classpath, main_class, *args]

    def tool_command(self, tool: str, args: list[str], jvm_opts: list[str] | None = None) -> list[str]:
        """The command line of a stock Kafka tool, e.g. ``tool_command("kafka-topics", ["--list", ...])``."""
        if tool not in KAFKA_TOOLS:
            raise BadInput(f"unknown Kafka tool {tool!r}: choose one of {', '.join(sorted(KAFKA_TOOLS))}")
        opts = jvm_opts or ["-Xmx512m", *self.quiet_logging()]
        main = KAFKA4_TOOLS.get(tool, KAFKA_TOOLS[tool]) if self.log4j2 else KAFKA_TOOLS[tool]
        return self.java_command(main, args, opts)


def _quiet_log4j2(directory: Path) -> Path:
    """A log4j2 config beside a Kafka 4 distribution's jars: warnings and errors to stderr."""
    path = directory / "quiet-log4j2.properties"
    if not path.exists():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text("status = error\nappender.err.type = Console\nappender.err.name = err\nappender.err.target = SYSTEM_ERR\n"
                       "appender.err.layout.type = PatternLayout\nappender.err.layout.pattern = %p %m (%c)%n\n"
                       "rootLogger.level = WARN\nrootLogger.appenderRef.err.ref = err\n")
        tmp.replace(path)
    return path


def fetch_maven_project(pom: Path, name: str, properties: dict[str, str], quiet: bool = True) -> Path:
    """Resolve ``pom``'s runtime dependencies into ``<cache>/<name>/lib`` once; reuse it after.

    Safe under concurrency (a file lock) and against a crash mid-fetch (a ``.complete`` marker
    is written last; an incomplete directory is fetched again).
    """
    find_java()
    root = cache_dir() / name
    lib = root / "lib"
    marker = root / ".complete"
    if marker.exists():
        return lib
    mvn = _find_maven()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():
            return lib
        with tempfile.TemporaryDirectory(dir=root) as tmp:
            work_pom = Path(tmp) / "pom.xml"
            shutil.copyfile(pom, work_pom)
            out = Path(tmp) / "lib"
            cmd = [
                mvn, "-B", *(["-q"] if quiet else []), "-f", str(work_pom),
                "dependency:copy-dependencies", f"-DoutputDirectory={out}", "-DincludeScope=runtime",
                *[f"-D{k}={v}" for k, v in sorted(properties.items())],
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "ERROR" in ln]
                detail = lines[0] if lines else (proc.stdout + proc.stderr).strip()[-300:]
                raise BadInput(f"Maven could not fetch the jars for {name}: {detail}")
            if lib.exists():
                shutil.rmtree(lib)
            out.rename(lib)
        marker.write_text("ok\n")
    return lib


def _pom_digest(pom: Path) -> str:
    """A short digest of a Maven project's bytes: part of its cache directory's name, so that a
    changed project (a new dependency) is fetched again instead of reusing a complete older cache."""
    return hashlib.sha256(pom.read_bytes()).hexdigest()[:8]


def ensure_distribution(kafka_version: str = KAFKA_VERSION, zookeeper_version: str = ZOOKEEPER_VERSION) -> Distribution:
    """The jars of Kafka ``kafka_version`` (with its stock tools and MirrorMaker 2 where Maven Central
    has it) and of the ZooKeeper ``zookeeper_version`` servers, each fetched once. Kafka 4.0 and later (log4j2, no
    ZooKeeper mode) come from their own Maven project (``servers4_pom.xml``)."""
    pom = Path(__file__).with_name("servers4_pom.xml" if uses_log4j2(kafka_version) else "servers_pom.xml")
    name = f"servers/kafka-{kafka_version}_{_pom_digest(pom)}"
    properties = {"kafka.version": kafka_version}
    try:
        lib = fetch_maven_project(pom, name, properties)
    except BadInput as exc:
        if "connect-mirror" not in str(exc):
            raise
        # MirrorMaker 2's jar is not on Maven Central for this release (e.g. 2.4.1): the brokers and tools without it
        lib = fetch_maven_project(pom, name, {**properties, "kafka.no.mirror": "true"})
    zk_pom = Path(__file__).with_name("zookeeper_pom.xml")
    zk_lib = fetch_maven_project(zk_pom, f"servers/zookeeper-{zookeeper_version}_{_pom_digest(zk_pom)}",
                                 {"zookeeper.version": zookeeper_version})
    return Distribution(kafka_version, zookeeper_version, lib, zk_lib)
