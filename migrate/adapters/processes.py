"""Processes of this machine, by pid: whether one still runs, its state and command line (/proc), the
live ones whose command line names something; the parts every supervisor of a detached background
process shares (a sandbox node, a MirrorMaker): start one, its pid file, find it, collect its exit status;
and the one way kmigrate stops a process, :func:`terminate`."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from migrate.waiting import poll


def pid_alive(pid: int) -> bool:
    """True while a process ``pid`` runs on this machine: it exists (signal 0 to it; one we may not signal
    exists too) and is not a zombie (a process that ended, its exit status not collected yet)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return process_state(pid) not in ("Z", "X") and not _thread_of_another(pid)


def _thread_of_another(pid: int) -> bool:
    """True when ``pid`` is the id of a thread that is not its process's main thread: thread ids share the
    number space of pids, /proc and kill() answer for them too (kill() signals the whole process), so a pid
    once ours can come back as a thread of some other program."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Tgid:"):
                    return int(line.split()[1]) != pid
    except (OSError, ValueError):
        pass
    return False


def process_state(pid: int) -> str | None:
    """The one-letter state of ``pid`` from /proc (``R``, ``S``, ``Z`` ...), or None when there is no such process."""
    fields = _stat_fields(f"/proc/{pid}/stat")
    return fields[0] if fields else None


def _stat_fields(path: str) -> list[str] | None:
    """The fields of a /proc ``stat`` file after the command name (state first), or None when it cannot be read."""
    try:
        with open(path) as f:
            return f.read().rsplit(")", 1)[1].split() or None
    except (OSError, IndexError):
        return None


def stopped(pid: int) -> bool:
    """True once every thread of ``pid`` is stopped (``T``: a SIGSTOP is delivered to each thread as it next
    leaves the kernel, so a busy JVM serves a moment after ``kill`` returned); False when it runs or is gone."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    states = [fields[0] for fields in (_stat_fields(f"/proc/{pid}/task/{task}/stat") for task in tasks)
              if fields]  # a thread that ended meanwhile has none
    return bool(states) and all(state in ("T", "t") for state in states)


def command_line(pid: int) -> list[str]:
    """The arguments of ``pid`` from /proc; empty when it is gone (or a kernel thread)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def live_pids(*words: str) -> list[int]:
    """Pids of the processes that are not zombies and whose command line contains every one of ``words``."""
    found = []
    for d in os.listdir("/proc"):
        if d.isdigit() and pid_alive(int(d)):
            line = " ".join(command_line(int(d)))
            if all(w in line for w in words):
                found.append(int(d))
    return sorted(found)


def find_pid(matches: Callable[[int], bool]) -> int | None:
    """The first pid in /proc that ``matches``, or None."""
    return next((int(d) for d in os.listdir("/proc") if d.isdigit() and matches(int(d))), None)


def spawn(command: list[str], cwd: Path | str, log_path: Path | str) -> subprocess.Popen:
    """Start ``command`` detached (its own session: it outlives this process), in ``cwd``, with no stdin and
    its stdout and stderr appended to ``log_path``."""
    with open(log_path, "ab") as log:
        return subprocess.Popen(command, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)


def reap(pid: int) -> None:
    """Collect ``pid``'s exit status if it is our child (a test that runs kmigrate in-process)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def read_pid_file(path: Path) -> int | None:
    """The pid written in ``path``, or None (no file, or not a number)."""
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None


def write_pid_file(path: Path, pid: int) -> None:
    """Write ``pid`` to ``path`` (through a temporary file: a reader never sees half of it)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(f"{pid}\n")
    tmp.replace(path)


@dataclass(frozen=True)
class StopResult:
    pid: int | None
    how: str  # "not running" | "SIGTERM" (it ended within the timeout) | "SIGKILL" (it did not: killed)
    waited_s: float


def terminate(*pids: int, timeout_s: float = 30.0, group: bool = False, kill_wait_s: float = 10.0) -> list[StopResult]:
    """Stop processes: SIGCONT (a paused process cannot shut down) and SIGTERM to each, then for each in turn
    wait up to ``timeout_s`` until it has ended, SIGKILL it when it has not and wait up to ``kill_wait_s``
    more; collect the exit status of each that is our child. ``group``: signal each one's process group
    (a process started in its own session, with what it started: a Spark worker and its executors), the
    wait is for the process itself. A process already gone is not an error. One :class:`StopResult` a pid,
    ``waited_s`` counted from the first SIGTERM.

    Each pid is held to the process it named when this began (its start time in /proc): once that one ended,
    a new process, or a thread of another process, given the same number (ids are reused, fast on a busy
    host: every JVM thread takes one) is never signalled."""
    send = os.killpg if group else os.kill
    born = {pid: start_time(pid) for pid in pids}
    start = time.monotonic()
    for pid in pids:
        if born[pid] is not None:
            _send(send, pid, signal.SIGCONT)
            _send(send, pid, signal.SIGTERM)
    results = []
    for pid in pids:
        how = "SIGTERM"

        def ended(pid: int = pid) -> bool:
            return not pid_alive(pid) or start_time(pid) != born[pid]

        if born[pid] is not None and not poll(ended, timeout_s=timeout_s, interval_s=0.1):
            how = "SIGKILL"
            if not ended():
                _send(send, pid, signal.SIGKILL)
            poll(ended, timeout_s=kill_wait_s, interval_s=0.1)
        reap(pid)
        results.append(StopResult(pid, how, time.monotonic() - start))
    return results


def start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot, /proc's ``starttime``), or None when there is no such
    process: with the pid, it names one process (a pid alone may name a later one)."""
    fields = _stat_fields(f"/proc/{pid}/stat")
    try:
        return int(fields[19]) if fields else None
    except (IndexError, ValueError):
        return None


def _send(send: Callable[[int, int], None], pid: int, sig: int) -> None:
    try:
        send(pid, sig)
    except ProcessLookupError:  # gone already
        pass
