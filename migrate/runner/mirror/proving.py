"""``kmigrate mirror verify``: prove the copy while MirrorMaker runs, so that the cut-over verifies only the tail.

    1. the mirrored topics (as ``mirror start`` recorded them), their plain partitions (compacted ones are
       compared whole at the switch: compaction moves records on each side at its own time);
    2. the proofs recorded so far (``mirror-proven`` in :data:`migrate.core.ledger.MIRROR_TOPIC` on the target,
       folded by :func:`migrate.core.mirror.proof.fold_proofs`);
    3. per partition, the target read from its proof's anchor to its end (at most ``max_records``), then as many
       committed records of the source from its anchor (the source's end only grows: it holds every record
       copied); records compared one by one, by their hashes (:mod:`migrate.core.verify.records`, Spark's);
    4. the grown proofs recorded (one ``mirror-proven`` record per pass, only the partitions that changed);
    5. ``--follow``: again every ``--interval`` until ``--timeout`` (or Ctrl-C).

Nothing proven is read again but the anchor (one record per side), and a proof whose anchor is gone or changed
(topic recreated, retention) is dropped, said, and redone from the log starts. A difference names the
partition and both offsets; the records before it stay proven.

:func:`verify_tail` is the cut-over's gate e when proofs exist and the tail is small: the same pass, both
sides read to their ends, in Python (no JVM inside the window).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from migrate.adapters.kafka.translation import hashed_records
from migrate.adapters.kafka.mirror import MirrorCluster
from migrate.core.ledger import MIRROR_TOPIC
from migrate.core.mirror.plan import compile_filter, is_internal_topic
from migrate.core.mirror.proof import Outcome, Proof, extend, fold_proofs, starts, tail_records, tp_key
from migrate.core.mirror.rights import proof_needs
from migrate.core.verify.records import table_digest
from migrate.errors import BadInput
from migrate.runner.mirror.clusters import MirrorBook, Side, Started
from migrate.runner.mirror.engines import engine_of
from migrate.runner.permissions import require
from migrate.waiting import SYSTEM_CLOCK, Clock

Say = Callable[[str], None]
TP = tuple[str, int]

TAIL_LIMIT = 100_000
"""At most this many offsets (both sides, markers included) left after the proofs: the cut-over verifies them in
Python; more, and it runs the Spark verify of everything as without proofs."""


@dataclass(frozen=True)
class VerifyRequest:
    state_dir: Path
    source: Side | None = None
    target: Side | None = None
    topics: str | None = None
    follow: bool = False
    interval_s: float = 10.0
    timeout_s: float | None = None  # with follow: stop after this long (None: until interrupted)
    max_records: int = 500_000  # per partition and pass


@dataclass(frozen=True)
class PartitionProof:
    topic: str
    partition: int
    proven: int  # records proven in all
    proved_now: int  # of which in this pass
    unproven: int  # source offsets past the proof (records not copied yet, or not read yet)
    problem: str | None = None
    dropped: str | None = None
    note: str | None = None

    def to_dict(self) -> dict:
        return {"topic": self.topic, "partition": self.partition, "proven": self.proven, "proved_now": self.proved_now,
                "unproven_offsets": self.unproven, "problem": self.problem, "dropped": self.dropped, "note": self.note}


@dataclass
class VerifyResult:
    source: str
    target: str
    partitions: list[PartitionProof] = field(default_factory=list)
    compacted: list[str] = field(default_factory=list)
    passes: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not any(p.problem for p in self.partitions)

    @property
    def proven(self) -> int:
        return sum(p.proven for p in self.partitions)

    def to_dict(self) -> dict:
        return {"source": self.source, "target": self.target, "ok": self.ok, "proven": self.proven,
                "proved_now": sum(p.proved_now for p in self.partitions),
                "unproven_offsets": sum(p.unproven for p in self.partitions),
                "partitions": [p.to_dict() for p in self.partitions],
                "compacted_topics": self.compacted, "passes": self.passes, "seconds": round(self.seconds, 1)}


def mirrored_topics(mirror: Started, topics: str | None) -> dict[str, int]:
    """The mirrored topics (as ``mirror start`` recorded them) matching ``topics``, present on both clusters."""
    topic_re = compile_filter(topics, "--topics")
    on_source = mirror.clusters.source.topic_partitions()
    recorded = mirror.topics
    if recorded is None:
        recorded = {n: c for n, c in on_source.items() if not is_internal_topic(n)}
    chosen = {n: c for n, c in recorded.items() if topic_re.fullmatch(n) and n in on_source}
    missing = sorted(set(chosen) - set(mirror.clusters.target.topic_partitions()))
    if not chosen or missing:
        raise BadInput(f"topics {', '.join(missing)} are not on the target: run kmigrate mirror start first"
                       if missing else f"no mirrored topic matches --topics {topics!r}")
    return chosen


def compacted_topics(src: MirrorCluster, topics: dict[str, int]) -> set[str]:
    return {t for t, (values, _) in src.topic_configs(sorted(topics)).items()
            if "compact" in values.get("cleanup.policy", "delete")}


def prove_pass(src: MirrorCluster, tgt: MirrorCluster, tps: list[TP], proofs: dict[TP, Proof],
               max_records: int | None = None, tail: bool = False) -> tuple[dict[TP, Outcome], dict[TP, tuple[int, int]]]:
    """One pass over plain partitions (see the module): each partition's outcome, and the source's bounds read."""
    if not tps:
        return {}, {}
    tb = tgt.bounds(tps)  # the target first: the source then holds every record copied
    sb = src.bounds(tps)
    st = {tp: starts(proofs.get(tp), sb[tp], tb[tp]) for tp in tps}
    limit = None if max_records is None else {tp: max_records + 1 for tp in tps}
    t_recs = hashed_records(tgt, {tp: (st[tp].target_from, tb[tp][1]) for tp in tps}, limit)
    s_limits = None if tail else {tp: len(t_recs[tp]) for tp in tps}
    s_recs = hashed_records(src, {tp: (st[tp].source_from, sb[tp][1]) for tp in tps}, s_limits)
    return {tp: extend(proofs.get(tp), st[tp], s_recs[tp], t_recs[tp], tail) for tp in tps}, sb


def _record(book: MirrorBook, outcomes: dict[TP, Outcome]) -> None:
    changed = {tp_key(tp): (o.proof.to_dict() if o.proof is not None else None)
               for tp, o in sorted(outcomes.items()) if o.changed}
    if changed:
        book.append("mirror-proven", "proof", partitions=changed)


def verify_mirror(req: VerifyRequest, say: Say = lambda m: None, clock: Clock = SYSTEM_CLOCK) -> VerifyResult:
    """Passes of ``mirror verify`` (one, or with ``follow`` until ``timeout_s``); the last pass's result."""
    if req.max_records <= 0 or req.interval_s <= 0 or (req.timeout_s is not None and req.timeout_s <= 0):
        raise BadInput("--max-records, --interval and --timeout must be positive")
    began = clock.now()
    mirror = Started.open(req.state_dir, req.source, req.target)
    src, tgt = mirror.clusters.source, mirror.clusters.target
    sid, tid = src.cluster_id(), tgt.cluster_id()
    if sid == tid:
        raise BadInput(f"source {mirror.source.bootstrap} and target {mirror.target.bootstrap} are the same cluster "
                       f"(cluster id {sid})")
    topics = mirrored_topics(mirror, req.topics)
    compacted = compacted_topics(src, topics)
    tps = [(t, p) for t, n in sorted(topics.items()) if t not in compacted for p in range(n)]
    book = mirror.clusters.book(sid, tid)
    on_source, on_target = proof_needs(topics, MIRROR_TOPIC, book.exists())
    require(src.admin, src.settings, on_source)
    require(tgt.admin, tgt.settings, on_target)
    engine = engine_of(req.state_dir)
    if not engine.exactly_once:
        say(f"{engine.label} copies at least once: a record it copied again after a restart differs here (a "
            "duplicate), and the cut-over verifies everything with Spark, which tells duplicates from loss")
    result = VerifyResult(mirror.source.bootstrap, mirror.target.bootstrap, compacted=sorted(compacted))
    while True:
        proofs = fold_proofs(book.values())
        outcomes, sb = prove_pass(src, tgt, tps, proofs, req.max_records)
        _record(book, outcomes)
        result.passes += 1
        result.partitions = []
        for tp, o in sorted(outcomes.items()):
            proven = o.proof.records if o.proof is not None else 0
            to = o.proof.source_to if o.proof is not None else sb[tp][0]
            result.partitions.append(PartitionProof(tp[0], tp[1], proven, o.proved, max(0, sb[tp][1] - to),
                                                    o.problem, o.dropped, o.note))
        for p in result.partitions:
            if p.dropped:
                say(f"{p.topic}-{p.partition}: proof dropped ({p.dropped}), proving again from the log starts")
            if p.problem:
                say(f"{p.topic}-{p.partition} differs: {p.problem}")
            if p.note and p.proved_now:
                say(f"{p.topic}-{p.partition}: {p.note}")
        say(f"pass {result.passes}: {sum(p.proved_now for p in result.partitions)} record(s) proven now, "
            f"{result.proven} in all; {sum(p.unproven for p in result.partitions)} source offset(s) not proven yet")
        result.seconds = clock.now() - began
        if not req.follow or (req.timeout_s is not None and clock.now() - began + req.interval_s > req.timeout_s):
            return result
        clock.sleep(req.interval_s)


@dataclass(frozen=True)
class TailVerify:
    proven_before: int  # records proven before the switch (their proofs still held)
    at_switch: int  # records compared at the switch
    problems: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()


def tail_size(src: MirrorCluster, tgt: MirrorCluster, topics: dict[str, int], compacted: set[str],
              proofs: dict[TP, Proof]) -> int:
    """About how many offsets remain to verify after the proofs (both sides; compacted topics whole)."""
    tps = [(t, p) for t, n in sorted(topics.items()) for p in range(n)]
    sb, tb = src.bounds(tps), tgt.bounds(tps)
    return sum(tail_records(None if tp[0] in compacted else proofs.get(tp), sb[tp], tb[tp]) for tp in tps)


def verify_tail(src: MirrorCluster, tgt: MirrorCluster, topics: dict[str, int], compacted: set[str],
                proofs: dict[TP, Proof]) -> TailVerify:
    """The cut-over's verify of what the proofs do not cover (producers stopped, the copy complete): plain
    partitions from their anchors to both ends, compacted ones' tables whole; in Python."""
    plain = [(t, p) for t, n in sorted(topics.items()) if t not in compacted for p in range(n)]
    outcomes, _ = prove_pass(src, tgt, plain, proofs, tail=True)
    problems = [f"{t}-{p}: {o.problem}" for (t, p), o in sorted(outcomes.items()) if o.problem]
    dropped = [f"{t}-{p}: {o.dropped}" for (t, p), o in sorted(outcomes.items()) if o.dropped]
    before = sum(proofs[tp].records for tp, o in outcomes.items() if tp in proofs and o.dropped is None)
    at_switch = sum(o.proved for o in outcomes.values())
    table = [(t, p) for t, n in sorted(topics.items()) if t in compacted for p in range(n)]
    if table:
        ranges = {"source": src.bounds(table), "target": tgt.bounds(table)}
        read = {role: hashed_records(side, ranges[role], keys=True) for role, side in (("source", src), ("target", tgt))}
        for tp in table:
            s, t = table_digest(read["source"][tp]), table_digest(read["target"][tp])
            at_switch += len(read["source"][tp])
            if s != t:
                problems.append(f"{tp[0]}-{tp[1]}: the compacted table differs ({s[0]} live key(s) on the source, "
                                f"{t[0]} on the target)")
    return TailVerify(before, at_switch, tuple(problems), tuple(dropped))
