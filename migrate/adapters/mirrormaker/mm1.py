"""MirrorMaker 1 (``kafka.tools.MirrorMaker`` of Kafka 3.9, from the same Maven Central jars as the
sandbox servers) as N managed background processes sharing one consumer group.

The state directory (shared with the MirrorMaker 2 engine; ``mirror.json`` records which engine runs)
holds ``mm1-producer.properties`` and, per instance ``i``, ``mm1-consumer-<i>.properties`` (its
command line names it: that is how a process is recognised when its pid file is missing),
``mm1-<i>.pid``, ``mm1-<i>.log`` and ``mm1-<i>.running``: written at start, removed only by a clean
stop (SIGTERM answered: MirrorMaker 1 flushes and commits). A ``.running`` file whose process is gone
means it ended without a clean stop (SIGKILL, crash): what it copied after its last commit is copied
again by the next start, and kmigrate records that in ``mirror.json`` (``unclean_stops``).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from migrate.adapters.jars import ensure_distribution
from migrate.adapters.mirrormaker.mm2 import LOG4J, MirrorMakerProcess, StopResult
from migrate.core.mirror.mm1 import MAIN_CLASS
from migrate.errors import BadInput

PRODUCER_FILE = "mm1-producer.properties"


class MirrorMaker1Process(MirrorMakerProcess):
    """Instance ``index`` of the MirrorMaker 1 of one state directory."""

    main_class = MAIN_CLASS

    def __init__(self, state_dir: Path, index: int):
        super().__init__(state_dir)
        self.index = index
        self.pid_name = f"mm1-{index}.pid"

    @property
    def properties_path(self) -> Path:
        return self.dir / f"mm1-consumer-{self.index}.properties"

    @property
    def log_path(self) -> Path:
        return self.dir / f"mm1-{self.index}.log"

    @property
    def running_marker(self) -> Path:
        return self.dir / f"mm1-{self.index}.running"

    def start_with(self, producer_file: Path, arguments: list[str], heap_mb: int) -> int:
        """Start this instance (``arguments``: MirrorMaker 1's options); return its pid."""
        if heap_mb < 64:
            raise BadInput(f"--heap-mb {heap_mb}: MirrorMaker 1 needs at least 64 MB")
        dist = ensure_distribution()
        (self.dir / "log4j.properties").write_text(LOG4J)
        command = dist.java_command(MAIN_CLASS, arguments, [
            f"-Xmx{heap_mb}m", f"-Xms{min(heap_mb, 64)}m", "-XX:+UseSerialGC",
            f"-Dlog4j.configuration=file:{(self.dir / 'log4j.properties').resolve()}"], class_data=True)
        with open(self.log_path, "ab") as log:
            proc = subprocess.Popen(command, cwd=self.dir, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        self._write_pid(proc.pid)
        self.running_marker.write_text(f"{proc.pid}\n")
        return proc.pid

    def ended_uncleanly(self) -> int | None:
        """The pid of a run that ended without a clean stop (its marker is left, the process gone), or None.
        The marker is removed: each such end is reported once (the caller records it)."""
        try:
            pid = int(self.running_marker.read_text().strip())
        except (OSError, ValueError):
            return None
        if self.pid() is not None:
            return None
        self.running_marker.unlink(missing_ok=True)
        return pid

    def stop(self, timeout_s: float = 30.0) -> StopResult:
        result = super().stop(timeout_s)
        if result.how == "SIGTERM":
            self.running_marker.unlink(missing_ok=True)
        return result


def instance_indexes(state_dir: Path) -> list[int]:
    """Every instance index that has a consumer file in ``state_dir``."""
    out = []
    for p in Path(state_dir).glob("mm1-consumer-*.properties"):
        try:
            out.append(int(p.stem.rsplit("-", 1)[1]))
        except ValueError:
            continue
    return sorted(out)


def wait_alive(procs: list[MirrorMaker1Process], pids: list[int], seconds: float) -> list[int]:
    """The indexes of ``procs`` whose pid exited within ``seconds`` (a bad configuration exits at once)."""
    deadline = time.monotonic() + seconds
    dead: list[int] = []
    for mm, pid in zip(procs, pids):
        if not mm.alive_after(pid, max(0.1, deadline - time.monotonic())):
            dead.append(mm.index)
    return dead
