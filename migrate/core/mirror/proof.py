"""What ``kmigrate mirror verify`` proved while MirrorMaker copied, and what is left to verify at the switch. Pure.

A **proof** of one plain (not compacted) partition says: the committed records of the source's offsets
``[source_from, source_to)`` are, one by one and in order, those of the target's ``[target_from,
target_to)`` (offsets differ: an exactly-once MirrorMaker 2 leaves transaction markers on the target), with
their count and digest (the verify hashes, :mod:`migrate.core.verify.records`) and the last proven record
on each side (its offsets and hash1: the *anchor*). Records are compared by their sequence number in the
partition: the n-th committed record of the source against the n-th of the target.

Without a proof, the first records compared are the source's first and its copy on the target: records the
target holds before it are older than the source's log start (retention deleted them there) and are said, not
compared. A pass (:func:`starts`, then :func:`extend`) reads the target from the anchor to its end, then as many
records of the source from its anchor; the first record on each side must be the anchor (else the proof no
longer holds: the topic was recreated, or retention deleted the anchor) and the proof grows by the records
equal on both sides, up to the first that differs (named). So nothing proven is read again, save the anchor.

At the cut-over (``tail=True``) both sides are read to their ends: the records after the anchor, the tail,
must be equal in number and one by one. A compacted partition has no proof: its table is compared whole.

The bookkeeping (``mirror-proven`` records, :data:`migrate.core.ledger.MIRROR_TOPIC`) holds the proofs
cumulatively: ``partitions`` maps ``topic:partition`` to :meth:`Proof.to_dict` (``None``: the proof was
dropped); the last record naming a partition counts (:func:`fold_proofs`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Mapping, Sequence

from migrate.core.verify.records import Hashed

TP = tuple[str, int]


@dataclass(frozen=True)
class Proof:
    source_from: int
    source_to: int  # the offset after the last proven source record
    target_from: int
    target_to: int
    records: int
    hash1: int
    hash2: int
    source_last: int  # the anchor: offsets of the last proven record on each side, and its hash1
    target_last: int
    last_h1: int

    def to_dict(self) -> dict:
        return {"source": [self.source_from, self.source_to], "target": [self.target_from, self.target_to],
                "records": self.records, "hash1": str(self.hash1), "hash2": str(self.hash2),
                "last": [self.source_last, self.target_last, str(self.last_h1)]}

    @staticmethod
    def from_dict(d: Mapping) -> "Proof":
        return Proof(int(d["source"][0]), int(d["source"][1]), int(d["target"][0]), int(d["target"][1]),
                     int(d["records"]), int(d["hash1"]), int(d["hash2"]), int(d["last"][0]), int(d["last"][1]),
                     int(d["last"][2]))


def tp_key(tp: TP) -> str:
    return f"{tp[0]}:{tp[1]}"


def tp_of(key: str) -> TP:
    topic, _, partition = key.rpartition(":")
    return topic, int(partition)


def fold_proofs(records: Iterable[Mapping]) -> dict[TP, Proof]:
    """(topic, partition) -> its proof now, from the bookkeeping's values in order (``mirror-proven``).

    >>> p = Proof(0, 10, 0, 12, 10, 5, 6, 9, 11, 7).to_dict()
    >>> fold_proofs([{"kind": "mirror-proven", "partitions": {"a:0": p, "b:1": p}},
    ...              {"kind": "mirror-gate"}, {"kind": "mirror-proven", "partitions": {"b:1": None}}])
    {('a', 0): Proof(source_from=0, source_to=10, target_from=0, target_to=12, records=10, hash1=5, hash2=6, source_last=9, target_last=11, last_h1=7)}
    """
    out: dict[TP, Proof] = {}
    for v in records:
        if v.get("kind") != "mirror-proven":
            continue
        for key, d in (v.get("partitions") or {}).items():
            if d is None:
                out.pop(tp_of(key), None)
            else:
                out[tp_of(key)] = Proof.from_dict(d)
    return out


@dataclass(frozen=True)
class Start:
    """Where a pass reads one partition: from these offsets on each side; ``anchored``: the first record read on
    each side must be the proof's last one. ``dropped``: why a recorded proof no longer holds (then from the
    log starts)."""

    source_from: int
    target_from: int
    anchored: bool = False
    dropped: str | None = None


def starts(proof: Proof | None, source: tuple[int, int], target: tuple[int, int]) -> Start:
    """Where to read, from the proof and each side's ``(log start, end)`` now.

    >>> p = Proof(0, 10, 0, 12, 10, 5, 6, 9, 11, 7)
    >>> starts(p, (0, 15), (0, 14))
    Start(source_from=9, target_from=11, anchored=True, dropped=None)
    >>> starts(None, (3, 15), (0, 14))
    Start(source_from=3, target_from=0, anchored=False, dropped=None)
    >>> starts(p, (0, 4), (0, 14)).dropped
    'the source ends at offset 4, before the proof (10): the topic was recreated?'
    >>> starts(p, (10, 15), (0, 14)).dropped
    "retention deleted the source's last proven record (offset 9)"
    """
    if proof is None:
        return Start(source[0], target[0])
    for side, (log_start, end), to, last in (("source", source, proof.source_to, proof.source_last),
                                             ("target", target, proof.target_to, proof.target_last)):
        if end < to:
            return Start(source[0], target[0], dropped=f"the {side} ends at offset {end}, before the proof ({to}): "
                                                       "the topic was recreated?")
        if log_start > last:
            return Start(source[0], target[0], dropped=f"retention deleted the {side}'s last proven record "
                                                       f"(offset {last})")
    return Start(proof.source_last, proof.target_last, anchored=True)


@dataclass(frozen=True)
class Outcome:
    """A pass over one partition: the proof after it (``None``: none), how many records it proved now, the
    difference it found (``None``: none), and whether a recorded proof was dropped (and why)."""

    proof: Proof | None
    proved: int = 0
    problem: str | None = None
    dropped: str | None = None
    source_left: int = 0  # source records read past the target's (not copied yet when the target was read)
    note: str | None = None  # records not compared, and why

    @property
    def changed(self) -> bool:
        return self.proved > 0 or self.dropped is not None


def extend(proof: Proof | None, start: Start, source: Sequence[Hashed], target: Sequence[Hashed],
           tail: bool = False) -> Outcome:
    """The proof grown by the records equal on both sides (``source`` and ``target``: the records read from
    ``start``, in order), up to the first that differs. ``tail``: both were read to their ends (the cut-over):
    any record one side holds and the other does not is a difference.

    >>> r = lambda o, h: Hashed(o, h, -h)
    >>> o = extend(None, Start(0, 0), [r(0, 1), r(1, 2), r(2, 3)], [r(0, 1), r(2, 2)])
    >>> o.proof.records, o.proof.source_to, o.proof.target_to, o.problem, o.source_left
    (2, 2, 3, None, 1)
    >>> extend(o.proof, starts(o.proof, (0, 3), (0, 3)), [r(1, 2), r(2, 3)], [r(2, 2), r(3, 9)], tail=True).problem
    'record 3 differs: source offset 2, target offset 3'
    >>> extend(o.proof, starts(o.proof, (0, 3), (0, 3)), [r(1, 2), r(2, 3)], [r(2, 2)], tail=True).problem
    'the source holds 1 record(s) the target does not (from source offset 2)'
    """
    dropped = start.dropped
    if start.anchored and proof is not None:
        anchor = (proof.source_last, proof.target_last, proof.last_h1)
        found = (source[0].offset if source else None, target[0].offset if target else None,
                 source[0].h1 if source else None)
        if found != anchor or target[0].h1 != proof.last_h1:
            return Outcome(None, dropped=f"the last proven record (source offset {proof.source_last}, target offset "
                                         f"{proof.target_last}) is not there as proven: the topic was recreated?")
        source, target = source[1:], target[1:]
    elif dropped is not None:
        proof = None
    note = None
    if proof is None and source and target:
        older = _older_on_target(source[0], target)
        if older:
            note = (f"{older} record(s) on the target before the copy of the source's first record (retention "
                    "deleted them on the source): not compared")
            target = target[older:]
    n, same = min(len(source), len(target)), 0
    while same < n and (source[same].h1, source[same].h2) == (target[same].h1, target[same].h2):
        same += 1
    grown = proof
    if same:
        s1, s2 = sum(r.h1 for r in source[:same]), sum(r.h2 for r in source[:same])
        last_s, last_t = source[same - 1], target[same - 1]
        if grown is None:
            grown = Proof(source[0].offset, last_s.offset + 1, target[0].offset, last_t.offset + 1, same, s1, s2,
                          last_s.offset, last_t.offset, last_s.h1)
        else:
            grown = replace(grown, source_to=last_s.offset + 1, target_to=last_t.offset + 1,
                            records=grown.records + same, hash1=grown.hash1 + s1, hash2=grown.hash2 + s2,
                            source_last=last_s.offset, target_last=last_t.offset, last_h1=last_s.h1)
    base = proof.records if proof is not None else 0
    problem = None
    if same < n:
        problem = (f"record {base + same + 1} differs: source offset {source[same].offset}, "
                   f"target offset {target[same].offset}")
    elif len(target) > n:
        problem = (f"the target holds {len(target) - n} record(s) past the source's end "
                   f"(from target offset {target[n].offset})")
    elif tail and len(source) > n:
        problem = (f"the source holds {len(source) - n} record(s) the target does not "
                   f"(from source offset {source[n].offset})")
    return Outcome(grown, same, problem, dropped, len(source) - n if same == n else 0, note)


def _older_on_target(first: Hashed, target: Sequence[Hashed]) -> int:
    """How many target records come before the copy of the source's first record (``0``: the first is it, or it
    is not there: then the records are compared from the start, and differ)."""
    for i, r in enumerate(target):
        if (r.h1, r.h2) == (first.h1, first.h2):
            return i
    return 0


def tail_records(proof: Proof | None, source: tuple[int, int], target: tuple[int, int]) -> int:
    """About how many records remain to verify of a partition (offsets, so markers count: an upper bound)
    after its proof (none: all of it), both sides.

    >>> tail_records(Proof(0, 10, 0, 12, 10, 5, 6, 9, 11, 7), (0, 15), (0, 20))
    13
    >>> tail_records(None, (2, 15), (0, 20))
    33
    """
    s_from = source[0] if proof is None else proof.source_to
    t_from = target[0] if proof is None else proof.target_to
    return max(0, source[1] - s_from) + max(0, target[1] - t_from)


def proven_records(proofs: Mapping[TP, Proof]) -> int:
    return sum(p.records for p in proofs.values())
