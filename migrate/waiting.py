"""The one wait/retry helper of the runners: poll a check until it answers, on an injected clock.

Every runner that waits for the cluster (a leader elected, a reassignment listed, a server
synced, a broker registered) calls :func:`wait_until` or :func:`poll` instead of writing its own
deadline loop, so timeouts, intervals and the message on a timeout read the same everywhere.
Built on tenacity; the clock and the sleep are injected (tests pass a fake clock and never sleep).

>>> clock = FakeClock()
>>> answers = iter([None, None, "ready"])
>>> wait_until(lambda: next(answers), timeout_s=10, interval_s=1, what="the answer", clock=clock)
'ready'
>>> clock.now()
2.0
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, TypeVar

import tenacity

from migrate.errors import StepFailed

T = TypeVar("T")


@dataclass(frozen=True)
class Clock:
    """A monotonic clock and a sleep that goes with it."""

    now: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


SYSTEM_CLOCK = Clock()


@dataclass
class FakeClock:
    """A clock for tests: ``sleep`` moves time forward at once."""

    t: float = 0.0
    slept: list[float] = field(default_factory=list)

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += seconds


class _NotYet(Exception):
    """The check answered nothing yet: ask again."""


def poll(check: Callable[[], T | None], *, timeout_s: float, interval_s: float = 0.5,
         clock: Clock | FakeClock = SYSTEM_CLOCK,
         retry_on: tuple[type[BaseException], ...] = ()) -> T | None:
    """Call ``check`` every ``interval_s`` until it returns something truthy; return that.

    Returns ``None`` when ``timeout_s`` passes first (the check is always asked at least once,
    and once more at the deadline). An exception of a type in ``retry_on`` counts as "not yet";
    at the deadline the last such exception is raised again. Any other exception goes through.
    """
    start = clock.now()
    deadline = start + timeout_s

    def attempt() -> T:
        value = check()
        if not value:
            raise _NotYet()
        return value

    def stop(state: tenacity.RetryCallState) -> bool:
        return clock.now() >= deadline

    def wait(state: tenacity.RetryCallState) -> float:
        return max(0.0, min(interval_s, deadline - clock.now()))

    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception_type((_NotYet, *retry_on)),
        stop=stop, wait=wait, sleep=clock.sleep, reraise=True,
    )
    try:
        return retrying(attempt)
    except _NotYet:
        return None


def wait_until(check: Callable[[], T | None], *, timeout_s: float, what: str, interval_s: float = 0.5,
               clock: Clock | FakeClock = SYSTEM_CLOCK,
               retry_on: tuple[type[BaseException], ...] = (),
               on_timeout: Callable[[], BaseException] | None = None) -> T:
    """Like :func:`poll`, but a timeout raises: ``on_timeout()`` when given, else ``StepFailed``
    ("timed out after N s waiting for <what>")."""
    value = poll(check, timeout_s=timeout_s, interval_s=interval_s, clock=clock, retry_on=retry_on)
    if value:
        return value
    if on_timeout is not None:
        raise on_timeout()
    raise StepFailed(f"timed out after {timeout_s:g} s waiting for {what}")
