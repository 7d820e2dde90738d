"""Class-data-sharing archives of the server JVMs (a real java records, builds and maps one; no server)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from migrate.adapters.class_data import QUIET, _UNUSED_S, archive_key, class_data_options
from migrate.adapters.jars import Distribution, find_java
from migrate.adapters.processes import command_line
from migrate.waiting import poll

ROLE = "org.example.Server"


@pytest.fixture
def jars(tmp_path, monkeypatch):
    monkeypatch.delenv("KMIGRATE_SERVER_CDS", raising=False)
    lib = tmp_path / "servers" / "lib"
    lib.mkdir(parents=True)
    with zipfile.ZipFile(lib / "a.jar", "w") as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    return lib


def _options(lib: Path, now_s: float | None = None) -> list[str]:
    return class_data_options(find_java(), str(lib / "*"), [lib], ROLE, lib.parent / "cds", now_s=now_s)


def _run(lib: Path, opts: list[str], *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([find_java(), *opts, *extra, "-cp", str(lib / "*"), "-version"], capture_output=True, timeout=120)


def test_first_start_records_a_later_one_builds_maps_and_keeps_the_archive(jars):
    folder, key = jars.parent / "cds", archive_key(find_java(), ROLE, [jars])
    first = _options(jars)
    assert len(first) == 1 and first[0].startswith(f"-XX:DumpLoadedClassList={folder}/{key}.{os.getpid()}-")
    assert first[0].endswith(".classlist")
    assert _run(jars, first).returncode == 0  # the JVM writes the classes it loads, then ends
    # the next start builds the archive from that complete recording, named by its size
    opts = _options(jars)
    archive = Path(opts[0].split("=", 1)[1])
    assert opts == [f"-XX:SharedArchiveFile={archive}", QUIET]
    assert archive.name == f"{key}.{archive.stat().st_size}.jsa"
    assert sorted(p.name for p in folder.iterdir() if not p.name.endswith(".lock")) == [archive.name]
    assert _run(jars, opts, "-Xshare:on").returncode == 0  # it maps
    assert _options(jars) == opts  # and every later start maps it
    assert Path(_options(jars)[0].split("=", 1)[1]).exists()


def test_a_truncated_archive_is_deleted_and_recorded_again(jars):
    assert _run(jars, _options(jars)).returncode == 0
    archive = Path(_options(jars)[0].split("=", 1)[1])
    whole = archive.read_bytes()
    os.chmod(archive, 0o644)
    archive.write_bytes(whole[: len(whole) // 2])  # a JVM that mapped this would die of SIGBUS
    opts = _options(jars)
    assert opts[0].startswith("-XX:DumpLoadedClassList=") and not archive.exists()


def test_a_recording_still_written_waits_unless_quiet_for_a_minute(jars):
    first = _options(jars)
    recording = Path(first[0].split("=", 1)[1])
    recording.write_text("java/lang/Object id: 0\n")
    # a running process names it on its command line (as the recording JVM does): not complete yet
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", first[0]])
    try:  # until it has exec'd, the child's command line is still this test's (seen on a busy host)
        assert poll(lambda: first[0] in command_line(holder.pid), timeout_s=30, interval_s=0.05)
        again = _options(jars)
        assert again[0].startswith("-XX:DumpLoadedClassList=") and again != first  # a second recording
        Path(again[0].split("=", 1)[1]).unlink(missing_ok=True)
        # a recording untouched for over a minute is taken as complete (a server still up loaded what it starts with)
        assert _options(jars, now_s=time.time() + 61)[0].startswith("-XX:SharedArchiveFile=")
    finally:
        holder.kill()
        holder.wait()


def test_a_build_under_way_elsewhere_starts_without_an_archive(jars):
    folder = jars.parent / "cds"
    assert _run(jars, _options(jars)).returncode == 0
    key = archive_key(find_java(), ROLE, [jars])
    with open(folder / f"{key}.lock", "w") as other:
        fcntl.flock(other, fcntl.LOCK_EX)  # another process builds it now
        assert _options(jars) == []
    assert list(folder.glob("*.classlist"))  # its recording is left for the next start
    assert _options(jars)[0].startswith("-XX:SharedArchiveFile=")


def test_a_recording_that_does_not_build_is_dropped_and_not_recorded_again_for_a_day(jars):
    folder = jars.parent / "cds"
    first = _options(jars)
    Path(first[0].split("=", 1)[1]).write_text("@not-a-classlist-line\n")
    assert _options(jars) == []
    assert list(folder.glob("*.classlist")) == [] and list(folder.glob("*.jsa")) == []
    assert _options(jars) == []  # no JVM records (nor a build runs) again that day
    assert _options(jars, now_s=time.time() + 24 * 3600 + 60)[0].startswith("-XX:DumpLoadedClassList=")


def test_the_key_follows_the_jars_and_the_role_and_old_keys_go_after_a_week(jars):
    java = find_java()
    key = archive_key(java, ROLE, [jars])
    assert key.startswith("Server-") and archive_key(java, "kafka.Kafka", [jars]).startswith("Kafka-")
    assert archive_key(java, "kafka.Kafka", [jars]) != key
    with zipfile.ZipFile(jars / "b.jar", "w") as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    assert archive_key(java, ROLE, [jars]) != key  # another class path: another archive
    folder = jars.parent / "cds"
    folder.mkdir()
    stale, recent = folder / f"{key}.123.jsa", folder / "Other-0123456789abcdef.123.jsa"
    stale.write_bytes(b"x" * 123)
    recent.write_bytes(b"x" * 123)
    long_ago = time.time() - _UNUSED_S - 60
    os.utime(stale, (long_ago, long_ago))
    _options(jars)
    assert not stale.exists() and recent.exists()


def test_off_switch_and_the_command_line(jars, monkeypatch):
    dist = Distribution("3.9.2", "3.8.6", jars, jars)
    command = dist.java_command(ROLE, ["a"], ["-Xmx64m"], class_data=True)
    assert command[:2] == [find_java(), "-Xmx64m"] and command[2].startswith("-XX:DumpLoadedClassList=")
    assert command[3:] == ["-cp", str(jars / "*"), ROLE, "a"]
    assert dist.java_command(ROLE, ["a"], ["-Xmx64m"]) == [find_java(), "-Xmx64m", "-cp", str(jars / "*"), ROLE, "a"]
    monkeypatch.setenv("KMIGRATE_SERVER_CDS", "0")
    assert _options(jars) == []
