"""Class-data-sharing archives for the server JVMs kmigrate starts (ZooKeeper, Kafka brokers, MirrorMaker).

A broker loads about 6,000 classes before it serves; mapping them from an archive instead of reading and
verifying them from the jars roughly halves its start-up CPU (measured on 2 cores: 5.2 -> 2.7 CPU s
for a Kafka 3.9 broker, MirrorMaker 2 5.5 -> 2.9). One archive per server (its main class), class path and
java install, kept in ``cds/`` beside the fetched jars:

1. The first start finds no archive and records the classes its JVM loads
   (``-XX:DumpLoadedClassList=<key>.<token>.classlist``; the JVM appends to it as it goes).
2. A later start, once a recording is complete (no running process names it) or has been quiet for
   a minute (a server that is still up has loaded what it needs to start), builds a static archive from it
   (``java -Xshare:dump``, a few CPU seconds, once) under a lock: into a temporary file, which a probe
   JVM must map (``-Xshare:on``) before it is renamed to ``<key>.<size>.jsa``. Two processes never build
   the same archive at once (the second starts its JVM without one) and none ever maps a half-written one.
3. Every later start maps that archive. One whose size is not the one its name records (truncated,
   replaced) is deleted and recorded again; a JVM that cannot use a mismatched archive (its jars or
   java changed under it) ignores it (``-Xshare:auto``), and the key of changed jars or java is a new key.
   A recording that does not build is deleted, and the key is not recorded again for a day.

``KMIGRATE_SERVER_CDS=0`` turns it off. Files of other keys untouched for a week are deleted.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import subprocess
import time
import uuid
from pathlib import Path

CDS_ENV = "KMIGRATE_SERVER_CDS"  # "0" turns it off
QUIET = "-Xlog:cds=off,cds+dynamic=off"  # an archive the JVM cannot map is skipped without a word on stdout
_QUIET_AFTER_S = 60.0  # a recording of a running JVM untouched this long is taken as complete
_UNUSED_S = 7 * 24 * 3600  # another key's files untouched this long are deleted
_LEFTOVER_S = 24 * 3600  # this key's recordings and temporary files older than this are deleted

log = logging.getLogger(__name__)


def probe(java: str, archive: Path, *options: str, timeout_s: float = 120) -> subprocess.CompletedProcess:
    """``java -version`` mapping ``archive``, the check before an archive is kept. A truncated archive crashes that
    JVM: its crash report goes beside the archive and is deleted, never into the working directory."""
    crash = archive.with_name(archive.name + ".crash.log")
    try:
        return subprocess.run([java, f"-XX:SharedArchiveFile={archive}", f"-XX:ErrorFile={crash}", *options,
                               "-version"], capture_output=True, timeout=timeout_s)
    finally:
        crash.unlink(missing_ok=True)


def archive_key(java: str, role: str, jar_dirs: list[Path]) -> str:
    """``<role>-<16 hex digits>``: the main class's last name, then a digest of the java install (its real
    path, ``lib/modules`` and ``libjvm.so``) and of every jar of the class path (name, size, mtime)."""
    real = os.path.realpath(java)
    home = Path(real).parent.parent
    h = hashlib.sha256(f"{real}\n{role}\n".encode())
    files = [home / "lib" / "modules", home / "lib" / "server" / "libjvm.so"]
    files += sorted(j for d in jar_dirs for j in Path(d).glob("*.jar"))
    for f in files:
        if f.exists():
            st = f.stat()
            h.update(f"{f}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return f"{role.rsplit('.', 1)[-1]}-{h.hexdigest()[:16]}"


def valid_archive(folder: Path, key: str) -> Path | None:
    """The archive of ``key`` whose size is the one its name records; any other archive of ``key`` is deleted."""
    found = None
    for path in folder.glob(f"{key}.*.jsa"):
        recorded = path.name[len(key) + 1:-len(".jsa")]
        try:
            whole = recorded.isdigit() and path.stat().st_size == int(recorded)
        except FileNotFoundError:
            continue
        if whole and found is None:
            found = path
        else:
            path.unlink(missing_ok=True)
    return found


def _recorders(folder: Path) -> set[str]:
    """The recordings in ``folder`` a running process still writes (its command line names the file)."""
    marker = f"-XX:DumpLoadedClassList={folder}/".encode()
    names: set[str] = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        names.update(a[len(marker):].decode(errors="replace") for a in args if a.startswith(marker))
    return names


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except FileNotFoundError:  # another process adopted or deleted it just now
        return None


def _tidy(folder: Path, key: str, now_s: float) -> None:
    for path in folder.iterdir():
        st = _stat(path)
        if st is None or path.name.endswith(".lock"):
            continue
        age = now_s - st.st_mtime
        mine = path.name.startswith(key + ".")
        if (not mine and age > _UNUSED_S) or (mine and not path.name.endswith(".jsa") and age > _LEFTOVER_S):
            path.unlink(missing_ok=True)


def _build(java: str, class_path: str, folder: Path, key: str, recording: Path) -> Path | None:
    """Build, probe and adopt the archive of ``key`` from ``recording`` (under a lock); None when another
    process is building it or the build or the probe failed (the recording is deleted then)."""
    with open(folder / f"{key}.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None
        done = valid_archive(folder, key)
        if done is not None or not recording.exists():
            return done
        token = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        classes, dump = folder / f"{key}.{token}.list", folder / f"{key}.{token}.dump"
        try:
            text = recording.read_bytes()
            classes.write_bytes(text[: text.rfind(b"\n") + 1])  # a killed JVM may leave half a line
            built = subprocess.run([java, "-Xshare:dump", f"-XX:SharedClassListFile={classes}",
                                    f"-XX:SharedArchiveFile={dump}", "-XX:+UseSerialGC", "-cp", class_path],
                                   capture_output=True, timeout=600)
            mapped = probe(java, dump, "-Xshare:on", "-XX:+UseSerialGC", "-cp", class_path) \
                if built.returncode == 0 and dump.exists() else None
            if mapped is None or mapped.returncode != 0:
                log.debug("no class-data-sharing archive for %s: %s", key,
                          (built.stdout + built.stderr + (mapped.stderr if mapped else b""))[-300:])
                recording.unlink(missing_ok=True)
                (folder / f"{key}.failed").touch()  # not tried again for a day (_tidy deletes it)
                return None
            final = folder / f"{key}.{dump.stat().st_size}.jsa"
            os.replace(dump, final)
            for old in folder.glob(f"{key}.*.classlist"):
                old.unlink(missing_ok=True)
            return final
        finally:
            classes.unlink(missing_ok=True)
            dump.unlink(missing_ok=True)


def class_data_options(java: str, class_path: str, jar_dirs: list[Path], role: str, folder: Path,
                       now_s: float | None = None) -> list[str]:
    """JVM options for a server with main class ``role`` on ``class_path`` (the jars of ``jar_dirs``): map
    its archive, build it from a complete recording, or record one; ``[]`` when off or on any error."""
    if os.environ.get(CDS_ENV, "1") == "0":
        return []
    try:
        folder.mkdir(parents=True, exist_ok=True)
        key = archive_key(java, role, jar_dirs)
        now_s = time.time() if now_s is None else now_s
        archive = valid_archive(folder, key)
        if archive is None:
            _tidy(folder, key, now_s)
            if (folder / f"{key}.failed").exists():
                return []
            recordings = {r: st for r in folder.glob(f"{key}.*.classlist") if (st := _stat(r)) and st.st_size}
            running = _recorders(folder) if recordings else set()
            done = [r for r, st in recordings.items() if r.name not in running or now_s - st.st_mtime > _QUIET_AFTER_S]
            if not done:
                return [f"-XX:DumpLoadedClassList={folder / f'{key}.{os.getpid()}-{uuid.uuid4().hex[:8]}.classlist'}"]
            archive = _build(java, class_path, folder, key, max(done, key=lambda r: recordings[r].st_size))
            if archive is None:
                return []
        try:
            os.utime(archive)  # mapped now: kept while it is in use
        except OSError:
            pass
        return [f"-XX:SharedArchiveFile={archive}", QUIET]
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        log.debug("no class-data-sharing archive for %s: %s", role, exc)
        return []
