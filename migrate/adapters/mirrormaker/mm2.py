"""A dedicated MirrorMaker 2 (``org.apache.kafka.connect.mirror.MirrorMaker --clusters target``) as a
managed background process, from the same Maven Central jars as the sandbox servers.

Its state directory holds ``mm2.properties`` (generated), ``mm2.pid``, ``log4j.properties`` and the
log ``mm2.log``. The process is found by its pid file, or, when that is missing or stale (kmigrate
killed between two lines), by its command line naming this directory's ``mm2.properties``.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from migrate.adapters.jars import MIRROR_MAKER_MAIN, ensure_distribution
from migrate.core.mirror.plan import TARGET_ALIAS
from migrate.errors import BadInput
from migrate.adapters.processes import (
    StopResult, command_line, find_pid, pid_alive, read_pid_file, reap, spawn, terminate, write_pid_file,
)
from migrate.files import write_private

PROPERTIES = "mm2.properties"
PID_FILE = "mm2.pid"
LOG_FILE = "mm2.log"
LOG4J = """log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.kafka.clients=WARN
log4j.logger.org.reflections=ERROR
log4j.logger.org.apache.kafka.connect.runtime.rest=WARN
"""


def default_state_dir() -> Path:
    """``$XDG_STATE_HOME/kmigrate/mirror``, else ``~/.local/state/kmigrate/mirror``."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "kmigrate" / "mirror"


def free_port() -> int:
    """A TCP port free on the loopback now (for MirrorMaker's internal REST listener)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MirrorMakerProcess:
    """The MirrorMaker 2 of one state directory."""

    main_class = MIRROR_MAKER_MAIN  # what its command line names (another engine's subclass names its own)
    pid_name = PID_FILE

    def __init__(self, state_dir: Path):
        self.dir = Path(state_dir)

    @property
    def properties_path(self) -> Path:
        return self.dir / PROPERTIES

    @property
    def log_path(self) -> Path:
        return self.dir / LOG_FILE

    def _ours(self, pid: int, patient: bool = False) -> bool:
        """True when ``pid`` is alive (not a zombie) and is the MirrorMaker of this directory."""
        if not pid_alive(pid):
            reap(pid)  # a zombie that is our child (a test that runs kmigrate in-process) is collected
            return False
        args = command_line(pid)
        for _ in range(10 if patient else 0):  # the recorded pid's can read empty for a moment after start
            if args or not pid_alive(pid):
                break
            time.sleep(0.05)
            args = command_line(pid)
        return self.main_class in args and str(self.properties_path.resolve()) in args

    def pid(self) -> int | None:
        """The running MirrorMaker's pid, or None. A stale pid file (the process gone, or the pid
        reused by another program) is removed."""
        pid_file = self.dir / self.pid_name
        recorded = read_pid_file(pid_file)
        if recorded is not None and self._ours(recorded, patient=True):
            return recorded
        found = find_pid(self._ours)
        if found is not None:
            self._write_pid(found)
        elif pid_file.exists():
            pid_file.unlink()
        return found

    def read_properties(self) -> str | None:
        try:
            return self.properties_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def _write_pid(self, pid: int) -> None:
        write_pid_file(self.dir / self.pid_name, pid)

    def write_properties(self, text: str) -> None:
        write_private(self.properties_path, text)  # it may hold SASL passwords of --*-command-config

    def start(self, heap_mb: int) -> int:
        """Start MirrorMaker on the written ``mm2.properties``; return its pid."""
        if heap_mb < 64:
            raise BadInput(f"--heap-mb {heap_mb}: MirrorMaker 2 needs at least 64 MB")
        dist = ensure_distribution()
        (self.dir / "log4j.properties").write_text(LOG4J)
        command = dist.java_command(
            MIRROR_MAKER_MAIN, [str(self.properties_path.resolve()), "--clusters", TARGET_ALIAS],
            [f"-Xmx{heap_mb}m", f"-Xms{min(heap_mb, 64)}m", "-XX:+UseSerialGC",
             f"-Dlog4j.configuration=file:{(self.dir / 'log4j.properties').resolve()}"], class_data=True)
        proc = spawn(command, self.dir, self.log_path)
        self._write_pid(proc.pid)
        return proc.pid

    def alive_after(self, pid: int, seconds: float) -> bool:
        """True when ``pid`` is still running after ``seconds`` (a bad config makes it exit at once)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if not pid_alive(pid):
                reap(pid)
                return False
            time.sleep(0.2)
        if pid_alive(pid):
            return True
        reap(pid)
        return False

    def log_size(self) -> int:
        """The log's size in bytes (each start appends to it)."""
        try:
            return self.log_path.stat().st_size
        except FileNotFoundError:
            return 0

    def log_text(self, since: int = 0) -> str:
        """MirrorMaker's log from byte ``since`` on ('' before it writes one)."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(since)
                return f.read().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines: int = 5, match: str = "ERROR") -> list[str]:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            return []
        hits = [ln for ln in text if match in ln]
        return (hits or text)[-lines:]

    def stop(self, timeout_s: float = 30.0) -> StopResult:
        """SIGTERM (MirrorMaker's shutdown hook stops its connectors), wait up to ``timeout_s``, then SIGKILL."""
        pid = self.pid()
        if pid is None:
            return StopResult(None, "not running", 0.0)
        [result] = terminate(pid, timeout_s=timeout_s)
        (self.dir / self.pid_name).unlink(missing_ok=True)
        return result

    # ------------------------------------------------------------ what start was given
    def write_state(self, doc: dict) -> None:
        """What ``mirror start`` ran with (both bootstraps, command-config paths, the topics), for ``status``."""
        import json

        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.dir / "mirror.json.tmp"
        tmp.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        tmp.replace(self.dir / "mirror.json")

    def read_state(self) -> dict | None:
        import json

        try:
            return json.loads((self.dir / "mirror.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except ValueError as exc:
            raise BadInput(f"{self.dir / 'mirror.json'} is not valid JSON ({exc}): run kmigrate mirror start again") from None
