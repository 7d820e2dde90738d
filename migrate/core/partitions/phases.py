"""The life of a topic's move and of its partitions (pure decisions; times are passed in).

* **state** - :class:`TopicPhase` and :func:`advance` are the legal life of a topic move (each
  partition's is :mod:`migrate.core.partitions.tasks`); :func:`decide` says what to do with a
  partition found in a given state (resume adopts);
* **safety** - :func:`isr_short` says when a partition must be held (its ISR is short);
* **stalls** - :func:`observe_progress` and :func:`stalled_replicas` find replicas being added
  that have made no byte progress for a while; :class:`Rate` estimates the copy rate and ETA.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping, Sequence

from migrate.core.partitions.moves import InFlight, ReplicaKey

DEFAULT_STALL_TIMEOUT_S = 120.0
DEFAULT_POLL_INTERVAL_S = 0.5


class TopicPhase(str, enum.Enum):
    """The life of one topic's move.

    ``pending -> moving -> moved -> recorded``; ``pending -> moved`` when every partition is
    already on target (resume after a crash before the bookkeeping write); ``moving -> stalled ->
    moving`` while a replica makes no progress; ``moving|stalled -> cancelled`` (``--cancel`` or
    ``--on-stall cancel``); ``pending|moving -> gone`` when the topic is deleted meanwhile.
    """

    pending = "pending"
    moving = "moving"
    stalled = "stalled"
    moved = "moved"  # every partition on target, verified; not yet recorded
    recorded = "recorded"
    cancelled = "cancelled"
    gone = "gone"


_LEGAL: dict[TopicPhase, frozenset[TopicPhase]] = {
    TopicPhase.pending: frozenset({TopicPhase.moving, TopicPhase.moved, TopicPhase.gone, TopicPhase.recorded}),
    TopicPhase.moving: frozenset({TopicPhase.moved, TopicPhase.stalled, TopicPhase.cancelled, TopicPhase.gone}),
    TopicPhase.stalled: frozenset({TopicPhase.moving, TopicPhase.moved, TopicPhase.cancelled, TopicPhase.gone}),
    TopicPhase.moved: frozenset({TopicPhase.recorded, TopicPhase.moving}),  # moving: partitions added meanwhile
    TopicPhase.recorded: frozenset(),
    TopicPhase.cancelled: frozenset(),
    TopicPhase.gone: frozenset(),
}


def advance(phase: TopicPhase, to: TopicPhase) -> TopicPhase:
    """``to`` when the transition is legal (staying put is), else ``ValueError``."""
    if to == phase or to in _LEGAL[phase]:
        return to
    raise ValueError(f"illegal topic transition {phase.value} -> {to.value}")


class Decision(str, enum.Enum):
    """What to do with one partition, from what the cluster shows."""

    done = "done"  # replicas equal the target: nothing to move
    adopt = "adopt"  # a reassignment to our target is in flight: wait for it
    wait = "wait"  # a reassignment to another target is in flight (not ours): wait, then re-plan
    submit = "submit"  # nothing in flight and not on target: submit it
    hold = "hold"  # not on target but the ISR is short: do not touch it yet


def decide(replicas: Sequence[int], target: Sequence[int], in_flight: InFlight | None,
           isr: Sequence[int] | None = None, min_isr: int = 1) -> Decision:
    """Resume adopts, never refuses.

    >>> decide((4, 5), (4, 5), None)
    <Decision.done: 'done'>
    >>> decide((4, 5, 1, 2), (4, 5), InFlight((4, 5, 1, 2), (4, 5), (1, 2)))
    <Decision.adopt: 'adopt'>
    >>> decide((1, 2), (4, 5), None, isr=(1,), min_isr=1)
    <Decision.hold: 'hold'>
    """
    if in_flight is not None:
        return Decision.adopt if tuple(in_flight.target) == tuple(target) else Decision.wait
    if tuple(replicas) == tuple(target):
        return Decision.done
    if isr is not None and isr_short(replicas, isr, min_isr):
        return Decision.hold
    return Decision.submit


def isr_short(replicas: Sequence[int], isr: Sequence[int], min_isr: int) -> bool:
    """True when a partition must not be moved now: some replica is out of sync and the ISR has no
    margin over ``min.insync.replicas`` (a move adds load and could drop it below), or the ISR is
    already below it.

    >>> isr_short((1, 2, 3), (1, 2, 3), 2), isr_short((1, 2, 3), (1, 2), 2), isr_short((1, 2, 3), (1, 2), 1)
    (False, True, False)
    """
    in_sync = [b for b in replicas if b in set(isr)]
    if len(in_sync) < min(min_isr, len(replicas)):
        return True
    return len(in_sync) < len(replicas) and len(in_sync) <= min_isr


@dataclass(frozen=True)
class ReplicaProgress:
    """Bytes held by one replica being added, and when they last grew (seconds, caller's clock)."""

    bytes: int
    changed_at_s: float
    reported: bool = False  # a stall of this replica was already reported


def observe_progress(previous: Mapping[ReplicaKey, ReplicaProgress], sizes: Mapping[ReplicaKey, int | None],
                     watched: Iterable[ReplicaKey], now_s: float) -> dict[ReplicaKey, ReplicaProgress]:
    """Fold one observation of replica sizes into the progress of every ``watched`` replica.

    A replica whose size is unknown (``None`` or absent: its broker did not answer) keeps its
    previous state, so a dead broker shows no progress. New replicas start now.
    """
    out: dict[ReplicaKey, ReplicaProgress] = {}
    for key in watched:
        size = sizes.get(key)
        prev = previous.get(key)
        if prev is None:
            out[key] = ReplicaProgress(size or 0, now_s)
        elif size is not None and size > prev.bytes:
            out[key] = ReplicaProgress(size, now_s)
        elif size is not None and size < prev.bytes:
            out[key] = replace(prev, bytes=size)  # truncated/restarted: no progress
        else:
            out[key] = prev
    return out


def stalled_replicas(progress: Mapping[ReplicaKey, ReplicaProgress], now_s: float, timeout_s: float) -> list[ReplicaKey]:
    """Replicas being added whose size has not grown for ``timeout_s`` (sorted).

    A replica that holds all the source's bytes but stays out of the ISR is stalled too: a
    caught-up replica joins the ISR within seconds, so waiting longer means it is stuck.
    """
    return sorted(k for k, p in progress.items() if now_s - p.changed_at_s >= timeout_s)


@dataclass(frozen=True)
class Rate:
    """A bytes-per-second estimate from (time, bytes) samples, with an ETA."""

    samples: tuple[tuple[float, int], ...] = field(default_factory=tuple)
    window_s: float = 30.0

    def add(self, now_s: float, copied_bytes: int) -> "Rate":
        kept = tuple(s for s in self.samples if now_s - s[0] <= self.window_s)
        return Rate(kept + ((now_s, copied_bytes),), self.window_s)

    @property
    def bytes_per_s(self) -> float:
        if len(self.samples) < 2:
            return 0.0
        (t0, b0), (t1, b1) = self.samples[0], self.samples[-1]
        return max(0.0, (b1 - b0) / (t1 - t0)) if t1 > t0 else 0.0

    def eta_s(self, remaining_bytes: int) -> float | None:
        rate = self.bytes_per_s
        return remaining_bytes / rate if rate > 0 else None


def migration_state(plan_id: str | None, topics_remaining: int, kmigrate_in_flight: int,
                    partitions_on_old: int, kmigrate_throttles: int) -> str:
    """Where a migration stands (``kmigrate status``): ``not started`` without a plan id, ``done``
    when every topic is recorded and nothing of kmigrate's is left (no move in flight, no replica
    on an old broker, no throttle), ``in progress`` otherwise.

    >>> migration_state(None, 3, 0, 0, 0), migration_state("p", 0, 0, 0, 1), migration_state("p", 0, 0, 0, 0)
    ('not started', 'in progress', 'done')
    """
    if not plan_id:
        return "not started"
    if topics_remaining or kmigrate_in_flight or partitions_on_old or kmigrate_throttles:
        return "in progress"
    return "done"
