"""The integration tests' waits on a cluster, over kmigrate's own retrying helper (``migrate.waiting``).

A test never sleeps a fixed time for the cluster to get somewhere: it waits for a named condition
(:func:`wait_for`), and a read of cluster state that can race a leader move or a config change reaching
every broker is read again until it settles (:func:`settled`). A timeout names what was waited for
and the last answer.
"""

from __future__ import annotations

from typing import Callable, TypeVar

from migrate.waiting import poll

T = TypeVar("T")


def wait_for(check: Callable[[], T], *, what: str, timeout_s: float = 60, interval_s: float = 0.5,
             retry_on: tuple[type[BaseException], ...] = ()) -> T:
    """Call ``check`` until it answers something truthy and return that; an AssertionError naming ``what``
    (and the last answer) when ``timeout_s`` passes first. Exceptions of ``retry_on`` count as "not yet"."""
    last: list = [None]

    def probe():
        last[0] = check()
        return last[0]

    value = poll(probe, timeout_s=timeout_s, interval_s=interval_s, retry_on=retry_on)
    if not value:
        raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what} (last answer: {last[0]!r})")
    return value


def settled(read: Callable[[], T], expected, *, timeout_s: float = 30, interval_s: float = 0.5,
            retry_on: tuple[type[BaseException], ...] = ()) -> T:
    """Read cluster state until it equals ``expected`` (at most ``timeout_s``); return the last read, for the
    caller's own ``assert ... == expected`` to show when it never settled.

    For reads a broker answers from what it has been told so far (metadata after a leader move or a
    reassignment, dynamic configs after a change in ZooKeeper): right after the change a broker may
    still answer the state before it."""
    last: list = [None]

    def probe() -> bool:
        last[0] = read()
        return last[0] == expected

    poll(probe, timeout_s=timeout_s, interval_s=interval_s, retry_on=retry_on)
    return last[0]
