"""What verify records of a cluster's partitions, and the JSON file it is kept in. Pure: no I/O, no clock.

A ``Snapshot`` holds, for every partition it covers, the offsets that bound what was read and a
``Digest`` of the records read: their count and two independent 64-bit hash sums (exact integers,
so they cannot overflow; a sum counts a duplicate twice and does not depend on order, unlike XOR).

Per partition, records are read from ``read_from`` up to ``read_to`` (exclusive): the digest covers
that range. Records between ``read_to`` and ``end_offset`` (the end captured when the snapshot was
taken) are the *tail*: counted, not hashed. A fresh snapshot has ``read_to == end_offset``; one taken
against an earlier snapshot (``like``) reads up to that snapshot's ends, so both cover the same
offsets and whatever was produced since is the tail. :func:`plan_ranges` decides those ranges
(``ReadRange``) from the offsets captured now and the earlier snapshot, if any.

A compacted topic's digest is its table: for every key, the last record with that key in the range,
tombstones left out. Compaction never changes that, so a cleaner run between two reads is no
difference; ``Digest.records`` then counts live keys and ``raw_records`` the records read.

Format 2 adds, per plain (not compacted) partition, digests of consecutive offset ranges (*chunks*):
a grid of ``chunk_size`` offsets from ``chunk_base`` (a fresh snapshot: from offset 0, one size for all
its partitions, that of the longest, so at most :data:`MAX_CHUNKS` + 1 per partition), each
chunk with its record count, hash sums and its records' newest timestamp, so that a compare after
retention removed the oldest records can check every chunk still present exactly and judge the
missing ones against the topic's retention (``migrate.core.verify.compare``). A snapshot taken against an
earlier one uses that one's grid. It also records each topic's cleanup.policy, retention.ms and
retention.bytes when it was taken (``topic_configs``). Format 1 files (no chunks) still read: their
partitions are checked as one piece.

The file (format 1; format 2 adds ``topic_configs`` and, per plain partition, ``chunk_base``,
``chunk_size`` and ``chunks``: ``[[start, end, records, "hash1", "hash2", max_timestamp_ms], ...]``)::

    {"format": "kmigrate-verify-snapshot", "format_version": 1, "cluster_id": "...",
     "bootstrap_servers": "...", "taken_at": "2025-01-01T00:00:00Z", "include_offsets": true,
     "isolation_level": "read_committed", "hash": "xxhash64x2-sum", "like": null,
     "partitions": [{"topic": "t", "partition": 0, "compacted": false, "log_start_offset": 0,
                     "end_offset": 10, "read_from": 0, "read_to": 10,
                     "digest": {"records": 10, "raw_records": 10, "hash1": "-123", "hash2": "456",
                                "first_offset": 0, "last_offset": 9},
                     "tail": {"records": 0, "first_offset": null, "last_offset": null}}]}
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from migrate.core.documents import Wording, parse_document
from migrate.errors import BadInput

FORMAT = "kmigrate-verify-snapshot"
FORMAT_VERSION = 2
READ_VERSIONS = (1, 2)  # format 1: written by the release before chunks; its partitions compare as one piece
MAX_CHUNKS = 256  # chunks per partition: 12 partitions of 2,000,000 records keep the file well under 1 MB
HASH = "xxhash64x2-sum"  # two seeded xxhash64 per record, each summed exactly per partition
ISOLATION_LEVELS = ("read_committed", "read_uncommitted")


@dataclass(frozen=True)
class Digest:
    """Count and order-independent hash sums of a set of records (or of a compacted topic's table)."""

    records: int = 0
    hash1: int = 0
    hash2: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    raw_records: int = 0  # records read; equals ``records`` except for compacted topics

    def same_content(self, other: "Digest") -> bool:
        return (self.records, self.hash1, self.hash2) == (other.records, other.hash1, other.hash2)

    def to_dict(self) -> dict:
        return {"records": self.records, "raw_records": self.raw_records, "hash1": str(self.hash1),
                "hash2": str(self.hash2), "first_offset": self.first_offset, "last_offset": self.last_offset}

    @staticmethod
    def from_dict(d: dict) -> "Digest":
        return Digest(int(d["records"]), int(d["hash1"]), int(d["hash2"]), d["first_offset"], d["last_offset"],
                      int(d["raw_records"]))


@dataclass(frozen=True)
class Chunk:
    """The records of offsets ``[start, end)`` of a partition: count, hash sums, newest timestamp (ms)."""

    start: int
    end: int
    records: int = 0
    hash1: int = 0
    hash2: int = 0
    max_timestamp: int | None = None  # None: no record, or not known (a format 1 partition as one piece)

    def same_content(self, other: "Chunk") -> bool:
        return (self.records, self.hash1, self.hash2) == (other.records, other.hash1, other.hash2)

    def to_list(self) -> list:
        return [self.start, self.end, self.records, str(self.hash1), str(self.hash2), self.max_timestamp]

    @staticmethod
    def from_list(v: list) -> "Chunk":
        return Chunk(int(v[0]), int(v[1]), int(v[2]), int(v[3]), int(v[4]), None if v[5] is None else int(v[5]))


def chunk_size(read_from: int, read_to: int) -> int:
    """Offsets per chunk of a fresh snapshot of ``[read_from, read_to)``: at most :data:`MAX_CHUNKS` chunks.

    >>> chunk_size(0, 256), chunk_size(0, 257), chunk_size(5, 5)
    (1, 2, 1)
    """
    return max(1, -(-(read_to - read_from) // MAX_CHUNKS))


def chunk_grid(base: int, size: int, read_from: int, read_to: int) -> list[tuple[int, int]]:
    """The chunks' offset ranges of ``[read_from, read_to)`` on the grid of ``size`` offsets from ``base``.

    >>> chunk_grid(0, 4, 6, 13)
    [(6, 8), (8, 12), (12, 13)]
    """
    out = []
    start = read_from
    while start < read_to:
        end = min(read_to, base + ((start - base) // size + 1) * size)
        out.append((start, end))
        start = end
    return out


@dataclass(frozen=True)
class TopicConfig:
    """The settings that decide what a topic's brokers delete: cleanup.policy, retention.ms, retention.bytes."""

    cleanup_policy: str = "delete"
    retention_ms: int = 604800000
    retention_bytes: int = -1

    @property
    def deletes(self) -> bool:
        return "delete" in [p.strip() for p in self.cleanup_policy.split(",")]

    def to_dict(self) -> dict:
        return {"cleanup.policy": self.cleanup_policy, "retention.ms": self.retention_ms,
                "retention.bytes": self.retention_bytes}

    @staticmethod
    def from_dict(d: dict) -> "TopicConfig":
        return TopicConfig(str(d["cleanup.policy"]), int(d["retention.ms"]), int(d["retention.bytes"]))


@dataclass(frozen=True)
class Tail:
    """Records past the compared range (produced after the reference snapshot's ends)."""

    records: int = 0
    first_offset: int | None = None
    last_offset: int | None = None

    def to_dict(self) -> dict:
        return {"records": self.records, "first_offset": self.first_offset, "last_offset": self.last_offset}

    @staticmethod
    def from_dict(d: dict) -> "Tail":
        return Tail(int(d["records"]), d["first_offset"], d["last_offset"])


@dataclass(frozen=True)
class PartitionSnapshot:
    """One partition: the offsets captured and read, and the digest of what was read.

    Invariant: ``log_start_offset <= read_from <= read_to <= end_offset`` except when records were
    deleted below ``read_from`` of the reference (then ``read_from`` is the new log start).
    """

    topic: str
    partition: int
    compacted: bool
    log_start_offset: int
    end_offset: int  # high watermark (last stable offset for read_committed) when the snapshot began
    read_from: int
    read_to: int
    digest: Digest = field(default_factory=Digest)
    tail: Tail = field(default_factory=Tail)
    chunk_base: int | None = None  # format 2, plain partitions: the grid of the chunks
    chunk_size: int | None = None
    chunks: tuple[Chunk, ...] | None = None
    # Across clusters only, never written: the first and the last record's hash1 (None: no record)
    edges: tuple[int | None, int | None] = field(default=(None, None), compare=False)

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    def pieces(self) -> tuple[int, int, tuple[Chunk, ...]]:
        """``(grid base, grid size, chunks)``: a partition without chunks (format 1) is one piece."""
        if self.chunk_size is not None and self.chunks is not None:
            return self.chunk_base or 0, self.chunk_size, self.chunks
        whole = Chunk(self.read_from, self.read_to, self.digest.records, self.digest.hash1, self.digest.hash2, None)
        return self.read_from, max(1, self.read_to - self.read_from), (whole,) if self.read_to > self.read_from else ()

    @property
    def offsets_read(self) -> int:
        return self.read_to - self.read_from

    def to_dict(self) -> dict:
        out = {"topic": self.topic, "partition": self.partition, "compacted": self.compacted,
               "log_start_offset": self.log_start_offset, "end_offset": self.end_offset,
               "read_from": self.read_from, "read_to": self.read_to,
               "digest": self.digest.to_dict(), "tail": self.tail.to_dict()}
        if self.chunk_size is not None and self.chunks is not None:
            out.update(chunk_base=self.chunk_base, chunk_size=self.chunk_size, chunks=[c.to_list() for c in self.chunks])
        return out

    @staticmethod
    def from_dict(d: dict) -> "PartitionSnapshot":
        chunked = d.get("chunk_size") is not None
        return PartitionSnapshot(d["topic"], int(d["partition"]), bool(d["compacted"]), int(d["log_start_offset"]),
                                 int(d["end_offset"]), int(d["read_from"]), int(d["read_to"]),
                                 Digest.from_dict(d["digest"]), Tail.from_dict(d["tail"]),
                                 int(d["chunk_base"]) if chunked else None, int(d["chunk_size"]) if chunked else None,
                                 tuple(Chunk.from_list(c) for c in d["chunks"]) if chunked else None)


@dataclass(frozen=True)
class Snapshot:
    """Digests of a set of partitions of one cluster, taken at one time."""

    cluster_id: str
    bootstrap_servers: str
    taken_at: str
    include_offsets: bool  # the offset of each record is in its hash (same-cluster compares)
    isolation_level: str
    partitions: tuple[PartitionSnapshot, ...]
    like: str | None = None  # taken_at of the snapshot whose ends bounded this one's reads
    format_version: int = FORMAT_VERSION
    topic_configs: dict[str, TopicConfig] = field(default_factory=dict)  # when it was taken (format 2)

    def partition_map(self) -> dict[tuple[str, int], PartitionSnapshot]:
        return {p.key: p for p in self.partitions}

    @property
    def topics(self) -> tuple[str, ...]:
        return tuple(sorted({p.topic for p in self.partitions}))

    @property
    def records(self) -> int:
        return sum(p.digest.records for p in self.partitions)

    def to_dict(self) -> dict:
        out = {"format": FORMAT, "format_version": self.format_version, "cluster_id": self.cluster_id,
               "bootstrap_servers": self.bootstrap_servers, "taken_at": self.taken_at,
               "include_offsets": self.include_offsets, "isolation_level": self.isolation_level,
               "hash": HASH, "like": self.like,
               "partitions": [p.to_dict() for p in sorted(self.partitions, key=lambda p: p.key)]}
        if self.format_version >= 2:
            out["topic_configs"] = {t: c.to_dict() for t, c in sorted(self.topic_configs.items())}
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=True) + "\n"


@dataclass(frozen=True)
class ReadRange:
    """Read ``[read_from, end)`` of one partition; digest ``[read_from, read_to)``, count the rest (the tail)."""

    topic: str
    partition: int
    read_from: int
    read_to: int
    end: int
    compacted: bool = False
    chunk_base: int = 0  # the chunks' grid (plain partitions): chunk_size offsets from chunk_base
    chunk_size: int = 1


def plan_ranges(partitions: list[tuple[str, int]], offsets: dict[tuple[str, int], tuple[int, int]],
                compacted: set[str], like: Snapshot | None = None) -> list[ReadRange]:
    """What to read of each partition.

    Fresh: ``[log start, end)``. Against an earlier snapshot: from that snapshot's ``read_from`` (or
    the log start now, when records were deleted below it) up to its ``read_to``, and on to the end
    captured now as the tail. The compacted flag and the chunks' grid are the earlier snapshot's, so
    both digest alike (a format 1 snapshot's partition is one chunk).
    """
    ref = like.partition_map() if like else {}
    # one grid for every fresh partition (offsets 0, size, 2 x size, ...): the job then finds a record's
    # chunk from its offset alone, with no per-partition table to join
    size = max([chunk_size(*offsets[tp]) for tp in partitions if tp not in ref] + [1])
    out = []
    for tp in partitions:
        log_start, end = offsets[tp]
        r = ref.get(tp)
        if r is None:
            out.append(ReadRange(tp[0], tp[1], log_start, end, end, tp[0] in compacted, 0, size))
            continue
        read_from = max(r.read_from, log_start)
        read_to = max(read_from, min(r.read_to, end))
        base, size, _ = r.pieces()
        out.append(ReadRange(tp[0], tp[1], read_from, read_to, max(end, read_to), r.compacted, base, size))
    return out


_INT = {"type": "integer"}
_OPT_INT = {"type": ["integer", "null"]}
_BIG = {"type": "string", "pattern": r"^-?\d+$"}
SCHEMA = {
    "type": "object",
    "required": ["format", "format_version", "cluster_id", "bootstrap_servers", "taken_at", "include_offsets",
                 "isolation_level", "hash", "partitions"],
    "properties": {
        "format": {"const": FORMAT},
        "format_version": _INT,
        "cluster_id": {"type": "string"},
        "bootstrap_servers": {"type": "string"},
        "taken_at": {"type": "string"},
        "include_offsets": {"type": "boolean"},
        "isolation_level": {"enum": list(ISOLATION_LEVELS)},
        "hash": {"const": HASH},
        "like": {"type": ["string", "null"]},
        "topic_configs": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["cleanup.policy", "retention.ms", "retention.bytes"],
            "properties": {"cleanup.policy": {"type": "string"}, "retention.ms": _INT, "retention.bytes": _INT}}},
        "partitions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["topic", "partition", "compacted", "log_start_offset", "end_offset", "read_from",
                             "read_to", "digest", "tail"],
                "properties": {
                    "chunk_base": _INT, "chunk_size": {"type": "integer", "minimum": 1},
                    "chunks": {"type": "array", "items": {
                        "type": "array", "minItems": 6, "maxItems": 6,
                        "prefixItems": [_INT, _INT, _INT, _BIG, _BIG, _OPT_INT]}},
                    "topic": {"type": "string", "minLength": 1},
                    "partition": {"type": "integer", "minimum": 0},
                    "compacted": {"type": "boolean"},
                    "log_start_offset": _INT, "end_offset": _INT, "read_from": _INT, "read_to": _INT,
                    "digest": {"type": "object",
                               "required": ["records", "raw_records", "hash1", "hash2", "first_offset", "last_offset"],
                               "properties": {"records": _INT, "raw_records": _INT, "hash1": _BIG, "hash2": _BIG,
                                              "first_offset": _OPT_INT, "last_offset": _OPT_INT}},
                    "tail": {"type": "object", "required": ["records", "first_offset", "last_offset"],
                             "properties": {"records": _INT, "first_offset": _OPT_INT, "last_offset": _OPT_INT}},
                },
            },
        },
    },
}


_WORDING = Wording(
    not_json="{source} is not JSON ({exc}): give a file written by `kmigrate verify snapshot -o`",
    not_ours="{source} is not a kmigrate verify snapshot: give a file written by `kmigrate verify snapshot -o`",
    other_version="{source} has snapshot format_version {found!r}; this kmigrate reads version {version}: "
                  "take the snapshot again with this kmigrate")


def snapshot_from_json(text: str, source: str = "snapshot") -> Snapshot:
    """Parse and validate a snapshot file's text; BadInput (one line) when it is not one of ours."""
    import jsonschema

    data = parse_document(text, source, ("format", FORMAT), READ_VERSIONS, _WORDING)
    try:
        jsonschema.validate(data, SCHEMA)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "top level"
        raise BadInput(f"{source} is a damaged kmigrate verify snapshot ({where}: {exc.message})") from None
    seen: set[tuple[str, int]] = set()
    parts = []
    for d in data["partitions"]:
        p = PartitionSnapshot.from_dict(d)
        if p.key in seen:
            raise BadInput(f"{source} is a damaged kmigrate verify snapshot: partition {p.topic}-{p.partition} appears twice")
        if p.chunks is not None and [(c.start, c.end) for c in p.chunks] != chunk_grid(
                p.chunk_base or 0, p.chunk_size or 1, p.read_from, p.read_to):
            raise BadInput(f"{source} is a damaged kmigrate verify snapshot: the chunks of {p.topic}-{p.partition} "
                           f"do not cover offsets {p.read_from}..{p.read_to} on their grid")
        seen.add(p.key)
        parts.append(p)
    configs = {t: TopicConfig.from_dict(c) for t, c in data.get("topic_configs", {}).items()}
    return Snapshot(data["cluster_id"], data["bootstrap_servers"], data["taken_at"], data["include_offsets"],
                    data["isolation_level"], tuple(parts), data.get("like"), data["format_version"], configs)


def select_topics(available: list[str] | tuple[str, ...], topics: tuple[str, ...] = (), include: str | None = None,
                  ) -> list[str]:
    """The topics to verify: those named (each must exist), those matching ``include``, else all non-internal.

    Internal topics (``__consumer_offsets``, ``__transaction_state``, any name starting ``__``) are
    left out unless named. BadInput for a named topic that does not exist or a regex that is not one.

    >>> select_topics(["a", "b", "__consumer_offsets"])
    ['a', 'b']
    """
    have = set(available)
    missing = [t for t in topics if t not in have]
    if missing:
        raise BadInput(f"topic {missing[0]!r} does not exist on the cluster: check --topic (kafka-topics --list shows the topics)")
    chosen = set(topics)
    if include is not None:
        try:
            rx = re.compile(include)
        except re.error as exc:
            raise BadInput(f"--include {include!r} is not a regular expression ({exc})") from None
        matched = {t for t in have if rx.fullmatch(t) and not t.startswith("__")}
        if not matched and not topics:
            raise BadInput(f"--include {include!r} matches no topic on the cluster")
        chosen |= matched
    if not topics and include is None:
        chosen = {t for t in have if not t.startswith("__")}
    return sorted(chosen)
