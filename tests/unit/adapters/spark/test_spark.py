"""Spark adapter checks (a real java for the class-data-sharing archive, no Spark), and the CLI's bad-input paths that fail before any server is asked."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from migrate.adapters.spark.session import (SparkSettings, candidate_versions, check_master, installed_spark, job_failure,
                                    parse_java_version, parse_spark_conf, session_conf, source_candidates, KafkaSourceJars)
from migrate.errors import BadInput, StepFailed


def test_parse_java_version():
    assert parse_java_version('openjdk version "17.0.15" 2025-04-15') == 17
    assert parse_java_version('java version "1.8.0_292"') == 8
    assert parse_java_version('openjdk version "21" 2023-09-19') == 21
    assert parse_java_version("garbage") is None


def test_candidates_stay_in_the_major_line_and_skip_incompatible_sources():
    assert candidate_versions("4.3.0") == ["4.3.0", "4.2.0", "4.1.0", "4.0.0"]
    assert candidate_versions("3.5.2") == ["3.5.2", "3.5.0", "3.4.0", "3.3.0", "3.2.0", "3.1.0", "3.0.0"]
    assert source_candidates("4.3.0") == ["4.3.0", "4.2.0", "4.1.0"]
    assert source_candidates("4.0.1") == ["4.0.1", "4.0.0"]


def test_installed_spark_names_scala():
    version, scala = installed_spark()
    assert version.count(".") == 2 and scala in ("2.12", "2.13")


def test_spark_conf_and_master_checks():
    assert parse_spark_conf(["a=1", "b.c = x=y"]) == {"a": "1", "b.c": "x=y"}
    with pytest.raises(BadInput, match="expected key=value"):
        parse_spark_conf(["nokey"])
    check_master("local[*]")
    check_master("local[2]")
    with pytest.raises(BadInput, match="--master"):
        check_master("mars://x")
    t0 = time.monotonic()
    with pytest.raises(BadInput, match="does not answer"):
        check_master("spark://127.0.0.1:1", timeout_s=2)
    assert time.monotonic() - t0 < 10


def test_session_conf_puts_kafka_jars_first_and_user_conf_wins(tmp_path):
    jars = KafkaSourceJars("4.2.0", "2.13", (tmp_path / "a.jar",), exact=False)
    conf = session_conf(SparkSettings(conf={"spark.jars": "/x/y.jar", "spark.sql.shuffle.partitions": "16"}), jars)
    assert conf["spark.jars"] == f"{tmp_path / 'a.jar'},/x/y.jar"
    assert conf["spark.sql.shuffle.partitions"] == "16"
    assert conf["spark.ui.enabled"] == "false"


def _kmigrate(args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "migrate", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, cwd=Path(__file__).resolve().parents[4])


def _fake_java(tmp_path: Path, version: str) -> Path:
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text(f'#!/bin/sh\necho \'openjdk version "{version}" 2020-01-01\' >&2\n')
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    return home


def test_too_old_java_is_one_line_exit_2(tmp_path):
    home = _fake_java(tmp_path, "11.0.2")
    r = _kmigrate(["verify", "snapshot", "--bootstrap-server", "127.0.0.1:1", "-o", str(tmp_path / "s.json")],
                  env={"JAVA_HOME": str(home)})
    assert r.returncode == 2, r.stderr
    assert "needs Java 17 or later" in r.stderr and "is Java 11" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "s.json").exists()


def test_no_java_is_one_line_exit_2(tmp_path):
    env = {"JAVA_HOME": "", "PATH": str(Path(sys.executable).parent)}
    r = _kmigrate(["verify", "--source-bootstrap", "a:1", "--target-bootstrap", "b:1"], env=env)
    assert r.returncode == 2, r.stderr
    assert "java not found" in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args, message", [
    (["verify"], "give both --source-bootstrap and --target-bootstrap"),
    (["verify", "--source-bootstrap", "a:1"], "give both"),
    (["verify", "compare", "NOFILE.json"], "no such file"),
    (["verify", "--topic", "x", "snapshot", "-o", "s.json", "--bootstrap-server", "a:1"], "goes after `verify snapshot`"),
    (["verify", "snapshot", "-o", "s.json", "--bootstrap-server", "a:1", "--jars", "/nonexistent.jar"], "no such file"),
    (["verify", "snapshot", "-o", "s.json", "--bootstrap-server", "a:1", "--spark-conf", "x"], "key=value"),
    (["verify", "snapshot", "-o", "/nonexistent-dir/s.json", "--bootstrap-server", "a:1"], "does not exist"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, args, message):
    r = _kmigrate(args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert message in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_snapshot_not_ours_is_exit_2(tmp_path):
    f = tmp_path / "other.json"
    f.write_text('{"some": "other tool"}')
    r = _kmigrate(["verify", "compare", str(f), "--against", str(f)])
    assert r.returncode == 2 and "is not a kmigrate verify snapshot" in r.stderr


# ------------------------------------------------------------------ class data sharing (a real JVM)


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _record_archive(java: str, path: Path) -> None:
    subprocess.run([java, f"-XX:ArchiveClassesAtExit={path}", "-Xlog:cds=off,cds+dynamic=off", "-version"],
                   check=True, capture_output=True, timeout=60)


def test_class_data_sharing_records_then_adopts_an_archive_that_maps_and_drops_a_truncated_one(tmp_path, monkeypatch):
    from migrate.adapters.spark.session import _cds_key, class_data_options
    from migrate.adapters.jars import find_java

    monkeypatch.setenv("KMIGRATE_CACHE", str(tmp_path))
    monkeypatch.delenv("KMIGRATE_SPARK_CDS", raising=False)
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)  # the operator's working directory: no JVM crash report may land there
    java = find_java()
    folder = tmp_path / "spark" / "cds"
    key = _cds_key(java)
    # nothing recorded: this run records, into a file of its own
    opts = class_data_options(java)
    assert opts[0] == f"-XX:ArchiveClassesAtExit={folder / f'{key}.{os.getpid()}.dump'}"
    assert "-Xlog:cds=off,cds+dynamic=off" in opts  # no JVM warning on stdout
    # a recording cut short (the JVM was killed while writing it) crashes a JVM that maps it: dropped
    truncated = folder / f"{key}.{_dead_pid()}.dump"
    _record_archive(java, tmp_path / "whole.jsa")
    truncated.write_bytes((tmp_path / "whole.jsa").read_bytes()[:100_000])
    os.utime(truncated, (time.time() - 60, time.time() - 60))
    assert class_data_options(java)[0].startswith("-XX:ArchiveClassesAtExit=")
    assert not truncated.exists() and not (folder / f"{key}.jsa").exists()
    assert not list(work.iterdir()) and not list(folder.glob("*crash*")), (list(work.iterdir()), list(folder.iterdir()))
    # a whole recording of a finished process becomes the archive every later run maps
    whole = folder / f"{key}.{_dead_pid()}.dump"
    _record_archive(java, whole)
    os.utime(whole, (time.time() - 60, time.time() - 60))
    assert class_data_options(java)[0] == f"-XX:SharedArchiveFile={folder / f'{key}.jsa'}"
    assert not whole.exists()
    # a recording still being written (its process alive) is left alone
    mine = folder / f"{key}.{os.getpid()}.dump"
    mine.write_bytes(b"partial")
    assert class_data_options(java)[0] == f"-XX:SharedArchiveFile={folder / f'{key}.jsa'}"
    assert mine.exists()
    monkeypatch.setenv("KMIGRATE_SPARK_CDS", "0")
    assert class_data_options(java) == []


def test_a_local_and_a_cluster_driver_keep_an_archive_each_and_another_install_s_goes(tmp_path, monkeypatch):
    """A local driver (Kafka source on its class path) and a cluster's driver map different archives:
    running one must not delete the other's (each switch of --master would record again, about 30 s)."""
    from migrate.adapters.spark.session import _CDS_UNUSED_S, _cds_key, class_data_options
    from migrate.adapters.jars import find_java

    monkeypatch.setenv("KMIGRATE_CACHE", str(tmp_path))
    monkeypatch.delenv("KMIGRATE_SPARK_CDS", raising=False)
    java = find_java()
    jar = tmp_path / "kafka-source.jar"
    jar.write_bytes(b"PK")
    folder = tmp_path / "spark" / "cds"
    folder.mkdir(parents=True)
    local, cluster = _cds_key(java, (jar,)), _cds_key(java)
    assert local != cluster and local.split("-")[0] == cluster.split("-")[0]  # one install, two class paths
    hour_ago = time.time() - 3600
    for name in (f"{local}.jsa", f"{cluster}.jsa", "0123456789abcdef-00000000.jsa"):  # the last: another install
        (folder / name).write_bytes(b"archive")
        os.utime(folder / name, (hour_ago, hour_ago))
    assert class_data_options(java, class_path=(jar,))[0] == f"-XX:SharedArchiveFile={folder / f'{local}.jsa'}"
    assert (folder / f"{cluster}.jsa").exists()
    assert not (folder / "0123456789abcdef-00000000.jsa").exists()
    assert (folder / f"{local}.jsa").stat().st_mtime > hour_ago + 60  # mapped: marked as in use
    assert class_data_options(java)[0] == f"-XX:SharedArchiveFile={folder / f'{cluster}.jsa'}"
    assert (folder / f"{local}.jsa").exists()
    # an archive of this install that no run has mapped for longer than a week goes
    long_ago = time.time() - _CDS_UNUSED_S - 60
    os.utime(folder / f"{cluster}.jsa", (long_ago, long_ago))
    class_data_options(java, class_path=(jar,))
    assert not (folder / f"{cluster}.jsa").exists() and (folder / f"{local}.jsa").exists()


def test_session_conf_sizes_a_local_driver_heap_at_once_and_adds_the_java_options(tmp_path):
    jars = KafkaSourceJars("4.2.0", "2.13", (tmp_path / "a.jar",), exact=False)
    local = session_conf(SparkSettings(conf={"spark.driver.memory": "2g"}), jars, ["-XX:SharedArchiveFile=/c/k.jsa"])
    opts = local["spark.driver.extraJavaOptions"].split()
    assert "-Xms2g" in opts and "-XX:SharedArchiveFile=/c/k.jsa" in opts and "-XX:+UseParallelGC" in opts
    remote = session_conf(SparkSettings(master="spark://h:7077"), jars)
    assert not any(o.startswith("-Xms") for o in remote["spark.driver.extraJavaOptions"].split())


def test_the_driver_compiles_with_c1_only_for_a_small_local_read_or_when_it_only_plans(tmp_path):
    from migrate.adapters.spark.session import QUICK_JIT_RECORDS

    jars = KafkaSourceJars("4.2.0", "2.13", (tmp_path / "a.jar",), exact=False)

    def c1(settings, records):
        return "-XX:TieredStopAtLevel=1" in session_conf(settings, jars, None, records)["spark.driver.extraJavaOptions"].split()

    local = SparkSettings(master="local[2]")
    assert c1(local, 0) and c1(local, QUICK_JIT_RECORDS - 1)
    assert not c1(local, QUICK_JIT_RECORDS) and not c1(local, 50_000_000)
    assert not c1(local, None)  # size unknown: the full JIT, which a large read needs
    assert c1(SparkSettings(master="spark://h:7077"), None) and c1(SparkSettings(master="yarn"), 10**9)  # executors read


def test_records_in_scope_sums_the_chosen_partitions_and_is_none_when_the_cluster_does_not_answer():
    from migrate.runner.verify import Scope, records_in_scope

    class View:
        partitions = {"orders": [0, 1], "events": [0], "__consumer_offsets": [0]}

    class Side:
        def view(self):
            return View()

        def offsets(self, partitions, isolation_level):
            ends = {("orders", 0): (10, 110), ("orders", 1): (0, 5), ("events", 0): (7, 7), ("__consumer_offsets", 0): (0, 9)}
            return {tp: ends[tp] for tp in partitions}

    class Down(Side):
        def view(self):
            raise RuntimeError("no broker answered")

    assert records_in_scope(Side(), Scope()) == 105  # internal topics are not chosen
    assert records_in_scope(Side(), Scope(), clusters=2) == 210  # a verify that reads two clusters
    assert records_in_scope(Side(), Scope(topics=("events",))) == 0
    assert records_in_scope(Down(), Scope()) is None


def test_a_local_driver_has_the_kafka_source_on_its_class_path(tmp_path):
    """So that the class-data-sharing archive holds its classes; executors elsewhere get them by spark.jars."""
    jars = KafkaSourceJars("4.2.0", "2.13", (tmp_path / "a.jar", tmp_path / "b.jar"), exact=False)
    local = session_conf(SparkSettings(conf={"spark.driver.extraClassPath": "/site/x.jar"}), jars)
    assert local["spark.driver.extraClassPath"] == os.pathsep.join([str(tmp_path / "a.jar"), str(tmp_path / "b.jar"), "/site/x.jar"])
    assert local["spark.jars"] == f"{tmp_path / 'a.jar'},{tmp_path / 'b.jar'}"
    remote = session_conf(SparkSettings(master="spark://h:7077"), jars)
    assert "spark.driver.extraClassPath" not in remote and remote["spark.jars"] == local["spark.jars"]
    # the archive of a driver with those jars is another archive (the JVM maps one only for its class path)
    from migrate.adapters.spark.session import _cds_key
    from migrate.adapters.jars import find_java

    (tmp_path / "a.jar").write_bytes(b"PK")
    assert _cds_key(find_java(), (tmp_path / "a.jar",)) != _cds_key(find_java())


class _DeadJvmError(Exception):
    """Like a Py4JJavaError whose JVM has died: str() fails (it asks the JVM)."""

    def __str__(self):
        raise ConnectionRefusedError(111, "Connection refused")


def test_a_failed_spark_job_is_one_line_that_says_what_to_do():
    from py4j.protocol import Py4JNetworkError

    oom = job_failure(RuntimeError("An error occurred while calling o232.collectToPython.\n: "
                                   "java.lang.OutOfMemoryError: GC overhead limit exceeded\n\tat java.base/..."))
    gone = job_failure(Py4JNetworkError("Answer from Java side is empty"))
    dead = job_failure(_DeadJvmError())
    other = job_failure(RuntimeError("[KAFKA_DATA_LOSS] Cannot fetch offset 5. Some data may be lost.\n\tat org.apache..."))
    for failure in (oom, gone, dead, other):
        assert isinstance(failure, StepFailed) and failure.exit_code == 1
        assert "\n" not in failure.message and "nothing was written" in failure.message
    assert "ran out of memory" in oom.message and "spark.driver.memory=" in oom.message
    assert "JVM exited" in gone.message and "spark.executor.memory=" in gone.message
    assert "JVM exited" in dead.message
    assert other.message.endswith("RuntimeError: [KAFKA_DATA_LOSS] Cannot fetch offset 5. (Spark's log above has the details)")
