"""Spark adapter: the SparkSession kmigrate's verify job runs in, and the jars of Spark's Kafka source.

The Kafka source (``org.apache.spark:spark-sql-kafka-0-10_<scala>:<spark>``) is fetched with Maven,
like the broker jars (``spark_kafka_pom.xml`` beside this file), into a per-version directory of
kmigrate's cache, and handed to Spark as local jars through ``spark.jars``: the driver serves them
to the executors of a standalone, YARN or Kubernetes cluster, so only the machine running kmigrate
needs Maven Central. ``--jars`` replaces the fetch on sites without it.

The release that matches the installed pyspark is tried first. When the registry does not serve it
(or its token provider), the newest earlier minor release of the same major line that can run on
this Spark is used, with the newest token provider served, and ``KafkaSourceJars`` says which.

Everything here that can fail because of the environment (no Java, a Java too old for this Spark,
no Maven, a master that does not answer) raises ``BadInput`` before any job runs.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from migrate.errors import BadInput, MissingTool, StepFailed
from migrate.adapters.class_data import QUIET as _CDS_QUIET, probe  # no JVM warning on stdout (--output json)
from migrate.adapters.jars import cache_dir, fetch_maven_project, find_java
from migrate.adapters.processes import pid_alive, terminate

log = logging.getLogger("kmigrate.spark")

POM = Path(__file__).with_name("spark_kafka_pom.xml")
KAFKA_SOURCE_ARTIFACT = "spark-sql-kafka-0-10"

# Spark major version -> the oldest Java major it runs on.
_MIN_JAVA = {3: 8, 4: 17}

_SECRET_WORDS = r"secret|password|token|access[.]?key|jaas|keystore\.key|key\.pem"
# Settings that keep Spark light on a small machine; the caller's --spark-conf wins.
DEFAULT_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.driver.memory": "1g",
    "spark.executor.memory": "1g",
    "spark.sql.session.timeZone": "UTC",
    "spark.log.level": "ERROR",
    # Spark's Kafka source pools consumers and each partition's last poll for 5 minutes, for streaming
    # queries that read the same partitions again. verify reads each partition once: pooled, every
    # partition's last poll stays on the heap (measured: 200 partitions of 8 MB ran a 1 GB driver out
    # of memory). Free them at once.
    "spark.kafka.consumer.fetchedData.cache.timeout": "100ms",
    "spark.kafka.consumer.fetchedData.cache.evictorThreadRunInterval": "100ms",
    "spark.kafka.consumer.cache.timeout": "1s",
    "spark.kafka.consumer.cache.evictorThreadRunInterval": "1s",
    # Secrets of --command-config reach Spark as Kafka source options (kafka.sasl.jaas.config,
    # kafka.ssl.*.password): hidden in Spark's UI, event logs and plan strings (Spark's defaults miss "jaas").
    "spark.redaction.regex": "(?i)" + _SECRET_WORDS,
    "spark.sql.redaction.options.regex": "(?i)url|" + _SECRET_WORDS,
}


@dataclass(frozen=True)
class SparkSettings:
    """How to run Spark: ``master`` (``local[*]``, ``spark://h:7077``, ``yarn``, ``k8s://...``),
    extra ``conf`` (``--spark-conf k=v``), and ``jars`` to use instead of fetching the Kafka source."""

    master: str = "local[*]"
    conf: dict[str, str] = field(default_factory=dict)
    jars: tuple[str, ...] | None = None
    app_name: str = "kmigrate-verify"

    @property
    def local(self) -> bool:
        """The driver is the executor: every task runs in the driver JVM started here."""
        return self.master.startswith("local")


@dataclass(frozen=True)
class KafkaSourceJars:
    version: str  # the spark-sql-kafka release the jars are from
    scala_version: str
    jars: tuple[Path, ...]
    exact: bool  # True when ``version`` is the installed Spark's own


def installed_spark() -> tuple[str, str]:
    """(Spark version, Scala binary version) of the installed pyspark, e.g. ``("4.3.0", "2.13")``."""
    import pyspark  # the installed package; its jars name the Scala version

    version = pyspark.__version__
    jars = Path(pyspark.__file__).parent / "jars"
    scala = "2.13" if version.startswith("4") else "2.12"
    for jar in jars.glob("spark-core_*.jar"):
        m = re.match(r"spark-core_(\d+\.\d+)-", jar.name)
        if m:
            scala = m.group(1)
    return version, scala


def parse_java_version(text: str) -> int | None:
    """Java major version from ``java -version`` output: ``"1.8.0_292"`` -> 8, ``"17.0.15"`` -> 17."""
    m = re.search(r'version "(\d+)(?:\.(\d+))?[^"]*"', text)
    if not m:
        return None
    major = int(m.group(1))
    if major == 1 and m.group(2):
        return int(m.group(2))
    return major


def check_java(spark_version: str) -> str:
    """The java Spark will use ($JAVA_HOME first, like Spark's launcher), checked against this Spark.

    BadInput when there is none, when it does not run, or when it is older than this Spark needs.
    """
    try:
        java = find_java()
    except BadInput as exc:
        raise BadInput(f"Spark cannot start: {exc.message}") from None
    try:
        proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BadInput(f"Spark cannot start: {java} -version failed ({exc}); install a JDK or fix JAVA_HOME") from None
    major = parse_java_version(proc.stderr + proc.stdout)
    if proc.returncode != 0 or major is None:
        raise BadInput(
            f"Spark cannot start: {java} -version did not report a Java version "
            f"({(proc.stderr or proc.stdout).strip()[:120]!r}); install a JDK or fix JAVA_HOME"
        )
    need = _MIN_JAVA.get(int(spark_version.split(".")[0]), 17)
    if major < need:
        raise BadInput(
            f"Spark cannot start: Spark {spark_version} needs Java {need} or later, but {java} is Java {major}; "
            f"install a JDK {need}+ and point JAVA_HOME at it"
        )
    return java


def candidate_versions(spark_version: str) -> list[str]:
    """Releases to try, best first: the given one, then x.y.0, then x.(y-1).0 ... x.0.0 (same major line)."""
    parts = spark_version.split(".")
    major, minor = int(parts[0]), int(parts[1])
    out = [spark_version]
    if spark_version != f"{major}.{minor}.0":
        out.append(f"{major}.{minor}.0")
    out += [f"{major}.{m}.0" for m in range(minor - 1, -1, -1)]
    return out


def _minor(version: str) -> tuple[int, int]:
    parts = version.split(".")
    return int(parts[0]), int(parts[1])


def source_candidates(spark_version: str) -> list[str]:
    """Kafka source releases that can run on this Spark, best first.

    Spark 4.1 turned its structured-logging keys (``LogKeys``) into a Java enum: a 4.0 Kafka source
    on a 4.1+ Spark fails with NoClassDefFoundError as soon as it logs, so it is never a candidate there.
    """
    out = candidate_versions(spark_version)
    if _minor(spark_version) >= (4, 1):
        out = [v for v in out if _minor(v) >= (4, 1)]
    return out


def _fetch(scala: str, source: str, token: str) -> Path:
    return fetch_maven_project(
        POM, f"spark/{KAFKA_SOURCE_ARTIFACT}_{scala}-{source}+token-provider-{token}",
        {"spark.version": source, "token.provider.version": token, "scala.binary.version": scala},
    )


def kafka_source_jars(jars: tuple[str, ...] | None = None,
                      progress: Callable[[str], None] = lambda msg: None) -> KafkaSourceJars:
    """The jars of Spark's Kafka source: ``jars`` as given (checked to exist), else fetched with Maven.

    Tries the installed Spark's release first; where the registry lacks it, the newest compatible
    release it serves (``source_candidates``), with the newest token provider it serves for it.
    """
    version, scala = installed_spark()
    if jars is not None:
        paths = []
        for j in jars:
            p = Path(j).expanduser()
            if not p.is_file():
                raise BadInput(f"--jars {j}: no such file; give the spark-sql-kafka-0-10 jar and its dependencies")
            paths.append(p.resolve())
        if not any(KAFKA_SOURCE_ARTIFACT in p.name for p in paths):
            raise BadInput(f"--jars names no {KAFKA_SOURCE_ARTIFACT}_{scala} jar: Spark would have no Kafka source")
        return KafkaSourceJars(version, scala, tuple(paths), exact=True)
    # The pair chosen once for this pyspark is remembered, so later runs skip the ones the registry lacks.
    chosen_file = cache_dir() / "spark" / f"kafka-source-for-spark-{version}_{scala}.txt"
    if chosen_file.exists():
        source, _, token = chosen_file.read_text().strip().partition(" ")
        try:
            lib = _fetch(scala, source, token)
            return KafkaSourceJars(source, scala, tuple(sorted(lib.glob("*.jar"))), exact=source == version)
        except MissingTool:
            raise
        except BadInput:
            pass
    failures = []
    for source in source_candidates(version):
        for token in candidate_versions(source):
            progress(f"fetching Spark's Kafka source {KAFKA_SOURCE_ARTIFACT}_{scala}:{source} with Maven")
            try:
                lib = _fetch(scala, source, token)
            except MissingTool:
                raise
            except BadInput as exc:
                failures.append(f"{source}: {exc.message}")
                if f"{KAFKA_SOURCE_ARTIFACT}_{scala}:jar:{source}" in exc.message:
                    break  # the source itself is missing: no token provider will help
                continue
            chosen_file.parent.mkdir(parents=True, exist_ok=True)
            chosen_file.write_text(f"{source} {token}\n")
            if source != version:
                log.warning("Spark's Kafka source %s is not on the registry; using %s (token provider %s)",
                            version, source, token)
            return KafkaSourceJars(source, scala, tuple(sorted(lib.glob("*.jar"))), exact=source == version)
    raise BadInput(
        f"Maven could not fetch Spark's Kafka source {KAFKA_SOURCE_ARTIFACT}_{scala} for Spark {version} "
        f"(tried {', '.join(source_candidates(version))}; first error: {failures[0] if failures else '?'}): "
        "download the jar and its dependencies and pass them with --jars"
    )


def parse_spark_conf(items: list[str] | tuple[str, ...]) -> dict[str, str]:
    """``["spark.executor.cores=1", ...]`` -> dict; BadInput naming the item that is not ``key=value``."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise BadInput(f"--spark-conf {item!r}: expected key=value, like spark.executor.memory=2g")
        out[key.strip()] = value.strip()
    return out


def check_master(master: str, timeout_s: float = 5.0) -> None:
    """A ``spark://host:port[,host:port]`` master must answer a TCP connect; other masters are Spark's to check."""
    if master.startswith("local"):
        if not re.fullmatch(r"local(\[(\*|\d+)(,\s*\d+)?\])?", master):
            raise BadInput(f"--master {master!r}: expected local, local[N], local[*], spark://host:port, yarn or k8s://...")
        return
    if master.startswith("spark://"):
        hosts = master[len("spark://"):].split(",")
        errors = []
        for hp in hosts:
            host, _, port = hp.rpartition(":")
            if not host or not port.isdigit():
                raise BadInput(f"--master {master!r}: expected spark://host:port")
            try:
                with socket.create_connection((host, int(port)), timeout=timeout_s):
                    return
            except OSError as exc:
                errors.append(f"{hp}: {exc}")
        raise BadInput(f"Spark master {master} does not answer ({'; '.join(errors)}): start it or fix --master")
    if master == "yarn" or master.startswith("k8s://") or master.startswith("mesos://"):
        return
    raise BadInput(f"--master {master!r}: expected local[*], spark://host:port, yarn or k8s://https://host:port")


_LOG4J2 = """# kmigrate: Spark's driver logs errors only, so that verify's own report is what a person reads.
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
# A PySpark driver counts as a shell: unless the gateway's logger has a level of its own, Spark sets it to
# WARN and prints "Setting default log level to WARN", how to change it and "Setting Spark log level" on
# every start.
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
"""


def driver_log_config() -> Path:
    """A log4j2 file that keeps the driver quiet (errors only); written once into kmigrate's cache."""
    path = cache_dir() / "spark" / "log4j2-driver.properties"
    if not path.exists() or path.read_text() != _LOG4J2:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(_LOG4J2)
        tmp.replace(path)
    return path


# ---------------------------------------------------------------- class data sharing (driver start-up)
# The driver JVM loads about 20,000 classes before the first record is read. A dynamic CDS archive
# (JDK 13+) of them, recorded by one run and mapped by the next, measured on 2 cores with 2,000,000
# records: Spark start 8.0 s -> 5.4 s, start plus first job 28.5 s -> 21.8 s (with -Xms); the whole
# ``verify snapshot`` 31.2 s -> 25.6 s. Recording costs about 30 s once (the run that records ends
# later: the JVM writes the archive, about 180 MB, as it exits). An archive belongs to one java and
# pyspark install and one driver class path (its key hashes them: a local driver, with the Kafka source
# on its class path, and a cluster's driver keep one each); the JVM ignores one whose class path no
# longer matches. A truncated archive crashes the JVM that maps it (SIGBUS), so a recorded
# archive is used only after a probe JVM has mapped it, and only then renamed to its final name.
CDS_ENV = "KMIGRATE_SPARK_CDS"  # "0" turns it off
_CDS_UNUSED_S = 7 * 24 * 3600  # an archive of this install no run has mapped for a week is deleted


def _cds_key(java: str, class_path: tuple[Path, ...] = ()) -> str:
    """``<install>-<class path>``: the java and pyspark install (16 hex digits), then the driver's extra
    class path (8 hex digits; a local driver has the Kafka source on it, a cluster's driver does not)."""
    import hashlib

    import pyspark

    def digest(seed: str, files):
        h = hashlib.sha256(seed.encode())
        for f in files:
            if f.exists():
                st = f.stat()
                h.update(f"{f}:{st.st_size}:{st.st_mtime_ns}\n".encode())
        return h

    # The JDK's files, not ``java -version``: preflight has just started one JVM for that already.
    home = Path(os.path.realpath(java)).parent.parent
    install = digest(f"{os.path.realpath(java)}\n{pyspark.__version__}\n",
                     [home / "lib" / "modules", home / "lib" / "server" / "libjvm.so",
                      *sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar"))])
    return f"{install.hexdigest()[:16]}-{digest('', class_path).hexdigest()[:8]}"


def class_data_options(java: str, now_s: float | None = None, class_path: tuple[Path, ...] = ()) -> list[str]:
    """JVM options for the driver: map the recorded archive, or record one at exit; ``[]`` when off.

    Recordings are ``<key>.<pid>.dump`` (one per process: runs at once never share a file); one whose
    process is gone, untouched for 5 s and mapped cleanly by a probe JVM becomes ``<key>.jsa``, the
    others are deleted. A run that finds no archive records one (about 30 s more, once).
    """
    import time

    if os.environ.get(CDS_ENV, "1") == "0":
        return []
    try:
        folder = cache_dir() / "spark" / "cds"
        folder.mkdir(parents=True, exist_ok=True)
        key = _cds_key(java, class_path)
        install = key.split("-")[0]
        final = folder / f"{key}.jsa"
        now_s = time.time() if now_s is None else now_s
        for old in folder.iterdir():
            if old.name.startswith(key):
                continue
            age = now_s - old.stat().st_mtime
            # another java or pyspark install: at once; this install's archive for another class path
            # (a local driver and a cluster's keep one each): once no run has mapped it for a week
            if age > (_CDS_UNUSED_S if old.name.startswith(install + "-") else 60):
                old.unlink(missing_ok=True)
        if not final.exists():
            for dump in sorted(folder.glob(f"{key}.*.dump"), key=lambda f: f.stat().st_mtime, reverse=True):
                pid = int(dump.name.split(".")[1]) if dump.name.split(".")[1].isdigit() else 0
                # a recording still being written (its process alive, or a name without a pid) is left alone
                if pid == 0 or pid_alive(pid) or now_s - dump.stat().st_mtime < 5:
                    continue
                if probe(java, dump, _CDS_QUIET, timeout_s=60).returncode == 0 and not final.exists():
                    os.replace(dump, final)
                else:
                    dump.unlink(missing_ok=True)
        if final.exists():
            os.utime(final)  # mapped now: kept while it is in use
            return [f"-XX:SharedArchiveFile={final}", _CDS_QUIET]
        return [f"-XX:ArchiveClassesAtExit={folder / f'{key}.{os.getpid()}.dump'}", _CDS_QUIET]
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        log.debug("no class data sharing for the Spark driver: %s", exc)
        return []


def driver_class_data_options(settings: SparkSettings, jars: KafkaSourceJars) -> list[str]:
    """:func:`class_data_options` for the driver :func:`session_conf` starts (a local one has the Kafka
    source jars on its class path, and its archive is keyed by them)."""
    return class_data_options(find_java(), class_path=tuple(jars.jars) if settings.local else ())


# Below this many records to read, a local verify is over in seconds and its driver compiles with C1 only
# (-XX:TieredStopAtLevel=1): the C2 compiler's work would cost more CPU than its faster code saves. Measured on
# 2 cores, one verify snapshot: 20,000 records, the driver JVM 10.3 -> 5.5 CPU s (7.1 -> 5.8 s); 1,000,000
# records, 14.0 -> 10.0 CPU s (9.2 -> 8.6 s). C1's code is slower per record: past a few million records C2 pays.
QUICK_JIT_RECORDS = 2_000_000


def quick_jit(settings: SparkSettings, records: int | None) -> bool:
    """Whether the driver compiles with C1 only: a driver that only plans (a cluster's master runs the reads
    on its executors), or a local one given fewer than :data:`QUICK_JIT_RECORDS` records to read (unknown: no)."""
    return not settings.local or (records is not None and records < QUICK_JIT_RECORDS)


def session_conf(settings: SparkSettings, jars: KafkaSourceJars, java_options: list[str] | None = None,
                 records: int | None = None) -> dict[str, str]:
    """The SparkConf kmigrate starts Spark with: light defaults, the Kafka source jars, the caller's conf.

    ``java_options`` are added to the driver's (class data sharing, see :func:`class_data_options`);
    ``records`` (about how many the job reads, if known) picks the driver's JIT (:func:`quick_jit`)."""
    conf = dict(DEFAULT_CONF)
    # The parallel collector: with local[*] the driver is the executor, and on a small machine G1's
    # concurrent work costs CPU the job needs (measured: less CPU and a faster job with 2 cores).
    driver_opts = [f"-Dlog4j2.configurationFile={driver_log_config()}", "-XX:+UseParallelGC", *(java_options or [])]
    if quick_jit(settings, records):
        driver_opts.append("-XX:TieredStopAtLevel=1")
    extra = dict(settings.conf)
    if settings.local:
        # The driver is the executor: its whole heap at once spares the collections that grow it.
        memory = settings.conf.get("spark.driver.memory", DEFAULT_CONF["spark.driver.memory"])
        if re.fullmatch(r"\d+[kKmMgG]", memory):
            driver_opts.append(f"-Xms{memory}")
        # Everything runs in this process: keep Spark's driver on the loopback interface.
        conf["spark.driver.bindAddress"] = "127.0.0.1"
        conf["spark.driver.host"] = "127.0.0.1"
        # The Kafka source on the JVM's own class path, not only added at run time (spark.jars): its
        # classes then go into the class-data-sharing archive with Spark's.
        conf["spark.driver.extraClassPath"] = os.pathsep.join(
            [str(p) for p in jars.jars] + [c for c in [extra.pop("spark.driver.extraClassPath", "")] if c])
    conf["spark.driver.extraJavaOptions"] = " ".join(driver_opts)
    user_jars = [j for j in extra.pop("spark.jars", "").split(",") if j]
    conf["spark.jars"] = ",".join([str(p) for p in jars.jars] + user_jars)
    conf.update(extra)
    return conf


def _active_session(master: str):
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    if spark is None:
        return None
    if spark.sparkContext.master != master:
        raise BadInput(
            f"a Spark session on {spark.sparkContext.master} is already running in this process; "
            f"cannot start another on {master}"
        )
    return spark


def preflight(settings: SparkSettings) -> str:
    """Check, before anything else runs, that Spark can start here: Java, the master, the --jars.

    Returns the installed Spark version. Cheap: no JVM is started. BadInput says what is wrong.
    """
    version, _ = installed_spark()
    check_java(version)
    check_master(settings.master)
    if settings.jars is not None:
        kafka_source_jars(settings.jars)
    return version


def preflight_unless_running(settings: SparkSettings) -> None:
    """:func:`preflight`, unless a Spark session already runs in this process (it was checked when it started)."""
    from pyspark.sql import SparkSession

    if SparkSession.getActiveSession() is None:
        preflight(settings)


@contextmanager
def spark_session(settings: SparkSettings, progress: Callable[[str], None] = lambda msg: None,
                  records: int | None = None) -> Iterator:
    """A SparkSession with Spark's Kafka source; stopped on exit unless it was already running here.

    An already active session of this process on the same master is reused (tests share one). ``records``:
    about how many records the session will read, when known before it starts (:func:`quick_jit`).
    """
    spark = _active_session(settings.master)
    if spark is not None:
        yield spark
        return
    version = preflight(settings)
    jars = kafka_source_jars(settings.jars, progress)
    java_options = driver_class_data_options(settings, jars)
    if java_options and java_options[0].startswith("-XX:ArchiveClassesAtExit="):
        progress("recording the Spark driver's classes for faster starts (once per machine: this run ends about 30 s later)")
    conf = session_conf(settings, jars, java_options, records)
    progress(f"starting Spark {version} on {settings.master}")
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(settings.master).appName(settings.app_name)
    for k, v in conf.items():
        builder = builder.config(k, v)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:  # PySparkRuntimeError (gateway exited), Py4JJavaError
        detail = " ".join(str(exc).split())[:300]
        raise BadInput(f"Spark could not start on {settings.master}: {detail}") from None
    spark.sparkContext.setLogLevel(conf.get("spark.log.level", "ERROR"))
    try:
        yield spark
    finally:
        try:
            spark.stop()
        except Exception as exc:  # the JVM is gone (killed, out of memory): nothing is left to stop
            log.debug("Spark did not stop cleanly: %s", _java_text(exc) or type(exc).__name__)


def _java_text(exc: BaseException) -> str | None:
    """The exception's message on one line; None when it cannot be read (str() of a Py4JJavaError asks
    the JVM for it, and the JVM is gone)."""
    try:
        return " ".join(str(exc).split())
    except Exception:
        return None


def job_failure(exc: BaseException) -> StepFailed:
    """A one-line StepFailed for a Spark job that failed: what happened and what to try."""
    name = type(exc).__name__
    text = _java_text(exc)
    gone = text is None or isinstance(exc, ConnectionError) or name == "Py4JNetworkError" \
        or "Answer from Java side is empty" in text
    text = text or name
    if "OutOfMemoryError" in text or gone:
        what = "ran out of memory" if "OutOfMemoryError" in text else "stopped (its JVM exited, most often out of memory)"
        return StepFailed(
            f"the Spark job {what}; nothing was written: give it more with --spark-conf spark.driver.memory=4g "
            f"(local master) or --spark-conf spark.executor.memory=4g (cluster), or verify fewer topics at a time"
        )
    first = re.split(r"(?<=[.!])\s|\sat\s|\n", text, maxsplit=1)[0][:300]
    return StepFailed(f"the Spark job failed; nothing was written: {name}: {first} (Spark's log above has the details)")


def collect(df) -> list:
    """``df.collect()``: a failed job becomes a one-line StepFailed (see :func:`job_failure`)."""
    try:
        return df.collect()
    except Exception as exc:  # Py4JJavaError, pyspark's captured exceptions, Py4JNetworkError
        raise job_failure(exc) from None


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


@contextmanager
def standalone_cluster(host: str, work_dir: Path, workers: int = 2, cores: int = 1, memory: str = "1g",
                       timeout_s: float = 180) -> Iterator[str]:
    """A Spark standalone master and ``workers`` workers started from the installed pyspark; yields its URL.

    Every process binds to ``host`` on free ports; all are stopped (only they) on exit. For tests and
    benchmarks on one machine; a real site runs its own Spark cluster and passes ``--master``.
    """
    import json
    import urllib.request

    from migrate.waiting import wait_until

    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    # the master and workers only schedule: small heaps, C1 only (each was a full JIT JVM beside the executors)
    env = {**os.environ, "SPARK_LOCAL_IP": host, "SPARK_LOG_DIR": str(work_dir / "logs"),
           "SPARK_NO_DAEMONIZE": "1", "SPARK_WORKER_DIR": str(work_dir / "work"), "SPARK_DAEMON_MEMORY": "256m",
           "SPARK_DAEMON_JAVA_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}
    port, ui = _free_port(host), _free_port(host)
    procs: list[subprocess.Popen] = []
    logs = []

    def spawn(name: str, args: list[str]) -> None:
        log_file = open(work_dir / f"{name}.log", "wb")
        logs.append(log_file)
        procs.append(subprocess.Popen([str(_spark_class()), *args], env=env, stdout=log_file,
                                      stderr=subprocess.STDOUT, start_new_session=True))

    try:
        spawn("master", ["org.apache.spark.deploy.master.Master", "--host", host, "--port", str(port),
                         "--webui-port", str(ui)])
        url = f"spark://{host}:{port}"
        for i in range(workers):
            spawn(f"worker-{i + 1}", ["org.apache.spark.deploy.worker.Worker", "--host", host,
                                      "--port", str(_free_port(host)), "--webui-port", str(_free_port(host)),
                                      "--cores", str(cores), "--memory", memory,
                                      "--work-dir", str(work_dir / f"worker-{i + 1}"), url])
        alive = [0]

        def registered() -> bool:
            if any(p.poll() is not None for p in procs):
                raise BadInput(f"a Spark standalone process exited at start: see the logs in {work_dir}")
            try:
                with urllib.request.urlopen(f"http://{host}:{ui}/json/", timeout=5) as resp:
                    alive[0] = int(json.load(resp).get("aliveworkers", 0))
            except (OSError, ValueError):
                alive[0] = 0
            return alive[0] >= workers

        wait_until(registered, timeout_s=timeout_s, interval_s=1, what="the Spark workers", on_timeout=lambda: BadInput(
            f"Spark standalone cluster at {url}: {alive[0]} of {workers} workers registered in {timeout_s:.0f} s"))
        yield url
    finally:
        # each is its own process group: a worker's executors go with it
        # one that exited at start was reaped by its poll(): its pid may name another process by now
        terminate(*(p.pid for p in reversed(procs) if p.poll() is None), timeout_s=30, group=True)
        for p in procs:
            p.poll()  # terminate collected their exit status: the Popens learn they ended
        for f in logs:
            f.close()
