"""Processes of this machine, by pid: whether one still exists, its state and command line (/proc), and the
live ones whose command line names something."""

from __future__ import annotations

import os


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
