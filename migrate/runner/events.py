"""What the runners tell the commands while they work, and the testing hook they share.

Events of ``kmigrate partitions`` (run, ``--cancel``): one frozen dataclass per kind, listed in
:data:`PARTITION_EVENTS`. A command renders them by type; ``--output json`` writes
:meth:`Event.as_dict` (the kind under ``"event"`` and the fields; a field left at :data:`OMIT`
is not written, so each line keeps the keys it always had).

Crash hook: ``KMIGRATE_CRASH_AT=<point>[:<n>]`` makes the process SIGKILL itself the n-th time
(default the first) it reaches ``crash_point(<point>)``, so tests can kill a run at any line.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass, fields
from typing import Any, Callable, ClassVar

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


# ====================================================================== typed events


class _Omit:
    """A field not written to JSON (an event kind whose variants have different keys)."""

    def __repr__(self) -> str:
        return "OMIT"


OMIT: Any = _Omit()


@dataclass(frozen=True)
class Event:
    """One thing a runner tells the command. ``kind`` is the JSON ``"event"`` value."""

    kind: ClassVar[str] = ""

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"event": self.kind}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not OMIT:
                out[f.name] = value
        return out


Emit = Callable[[Event], None]


def _kind(name: str):
    def mark(cls):
        cls.kind = name
        return dataclass(frozen=True)(cls)
    return mark


@_kind("warning")
class WarningEvent(Event):
    message: str


@_kind("start")
class Start(Event):
    plan_id: str
    mapping: dict[str, int]
    throttle_bytes_per_s: int
    bookkeeping_topic: str
    topics_selected: int
    topics_recorded: int
    topics_to_move: int
    topics_to_record: int
    partitions_to_move: int
    bytes_to_copy: int
    dry_run: bool
    max_moves_per_broker: int
    max_moves_cluster: int | None
    # --throttle auto: budget_ms, start/min/max rate (bytes/s); throttle_bytes_per_s is then the start rate
    throttle_auto: dict[str, Any] | None = OMIT


@_kind("would-move")
class WouldMove(Event):
    topic: str
    partitions: list[dict[str, Any]]  # partition, current, target, bytes


@_kind("would-record")
class WouldRecord(Event):
    topic: str


@_kind("foreign-plan")
class ForeignPlan(Event):
    plan_id: str
    topics: int
    message: str


@_kind("bookkeeping-created")
class BookkeepingCreated(Event):
    topic: str
    replicas: list[int]


@_kind("resume")
class Resume(Event):
    records: int
    topics_recorded: int


@_kind("throttle-set")
class ThrottleSet(Event):
    brokers: list[int]
    rate_bytes_per_s: int


@_kind("throttle-adopted")
class ThrottleAdopted(Event):
    scope: str  # broker | topic
    config: str
    broker: int = OMIT
    topic: str = OMIT
    entries: int = OMIT


@_kind("throttle-cleared")
class ThrottleCleared(Event):
    scope: str  # broker | topic
    config: str
    action: str  # removed | restored | absent | left (changed by someone else)
    broker: int = OMIT
    topic: str = OMIT
    entries: int = OMIT


@_kind("throttles-adopted")
class ThrottlesAdopted(Event):
    """One line for every ``throttle-adopted`` of a look at the throttles an earlier run left."""

    configs: int
    topics: list[str]
    brokers: list[int]
    message: str


@_kind("throttles-removed")
class ThrottlesRemoved(ThrottlesAdopted):
    """One line for every ``throttle-cleared`` (removed or restored) of one removal (same fields)."""


@_kind("run-started")
class RunStarted(Event):
    """This run's id, host and pid, as recorded in the bookkeeping topic (``run`` records)."""

    run_id: str
    host: str
    pid: int


@_kind("topic-gone")
class TopicGone(Event):
    topic: str
    message: str


@_kind("partition-done")
class PartitionDone(Event):
    topic: str
    partition: int
    replicas: list[int]


@_kind("partition-cancelled")
class PartitionCancelled(Event):
    topic: str
    partition: int
    replicas: list[int]
    message: str


@_kind("foreign-finished")
class ForeignFinished(Event):
    topic: str
    partition: int
    replicas: list[int]


@_kind("waiting-foreign")
class WaitingForeign(Event):
    topic: str
    partition: int
    target: list[int]
    message: str


@_kind("held")
class Held(Event):
    topic: str
    partition: int
    isr: list[int]
    replicas: list[int]
    min_isr: int
    message: str


@_kind("isr-short")
class IsrShort(Event):
    topic: str
    partition: int
    isr: list[int]
    min_isr: int
    message: str


@_kind("stall")
class Stall(Event):
    topic: str
    partition: int
    broker: int
    seconds: float
    broker_alive: bool
    bytes: int
    message: str


@_kind("stall-over")
class StallOver(Event):
    topic: str
    partition: int
    broker: int


@_kind("stall-cancelled")
class StallCancelled(Event):
    topic: str
    partitions: list[int]
    message: str


@_kind("adopted")
class Adopted(Event):
    partitions: list[dict[str, Any]]  # topic, partition, target


@_kind("submitted")
class Submitted(Event):
    partitions: list[dict[str, Any]]  # topic, partition, target, bytes


@_kind("topic-cancelled")
class TopicCancelled(Event):
    topic: str
    partitions: list[int]


@_kind("topic-done")
class TopicDone(Event):
    topic: str
    partitions_moved: int
    bytes: int
    seconds: float | None
    already_on_target: bool


@_kind("leaders-not-preferred")
class LeadersNotPreferred(Event):
    topic: str
    partitions: list[dict[str, Any]]  # partition, leader, preferred, error
    message: str


@_kind("progress")
class Progress(Event):
    copied_bytes: int
    total_bytes: int
    rate_bytes_per_s: int
    eta_s: float | None
    in_flight: int
    topics_left: int
    topics_recorded: int
    topics: dict[str, dict[str, Any]]  # topic -> copied_bytes, total_bytes, phase


@_kind("discovered")
class Discovered(Event):
    topics: list[str]
    message: str


@_kind("aborted")
class Aborted(Event):
    """A run ended early (a signal, an error): what kmigrate left in flight and kept throttled."""

    error: str
    in_flight: int
    throttle_problems: list[str]
    message: str
    in_flight_partitions: list[str] = OMIT
    throttled_topics: list[str] = OMIT
    throttled_brokers: list[int] = OMIT
    resume_command: str = OMIT
    cancel_command: str = OMIT


@_kind("stopped")
class Stopped(Event):
    """The run saw ``kmigrate partitions --cancel`` and stopped (its moves reverted)."""

    by: str
    reverted: list[str]
    finished: list[str]
    message: str


@_kind("done")
class RunDone(Event):
    """The end of a run (or a dry run: then with ``topics_to_move`` and ``partitions_to_move``)."""

    plan_id: str
    dry_run: bool
    topics_recorded_now: int
    topics_recorded_total: int
    partitions_moved: int
    bytes_copied: int
    seconds: float
    gone: list[str]
    topics_to_move: list[str] = OMIT
    partitions_to_move: int = OMIT


@_kind("left-alone")
class LeftAlone(Event):
    partitions: list[str]
    message: str
    reasons: dict[str, str] = OMIT  # partition -> why it was left alone


@_kind("cancelled")
class Cancelled(Event):
    partitions: list[str]
    message: str


@_kind("done")
class CancelDone(Event):
    cancelled: int
    left_alone: int
    throttle_problems: list[str]


@_kind("done")
class CancelDryRun(Event):
    would_cancel: list[str]
    throttles_recorded: int
    dry_run: bool = True


@_kind("throttle-baseline")
class ThrottleBaseline(Event):
    """``--throttle auto``: the canary's acks=all p99 at rest, before the first move, and the limit it makes."""

    topic: str
    samples: int
    p99_ms: float
    budget_ms: float
    limit_ms: float
    resumed: int  # brokers taken up at the rate a previous run recorded
    message: str


@_kind("throttle-auto")
class ThrottleAuto(Event):
    """``--throttle auto``: a broker's rate in force or moves in flight changed (recorded first), and why."""

    broker: int
    old_rate_bytes_per_s: int
    new_rate_bytes_per_s: int
    moves: int
    reason: str
    mode: str
    p99_ms: float | None
    limit_ms: float
    message: str


PARTITION_EVENTS: tuple[type[Event], ...] = (
    WarningEvent, Start, WouldMove, WouldRecord, ForeignPlan, BookkeepingCreated, Resume, ThrottleSet, ThrottleAdopted,
    ThrottleCleared, TopicGone, PartitionDone, PartitionCancelled, ForeignFinished, WaitingForeign, Held, IsrShort,
    Stall, StallOver, StallCancelled, Adopted, Submitted, TopicCancelled, TopicDone, LeadersNotPreferred, Progress,
    Discovered, Aborted, RunDone, LeftAlone, Cancelled, CancelDone, CancelDryRun, ThrottlesAdopted, ThrottlesRemoved,
    RunStarted, Stopped, ThrottleBaseline, ThrottleAuto,
)
"""Every event ``kmigrate partitions`` emits, in about the order a run emits them."""
