"""What the runners tell the commands while they work, and the testing hook they share.

Crash hook: ``KMIGRATE_CRASH_AT=<point>[:<n>]`` makes the process SIGKILL itself the n-th time
(default the first) it reaches ``crash_point(<point>)``, so tests can kill a run at any line.
"""

from __future__ import annotations

import os
import signal

CRASH_ENV = "KMIGRATE_CRASH_AT"

_crash_counts: dict[str, int] = {}


def crash_wanted(name: str) -> bool:
    """Count a pass through ``name``; True on exactly the pass ``$KMIGRATE_CRASH_AT`` asks for
    (``name`` is the first, ``name:n`` the n-th). For a hook that must act before dying (flush a
    request first) or that injects another fault (drop a connection) instead of SIGKILL."""
    spec = os.environ.get(CRASH_ENV, "")
    want, _, nth = spec.partition(":")
    if want != name:
        return False
    _crash_counts[name] = _crash_counts.get(name, 0) + 1
    return _crash_counts[name] == (int(nth) if nth.isdigit() else 1)


def crash_point(name: str) -> None:
    """SIGKILL this process at ``name`` when ``$KMIGRATE_CRASH_AT`` asks for it."""
    if crash_wanted(name):
        os.kill(os.getpid(), signal.SIGKILL)
