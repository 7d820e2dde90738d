"""Processes of this machine, by pid: whether one still exists, its state and command line (/proc), the
live ones whose command line names something; and the parts every supervisor of a detached background
process shares (a sandbox node, a MirrorMaker): start one, its pid file, find it, collect its exit status."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Callable


def pid_alive(pid: int) -> bool:
    """True when a process ``pid`` exists on this machine (signal 0 to it; one we may not signal exists too)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def process_state(pid: int) -> str | None:
    """The one-letter state of ``pid`` from /proc (``R``, ``S``, ``Z`` ...), or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


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
        if d.isdigit() and process_state(int(d)) not in (None, "Z", "X"):
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
