"""``kmigrate mirror cutover``: the gated switch of consumer groups (then producers) to the target.

    0. refusals, nothing changed (exit 2): source = target (one cluster id), a group with no committed
       offset on a mirrored topic of the source (unknown), a group active on the target, a group with
       members on the source (named with their hosts: stop them first);
    a. producers stopped: every mirrored partition's source end unchanged for ``--quiet-period``;
    b. replicated: MirrorMaker's stored position reaches every source end (a trailing transaction
       marker is not lag);
    c. the groups checked again (still empty on the source, still not active on the target);
    d. offsets translated (MirrorMaker's checkpoints, its offset-syncs, the end rule; made exact by
       content where the engine can: the copy is complete), duplicates counted per partition and per
       group, recorded in the bookkeeping, then committed on the target;
    e. the records equal on both clusters, records past the common prefix failing it: only those after the
       proofs of ``mirror verify`` (the tail) when it recorded any and they are few, in Python; else the
       cross-cluster Spark verify of the mirrored topics;
    f. what clients change.

Killed at any line and run again, it re-reads both clusters and converges. Re-checked every time:
a (except when the source ends equal those the bookkeeping recorded when a passed: nothing was
produced since, so no new wait), b, c, d. Taken from the bookkeeping (topic
:data:`migrate.core.ledger.MIRROR_TOPIC` on the target) when re-checking is impossible or costly: e,
when both clusters' ends are those recorded when it passed. An offset is never moved backwards
unless it would skip records (:func:`migrate.core.mirror.cutover.target_write`).

Testing hook: ``KMIGRATE_CRASH_AT=cutover-quiet|cutover-offsets-recorded|cutover-offsets-written[:n]|cutover-verified``.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from migrate.adapters.kafka.mirror import MirrorCluster
from migrate.adapters.kafka.translation import set_group_offsets
from migrate.core.ledger import MIRROR_TOPIC
from migrate.core.mirror.cutover import (GroupRereads, Translation, client_changes, ends_key, group_rereads,
                                         moving_partitions, passed_gates, recorded_offsets, target_write,
                                         with_duplicates)
from migrate.core.mirror.plan import compile_filter, is_internal_topic
from migrate.core.mirror.proof import fold_proofs, proven_records
from migrate.core.mirror.rights import cutover_needs
from migrate.errors import BadInput, StepFailed
from migrate.runner.events import crash_point
from migrate.runner.mirror.clusters import MirrorBook, Side, Started
from migrate.runner.mirror.engine import Engine
from migrate.runner.mirror.engines import engine_of
from migrate.runner.mirror.proving import TAIL_LIMIT, compacted_topics, tail_size, verify_tail
from migrate.runner.permissions import require
from migrate.waiting import SYSTEM_CLOCK, Clock, poll

Say = Callable[[str], None]
TP = tuple[str, int]


@dataclass(frozen=True)
class CutoverRequest:
    groups: tuple[str, ...]
    state_dir: Path
    source: Side | None = None
    target: Side | None = None
    topics: str | None = None
    quiet_s: float = 10.0
    timeout_s: float = 300.0
    dry_run: bool = False
    master: str = "local[*]"
    spark_conf: tuple[str, ...] = ()
    jars: str | None = None


@dataclass(frozen=True)
class Gate:
    name: str
    detail: str
    how: str = "checked"  # checked | bookkeeping | skipped
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return {"gate": self.name, "passed": self.how != "skipped", "how": self.how, "detail": self.detail,
                "seconds": round(self.seconds, 2)}


@dataclass
class CutoverResult:
    source: str
    target: str
    gates: list[Gate] = field(default_factory=list)
    translations: list[Translation] = field(default_factory=list)
    writes: list[dict] = field(default_factory=list)
    clients: list[str] = field(default_factory=list)
    dry_run: bool = False
    seconds: float = 0.0
    verify: dict = field(default_factory=dict)  # how gate e verified, records proven before and at the switch

    @property
    def ok(self) -> bool:
        return all(t.offset is not None for t in self.translations)

    @property
    def groups(self) -> list[GroupRereads]:
        """Per group, the records its consumers read twice on the target and which method decided its offsets."""
        return group_rereads(self.translations)

    def to_dict(self) -> dict:
        return {"source": self.source, "target": self.target, "dry_run": self.dry_run, "ok": self.ok,
                "gates": [g.to_dict() for g in self.gates], "offsets": [t.to_dict() for t in self.translations],
                "writes": self.writes, "duplicates": sum(t.duplicates or 0 for t in self.translations),
                "groups": [g.to_dict() for g in self.groups],
                "verify": self.verify, "clients": self.clients, "seconds": round(self.seconds, 1)}


@dataclass
class _Run:
    req: CutoverRequest
    mirror: Started
    topics: dict[str, int]
    book: MirrorBook
    engine: Engine  # as mirror start recorded it
    records: list = field(default_factory=list)  # the bookkeeping's values (mirror-* of this mirror)
    committed: dict[str, dict[TP, int]] = field(default_factory=dict)

    @property
    def source(self) -> Side:
        return self.mirror.source

    @property
    def target(self) -> Side:
        return self.mirror.target

    @property
    def src(self) -> MirrorCluster:
        return self.mirror.clusters.source

    @property
    def tgt(self) -> MirrorCluster:
        return self.mirror.clusters.target


def cutover(req: CutoverRequest, say: Say = lambda m: None, clock: Clock = SYSTEM_CLOCK) -> CutoverResult:
    """Run the cut-over's gates in order (see the module); a gate that fails raises StepFailed (exit 1)."""
    began = clock.now()
    run = _open(req)
    result = CutoverResult(run.source.bootstrap, run.target.bootstrap, dry_run=req.dry_run)
    _check_groups(run)
    mark = [clock.now()]

    def passed(gate: Gate) -> None:
        now = clock.now()
        result.gates.append(replace(gate, seconds=now - mark[0]))
        mark[0] = now

    passed(_producers_stopped(run, say, clock))
    crash_point("cutover-quiet")
    passed(_replicated(run, say, clock))
    _check_groups(run)
    passed(Gate("groups-stopped", f"{len(req.groups)} group(s) without members on the source, "
                                  "not active on the target"))
    result.translations = _translations(run, say, clock)
    refused = [t for t in result.translations if t.offset is None]
    result.writes = _write_offsets(run, result.translations, say)
    if refused:
        raise StepFailed("offsets not translated for " + "; ".join(
            f"{t.group} {t.topic}-{t.partition}: {t.reason}" for t in refused) + ": clients must not switch yet")
    passed(Gate("offsets-set", f"{len(result.translations)} partition offset(s) of {len(req.groups)} "
                               f"group(s) {'would be ' if req.dry_run else ''}set on the target, "
                               f"{sum(t.duplicates or 0 for t in result.translations)} duplicate(s)"))
    passed(_verified(run, say, result))
    crash_point("cutover-verified")
    result.clients = client_changes(req.groups, run.source.bootstrap, run.target.bootstrap)
    if not req.dry_run:
        _record(run, "mirror-gate", "done", gate="done", groups=list(req.groups))
    result.seconds = clock.now() - began
    return result


def _open(req: CutoverRequest) -> _Run:
    if not req.groups:
        raise BadInput("give the consumer groups to switch with --group (repeat it)")
    if req.quiet_s <= 0 or req.timeout_s <= 0:
        raise BadInput("--quiet-period and --timeout must be positive durations, like 10s and 5m")
    mirror = Started.open(req.state_dir, req.source, req.target)
    src, tgt = mirror.clusters.source, mirror.clusters.target
    sid, tid = src.cluster_id(), tgt.cluster_id()
    if sid == tid:
        raise BadInput(f"source {mirror.source.bootstrap} and target {mirror.target.bootstrap} are the same cluster "
                       f"(cluster id {sid}): give the new cluster as --target-bootstrap")
    topic_re = compile_filter(req.topics, "--topics")
    on_source = src.topic_partitions()
    recorded = mirror.topics
    if recorded is None:
        recorded = {n: c for n, c in on_source.items() if not is_internal_topic(n)}
    topics = {n: c for n, c in recorded.items() if topic_re.fullmatch(n) and n in on_source}
    missing = sorted(set(topics) - set(tgt.topic_partitions()))
    if not topics or missing:
        raise BadInput(f"topics {', '.join(missing)} are not on the target: run kmigrate mirror start first"
                       if missing else f"no mirrored topic matches --topics {req.topics!r}")
    engine = engine_of(req.state_dir)
    book = mirror.clusters.book(sid, tid)
    _check_rights(req, src, tgt, topics, book.exists(), engine)
    return _Run(req, mirror, topics, book, engine, book.values())


def _check_rights(req: CutoverRequest, src: MirrorCluster, tgt: MirrorCluster, topics: dict[str, int],
                  book_exists: bool, engine: Engine) -> None:
    """Every right the cut-over needs on both clusters, before it changes anything (BadInput)."""
    on_source, on_target = cutover_needs(req.groups, topics, engine.cutover_reads, MIRROR_TOPIC, book_exists)
    require(src.admin, src.settings, on_source)
    require(tgt.admin, tgt.settings, [n for n in on_target if n.operation != "CREATE" or not req.dry_run])


def _record(run: _Run, kind: str, subject: str, **fields) -> None:
    run.records.append(run.book.append(kind, subject, **fields))


def _check_groups(run: _Run) -> None:
    """Refusals of step 0 / gate c (BadInput: nothing has been changed when they are raised)."""
    for group in run.req.groups:
        state, members, _ = run.tgt.group_members(group)
        if members or state not in ("EMPTY", "DEAD", "UNKNOWN"):
            raise BadInput(f"group {group} is active on the target ({state}: {', '.join(members) or 'no member listed'}): "
                           "stop its consumers on the target, then run the cut-over again")
        committed = {tp: o for tp, o in run.src.committed_offsets(group, []).items() if tp[0] in run.topics}
        if not committed:
            raise BadInput(f"group {group} has no committed offset on a mirrored topic of the source: check "
                           "--group (kafka-consumer-groups --list)")
        run.committed[group] = committed
        members = run.src.group_members(group).members
        if members:
            raise BadInput(f"group {group} still has members on the source ({', '.join(members)}): stop those "
                           "consumers, then run the cut-over again")


def _ends(run: _Run) -> dict[TP, int]:
    return {tp: end for tp, (_start, end) in run.src.end_offsets(run.topics).items()}


def _producers_stopped(run: _Run, say: Say, clock: Clock) -> Gate:
    """Gate a: the source's ends unchanged for the quiet period (or since the bookkeeping saw them pass)."""
    last, quiet = _ends(run), run.req.quiet_s
    passed = passed_gates(run.records).get("producers-stopped")
    if passed is not None and passed.get("ends") == ends_key(last):
        return Gate("producers-stopped", f"source ends unchanged since this gate passed at {passed['time']}",
                    "bookkeeping")
    say(f"waiting for {quiet:.0f} s without a new record on {len(last)} source partitions")
    since = clock.now()
    deadline = since + run.req.timeout_s
    moving: list[str] = []
    while clock.now() - since < quiet:
        if clock.now() > deadline:
            raise StepFailed(f"producers still write to the source after {run.req.timeout_s:.0f} s: "
                             f"{', '.join(moving)} moved: stop them, then run the cut-over again")
        clock.sleep(min(1.0, quiet))
        now = _ends(run)
        moving = moving_partitions(last, now)
        if moving:
            say(f"still written to: {', '.join(moving[:10])}{' ...' if len(moving) > 10 else ''}")
            last, since = now, clock.now()
    if not run.req.dry_run:
        _record(run, "mirror-gate", "producers-stopped", gate="producers-stopped", ends=ends_key(last))
    return Gate("producers-stopped", f"{len(last)} source partitions unchanged for {quiet:.0f} s")


def _replicated(run: _Run, say: Say, clock: Clock) -> Gate:
    """Gate b: every partition copied to its last record (re-read: positions are cheap to read), the
    positions as the engine keeps them (a trailing transaction marker is not lag)."""
    left: list[str] = []

    def check() -> bool:
        ends = run.src.end_offsets(run.topics)
        lagging = run.engine.next_to_copy(run.mirror, ends)
        control = run.src.without_records(lagging, {tp: ends[tp][1] for tp in lagging})
        left[:] = [f"{t}-{p} ({ends[(t, p)][1] - o})" for (t, p), o in sorted(lagging.items()) if (t, p) not in control]
        if left and run.engine.live_progress:
            say(f"MirrorMaker has not copied the last records of {', '.join(left[:10])}")
        return not left

    if not poll(check, timeout_s=run.req.timeout_s, interval_s=2.0, clock=clock):
        raise StepFailed(f"MirrorMaker did not copy the last records within {run.req.timeout_s:.0f} s: "
                         f"{', '.join(left)} (records left); check kmigrate mirror status")
    return Gate("replicated", f"{len(run.topics)} topic(s) copied to their last record (MirrorMaker's stored positions)")


EXACT_TRANSLATIONS = ("content", "end")
"""Translations that put a group on the copy of its next record (or at the end): nothing read twice."""


def _translations(run: _Run, say: Say, clock: Clock) -> list[Translation]:
    """Gate d's translation: the engine's (MirrorMaker 2's checkpoints and offset-syncs, or kmigrate's own
    for MirrorMaker 1), then the duplicates of each offset counted by reading both sides from it to the end.

    Not read (a read grows with the data, inside the window): an exactly-once copy's offsets decided by
    content (the target's record there is the source's next record) or at the end. The records after
    them are the same on both sides when the copy is exact, which gate e then proves: 0 duplicates."""
    translated = run.engine.translate_offsets(run.mirror, run.topics, run.req.groups, run.committed,
                                              run.req.timeout_s, say, clock)
    ends = _ends(run)
    target_ends = {tp: e for tp, (_s, e) in run.tgt.end_offsets(run.topics).items()}
    out = []
    for group in run.req.groups:
        mine = [t for t in translated if t.group == group]
        counted = [t for t in mine if t.offset is not None
                   and not (run.engine.exactly_once and t.how in EXACT_TRANSLATIONS)]
        src = run.src.count_records({t.key: (t.source_committed, ends[t.key]) for t in counted})
        tgt = run.tgt.count_records({t.key: (t.offset, target_ends[t.key]) for t in counted})
        keys = {t.key for t in counted}
        out += [with_duplicates(t, tgt[t.key], src[t.key]) if t.key in keys
                else replace(t, duplicates=0) if t.offset is not None else t for t in mine]
    return out


def _write_offsets(run: _Run, translations: list[Translation], say: Say) -> list[dict]:
    """Gate d's write: recorded in the bookkeeping first, then committed on the target, per group."""
    mine = recorded_offsets(run.records)
    target_ends = {tp: e for tp, (_s, e) in run.tgt.end_offsets(run.topics).items()}
    ends = _ends(run)
    report: list[dict] = []
    for group in run.req.groups:
        safe = {t.key: t for t in translations if t.group == group and t.offset is not None}
        on_target = run.tgt.committed_offsets(group, sorted(safe))
        ahead = {tp: (o, target_ends[tp]) for tp, o in on_target.items() if tp in safe and o > safe[tp].offset}
        after = run.tgt.count_records(ahead)
        src_after = run.src.count_records({tp: (safe[tp].source_committed, ends[tp]) for tp in ahead})
        to_write: dict[TP, int] = {}
        for tp, t in sorted(safe.items()):
            skips = None if tp not in ahead else max(0, src_after[tp] - after[tp])
            w = target_write(t.offset, on_target.get(tp), skips, mine.get((group, *tp)))
            report.append({"group": group, "topic": tp[0], "partition": tp[1], "action": w.action,
                           "offset": w.offset if w.offset is not None else on_target.get(tp), "note": w.note})
            if w.offset is not None:
                to_write[tp] = w.offset
        if to_write and not run.req.dry_run:
            _check_groups(run)
            _record(run, "mirror-offsets", group, group=group, offsets=ends_key(to_write))
            crash_point("cutover-offsets-recorded")
            set_group_offsets(run.tgt, group, to_write)
            say(f"group {group}: {len(to_write)} offset(s) committed on the target")
            crash_point("cutover-offsets-written")
    return report


def _verified(run: _Run, say: Say, result: CutoverResult) -> Gate:
    """Gate e: the records not proven by ``mirror verify`` (all of them without a proof) equal on both clusters,
    records past the common prefix failing it (taken from the bookkeeping when neither cluster's ends moved since
    it passed: reading every record again would prove nothing new). A small tail after the proofs is verified in
    Python (:data:`migrate.runner.mirror.proving.TAIL_LIMIT`), else the cross-cluster Spark verify of everything."""
    from datetime import datetime, timezone

    from migrate.adapters.kafka.offsets import KafkaSide
    from migrate.runner.verify import Scope, records_in_scope, spark_session, spark_settings, verify_clusters

    ends = ends_key(_ends(run))
    target_ends = ends_key({tp: e for tp, (_s, e) in run.tgt.end_offsets(run.topics).items()})
    passed = passed_gates(run.records).get("verified")
    if passed is not None and passed.get("ends") == ends and passed.get("target_ends") == target_ends:
        result.verify = {"how": "bookkeeping", "proven_before": passed.get("proven_before", 0),
                         "at_switch": passed.get("at_switch", passed.get("records", 0))}
        return Gate("verified", f"cross-cluster verify passed at {passed['time']}; no record written since on "
                                "either cluster", "bookkeeping")
    if run.req.dry_run:
        result.verify = {"how": "skipped", "proven_before": 0, "at_switch": 0}
        return Gate("verified", "not run (--dry-run)", "skipped")
    proofs = fold_proofs(run.records)
    if proofs and not run.engine.exactly_once:
        say(f"{run.engine.label} copies at least once: the Spark verify of everything, which tells duplicates "
            "from loss, instead of the tail after the proofs of mirror verify")
    elif proofs:
        compacted = compacted_topics(run.src, run.topics)
        left = tail_size(run.src, run.tgt, run.topics, compacted, proofs)
        if left <= TAIL_LIMIT:
            return _tail_verified(run, say, result, proofs, compacted, ends, target_ends)
        say(f"{left} offsets left to verify after the proofs of mirror verify (more than {TAIL_LIMIT}): "
            "the Spark verify of everything")
    settings = spark_settings(run.req.master, list(run.req.spark_conf), run.req.jars, "kmigrate-mirror-cutover")
    # the settings this command resolved (verify's reads open their own connection to each cluster)
    source = KafkaSide(run.mirror.clusters.settings("source"), timeout_s=run.src.timeout_s)
    target = KafkaSide(run.mirror.clusters.settings("target"), timeout_s=run.tgt.timeout_s)
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    scope = Scope(topics=tuple(sorted(run.topics)))
    with spark_session(settings, lambda m: say(f"verify: {m}"), records_in_scope(source, scope, clusters=2)) as spark:
        # duplicates are a difference unless the engine copies at least once (MirrorMaker 1)
        report = verify_clusters(source, target, spark, scope, now, fail_on_tail=True,
                                 progress=lambda m: say(f"verify: {m}"),
                                 allow_duplicates=not run.engine.exactly_once)
    if not report.ok:
        raise StepFailed("the cross-cluster verify found differences in " + ", ".join(
            f"{p.name} ({'; '.join(p.problems)})" for p in report.differing[:10]) + ": clients must not switch")
    result.verify = {"how": "spark", "proven_before": 0, "at_switch": report.records("left")}
    _record(run, "mirror-gate", "verified", gate="verified", ends=ends, target_ends=target_ends,
            records=report.records("left"), proven_before=0, at_switch=report.records("left"),
            host=socket.gethostname(), pid=os.getpid())
    return Gate("verified", f"{report.records('left')} records in {len(report.partitions)} partitions equal on both "
                            "clusters (records past the common prefix counted as differences)")


def _tail_verified(run: _Run, say: Say, result: CutoverResult, proofs: dict, compacted: set[str],
                   ends: dict[str, int], target_ends: dict[str, int]) -> Gate:
    """Gate e with proofs: only the tail after them, read and hashed in Python (no JVM in the window)."""
    say(f"verifying the records after the proofs of mirror verify ({proven_records(proofs)} records proven "
        "before the switch), without Spark")
    tail = verify_tail(run.src, run.tgt, run.topics, compacted, proofs)
    for line in tail.dropped:
        say(f"proof dropped, verified again: {line}")
    if tail.problems:
        raise StepFailed("the cross-cluster verify of the tail found differences in "
                         + "; ".join(tail.problems[:10]) + ": clients must not switch")
    result.verify = {"how": "tail", "proven_before": tail.proven_before, "at_switch": tail.at_switch}
    _record(run, "mirror-gate", "verified", gate="verified", ends=ends, target_ends=target_ends,
            records=tail.proven_before + tail.at_switch, proven_before=tail.proven_before, at_switch=tail.at_switch,
            host=socket.gethostname(), pid=os.getpid())
    return Gate("verified", f"{tail.proven_before} records proven equal before the switch (mirror verify), "
                            f"{tail.at_switch} verified at the switch without Spark")
