"""Partition-by-partition comparison of two snapshots, and the report. Pure: no I/O, no clock.

Two forms:

* **Same cluster** (``compare_same``): a snapshot taken before a migration and one taken after it
  against the first one's ends (``Snapshot.like``). Offsets are in every record's hash, so a
  record moved, shifted, dropped or added inside the compared range is a difference. Records
  produced since the first snapshot are the *tail*: reported, compared only with ``fail_on_tail``
  (for topics whose producers were stopped). An end that moved back (truncation) is a difference.
  A log start that moved up is judged chunk by chunk (:func:`judge_chunks`): chunks still wholly
  present compare exactly; records below the new log start are *expired as configured* when the
  topic's cleanup.policy includes ``delete`` and their chunk's newest record is older than
  ``now - retention.ms`` (or the partition is at its ``retention.bytes``), otherwise a difference
  naming the offsets; a chunk that straddles the new log start is reported unverifiable. A
  format 1 snapshot (no chunks, no timestamps) is one piece.
* **Two clusters** (``compare_cross``): offsets differ between clusters, so hashes cover key, value,
  headers and timestamp. When the two sides' records differ, each side is cut at the other's first
  and last record (``alignment_requests`` says where, the Spark job digests the pieces, an
  :class:`Alignment`): the records both hold compare exactly; older records one side lacks are
  expired on that side when its retention explains them, else a difference; a target behind its
  source (a mirror still catching up) has a tail on the source; a target with records past its
  source's end differs, and so does a partition empty on one side only (unless retention emptied it).

Compacted topics compare their tables (last record per key, tombstones left out), whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from migrate.errors import BadInput
from migrate.core.verify.snapshot import Chunk, Digest, PartitionSnapshot, Snapshot, TopicConfig

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
    verified: int = 0  # records compared and equal
    expired: int = 0  # records gone as the topic's retention says they may be
    expired_side: str | None = None
    unverifiable: int = 0  # records of a chunk straddling the new log start: neither compared nor judged
    differing: int = 0  # records in the pieces that differ
    duplicates: int = 0  # extra copies on the target of records the source holds (a mirror restarted): not a loss,
    # but a difference unless the compare allows them (an at-least-once copy)

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
    allow_duplicates: bool = False

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
                                            "differing_partitions": 0, "tail_records": 0, "verified_records": 0,
                                            "expired_records": 0, "unverifiable_records": 0,
                                            "differing_records": 0})
            row["partitions"] += 1
            for k in ("verified", "expired", "unverifiable", "differing"):
                row[f"{k}_records"] += getattr(p, k)
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
            "allow_duplicates": self.allow_duplicates,
            "left": side(self.left), "right": side(self.right), "notes": list(self.notes),
            "summary": {"topics": len(self.topics), "partitions": len(self.partitions),
                        "left_records": self.records("left"), "right_records": self.records("right"),
                        "differing_partitions": len(self.differing), "differing_topics": list(self.differing_topics),
                        "tail_records": sum(p.tail_records for p in self.partitions),
                        "duplicate_records": sum(p.duplicates for p in self.partitions),
                        **{f"{k}_records": sum(getattr(p, k) for p in self.partitions)
                           for k in ("verified", "expired", "unverifiable", "differing")}},
            "topics": self.topic_rows(),
            "partitions": [
                {"topic": p.topic, "partition": p.partition, "ok": p.ok, "problems": list(p.problems),
                 "notes": list(p.notes), "tail_records": p.tail_records, "tail_side": p.tail_side,
                 "verified_records": p.verified, "expired_records": p.expired, "expired_side": p.expired_side,
                 "unverifiable_records": p.unverifiable, "differing_records": p.differing,
                 "duplicate_records": p.duplicates,
                 self.left.label: figures(p.left), self.right.label: figures(p.right)}
                for p in self.partitions
            ],
        }


def _side(label: str, s: Snapshot) -> Side:
    return Side(label, s.cluster_id, s.bootstrap_servers, s.taken_at)


def _count_word(compacted: bool) -> str:
    return "live keys" if compacted else "records"


def _utc(ms: int) -> str:
    """Milliseconds since the epoch as ISO 8601 UTC (pure arithmetic: no clock, no time zone database).

    >>> _utc(0), _utc(1735689600000)
    ('1970-01-01T00:00:00Z', '2025-01-01T00:00:00Z')
    """
    days, rest = divmod(ms // 1000, 86400)
    # civil from days (Howard Hinnant's algorithm)
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    y = yoe + era * 400 + (m <= 2)
    return f"{y:04d}-{m:02d}-{d:02d}T{rest // 3600:02d}:{rest // 60 % 60:02d}:{rest % 60:02d}Z"


def expiry_reason(config: TopicConfig | None, max_timestamp: int | None, now_ms: int,
                  partition_bytes: int | None = None) -> str | None:
    """Why the topic's brokers may have deleted records whose newest timestamp is ``max_timestamp``; None when
    nothing in its configuration explains it.

    Time: cleanup.policy includes ``delete``, retention.ms is not -1 and the newest record is older than
    ``now_ms - retention.ms``. Size: cleanup.policy includes ``delete``, retention.bytes is not -1 and the
    partition holds at least that many bytes now (the broker deletes the oldest segments only while the
    rest is at least retention.bytes).

    >>> expiry_reason(TopicConfig("delete", 1000, -1), 500, 2000)
    'retention.ms 1000: newest record 1970-01-01T00:00:00Z, older than 1970-01-01T00:00:01Z'
    >>> expiry_reason(TopicConfig("compact", 1000, -1), 500, 2000) is None
    True
    """
    if config is None or not config.deletes:
        return None
    if max_timestamp is not None and config.retention_ms >= 0 and max_timestamp < now_ms - config.retention_ms:
        return (f"retention.ms {config.retention_ms}: newest record {_utc(max_timestamp)}, older than "
                f"{_utc(now_ms - config.retention_ms)}")
    if config.retention_bytes >= 0 and partition_bytes is not None and partition_bytes >= config.retention_bytes:
        return f"retention.bytes {config.retention_bytes}: the partition holds {partition_bytes} bytes"
    return None


@dataclass(frozen=True)
class Judgement:
    """What :func:`judge_chunks` found in one plain partition."""

    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    verified: int = 0
    expired: int = 0
    unverifiable: int = 0
    differing: int = 0


def _spans(ranges: list[tuple[int, int, int]]) -> str:
    """``[(start, end, records)]`` as ``"0..99, 200..249"`` (consecutive ranges merged)."""
    merged: list[list[int]] = []
    for start, end, _ in ranges:
        if merged and merged[-1][1] == start:
            merged[-1][1] = end
        else:
            merged.append([start, end])
    return ", ".join(f"{a}..{b - 1}" for a, b in merged)


def _chunk_map(p: PartitionSnapshot, base: int, size: int) -> dict[int, Chunk]:
    return {(c.start - base) // size: c for c in p.pieces()[2]}


def judge_chunks(before: PartitionSnapshot, after: PartitionSnapshot, config: TopicConfig | None, now_ms: int,
                 partition_bytes: int | None = None) -> Judgement:
    """Compare a plain partition chunk by chunk (on ``before``'s grid) and judge what is gone below the log start.

    ``config`` is the topic's configuration and ``partition_bytes`` its size at compare time; ``now_ms`` the
    compare time. Chunks at or above ``after.read_from`` compare exactly. A chunk wholly gone is expired
    when :func:`expiry_reason` explains it by its newest record, else a difference naming its offsets.
    The chunk straddling the new log start: its missing records are expired when the whole chunk is old
    enough, its present ones unverifiable (the snapshot digests the chunk whole); when the chunk is not
    old enough but the topic deletes by retention, all its records are unverifiable.
    """
    base, size, _ = before.pieces()
    if after.pieces()[:2] != (base, size):  # a format 1 side: both compare as one piece
        base, size = before.read_from, max(1, before.read_to - before.read_from, after.read_to - before.read_from)
        b_map, a_map = {}, {}
        if before.read_to > before.read_from:
            stamps = [c.max_timestamp for c in before.chunks or () if c.max_timestamp is not None]
            b_map = {0: Chunk(before.read_from, before.read_to, before.digest.records, before.digest.hash1,
                              before.digest.hash2, max(stamps) if stamps else None)}
        if after.read_to > after.read_from:
            a_map = {0: Chunk(after.read_from, after.read_to, after.digest.records, after.digest.hash1,
                              after.digest.hash2)}
    else:
        b_map, a_map = _chunk_map(before, base, size), _chunk_map(after, base, size)
    s1 = after.read_from
    problems, notes, reasons = [], [], {}
    verified = expired = unverifiable = differing = 0
    lost: list[tuple[int, int, int]] = []
    for i in sorted(set(b_map) | set(a_map)):
        b = b_map.get(i) or Chunk(a_map[i].start, a_map[i].end)
        a = a_map.get(i) or Chunk(max(b.start, s1), b.end)
        if b.start >= s1:
            if b.same_content(a):
                verified += b.records
                continue
            differing += max(b.records, a.records)
            what = (f"records before {b.records}, after {a.records}" if a.records != b.records
                    else f"content differs ({b.records} records)")
            problems.append(f"offsets {b.start}..{b.end - 1}: {what}")
            continue
        reason = expiry_reason(config, b.max_timestamp, now_ms, partition_bytes)
        missing = b.records - a.records
        if a.records == 0:  # wholly gone
            if reason:
                expired += b.records
                reasons[reason] = reasons.get(reason, 0) + b.records
            elif b.records:
                differing += b.records
                lost.append((b.start, b.end, b.records))
        elif missing < 0:
            differing += a.records
            problems.append(f"offsets {b.start}..{b.end - 1}: records before {b.records}, after {a.records} "
                            f"(above the new log start {s1})")
        elif reason:
            expired += missing
            reasons[reason] = reasons.get(reason, 0) + missing
            unverifiable += a.records
            notes.append(f"offsets {b.start}..{b.end - 1} straddle the new log start {s1}: {missing} records "
                         f"below it expired as configured, {a.records} above it not verifiable (the snapshot "
                         "digests the chunk whole)")
        elif config is not None and config.deletes and (config.retention_ms >= 0 or config.retention_bytes >= 0):
            unverifiable += b.records
            notes.append(f"offsets {b.start}..{b.end - 1} straddle the new log start {s1}: {b.records} records "
                         f"not verifiable ({missing} gone, {a.records} present; the chunk holds records newer "
                         "than the retention, so its expiry cannot be judged)")
        else:
            differing += b.records
            lost.append((b.start, s1, missing))
    if lost:
        why = ("the topic's retention is not known: the later snapshot is format 1" if config is None else
               "the topic does not delete by retention" if not config.deletes else
               "the topic has no retention: retention.ms and retention.bytes are -1"
               if config.retention_ms < 0 and config.retention_bytes < 0 else
               "not old enough for the topic's retention" if before.chunks is not None else
               "the snapshot is format 1, without the timestamps that tell retention from loss")
        problems.insert(0, f"log start moved from {before.read_from} to {s1}: offsets {_spans(lost)} "
                           f"({sum(n for _, _, n in lost)} records) are gone and not expired as configured "
                           f"({why}: delete-records, or a shorter log)")
    for reason, n in reasons.items():
        notes.insert(0, f"{n} records below the new log start {s1} expired as configured ({reason})")
    if s1 <= before.read_from and not problems and not before.digest.same_content(after.digest) \
            and after.read_to == before.read_to:
        problems.append(f"content differs ({before.digest.records} records before, {after.digest.records} after)")
    return Judgement(tuple(problems), tuple(notes), verified, expired, unverifiable, differing)


def compare_same(before: Snapshot, after: Snapshot, fail_on_tail: bool = False, now_ms: int | None = None,
                 partition_bytes: dict[tuple[str, int], int] | None = None) -> Report:
    """Compare a snapshot with one taken later on the same cluster against its ends.

    ``now_ms`` is the compare time (default: ``after.taken_at``), ``after.topic_configs`` the topics'
    configuration then, and ``partition_bytes`` each partition's size then (for retention.bytes).
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
    now_ms = taken_at_ms(after.taken_at) if now_ms is None else now_ms
    now = after.partition_map()
    results = []
    for b in sorted(before.partitions, key=lambda p: p.key):
        a = now.get(b.key)
        if a is None:
            results.append(PartitionResult(b.topic, b.partition, ("partition missing after (topic deleted or partition gone)",),
                                           b, None, differing=b.digest.records))
            continue
        if a.read_to > b.read_to:
            raise BadInput(
                f"the second snapshot read {b.topic}-{b.partition} up to offset {a.read_to}, past the first one's "
                f"end {b.read_to}: take it with `kmigrate verify snapshot --like <first snapshot>`"
            )
        results.append(_same_partition(b, a, after.topic_configs.get(b.topic), now_ms,
                                       (partition_bytes or {}).get(b.key), fail_on_tail))
    return Report(SAME, _side("before", before), _side("after", after), tuple(results), fail_on_tail)


def taken_at_ms(taken_at: str) -> int:
    """A snapshot's ``taken_at`` (ISO 8601, as kmigrate writes it) in ms since the epoch; BadInput otherwise.

    >>> taken_at_ms("2025-01-01T00:00:00+00:00"), taken_at_ms("2025-01-01T00:00:01Z")
    (1735689600000, 1735689601000)
    """
    import re

    m = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.\d+)?(Z|[+-]\d\d:\d\d)", taken_at)
    if not m:
        raise BadInput(f"the snapshot's taken_at {taken_at!r} is not an ISO 8601 time: take the snapshot again")
    y, mo, d, h, mi, sec = (int(x) for x in m.groups()[:6])
    y -= mo <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (mo + (-3 if mo > 2 else 9)) + 2) // 5 + d - 1
    days = era * 146097 + (yoe * 365 + yoe // 4 - yoe // 100 + doy) - 719468
    zone = m.group(7)
    offset = 0 if zone == "Z" else (1 if zone[0] == "+" else -1) * (int(zone[1:3]) * 60 + int(zone[4:6])) * 60
    return ((days * 86400) + h * 3600 + mi * 60 + sec - offset) * 1000


def _same_partition(b: PartitionSnapshot, a: PartitionSnapshot, config: TopicConfig | None, now_ms: int,
                    partition_bytes: int | None, fail_on_tail: bool) -> PartitionResult:
    problems: list[str] = []
    notes: list[str] = []
    word = _count_word(b.compacted)
    judged = Judgement()
    if a.read_from < b.read_from:
        problems.append(f"log start went back from {b.read_from} to {a.read_from} (topic re-created?)")
    if a.end_offset < b.read_to:
        problems.append(f"end offset went back from {b.read_to} to {a.end_offset}: "
                        f"{b.read_to - a.end_offset} offsets at the end are gone")
    if b.compacted:
        if a.read_from > b.read_from:
            problems.append(f"log start moved from {b.read_from} to {a.read_from}: offsets below {a.read_from} were "
                            "deleted (delete-records or retention)")
        if a.digest.records != b.digest.records:
            problems.append(f"{word}: before {b.digest.records}, after {a.digest.records}")
        elif not a.digest.same_content(b.digest):
            problems.append(f"content differs ({word} {a.digest.records} on both sides)")
        if a.digest.raw_records != b.digest.raw_records and not problems:
            notes.append(f"records read {b.digest.raw_records} -> {a.digest.raw_records}: compaction ran, tables equal")
        judged = Judgement(verified=0 if problems else b.digest.records, differing=b.digest.records if problems else 0)
    elif a.read_from >= b.read_from:
        judged = judge_chunks(b, a, config, now_ms, partition_bytes)
        problems += judged.problems
        notes += judged.notes
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
    differing = judged.differing if not problems or judged.differing else b.digest.records
    return PartitionResult(b.topic, b.partition, tuple(problems), b, a, a.tail.records,
                           "after" if a.tail.records else None, tuple(notes), judged.verified, judged.expired,
                           "after" if judged.expired else None, judged.unverifiable, differing)


@dataclass(frozen=True)
class Alignment:
    """One side of a two-cluster partition cut at the other side's first and last record (found by hash):
    the records before the first (older records the other side lacks), those in between (the records both
    hold, digested) and those after the last (newer records the other side lacks)."""

    before: int = 0
    before_max_timestamp: int | None = None  # newest of the records before
    common: Digest = field(default_factory=Digest)
    after: int = 0
    distinct: Digest | None = None  # the records in between with each content once (None: not digested)


def alignment_requests(source: Snapshot, target: Snapshot) -> dict[str, dict[tuple[str, int], tuple]]:
    """Which partitions to cut at the other side's ends, and at which: ``{"source": {(topic, partition):
    (target's first hash1, target's last hash1)}, "target": {...}}``.

    Plain partitions whose records differ in count or content and are present on both sides; compacted
    topics compare whole, and an empty side has nothing in common.
    """
    out: dict[str, dict[tuple[str, int], tuple]] = {"source": {}, "target": {}}
    tgt = target.partition_map()
    for s in source.partitions:
        t = tgt.get(s.key)
        if t is None or s.compacted or t.compacted or min(s.digest.records, t.digest.records) == 0:
            continue
        if s.digest.same_content(t.digest):
            continue
        out["source"][s.key] = t.edges
        out["target"][s.key] = s.edges
    return out


def _newest(p: PartitionSnapshot) -> int | None:
    stamps = [c.max_timestamp for c in p.chunks or () if c.max_timestamp is not None]
    return max(stamps) if stamps else None


@dataclass(frozen=True)
class _Sides:
    """What the cross compare knows of each side beyond its snapshot: topic configs, sizes, the time."""

    source: Snapshot
    target: Snapshot
    now_ms: int
    partition_bytes: dict[str, dict[tuple[str, int], int]]

    def reason(self, lacking: str, key: tuple[str, int], max_timestamp: int | None) -> str | None:
        snap = self.source if lacking == "source" else self.target
        return expiry_reason(snap.topic_configs.get(key[0]), max_timestamp, self.now_ms,
                             self.partition_bytes.get(lacking, {}).get(key))


def _cross_plain(s: PartitionSnapshot, t: PartitionSnapshot, aligned: tuple[Alignment | None, Alignment | None],
                 sides: _Sides, fail_on_tail: bool, allow_duplicates: bool = False) -> PartitionResult:
    key, ns, nt = s.key, s.digest.records, t.digest.records
    problems: list[str] = []
    notes: list[str] = []
    if ns == nt and s.digest.same_content(t.digest):
        return PartitionResult(s.topic, s.partition, (), s, t, verified=ns)
    if min(ns, nt) == 0:
        holder, lacking = ("source", "target") if nt == 0 else ("target", "source")
        reason = sides.reason(lacking, key, _newest(s if holder == "source" else t))
        if reason:
            return PartitionResult(s.topic, s.partition, (), s, t, expired=max(ns, nt), expired_side=lacking,
                                   notes=(f"{max(ns, nt)} records on the {holder} only: expired as configured on the "
                                          f"{lacking} ({reason})",))
        return PartitionResult(s.topic, s.partition, (f"partition empty on the {lacking} (records source {ns}, "
                                                      f"target {nt})",), s, t, differing=max(ns, nt))
    sa, ta = aligned
    duplicates = _duplicates(sa, ta)
    if duplicates and allow_duplicates:
        notes.append(f"{duplicates} records copied more than once on the target (every record of the source is "
                     "there: duplicates, not a loss; allowed)")
    elif duplicates:
        problems.append(f"the target holds {duplicates} records more than once (every record of the source is there, "
                        "but a consumer would process these twice; --allow-duplicates accepts them for an "
                        "at-least-once copy)")
    if sa is None or ta is None or not (duplicates or sa.common.same_content(ta.common)) or not sa.common.records:
        both = "" if sa is None or ta is None else "; the records both hold differ"
        what = f"records: source {ns}, target {nt}" if ns != nt else f"content differs (records {ns} on both sides)"
        return PartitionResult(s.topic, s.partition, (what + both,), s, t, differing=max(ns, nt))
    expired, expired_side, tail, tail_side = 0, None, 0, None
    for holder, lacking, align in (("source", "target", sa), ("target", "source", ta)):
        if not align.before:
            continue
        reason = sides.reason(lacking, key, align.before_max_timestamp)
        if reason:
            expired, expired_side = align.before, lacking
            notes.append(f"{align.before} older records on the {holder} only: expired as configured on the "
                         f"{lacking} ({reason})")
        else:
            problems.append(f"the {holder} holds {align.before} older records the {lacking} lacks, not expired as "
                            f"configured on the {lacking}")
    if sa.after:
        tail, tail_side = sa.after, "source"
        msg = (f"target is {sa.after} records behind the source (records source {ns}, target {nt}); "
               f"the {sa.common.records} both hold match")
        (problems if fail_on_tail else notes).append(msg + (" (--fail-on-tail)" if fail_on_tail else ""))
    if ta.after:
        tail, tail_side = ta.after, "target"
        problems.append(f"target has {ta.after} records past the source's last one (records source {ns}, target {nt}); "
                        f"the {ta.common.records} both hold match")
    differing = (sum(a.before for a in (sa, ta)) - expired + ta.after
                 + (0 if allow_duplicates else duplicates)) if problems else 0
    return PartitionResult(s.topic, s.partition, tuple(problems), s, t, tail, tail_side, tuple(notes),
                           sa.common.records, expired, expired_side, 0, differing, duplicates)


def _duplicates(sa: Alignment | None, ta: Alignment | None) -> int:
    """Extra records on the target between the common first and last records, when with each content
    counted once both sides hold the same records (a mirror that copied a stretch again). Records of
    identical content are told apart by their count only."""
    if sa is None or ta is None or sa.distinct is None or ta.distinct is None or sa.common.same_content(ta.common):
        return 0
    if not sa.distinct.same_content(ta.distinct):
        return 0
    extra = (ta.common.records - ta.distinct.records) - (sa.common.records - sa.distinct.records)
    return max(0, extra) if ta.common.records > sa.common.records else 0


def compare_cross(source: Snapshot, target: Snapshot,
                  alignments: dict[str, dict[tuple[str, int], Alignment]] | None = None,
                  fail_on_tail: bool = False, now_ms: int | None = None,
                  partition_bytes: dict[str, dict[tuple[str, int], int]] | None = None,
                  allow_duplicates: bool = False) -> Report:
    """Compare two clusters' snapshots (taken without offsets in the hashes), partition by partition.

    Plain partitions that differ are judged on their :class:`Alignment` s (``alignments[side][key]``,
    from :func:`alignment_requests`): the records both hold compare exactly; older records one side
    lacks are expired on that side when its topic config explains them (:func:`expiry_reason`, with
    ``now_ms``, default the target's ``taken_at``), else a difference; newer records the target lacks
    are a tail on the source (a mirror catching up); records past the source's last one differ.
    Records the target holds more than once (every source record present) differ too, unless
    ``allow_duplicates`` (an at-least-once copy, MirrorMaker 1): then they are counted, not a difference.
    """
    if source.include_offsets or target.include_offsets:
        raise BadInput("snapshots of two clusters must not hash offsets, which differ between clusters")
    alignments = alignments or {"source": {}, "target": {}}
    sides = _Sides(source, target, taken_at_ms(target.taken_at) if now_ms is None else now_ms,
                   partition_bytes or {})
    src, tgt = source.partition_map(), target.partition_map()
    results = []
    for key in sorted(set(src) | set(tgt)):
        s, t = src.get(key), tgt.get(key)
        topic, partition = key
        if t is None:
            results.append(PartitionResult(topic, partition, ("missing on the target",), s, None,
                                           differing=s.digest.records))
            continue
        if s is None:
            results.append(PartitionResult(topic, partition, ("exists only on the target",), None, t,
                                           differing=t.digest.records))
            continue
        if s.compacted != t.compacted:
            results.append(PartitionResult(topic, partition, (
                f"cleanup.policy differs: compact on the {'source' if s.compacted else 'target'} only",), s, t,
                differing=max(s.digest.records, t.digest.records)))
        elif s.compacted:
            problem = (f"live keys: source {s.digest.records}, target {t.digest.records}"
                       if s.digest.records != t.digest.records else
                       None if s.digest.same_content(t.digest) else
                       f"content differs (live keys {s.digest.records} on both sides)")
            results.append(PartitionResult(topic, partition, (problem,) if problem else (), s, t,
                                           verified=0 if problem else s.digest.records,
                                           differing=s.digest.records if problem else 0))
        else:
            results.append(_cross_plain(s, t, (alignments.get("source", {}).get(key),
                                               alignments.get("target", {}).get(key)), sides, fail_on_tail,
                                        allow_duplicates))
    return Report(CROSS, _side("source", source), _side("target", target), tuple(results), fail_on_tail,
                  allow_duplicates=allow_duplicates)
