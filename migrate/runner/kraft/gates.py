"""Wait at a gate of a ZooKeeper-to-KRaft migration (``kmigrate kraft status --wait-for GATE``).

Each poll re-reads the cluster (:func:`migrate.runner.kraft.observe.observe`: ZooKeeper, DescribeQuorum and the
controllers' migration flag; for ``brokers-kraft`` and ``finalized`` also the partitions' leaders through the
brokers) and judges the reading (:class:`migrate.core.kraft.gates.GateWatch`). Reads only: killed at any line and
run again, a wait simply reads again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from migrate.core.clientconfig import ClientSettings
from migrate.core.kraft.gates import Gate, GateWatch
from migrate.core.kraft.phases import Observation
from migrate.waiting import SYSTEM_CLOCK, Clock, FakeClock, poll

Reading = tuple[Observation, "tuple[str, ...] | None"]  # the observation, the offline partitions (None: not read)
Reader = Callable[[], Reading]


@dataclass(frozen=True)
class GateProgress:
    """One poll of a wait: its number, seconds since the start, and the watch after it."""

    number: int
    elapsed_s: float
    watch: GateWatch


class OfflinePartitions:
    """Partitions without a leader (``topic-partition``) as the brokers of ``settings`` report them, one admin
    client kept across the reads of a wait; None when no broker answers (or none was given)."""

    def __init__(self, settings: ClientSettings | None, timeout_s: float = 10.0):
        self.settings, self.timeout_s, self._read = settings, timeout_s, None

    def __call__(self) -> tuple[str, ...] | None:
        if self.settings is None:
            return None
        from migrate.runner.health import check_health, cluster_reader

        try:
            if self._read is None:
                self._read = cluster_reader(self.settings, timeout_s=self.timeout_s)
            health = check_health(self._read)
        except Exception:  # BadInput (no broker answers yet): not known this time, asked again next time
            return None
        return None if health.error is not None else tuple(f"{t}-{p}" for t, p in health.offline)


def reader(zookeeper_connect: str | None, auth: list | None, settings: ClientSettings | None, gate: Gate,
           known_brokers: tuple[int, ...] = (), controllers: tuple[str, ...] = (),
           controller_settings: ClientSettings | None = None, timeout_s: float = 10.0,
           zookeeper_optional: bool = False) -> Reader:
    """A reading for ``gate`` from the cluster: what :func:`observe` reads (``zookeeper_optional``: ZooKeeper not
    answering, or not given, is a reading without it), and the offline partitions where the gate needs them."""
    from migrate.runner.kraft.observe import observe

    # a short read: a broker restarting under it must not hold the wait's progress lines for long
    offline = OfflinePartitions(settings, min(timeout_s, 5.0)) if gate in (Gate.BROKERS_KRAFT, Gate.FINALIZED) else None

    def read() -> Reading:
        obs = observe(zookeeper_connect, auth, settings, known_brokers, timeout_s=timeout_s, controllers=controllers,
                      controller_settings=controller_settings, zookeeper_optional=zookeeper_optional)
        return obs, (offline() if offline is not None else ())

    return read


def wait_for_gate(read: Reader, gate: Gate, *, timeout_s: float, interval_s: float = 2.0, check_count: int = 3,
                  controllers: tuple[str, ...] = (), on_check: Callable[[GateProgress], None] = lambda p: None,
                  clock: Clock | FakeClock = SYSTEM_CLOCK) -> GateWatch:
    """Read and judge every ``interval_s`` until ``gate`` passes (``check_count`` passing readings in a row) or
    ``timeout_s`` passes; the watch says which (``passed``) and what the gate still waits for (``summary()``)."""
    watch = GateWatch(gate, needed=check_count, controllers=controllers)
    start = clock.now()

    def check() -> bool:
        obs, offline = read()
        done = watch.observe(obs, offline)
        on_check(GateProgress(watch.checks, clock.now() - start, watch))
        return done

    poll(check, timeout_s=timeout_s, interval_s=interval_s, clock=clock)
    return watch
