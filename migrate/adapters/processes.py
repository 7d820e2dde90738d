"""Processes of this machine, by pid: the one check of whether one still exists."""

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
