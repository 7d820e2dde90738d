"""Wait until the cluster is healthy: the gate between two brokers of a rolling restart.

:func:`wait_healthy` reads the cluster every ``interval_s`` and judges each reading
(:func:`migrate.core.health.judge`); it is done when ``check_count`` readings in a row are healthy
(as Yelp's kafka-utils rolling restart does: one healthy look can come between a broker's
restart and its partitions falling out of the ISR), or when ``timeout_s`` passes. A reading the
cluster does not answer counts as not healthy. Reads only: killing it at any line changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from migrate.core.clientconfig import ClientSettings
from migrate.core.health import ClusterReading, Health, judge
from migrate.errors import StepFailed
from migrate.waiting import SYSTEM_CLOCK, Clock, FakeClock, poll

Reader = Callable[[], ClusterReading]
OnCheck = Callable[["HealthCheck"], None]


@dataclass(frozen=True)
class HealthCheck:
    """One check of a wait: its number, how many healthy checks in a row so far, seconds since the start."""

    number: int
    consecutive: int
    needed: int
    elapsed_s: float
    health: Health


@dataclass(frozen=True)
class HealthWait:
    """How a wait ended: ``healthy`` when ``needed`` healthy checks in a row were seen in time."""

    healthy: bool
    checks: int
    consecutive: int
    needed: int
    elapsed_s: float
    timeout_s: float
    last: Health

    def to_dict(self) -> dict:
        return {**self.last.to_dict(), "healthy": self.healthy, "checks": self.checks,
                "consecutive_healthy": self.consecutive, "check_count": self.needed,
                "elapsed_s": round(self.elapsed_s, 1), "timeout_s": self.timeout_s}

    def failure(self) -> str:
        """One line: what is still wrong at the timeout."""
        wrong = "; ".join(self.last.problems()) or (
            f"healthy in only {self.consecutive} of the {self.needed} checks in a row needed")
        return f"cluster not healthy after {self.timeout_s:g} s: {wrong}"


def cluster_reader(settings: ClientSettings, timeout_s: float = 10.0) -> Reader:
    """A reader of the cluster ``settings`` name (BadInput at once when no broker answers)."""
    from migrate.adapters.kafka.client import admin_client
    from migrate.adapters.kafka.health import read_cluster_health

    admin = admin_client(settings, timeout_s=timeout_s)
    return lambda: read_cluster_health(admin, timeout_s=timeout_s)


def check_health(read: Reader, expected_brokers: Iterable[int] | None = None) -> Health:
    """One reading, judged."""
    return judge(read(), expected_brokers)


def wait_healthy(read: Reader, *, expected_brokers: Iterable[int] | None = None, timeout_s: float = 600,
                 interval_s: float = 2.0, check_count: int = 3, on_check: OnCheck = lambda check: None,
                 clock: Clock | FakeClock = SYSTEM_CLOCK) -> HealthWait:
    """Check until ``check_count`` healthy checks in a row, or until ``timeout_s`` (see the module docstring)."""
    expected = None if expected_brokers is None else tuple(expected_brokers)
    start = clock.now()
    state = {"checks": 0, "consecutive": 0, "last": None}

    def check() -> bool:
        health = judge(read(), expected)
        state["checks"] += 1
        state["consecutive"] = state["consecutive"] + 1 if health.healthy else 0
        state["last"] = health
        on_check(HealthCheck(state["checks"], state["consecutive"], check_count, clock.now() - start, health))
        return state["consecutive"] >= check_count

    done = bool(poll(check, timeout_s=timeout_s, interval_s=interval_s, clock=clock))
    return HealthWait(done, state["checks"], state["consecutive"], check_count, clock.now() - start, timeout_s,
                      state["last"])


def require_healthy(read: Reader, *, timeout_s: float, interval_s: float = 1.0, check_count: int = 3,
                    expected_brokers: Iterable[int] | None = None, on_check: OnCheck = lambda check: None,
                    clock: Clock | FakeClock = SYSTEM_CLOCK) -> HealthWait:
    """:func:`wait_healthy`, raising :class:`StepFailed` (naming what is still wrong) at the timeout."""
    result = wait_healthy(read, expected_brokers=expected_brokers, timeout_s=timeout_s, interval_s=interval_s,
                          check_count=check_count, on_check=on_check, clock=clock)
    if not result.healthy:
        raise StepFailed(result.failure())
    return result
