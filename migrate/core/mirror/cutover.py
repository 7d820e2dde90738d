"""``kmigrate mirror cutover``: the pure gates and the offset translation of a cut-over (no I/O).

The procedure (``migrate.runner.mirror.cutover`` sequences it; each gate is re-checked on a re-run):

a. producers stopped: the source's end offsets of every mirrored partition unchanged for the quiet
   period (:func:`moving_partitions`);
b. replicated to the last record: MirrorMaker's stored position (its Connect offsets) reaches the
   source end, a trailing transaction marker not counted (:func:`migrate.core.mirror.status.partition_lags`);
c. each group stopped on the source (no members) and not active on the target (a refusal);
d. offsets translated (:func:`choose_offset`, made exact by content: :func:`exact_offset`) and set on the target (:func:`target_write`);
e. the cross-cluster verify, records past the common prefix counted as differences;
f. what clients change: ``bootstrap.servers``.

Translation never goes ahead of the group's true position on the target (no record skipped). The
candidates, each safe on its own, and the largest wins (fewest duplicates):

* MirrorMaker 2's checkpoint, when its upstream offset is not after the group's committed offset
  (a checkpoint of an older commit is safe but costs more duplicates; one of a later commit, the
  group moved back on the source since, is ignored);
* the offset-syncs: the newest sync ``(u, d)`` with ``u <= g`` gives ``d`` (``u == g``) or ``d + 1``
  (as MirrorMaker's ``OffsetSyncStore.translateDownstream``);
* the end rule: a group committed at the source's end of a partition replicated to its last record
  has read everything; its target offset is the target's end;
* only when none of those exists (MirrorMaker keeps few old offset-syncs: a group far behind often has
  neither a checkpoint nor a sync before it): the target's log start, never ahead, every record
  before the group's position read again (counted as duplicates).

At the switch the copy is complete, so each group's exact position can be found: MirrorMaker 2's
offset is made exact by content (:func:`exact_offset`: the first target record, from the source
record's timestamp on, whose content equals the record the group reads next on the source), as
kmigrate translates MirrorMaker 1's offsets; where content cannot decide, the safe offset above stays
(or the timestamp bound, when later). The JSON says which method decided each partition.

Duplicates (records a consumer switched to the target reads again) are counted, not estimated:
``committed records on the target from the translated offset to its end`` minus ``committed records
on the source from the group's offset to its end`` (once producers are stopped and the copy is
complete). A negative count means the translated offset would skip records: that partition is refused.

Writing (:func:`target_write`): an offset kmigrate set on the target (recorded in the bookkeeping
before the write) is never moved backwards; an offset already on the target that kmigrate did not
set (MirrorMaker's group sync, or a consumer) is moved back only when it is after the safe offset
(it would skip records) and forward when it is before. A re-run computes the same offsets from the
same clusters and converges.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
import struct
from typing import Iterable, Mapping

from migrate.core.mirror.translation import PartitionTranslation

TP = tuple[str, int]


def parse_offset_sync(key: bytes, value: bytes) -> tuple[str, int, int, int]:
    """A record of MirrorMaker's offset-syncs topic: ``(source topic, partition, upstream, downstream)``.

    >>> k = struct.pack(">h", 1) + b"t" + struct.pack(">i", 2)
    >>> parse_offset_sync(k, struct.pack(">qq", 10, 7))
    ('t', 2, 10, 7)
    """
    (n,) = struct.unpack_from(">h", key, 0)
    topic = key[2:2 + n].decode("utf-8")
    (partition,) = struct.unpack_from(">i", key, 2 + n)
    upstream, downstream = struct.unpack_from(">qq", value, 0)
    return topic, partition, upstream, downstream


def offset_syncs(records: Iterable[tuple[bytes | None, bytes | None]]) -> dict[TP, list[tuple[int, int]]]:
    """(topic, partition) -> every ``(upstream, downstream)`` sync read, in order (compaction may have
    left only the newest of each partition)."""
    out: dict[TP, list[tuple[int, int]]] = {}
    for key, value in records:
        if key is None or value is None:
            continue
        try:
            topic, partition, up, down = parse_offset_sync(key, value)
        except (struct.error, UnicodeDecodeError):
            continue
        out.setdefault((topic, partition), []).append((up, down))
    return out


def translate_with_syncs(syncs: Iterable[tuple[int, int]], committed: int) -> int | None:
    """The target offset for a group at source offset ``committed`` from the offset-syncs, never
    ahead of its true position; ``None`` when every sync is after it.

    >>> translate_with_syncs([(0, 0), (100, 98), (200, 190)], 150)
    99
    >>> translate_with_syncs([(0, 0), (100, 98)], 100)
    98
    >>> translate_with_syncs([(100, 98)], 5) is None
    True
    """
    best = None
    for up, down in syncs:
        if up <= committed and (best is None or up > best[0] or (up == best[0] and down < best[1])):
            best = (up, down)
    if best is None:
        return None
    return best[1] + (0 if committed == best[0] else 1)


@dataclass(frozen=True)
class Translation:
    """One group's partition: where it is on the source and where it starts on the target."""

    group: str
    topic: str
    partition: int
    source_committed: int
    offset: int | None  # the safe target offset (None: refused)
    how: str  # content | checkpoint | offset-sync | end | timestamp-bound | log-start | refused
    checkpoint: tuple[int, int] | None = None  # MirrorMaker's (upstream, downstream), if any
    reason: str = ""  # why refused, or a note
    duplicates: int | None = None  # records read again on the target (None: not counted)
    mirrormaker: tuple[int | None, str] | None = None  # MirrorMaker's own (offset, how), when content decided
    content: tuple[int, str] | None = None  # kmigrate's translation by content: (offset, how)

    @property
    def key(self) -> TP:
        return self.topic, self.partition

    def to_dict(self) -> dict:
        return {"group": self.group, "topic": self.topic, "partition": self.partition,
                "source_committed": self.source_committed, "target_offset": self.offset, "how": self.how,
                "checkpoint": None if self.checkpoint is None else {"upstream": self.checkpoint[0],
                                                                    "downstream": self.checkpoint[1]},
                "duplicates": self.duplicates, "reason": self.reason,
                "mirrormaker": None if self.mirrormaker is None else {"target_offset": self.mirrormaker[0],
                                                                      "how": self.mirrormaker[1]},
                "content": None if self.content is None else {"target_offset": self.content[0],
                                                              "how": self.content[1]}}


def choose_offset(group: str, tp: TP, committed: int, checkpoint: tuple[int, int] | None,
                  syncs: Iterable[tuple[int, int]], source_end: int, replicated: bool,
                  target_end: int, target_start: int | None = None) -> Translation:
    """The largest safe target offset of ``group`` on ``tp`` (see the module's rules).

    >>> choose_offset("g", ("t", 0), 50, (40, 38), [(0, 0)], 60, True, 60).offset
    38
    >>> choose_offset("g", ("t", 0), 60, None, [(0, 0)], 60, True, 61).how
    'end'
    >>> choose_offset("g", ("t", 0), 5, (9, 9), [], 60, True, 60).how
    'refused'
    >>> choose_offset("g", ("t", 0), 5, None, [(9, 9)], 60, True, 60, target_start=0).how
    'log-start'
    """
    candidates: list[tuple[int, str]] = []
    note = ""
    if checkpoint is not None:
        if checkpoint[0] <= committed:
            candidates.append((checkpoint[1], "checkpoint"))
        else:
            note = (f"MirrorMaker's checkpoint is of source offset {checkpoint[0]}, after the group's {committed} "
                    "(the group moved back on the source): not used")
    synced = translate_with_syncs(syncs, committed)
    if synced is not None:
        candidates.append((synced, "offset-sync"))
    if replicated and committed >= source_end:
        candidates.append((target_end, "end"))
    if not candidates and target_start is not None:
        # MirrorMaker keeps few old syncs (at most 10 in flight, the rest replaced by newer ones): a group
        # far behind may have no checkpoint and no sync before it; the target's log start is never ahead
        candidates.append((target_start, "log-start"))
        note = note or "no checkpoint or offset-sync at or before the group's offset: from the target's log start"
    if not candidates:
        reason = note or (f"no checkpoint and no offset-sync at or before source offset {committed}: MirrorMaker has "
                          "not translated it; wait for its next checkpoint (emit.checkpoints.interval.seconds) and run again")
        return Translation(group, tp[0], tp[1], committed, None, "refused", checkpoint, reason)
    offset, how = max(candidates, key=lambda c: (c[0], c[1] == "checkpoint"))
    return Translation(group, tp[0], tp[1], committed, offset, how, checkpoint, note)


def exact_offset(mm: Translation, content: PartitionTranslation | None) -> Translation:
    """At the switch (producers stopped, the copy complete): MirrorMaker's safe offset ``mm`` made exact by
    kmigrate's translation by content (``core/mirror/translation.py``: the first target record at or after
    the source record's timestamp whose key, value, headers and timestamp equal it).

    * content confirmed: its offset, the copy of the record the group reads next (never ahead: the first
      match is not after the first copy), even where MirrorMaker's offset is later (they disagree: an
      offset MirrorMaker translated past the first copy is not trusted);
    * the group at the source's end: the target's end;
    * content cannot decide (no match within the window, timestamps not kept, the record not found):
      the largest of the safe offsets, MirrorMaker's and the timestamp bound (every copy of the record is
      at or after it), re-read records counted by the caller.

    >>> mm = Translation("g", "t", 0, 150, 99, "offset-sync")
    >>> exact = exact_offset(mm, PartitionTranslation("g", "t", 0, 150, 152, "confirmed", 0))
    >>> exact.offset, exact.how, exact.mirrormaker, exact.content
    (152, 'content', (99, 'offset-sync'), (152, 'confirmed'))
    >>> exact_offset(mm, PartitionTranslation("g", "t", 0, 150, 120, "timestamp bound", 32)).how
    'timestamp-bound'
    >>> exact_offset(mm, PartitionTranslation("g", "t", 0, 150, 90, "timestamp bound", 62)).how
    'offset-sync'
    >>> exact_offset(mm, PartitionTranslation("g", "t", 0, 150, 400, "not copied yet", None)).offset
    99
    """
    if content is None:
        return mm
    found = (content.offset, content.how)
    if content.how == "confirmed":
        note = "" if mm.offset is None or mm.offset <= content.offset else (
            f"MirrorMaker's {mm.how} offset {mm.offset} is after the first copy of the group's next record "
            f"({content.offset}): not trusted")
        return replace(mm, offset=content.offset, how="content", reason=note, mirrormaker=(mm.offset, mm.how),
                       content=found)
    if content.how == "at the end":
        return replace(mm, offset=content.offset, how="end", reason="", mirrormaker=(mm.offset, mm.how),
                       content=found)
    undecided = "not confirmed by content (" + content.how + "): an earlier safe offset, records re-read"
    if content.how == "timestamp bound" and (mm.offset is None or content.offset > mm.offset):
        return replace(mm, offset=content.offset, how="timestamp-bound", reason=undecided,
                       mirrormaker=(mm.offset, mm.how), content=found)
    if mm.offset is None:
        return replace(mm, content=found)
    return replace(mm, reason=mm.reason or undecided, content=found)


@dataclass(frozen=True)
class GroupRereads:
    """One group's records read twice on the target after the switch, summed over its partitions."""

    group: str
    partitions: int
    rereads: int | None  # None: a partition refused or not counted
    methods: dict[str, int]  # how -> partitions it decided

    def to_dict(self) -> dict:
        return {"group": self.group, "partitions": self.partitions, "rereads": self.rereads, "methods": self.methods}

    def line(self) -> str:
        """The report's line.

        >>> GroupRereads("g", 3, 0, {"content": 2, "end": 1}).line()
        'group g: 0 record(s) read twice on the target (3 partition(s): content 2, end 1)'
        """
        count = "?" if self.rereads is None else str(self.rereads)
        how = ", ".join(f"{k} {v}" for k, v in sorted(self.methods.items()))
        return f"group {self.group}: {count} record(s) read twice on the target ({self.partitions} partition(s): {how})"


def group_rereads(translations: Iterable[Translation]) -> list[GroupRereads]:
    """Per group, in first-seen order: its partitions, the records they re-read, which method decided them.

    >>> [g.rereads for g in group_rereads([Translation("a", "t", 0, 5, 5, "content", duplicates=0),
    ...   Translation("a", "t", 1, 5, 2, "checkpoint", duplicates=3), Translation("b", "t", 0, 5, None, "refused")])]
    [3, None]
    """
    by: dict[str, list[Translation]] = {}
    for t in translations:
        by.setdefault(t.group, []).append(t)
    out = []
    for group, mine in by.items():
        counts = [t.duplicates for t in mine]
        methods: dict[str, int] = {}
        for t in mine:
            methods[t.how] = methods.get(t.how, 0) + 1
        out.append(GroupRereads(group, len(mine), None if any(c is None for c in counts) else sum(counts), methods))
    return out


def with_duplicates(t: Translation, target_records_after: int, source_records_after: int) -> Translation:
    """``t`` with its duplicates counted: committed records on the target from ``t.offset`` to its end
    minus those on the source from the group's offset to its end; fewer on the target refuses it
    (that offset would skip records).

    >>> with_duplicates(Translation("g", "t", 0, 5, 3, "checkpoint"), 7, 5).duplicates
    2
    >>> with_duplicates(Translation("g", "t", 0, 5, 3, "checkpoint"), 4, 5).how
    'refused'
    """
    extra = target_records_after - source_records_after
    if extra < 0:
        return replace(t, offset=None, how="refused", duplicates=None,
                       reason=f"target offset {t.offset} ({t.how}) would skip {-extra} record(s): the target holds "
                              f"{target_records_after} after it, the source {source_records_after} after the group's "
                              "offset; is MirrorMaker's copy complete?")
    return replace(t, duplicates=extra)


@dataclass(frozen=True)
class Write:
    """What to do with one offset on the target."""

    offset: int | None  # the offset to write (None: leave what is there)
    action: str  # set | already | kept | moved-back
    note: str = ""


def target_write(safe: int, on_target: int | None, on_target_skips: int | None,
                 set_by_kmigrate: int | None = None) -> Write:
    """The offset to commit on the target, given the safe offset ``safe``, what is committed there now
    (``on_target``), how many records that would skip (``on_target_skips``: counted when it is after
    ``safe``; 0 means it is safe too) and the last offset kmigrate recorded for it.

    An offset is never moved backwards unless keeping it would skip records: a safe offset already
    there (kmigrate's from an earlier run, or MirrorMaker's group sync) is kept. The one case where an
    offset kmigrate set is moved back: the group was moved back on the source since.

    >>> target_write(10, None, None)
    Write(offset=10, action='set', note='')
    >>> target_write(10, 10, None).action
    'already'
    >>> target_write(8, 10, 0, 10).action     # kmigrate set 10 before and it skips nothing: kept
    'kept'
    >>> target_write(8, 12, 3).action         # ahead of the group on the source: would skip 3 records
    'moved-back'
    """
    who = "kmigrate" if set_by_kmigrate is not None and set_by_kmigrate == on_target else "not kmigrate"
    if on_target is None or on_target < safe:
        return Write(safe, "set")
    if on_target == safe:
        return Write(None, "already")
    if on_target_skips == 0:
        return Write(None, "kept", f"{on_target} already committed on the target (by {who}) skips no record: kept")
    return Write(safe, "moved-back", f"{on_target} was committed on the target (by {who}) but would skip "
                                     f"{on_target_skips if on_target_skips is not None else 'some'} record(s): "
                                     f"moved back to {safe}")


def recorded_offsets(records: Iterable[Mapping]) -> dict[tuple[str, str, int], int]:
    """(group, topic, partition) -> the last offset kmigrate recorded (``mirror-offsets`` values)."""
    out: dict[tuple[str, str, int], int] = {}
    for v in records:
        if v.get("kind") == "mirror-offsets":
            for name, offset in v.get("offsets", {}).items():
                topic, _, partition = name.rpartition(":")
                out[(v["group"], topic, int(partition))] = int(offset)
    return out


def passed_gates(records: Iterable[Mapping]) -> dict[str, Mapping]:
    """gate -> its last ``mirror-gate`` record value."""
    return {v["gate"]: v for v in records if v.get("kind") == "mirror-gate"}


def ends_key(ends: Mapping[TP, int]) -> dict[str, int]:
    """``topic:partition`` -> offset, the JSON form of offsets in the bookkeeping.

    >>> ends_key({("a", 0): 5})
    {'a:0': 5}
    """
    return {f"{t}:{p}": o for (t, p), o in sorted(ends.items())}


def moving_partitions(before: Mapping[TP, int], after: Mapping[TP, int]) -> list[str]:
    """``topic-partition`` names whose end offset changed (or appeared) between two readings.

    >>> moving_partitions({("a", 0): 5, ("a", 1): 3}, {("a", 0): 5, ("a", 1): 4})
    ['a-1']
    """
    return [f"{t}-{p}" for (t, p), end in sorted(after.items()) if before.get((t, p)) != end]


def client_changes(groups: Iterable[str], source_bootstrap: str, target_bootstrap: str) -> list[str]:
    """The lines that tell operators what to change in their clients."""
    lines = [f"consumers of group {g}: bootstrap.servers={source_bootstrap} -> {target_bootstrap} (group.id unchanged)"
             for g in sorted(groups)]
    lines.append(f"producers: bootstrap.servers={source_bootstrap} -> {target_bootstrap} (after the consumers)")
    return lines


def mirror_history(values: Iterable[Mapping]) -> dict:
    """Where a mirror stands, from its bookkeeping record values in order: the topics kmigrate created,
    MirrorMaker's last start or stop, the cut-over gates passed, the offsets set per group.

    >>> h = mirror_history([{"kind": "mirror-step", "step": "mirrormaker-started", "time": "t1", "pid": 7},
    ...                     {"kind": "mirror-gate", "gate": "producers-stopped", "time": "t2"},
    ...                     {"kind": "mirror-offsets", "group": "g", "offsets": {"a:0": 3}, "time": "t3"}])
    >>> h["mirrormaker"], h["gates"], h["offsets_set"], h["stage"]
    ({'step': 'mirrormaker-started', 'time': 't1', 'pid': 7}, {'producers-stopped': 't2'}, {'g': {'time': 't3', 'partitions': 1}}, 'cutting over')
    """
    out: dict = {"topics_created": [], "mirrormaker": None, "gates": {}, "offsets_set": {}, "stage": "not started"}
    for v in values:
        kind = v.get("kind")
        if kind == "mirror-step" and v.get("step") == "topics-created":
            out["topics_created"] += [t for t in v.get("topics", {}) if t not in out["topics_created"]]
        elif kind == "mirror-step":
            out["mirrormaker"] = {"step": v.get("step"), "time": v.get("time"), "pid": v.get("pid")}
        elif kind == "mirror-gate":
            out["gates"][v["gate"]] = v.get("time")
        elif kind == "mirror-offsets":
            out["offsets_set"][v["group"]] = {"time": v.get("time"), "partitions": len(v.get("offsets", {}))}
    if "done" in out["gates"]:
        out["stage"] = "cut over: clients may switch"
    elif out["gates"] or out["offsets_set"]:
        out["stage"] = "cutting over"
    elif out["mirrormaker"] is not None:
        out["stage"] = "mirroring" if out["mirrormaker"]["step"] == "mirrormaker-started" else "mirrormaker stopped"
    elif out["topics_created"]:
        out["stage"] = "topics created"
    return out
