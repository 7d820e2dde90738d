"""Consumer offsets translated by kmigrate for a mirror that keeps none (MirrorMaker 1). Pure.

For one consumer group and one partition, the group's committed offset ``c`` on the source names
the record it reads next, ``S[c]``. On the target the same partition holds the source's records in
order, with repeated stretches where the mirror was restarted (it copies again from its last
commit); each copy keeps the source's key, value, headers and timestamp. The translation:

1. ``y0`` = the target's earliest offset whose timestamp is at or after ``S[c]``'s timestamp (the
   broker's ``offsets_for_times``). Every copy of ``S[c]`` is at or after ``y0``: ``y0`` is a lower
   bound of the true position, however many records share a timestamp and even when timestamps go
   backwards within the partition (an earlier record with a later timestamp only moves ``y0`` back).
2. From ``y0``, at most ``window`` target records are read; the first whose content digest (key,
   value, headers, timestamp) equals ``S[c]``'s is the answer. The first copy of ``S[c]`` is among
   the candidates, so the first match is never after it: no record is skipped even when several
   records have the same content.
3. Not confirmed within the window: ``y0`` itself (safe, it re-reads more). No record at or after
   ``S[c]``'s timestamp on the target: ``S[c]`` is not copied yet and lands after the target's
   current end, so the end is the answer. When the target does not keep the source's timestamps
   (``message.timestamp.type=LogAppendTime``), step 1 is no bound: the window is read from the
   target's log start, and the log start is the fallback.

Per-partition translation holds only where the target's partition holds its source partition's
records: MirrorMaker 1 lets the target's producer place each record, which keeps partitions for
keyed records written with Java's partitioner and scatters the others. :func:`partitions_not_kept`
refuses the partitions whose target holds fewer records than MirrorMaker 1 has copied from the same
source partition (a copy only adds records); the cross-cluster verify proves the rest.

A group with nothing left to read on the source (``c`` at the source's end) goes to the target's end.
The records a consumer re-reads are the target's records from the answer on, less the source's
records the group has not read yet (``target_end - offset - (source_end - c)``), exact once the
mirror has copied everything (it counts the mirror's duplicates after ``c`` too: the consumer reads
those twice as well).
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass


def record_digest(key: bytes | None, value: bytes | None, headers: list[tuple[str, bytes | None]] | None,
                  timestamp: int) -> str:
    """A digest of a record's content as a mirror copies it (offsets and partition left out)."""
    h = hashlib.sha256()

    def part(b: bytes | None) -> None:
        if b is None:
            h.update(b"\xff")
        else:
            h.update(b"\x00" + struct.pack(">I", len(b)) + b)

    part(key)
    part(value)
    for name, hv in headers or []:
        part(name.encode("utf-8"))
        part(hv)
    h.update(struct.pack(">q", timestamp))
    return h.hexdigest()


@dataclass(frozen=True)
class Record:
    offset: int
    timestamp: int
    digest: str


@dataclass(frozen=True)
class PartitionTranslation:
    group: str
    topic: str
    partition: int
    source_committed: int
    offset: int  # to set on the target
    how: str  # "at the end" | "confirmed" | "not copied yet" | "timestamp bound" | "log start"
    rereads: int | None  # records a consumer reads twice from ``offset`` (None: not known)

    @property
    def confirmed(self) -> bool:
        return self.how in ("confirmed", "at the end")

    def to_dict(self) -> dict:
        return {"group": self.group, "topic": self.topic, "partition": self.partition,
                "source_committed": self.source_committed, "target_offset": self.offset, "how": self.how,
                "confirmed": self.confirmed, "rereads": self.rereads}


@dataclass(frozen=True)
class PartitionFacts:
    """What the translation of one (group, partition) needs, read by the adapter."""

    committed: int  # the group's committed offset on the source
    source_end: int
    source_next: Record | None  # the source record at or after ``committed`` (None: none left)
    target_start: int
    target_end: int
    timestamp_bound: int | None  # the target's offsets_for_times(source_next.timestamp); None: no such record
    window: tuple[Record, ...]  # the target's records from the bound (or the log start), at most ``window``
    timestamps_kept: bool = True  # False when the target topic uses LogAppendTime


def translate(group: str, topic: str, partition: int, f: PartitionFacts) -> PartitionTranslation:
    """The target offset for one (group, partition); never after the true position (see the module)."""
    def result(offset: int, how: str) -> PartitionTranslation:
        unread = max(0, f.source_end - f.committed)
        rereads = max(0, f.target_end - offset - unread)
        return PartitionTranslation(group, topic, partition, f.committed, offset, how, rereads)

    if f.source_next is None or f.committed >= f.source_end:
        return result(f.target_end, "at the end")
    if f.timestamps_kept and f.timestamp_bound is None:
        return result(f.target_end, "not copied yet")
    floor = f.timestamp_bound if f.timestamps_kept and f.timestamp_bound is not None else f.target_start
    for rec in f.window:
        if rec.offset >= floor and rec.digest == f.source_next.digest:
            return result(rec.offset, "confirmed")
    return result(floor, "timestamp bound" if f.timestamps_kept else "log start")



def partitions_not_kept(copied: dict[tuple[str, int], tuple[int, int]],
                        target: dict[tuple[str, int], tuple[int, int]]) -> list[tuple[str, int]]:
    """The partitions whose target holds fewer records than the mirror copied from that source
    partition: ``copied``: (topic, partition) -> (source log start, the mirror's committed offset);
    ``target``: (topic, partition) -> (log start, end). Offsets stand for records (a transactional
    source counts its markers too: a refusal, never a skipped record)."""
    out = []
    for tp, (start, committed) in sorted(copied.items()):
        t_start, t_end = target.get(tp, (0, 0))
        if t_end - t_start < committed - start:
            out.append(tp)
    return out
