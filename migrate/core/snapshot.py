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

The file::

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
FORMAT_VERSION = 1
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

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    @property
    def offsets_read(self) -> int:
        return self.read_to - self.read_from

    def to_dict(self) -> dict:
        return {"topic": self.topic, "partition": self.partition, "compacted": self.compacted,
                "log_start_offset": self.log_start_offset, "end_offset": self.end_offset,
                "read_from": self.read_from, "read_to": self.read_to,
                "digest": self.digest.to_dict(), "tail": self.tail.to_dict()}

    @staticmethod
    def from_dict(d: dict) -> "PartitionSnapshot":
        return PartitionSnapshot(d["topic"], int(d["partition"]), bool(d["compacted"]), int(d["log_start_offset"]),
                                 int(d["end_offset"]), int(d["read_from"]), int(d["read_to"]),
                                 Digest.from_dict(d["digest"]), Tail.from_dict(d["tail"]))


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

    def partition_map(self) -> dict[tuple[str, int], PartitionSnapshot]:
        return {p.key: p for p in self.partitions}

    @property
    def topics(self) -> tuple[str, ...]:
        return tuple(sorted({p.topic for p in self.partitions}))

    @property
    def records(self) -> int:
        return sum(p.digest.records for p in self.partitions)

    def to_dict(self) -> dict:
        return {"format": FORMAT, "format_version": self.format_version, "cluster_id": self.cluster_id,
                "bootstrap_servers": self.bootstrap_servers, "taken_at": self.taken_at,
                "include_offsets": self.include_offsets, "isolation_level": self.isolation_level,
                "hash": HASH, "like": self.like,
                "partitions": [p.to_dict() for p in sorted(self.partitions, key=lambda p: p.key)]}

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


def plan_ranges(partitions: list[tuple[str, int]], offsets: dict[tuple[str, int], tuple[int, int]],
                compacted: set[str], like: Snapshot | None = None) -> list[ReadRange]:
    """What to read of each partition.

    Fresh: ``[log start, end)``. Against an earlier snapshot: from that snapshot's ``read_from`` (or
    the log start now, when records were deleted below it) up to its ``read_to``, and on to the end
    captured now as the tail. The compacted flag is the earlier snapshot's, so both digest alike.
    """
    ref = like.partition_map() if like else {}
    out = []
    for tp in partitions:
        log_start, end = offsets[tp]
        r = ref.get(tp)
        if r is None:
            out.append(ReadRange(tp[0], tp[1], log_start, end, end, tp[0] in compacted))
            continue
        read_from = max(r.read_from, log_start)
        read_to = max(read_from, min(r.read_to, end))
        out.append(ReadRange(tp[0], tp[1], read_from, read_to, max(end, read_to), r.compacted))
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
        "partitions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["topic", "partition", "compacted", "log_start_offset", "end_offset", "read_from",
                             "read_to", "digest", "tail"],
                "properties": {
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

    data = parse_document(text, source, ("format", FORMAT), FORMAT_VERSION, _WORDING)
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
        seen.add(p.key)
        parts.append(p)
    return Snapshot(data["cluster_id"], data["bootstrap_servers"], data["taken_at"], data["include_offsets"],
                    data["isolation_level"], tuple(parts), data.get("like"), data["format_version"])


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
