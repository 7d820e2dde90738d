"""What ``kmigrate mirror status`` reports, whichever engine copies: one :class:`MirrorStatus`.

Every engine gives each mirrored partition's lag (a row with ``lag``, ``cells()`` for the table and
``to_dict()``: :class:`PartitionLag` where the position is MirrorMaker 2's stored one,
:class:`migrate.core.mirror.mm1.GroupLag` where it is a consumer group's on the source) and each of its
processes. What only some engines keep comes in a part of its own, present when the engine has it:
:class:`ConnectState` (a Kafka Connect-based engine: its tasks, the groups' translated offsets, its
heartbeats, the bookkeeping) and :class:`GroupCopy` (an engine that copies in a consumer group of the
source: that group, unclean stops). The JSON document and the text show the parts present.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Protocol

from migrate.core.mirror.plan import source_and_target


class LagRow(Protocol):
    """One mirrored partition's position and lag, as an engine knows it."""

    topic: str
    partition: int

    @property
    def lag(self) -> int: ...

    @property
    def end(self) -> int:
        """The source partition's end offset at the look."""
        ...

    def cells(self) -> tuple[str, ...]: ...

    def to_dict(self) -> dict: ...


@dataclass(frozen=True)
class PartitionLag:
    topic: str
    partition: int
    source_start: int
    source_end: int
    mirrored: int | None  # last source offset MirrorMaker copied (None: nothing yet)
    # Nothing but transaction markers and aborted records between the next offset and the end (a
    # read_committed consumer found no record there): MirrorMaker has nothing left to copy.
    only_control_left: bool = False
    # How far behind in time: now minus the timestamp of the next record to copy (0 when caught up,
    # None when not known: that record not read)
    time_lag_ms: int | None = None

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.partition

    @property
    def next_offset(self) -> int:
        """The source offset MirrorMaker copies next."""
        return self.source_start if self.mirrored is None else max(self.mirrored + 1, self.source_start)

    @property
    def lag(self) -> int:
        return 0 if self.only_control_left else max(0, self.source_end - self.next_offset)

    @property
    def end(self) -> int:
        return self.source_end

    COLUMNS: ClassVar[tuple[str, ...]] = ("topic", "partition", "source end", "mirrored up to", "lag", "behind (s)")

    def cells(self) -> tuple[str, ...]:
        """The row of ``mirror status``'s table (:data:`COLUMNS`)."""
        return (self.topic, str(self.partition), str(self.source_end), "-" if self.mirrored is None else str(self.mirrored + 1),
                str(self.lag), "?" if self.time_lag_ms is None else f"{self.time_lag_ms / 1000:.1f}")

    def to_dict(self) -> dict:
        return {"topic": self.topic, "partition": self.partition, "source_start": self.source_start,
                "source_end": self.source_end, "mirrored_offset": self.mirrored, "lag": self.lag,
                "only_control_records_left": self.only_control_left,
                "time_lag_s": None if self.time_lag_ms is None else round(self.time_lag_ms / 1000, 1)}


@dataclass(frozen=True)
class GroupOffset:
    group: str
    topic: str
    partition: int
    source_committed: int
    checkpoint_upstream: int | None
    translated: int | None
    target_committed: int | None
    # records a consumer switched now would read again (committed records on the target from its
    # offset there, else the translated one, minus those on the source after its commit); counted
    # only once the partition is copied to its end (None before); negative: that offset would skip records
    duplicates: int | None = None

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class ConnectState:
    """What a Kafka Connect-based engine (MirrorMaker 2) keeps on the target, besides its positions."""

    tasks: dict[str, str]  # connector and task name -> state
    groups: tuple[GroupOffset, ...] = ()
    config_differences: dict[str, dict[str, tuple[str | None, str | None]]] = field(default_factory=dict)
    heartbeat_age_s: float | None = None  # since MirrorMaker's newest heartbeat on the target (None: none yet)
    history: dict = field(default_factory=dict)  # what the bookkeeping says was done (core.mirror.cutover.mirror_history)


@dataclass(frozen=True)
class GroupCopy:
    """What an engine that copies in a consumer group of the source (MirrorMaker 1) adds."""

    engine: str  # the engine's name, as ``--engine`` takes it
    group: str
    unclean_stops: tuple[dict, ...] = ()  # {"instance", "pid", "noticed_at"}: ended without a clean stop

    @property
    def duplicates_possible(self) -> bool:
        return bool(self.unclean_stops)


@dataclass(frozen=True)
class MirrorStatus:
    """``kmigrate mirror status`` (see the module). ``processes``: each MirrorMaker process as
    ``{"running", "pid", "log", ...}``, with its ``index`` when the engine runs several instances;
    ``complete``: False for the quick look of a wait (without what is slow to read)."""

    label: str  # the engine, in words: "MirrorMaker 2"
    processes: tuple[dict, ...]
    partitions: tuple[LagRow, ...]
    columns: tuple[str, ...]  # the table's header: the rows' ``COLUMNS``
    notes: tuple[str, ...] = ()  # warnings
    complete: bool = True
    connect: ConnectState | None = None
    group_copy: GroupCopy | None = None

    @property
    def total_lag(self) -> int:
        return sum(p.lag for p in self.partitions)

    @property
    def caught_up(self) -> bool:
        return self.total_lag == 0

    @property
    def running(self) -> bool:
        return any(p["running"] for p in self.processes)

    def to_dict(self) -> dict:
        out = {"partitions": [p.to_dict() for p in self.partitions], "total_lag": self.total_lag,
               "caught_up": self.caught_up}
        c = self.connect
        if c is not None:
            out.update({
                "process": self.processes[0], "tasks": c.tasks,
                "total_source_records": sum(p.source_end - p.source_start for p in self.partitions),  # type: ignore[attr-defined]
                "groups": [g.to_dict() for g in c.groups],
                "config_differences": {t: source_and_target(d) for t, d in c.config_differences.items()},
                "heartbeat_age_s": None if c.heartbeat_age_s is None else round(c.heartbeat_age_s, 1),
                "bookkeeping": c.history})
        g = self.group_copy
        if g is not None:
            out.update({"engine": g.engine, "group": g.group, "instances": list(self.processes),
                        "process": {"running": self.running}, "duplicates_possible": g.duplicates_possible,
                        "unclean_stops": list(g.unclean_stops), "notes": list(self.notes)})
        return out


def partition_lags(ends: dict[tuple[str, int], tuple[int, int]], mirrored: dict[tuple[str, int], int],
                   next_times: dict[tuple[str, int], int | None] | None = None,
                   now_ms: int | None = None) -> tuple[PartitionLag, ...]:
    """Per source partition (``ends``: (topic, partition) -> (log start, end)) its lag against MirrorMaker's
    position, in records and in time; ``next_times``: the timestamp of each lagging partition's next
    record to copy, ``None`` for one with nothing but transaction markers or aborted records left.

    >>> [(p.lag, p.time_lag_ms) for p in partition_lags({("t", 0): (0, 10), ("t", 1): (0, 5)},
    ...     {("t", 0): 6, ("t", 1): 3}, {("t", 0): 1000, ("t", 1): None}, 4000)]
    [(3, 3000), (0, 0)]
    """
    next_times = next_times or {}
    out = []
    for (t, p), (start, end) in sorted(ends.items()):
        control = (t, p) in next_times and next_times[(t, p)] is None
        lag = PartitionLag(t, p, start, end, mirrored.get((t, p)), control)
        ts = next_times.get((t, p))
        time_lag = 0 if lag.lag == 0 else (None if ts is None or now_ms is None else max(0, now_ms - ts))
        out.append(PartitionLag(t, p, start, end, mirrored.get((t, p)), control, time_lag))
    return tuple(out)


def copied_since(first: MirrorStatus, now: MirrorStatus) -> bool:
    """Whether, in ``now``, every partition has copied what its source held at ``first`` (its lag is at most the
    records written since): ``mirror status --wait``'s condition. With producers still writing, lag 0 may never be
    seen (each look finds new records; MirrorMaker 2 stores its position every few seconds); once they stop, this
    is lag 0. A partition ``first`` did not show must be at lag 0.

    >>> def look(*rows): return MirrorStatus("MM", (), tuple(PartitionLag("t", p, 0, e, m) for p, e, m in rows), ())
    >>> first = look((0, 100, 49), (1, 10, 9))
    >>> copied_since(first, look((0, 130, 99), (1, 12, 9))), copied_since(first, look((0, 130, 98), (1, 12, 9)))
    (True, False)
    >>> copied_since(first, look((0, 130, 129), (1, 12, 11), (2, 5, 3)))  # partition 2 is new: lag 0 needed
    False
    """
    ends = {(r.topic, r.partition): r.end for r in first.partitions}
    return all(r.lag <= max(0, r.end - ends.get((r.topic, r.partition), r.end)) for r in now.partitions)
