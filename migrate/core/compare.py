"""Partition-by-partition comparison of two snapshots, and the report. Pure: no I/O, no clock.

Two forms:

* **Same cluster** (``compare_same``): a snapshot taken before a migration and one taken after it
  against the first one's ends (``Snapshot.like``). Offsets are in every record's hash, so a
  record moved, shifted, dropped or added inside the compared range is a difference. Records
  produced since the first snapshot are the *tail*: reported, compared only with ``fail_on_tail``
  (for topics whose producers were stopped). A log start that moved up (``delete_records``,
  retention) or an end that moved back (truncation) is a difference, named as such.
* **Two clusters** (``compare_cross``): offsets differ between clusters, so hashes cover key, value,
  headers and timestamp. When one side holds more records than the other, the first records of the
  longer side (``prefix_requests`` says how many, the Spark job digests them) are compared with the
  whole of the shorter: a target that is behind its source (a mirror still catching up) has a tail
  on the source; a target with records past its source's end differs, and so does a partition
  empty on one side only.

Compacted topics compare their tables (last record per key, tombstones left out), whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from migrate.errors import BadInput
from migrate.core.snapshot import Digest, PartitionSnapshot, Snapshot

SAME = "same-cluster"
CROSS = "cross-cluster"


@dataclass(frozen=True)
class PartitionResult:
    topic: str
    partition: int
    problems: tuple[str, ...]  # empty when the partition matches
    left: PartitionSnapshot | None
    right: PartitionSnapshot | None
    tail_records: int = 0  # records past the common prefix, on ``tail_side``
    tail_side: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class Side:
    label: str  # "before" / "after" / "source" / "target"
    cluster_id: str
    bootstrap_servers: str
    taken_at: str


@dataclass(frozen=True)
class Report:
    mode: str
    left: Side
    right: Side
    partitions: tuple[PartitionResult, ...]
    fail_on_tail: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return all(p.ok for p in self.partitions)

    @property
    def differing(self) -> tuple[PartitionResult, ...]:
        return tuple(p for p in self.partitions if not p.ok)

    @property
    def topics(self) -> tuple[str, ...]:
        return tuple(sorted({p.topic for p in self.partitions}))

    @property
    def differing_topics(self) -> tuple[str, ...]:
        return tuple(sorted({p.topic for p in self.differing}))

    def records(self, side: str) -> int:
        snap = (lambda p: p.left) if side == "left" else (lambda p: p.right)
        return sum(s.digest.records for p in self.partitions if (s := snap(p)) is not None)

    def topic_rows(self) -> list[dict]:
        """One summary row per topic: partitions, records on each side, differing partitions, tail."""
        rows: dict[str, dict] = {}
        for p in self.partitions:
            row = rows.setdefault(p.topic, {"topic": p.topic, "partitions": 0, "left_records": 0, "right_records": 0,
                                            "differing_partitions": 0, "tail_records": 0})
            row["partitions"] += 1
            row["left_records"] += p.left.digest.records if p.left else 0
            row["right_records"] += p.right.digest.records if p.right else 0
            row["differing_partitions"] += 0 if p.ok else 1
            row["tail_records"] += p.tail_records
        return [rows[t] for t in sorted(rows)]

    def to_dict(self) -> dict:
        def side(s: Side) -> dict:
            return {"label": s.label, "cluster_id": s.cluster_id, "bootstrap_servers": s.bootstrap_servers,
                    "taken_at": s.taken_at}

        def figures(s: PartitionSnapshot | None) -> dict | None:
            if s is None:
                return None
            return {"log_start_offset": s.log_start_offset, "end_offset": s.end_offset, "read_from": s.read_from,
                    "read_to": s.read_to, "offsets_read": s.offsets_read, "records": s.digest.records,
                    "records_read": s.digest.raw_records, "first_offset": s.digest.first_offset,
                    "last_offset": s.digest.last_offset, "hash1": str(s.digest.hash1), "hash2": str(s.digest.hash2),
                    "compacted": s.compacted, "tail_records": s.tail.records}

        return {
            "ok": self.ok, "mode": self.mode, "fail_on_tail": self.fail_on_tail,
            "left": side(self.left), "right": side(self.right), "notes": list(self.notes),
            "summary": {"topics": len(self.topics), "partitions": len(self.partitions),
                        "left_records": self.records("left"), "right_records": self.records("right"),
                        "differing_partitions": len(self.differing), "differing_topics": list(self.differing_topics),
                        "tail_records": sum(p.tail_records for p in self.partitions)},
            "topics": self.topic_rows(),
            "partitions": [
                {"topic": p.topic, "partition": p.partition, "ok": p.ok, "problems": list(p.problems),
                 "notes": list(p.notes), "tail_records": p.tail_records, "tail_side": p.tail_side,
                 self.left.label: figures(p.left), self.right.label: figures(p.right)}
                for p in self.partitions
            ],
        }


def _side(label: str, s: Snapshot) -> Side:
    return Side(label, s.cluster_id, s.bootstrap_servers, s.taken_at)


def _count_word(compacted: bool) -> str:
    return "live keys" if compacted else "records"


def compare_same(before: Snapshot, after: Snapshot, fail_on_tail: bool = False) -> Report:
    """Compare a snapshot with one taken later on the same cluster against its ends.

    BadInput when they are not comparable: other cluster, offsets not hashed, another isolation level,
    or ``after`` read past ``before``'s ends (take it with ``kmigrate verify snapshot --like``).
    """
    if before.cluster_id != after.cluster_id:
        raise BadInput(
            f"the snapshots are of different clusters (cluster id {before.cluster_id} taken {before.taken_at}, "
            f"{after.cluster_id} taken {after.taken_at}): use `kmigrate verify --source-bootstrap --target-bootstrap` "
            "to compare two clusters"
        )
    if not (before.include_offsets and after.include_offsets):
        raise BadInput("a snapshot compared on the same cluster must hash offsets: take it with `kmigrate verify snapshot`")
    if before.isolation_level != after.isolation_level:
        raise BadInput(
            f"the snapshots read with different isolation levels ({before.isolation_level}, {after.isolation_level}): "
            "take the second with the first one's --isolation-level"
        )
    now = after.partition_map()
    results = []
    for b in sorted(before.partitions, key=lambda p: p.key):
        a = now.get(b.key)
        if a is None:
            results.append(PartitionResult(b.topic, b.partition, ("partition missing after (topic deleted or partition gone)",), b, None))
            continue
        if a.read_to > b.read_to:
            raise BadInput(
                f"the second snapshot read {b.topic}-{b.partition} up to offset {a.read_to}, past the first one's "
                f"end {b.read_to}: take it with `kmigrate verify snapshot --like <first snapshot>`"
            )
        problems: list[str] = []
        notes: list[str] = []
        word = _count_word(b.compacted)
        if a.read_from > b.read_from:
            problems.append(f"log start moved from {b.read_from} to {a.read_from}: offsets below {a.read_from} were "
                            "deleted (delete-records or retention)")
        elif a.read_from < b.read_from:
            problems.append(f"log start went back from {b.read_from} to {a.read_from} (topic re-created?)")
        if a.end_offset < b.read_to:
            problems.append(f"end offset went back from {b.read_to} to {a.end_offset}: "
                            f"{b.read_to - a.end_offset} offsets at the end are gone")
        if a.digest.records != b.digest.records:
            problems.append(f"{word}: before {b.digest.records}, after {a.digest.records}")
        elif not a.digest.same_content(b.digest):
            problems.append(f"content differs ({word} {a.digest.records} on both sides)")
        if b.compacted and a.digest.raw_records != b.digest.raw_records and not problems:
            notes.append(f"records read {b.digest.raw_records} -> {a.digest.raw_records}: compaction ran, tables equal")
        if a.tail.records:
            tail = (f"{a.tail.records} records produced since the snapshot "
                    f"(offsets {a.tail.first_offset}..{a.tail.last_offset}), not compared")
            if fail_on_tail:
                problems.append(tail.replace(", not compared", " (--fail-on-tail)"))
            else:
                notes.append(tail)
            if b.compacted and problems:
                notes.append("compacted topic written since the snapshot: the cleaner may have removed records "
                             "superseded by new ones; snapshot again with its producers paused to be sure")
        results.append(PartitionResult(b.topic, b.partition, tuple(problems), b, a, a.tail.records,
                                       "after" if a.tail.records else None, tuple(notes)))
    return Report(SAME, _side("before", before), _side("after", after), tuple(results), fail_on_tail)


def prefix_requests(source: Snapshot, target: Snapshot) -> dict[str, dict[tuple[str, int], int]]:
    """Which side's first records to digest, and how many, for partitions whose counts differ.

    ``{"source": {(topic, partition): n}, "target": {...}}``: the longer side's first ``n`` records,
    ``n`` being the shorter side's count. Compacted topics are compared whole and never need one.
    """
    out: dict[str, dict[tuple[str, int], int]] = {"source": {}, "target": {}}
    tgt = target.partition_map()
    for s in source.partitions:
        t = tgt.get(s.key)
        if t is None or s.compacted or t.compacted:
            continue
        ns, nt = s.digest.records, t.digest.records
        if min(ns, nt) == 0:
            continue  # an empty side is a difference as it is: nothing in common to compare
        if ns > nt:
            out["source"][s.key] = nt
        elif nt > ns:
            out["target"][s.key] = ns
    return out


def compare_cross(source: Snapshot, target: Snapshot,
                  prefixes: dict[str, dict[tuple[str, int], Digest]] | None = None,
                  fail_on_tail: bool = False) -> Report:
    """Compare two clusters' snapshots (taken without offsets in the hashes), partition by partition."""
    if source.include_offsets or target.include_offsets:
        raise BadInput("snapshots of two clusters must not hash offsets, which differ between clusters")
    prefixes = prefixes or {"source": {}, "target": {}}
    src, tgt = source.partition_map(), target.partition_map()
    results = []
    for key in sorted(set(src) | set(tgt)):
        s, t = src.get(key), tgt.get(key)
        topic, partition = key
        if t is None:
            results.append(PartitionResult(topic, partition, ("missing on the target",), s, None))
            continue
        if s is None:
            results.append(PartitionResult(topic, partition, ("exists only on the target",), None, t))
            continue
        problems: list[str] = []
        notes: list[str] = []
        tail, tail_side = 0, None
        if s.compacted != t.compacted:
            problems.append(f"cleanup.policy differs: compact on the {'source' if s.compacted else 'target'} only")
        elif s.compacted:
            if s.digest.records != t.digest.records:
                problems.append(f"live keys: source {s.digest.records}, target {t.digest.records}")
            elif not s.digest.same_content(t.digest):
                problems.append(f"content differs (live keys {s.digest.records} on both sides)")
        else:
            ns, nt = s.digest.records, t.digest.records
            if ns == nt:
                if not s.digest.same_content(t.digest):
                    problems.append(f"content differs (records {ns} on both sides)")
            elif min(ns, nt) == 0:
                empty = "target" if nt == 0 else "source"
                problems.append(f"partition empty on the {empty} (records source {ns}, target {nt})")
            else:
                longer = "source" if ns > nt else "target"
                short = t if ns > nt else s
                prefix = prefixes.get(longer, {}).get(key)
                head_ok = prefix is not None and prefix.same_content(short.digest)
                if not head_ok:
                    problems.append(f"records: source {ns}, target {nt}" +
                                    ("" if prefix is None else f"; the {longer}'s first {min(ns, nt)} records differ "
                                                               f"from the {'target' if longer == 'source' else 'source'}'s"))
                elif longer == "source":
                    tail, tail_side = ns - nt, "source"
                    msg = f"target is {ns - nt} records behind the source (records source {ns}, target {nt}); the first {nt} match"
                    if fail_on_tail:
                        problems.append(msg + " (--fail-on-tail)")
                    else:
                        notes.append(msg)
                else:
                    tail, tail_side = nt - ns, "target"
                    problems.append(f"target has {nt - ns} records past the source's last one (records source {ns}, "
                                    f"target {nt}); the first {ns} match")
        results.append(PartitionResult(topic, partition, tuple(problems), s, t, tail, tail_side, tuple(notes)))
    return Report(CROSS, _side("source", source), _side("target", target), tuple(results), fail_on_tail)
