"""``kmigrate mirror --engine mirrormaker1``: start, stop and watch MirrorMaker 1 processes, and
translate consumer offsets (MirrorMaker 1 keeps none).

Kill-safety: ``start`` plans (reads only), creates the missing topics (idempotent), writes the
properties and ``mirror.json`` (which names the engine), then starts each instance and writes its pid;
an instance whose pid file was never written is found by its command line. A rerun starts only the
instances not running. ``translate`` reads, then sets each group's offsets in one request per group.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from migrate.adapters.kafka.mirror import MirrorCluster
from migrate.adapters.mirrormaker.mm2 import MirrorMakerProcess
from migrate.adapters.mirrormaker.mm1 import PRODUCER_FILE, MirrorMaker1Process, instance_indexes, wait_alive
from migrate.adapters.kafka import translation as reads
from migrate.files import write_private
from migrate.core.mirror.plan import compile_filter, render_properties
from migrate.core.mirror.mm1 import (DEFAULT_GROUP, ENGINE, Mirror1Status, arguments, check_instances,
                                      consumer_properties, duplicates_note, group_lags,
                                      producer_properties)
from migrate.core.mirror.translation import (PartitionFacts, PartitionTranslation, partitions_not_kept,
                                            translate as translate_partition)
from migrate.errors import BadInput, StepFailed
from migrate.runner.mirror.mm2 import Request, Side, create_topics, read_plan, resolve_sides

HEADER = "Written by kmigrate mirror start --engine mirrormaker1: regenerated at every start, do not edit."


def engine_of(state_dir: Path) -> str:
    """The engine ``mirror start`` recorded in ``state_dir`` (MirrorMaker 2 when none is recorded)."""
    state = MirrorMakerProcess(state_dir).read_state() or {}
    return state.get("engine") or "mirrormaker2"


def refuse_if_running(state_dir: Path) -> None:
    """Before another engine starts from ``state_dir``: a running MirrorMaker 1 would be left unmanaged."""
    running = [p.index for p in _procs(state_dir) if p.pid() is not None]
    if running:
        raise BadInput(f"MirrorMaker 1 runs from {state_dir} (instances {running}): run kmigrate mirror stop first, "
                       "or give another --state-dir")


def _procs(state_dir: Path, count: int | None = None) -> list[MirrorMaker1Process]:
    indexes = list(range(count)) if count is not None else instance_indexes(state_dir)
    return [MirrorMaker1Process(state_dir, i) for i in indexes]


@dataclass(frozen=True)
class Start1Result:
    pids: list[int]
    started: list[int]  # instance indexes started now
    group: str
    include: str
    topics: object | None  # CreateResult
    log: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"engine": ENGINE, "pids": self.pids, "pid": self.pids[0] if self.pids else None,
                "started": self.started, "already_running": not self.started, "group": self.group,
                "include": self.include, "logs": self.log,
                "topics": None if self.topics is None else self.topics.to_dict()}


def _record_unclean(state_dir: Path, procs: list[MirrorMaker1Process]) -> list[dict]:
    """Note in ``mirror.json`` each instance that ended without a clean stop; return every such note."""
    mm = MirrorMakerProcess(state_dir)
    state = mm.read_state() or {}
    notes = list(state.get("unclean_stops") or [])
    new = [{"instance": p.index, "pid": pid, "noticed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
           for p in procs if (pid := p.ended_uncleanly()) is not None]
    if new and state:
        mm.write_state({**state, "unclean_stops": notes + new})
    return notes + new


def start(req: Request, state_dir: Path, heap_mb: int = 256, instances: int = 1, group: str = DEFAULT_GROUP) -> Start1Result:
    """Plan, create the target's topics, write the properties and start the instances not running."""
    check_instances(instances)
    if engine_of(state_dir) != ENGINE and MirrorMakerProcess(state_dir).pid() is not None:
        raise BadInput(f"a MirrorMaker 2 runs from {state_dir}: run kmigrate mirror stop first, or give another --state-dir")
    plan = read_plan(req)  # refuses a --topics that matches no topic
    include = plan.topic_filter()
    procs = _procs(state_dir, instances)
    extra = [p for p in _procs(state_dir) if p.index >= instances and p.pid() is not None]
    if extra:
        raise BadInput(f"{len(extra) + instances} MirrorMaker 1 instances run from {state_dir}: run kmigrate mirror stop "
                       f"first to change --instances to {instances}")
    topics = create_topics(req, plan, engine=ENGINE, consumer_group=group)
    consumer = render_properties(consumer_properties(req.source.bootstrap, req.source.java_properties(), group), HEADER)
    producer = render_properties(producer_properties(req.target.bootstrap, req.target.java_properties()), HEADER)
    state = MirrorMakerProcess(state_dir).read_state() or {}
    unclean = _record_unclean(state_dir, procs) if state.get("engine") == ENGINE else []
    MirrorMakerProcess(state_dir).write_state({
        "engine": ENGINE, "source_bootstrap": req.source.bootstrap, "target_bootstrap": req.target.bootstrap,
        "source_command_config": req.source.command_config, "target_command_config": req.target.command_config,
        "topics": {t.name: t.source.partitions for t in plan.topics}, "groups": plan.groups_filter,
        "group": group, "instances": instances, "include": include, "unclean_stops": unclean})
    write_private(state_dir / PRODUCER_FILE, producer)
    pids, started = [], []
    for mm in procs:
        running = mm.pid()
        if running is not None:
            if (mm.read_properties() or "") != consumer or (state.get("include") not in (None, include)):
                raise BadInput(f"MirrorMaker 1 instance {mm.index} runs (pid {running}) with another configuration: "
                               "run kmigrate mirror stop first, then start again")
            pids.append(running)
            continue
        mm.write_properties(consumer)
        args = arguments(str(mm.properties_path.resolve()), str((state_dir / PRODUCER_FILE).resolve()), include)
        pids.append(mm.start_with(state_dir / PRODUCER_FILE, args, heap_mb))
        started.append(mm.index)
    dead = wait_alive([p for p in procs if p.index in started], [pids[i] for i in started], 5.0) if started else []
    if dead:
        tail = " | ".join(procs[dead[0]].log_tail(3)) or "no output"
        raise StepFailed(f"MirrorMaker 1 instance(s) {dead} exited at start (see {procs[dead[0]].log_path}): {tail}")
    return Start1Result(pids, started, group, include, topics if started else None, [str(p.log_path) for p in procs])


def stop(state_dir: Path, timeout_s: float = 30.0) -> list:
    """Stop every MirrorMaker 1 instance of ``state_dir``: a StopResult each (SIGTERM, wait, SIGKILL)."""
    procs = _procs(state_dir)
    results = [p.stop(timeout_s) for p in procs]
    _record_unclean(state_dir, procs)
    return results


def status(state_dir: Path, source: Side | None = None, target: Side | None = None,
           topics_filter: str | None = None) -> Mirror1Status:
    """MirrorMaker 1's group on the source per partition (current offset, log end, lag, owner), the
    time lag (newest timestamps on both sides), the processes, and any unclean stop (duplicates)."""
    topic_re = compile_filter(topics_filter, "--topics")
    source, target, recorded, _ = resolve_sides(state_dir, source, target)
    state = MirrorMakerProcess(state_dir).read_state() or {}
    group = state.get("group") or DEFAULT_GROUP
    procs = _procs(state_dir)
    unclean = _record_unclean(state_dir, procs)
    src = MirrorCluster(source.settings(), "source")
    tgt = MirrorCluster(target.settings(), "target")
    recorded = {n: c for n, c in (recorded or {}).items() if topic_re.fullmatch(n)}
    ends = src.end_offsets(recorded)
    committed = src.committed_offsets(group, sorted(ends))
    _, owners = reads.group_members(src, group)
    on_target = tgt.topic_partitions()
    src_ts = reads.newest_timestamps(src, sorted(ends))
    tgt_ts = reads.newest_timestamps(tgt, [tp for tp in sorted(ends) if tp[1] < on_target.get(tp[0], 0)])
    time_lags = {tp: max(0, ts - tgt_ts.get(tp, 0)) if tp in tgt_ts else None for tp, ts in src_ts.items()}
    instances = tuple({"index": p.index, "running": (pid := p.pid()) is not None, "pid": pid, "log": str(p.log_path)}
                      for p in procs)
    note = duplicates_note(unclean)
    return Mirror1Status(instances, group, group_lags(ends, committed, owners, time_lags), tuple(unclean),
                         (note,) if note else ())


def wait_caught_up(state_dir: Path, source: Side | None, target: Side | None, topics_filter: str | None,
                   timeout_s: float, interval_s: float = 2.0, on_status=lambda s: None) -> tuple[bool, Mirror1Status]:
    """Read :func:`status` until the group's lag is 0 everywhere or ``timeout_s`` passes."""
    from migrate.waiting import poll

    def check() -> Mirror1Status | None:
        current = status(state_dir, source, target, topics_filter)
        on_status(current)
        return current if current.caught_up else None

    done = poll(check, timeout_s=timeout_s, interval_s=interval_s)
    return done is not None, done or status(state_dir, source, target, topics_filter)


# ====================================================================== offset translation


@dataclass(frozen=True)
class TranslateResult:
    partitions: tuple[PartitionTranslation, ...]
    applied: bool
    groups: tuple[str, ...]

    @property
    def rereads(self) -> int | None:
        values = [p.rereads for p in self.partitions]
        return None if any(v is None for v in values) else sum(values)

    def to_dict(self) -> dict:
        return {"groups": list(self.groups), "applied": self.applied, "rereads": self.rereads,
                "partitions": [p.to_dict() for p in self.partitions]}


def translate(state_dir: Path, groups: list[str], source: Side | None = None, target: Side | None = None,
              window: int = 10000, dry_run: bool = False) -> TranslateResult:
    """Translate each group's committed source offsets onto the target (see ``core/offset_translation``)
    and, unless ``dry_run``, set them there once the group has no member on the target."""
    if not groups:
        raise BadInput("give at least one --group to translate")
    if window < 1:
        raise BadInput(f"--window {window}: give 1 or more records")
    source, target, recorded, _ = resolve_sides(state_dir, source, target)
    src = MirrorCluster(source.settings(), "source")
    tgt = MirrorCluster(target.settings(), "target")
    topics = set(recorded or {})
    mirror_group = (MirrorMakerProcess(state_dir).read_state() or {}).get("group") or DEFAULT_GROUP
    out: list[PartitionTranslation] = []
    for group in groups:
        committed = {tp: o for tp, o in src.committed_offsets(group, []).items() if not topics or tp[0] in topics}
        if not committed:
            raise BadInput(f"group {group} has no committed offset on the source for the mirrored topics: check --group")
        if not dry_run:
            state, members = tgt.group_members(group)
            if members or state.upper() not in ("EMPTY", "DEAD", "UNKNOWN"):
                raise BadInput(f"group {group} is active on the target ({state}): stop its consumers there first")
        out += _translate_group(src, tgt, group, committed, window, mirror_group)
    if not dry_run:
        for group in groups:
            reads.set_group_offsets(tgt, group, {(p.topic, p.partition): p.offset for p in out if p.group == group})
    return TranslateResult(tuple(out), not dry_run, tuple(groups))


def _translate_group(src: MirrorCluster, tgt: MirrorCluster, group: str, committed: dict[tuple[str, int], int],
                     window: int, mirror_group: str) -> list[PartitionTranslation]:
    tps = sorted(committed)
    counts = src.topic_partitions()
    src_ends = src.end_offsets({t: counts[t] for t, _ in tps if t in counts})
    on_target = tgt.topic_partitions()
    missing = sorted({t for t, _ in tps if t not in on_target})
    if missing:
        raise BadInput(f"group {group} reads {', '.join(missing)}, missing on the target: run kmigrate mirror create-topics")
    tgt_ends = tgt.end_offsets({t: on_target[t] for t, _ in tps})
    mirror_at = src.committed_offsets(mirror_group, tps)
    scattered = partitions_not_kept({tp: (src_ends[tp][0], mirror_at[tp]) for tp in tps if tp in mirror_at}, tgt_ends)
    if scattered:
        raise BadInput(f"the target holds fewer records than MirrorMaker 1 copied in {', '.join(f'{t}[{p}]' for t, p in scattered)}: "
                       "records are not in the same partitions on both sides (MirrorMaker 1 places unkeyed records "
                       "anywhere), so offsets cannot be translated per partition; nothing set")
    kept = {t: kind != "LogAppendTime" for t, kind in reads.timestamp_types(tgt, sorted({t for t, _ in tps})).items()}
    out = []
    for topic, partition in tps:
        c = committed[(topic, partition)]
        s_start, s_end = src_ends[(topic, partition)]
        t_start, t_end = tgt_ends[(topic, partition)]
        nxt = reads.read_records(src, topic, partition, max(c, s_start), s_end, 1)
        nxt_rec = nxt[0] if nxt else None
        keeps = kept.get(topic, True)
        bound = None
        if nxt_rec is not None and keeps:
            bound = reads.offset_for_time(tgt, topic, partition, nxt_rec.timestamp)
        start_at = bound if keeps else t_start
        win = tuple(reads.read_records(tgt, topic, partition, start_at, t_end, window)) if (
            nxt_rec is not None and start_at is not None) else ()
        facts = PartitionFacts(c, s_end, nxt_rec, t_start, t_end, bound, win, keeps)
        out.append(translate_partition(group, topic, partition, facts))
    return out


# ====================================================================== for mirror cutover


def mirror_group(state_dir: Path) -> str:
    return (MirrorMakerProcess(state_dir).read_state() or {}).get("group") or DEFAULT_GROUP


def not_copied(src: MirrorCluster, state_dir: Path, topics: dict[str, int]) -> dict[tuple[str, int], int]:
    """Cut-over gate b for MirrorMaker 1: (topic, partition) -> records its group has not copied yet
    (its committed offset short of the source's end, unless only transaction markers are left)."""
    ends = src.end_offsets(topics)
    committed = src.committed_offsets(mirror_group(state_dir), sorted(ends))
    lagging = {lag.topic_partition: lag.current_offset or lag.log_start for lag in group_lags(ends, committed) if lag.lag}
    control = src.without_records(lagging, {tp: ends[tp][1] for tp in lagging})
    return {tp: ends[tp][1] - o for tp, o in sorted(lagging.items()) if tp not in control}


def cutover_translations(src: MirrorCluster, tgt: MirrorCluster, state_dir: Path, groups: tuple[str, ...],
                         committed: dict[str, dict[tuple[str, int], int]], window: int = 10000) -> list:
    """Cut-over gate d for MirrorMaker 1: kmigrate's own translation of each group's committed offsets,
    as the cut-over's :class:`migrate.core.mirror.cutover.Translation` (duplicates counted by the cut-over)."""
    from migrate.core.mirror.cutover import Translation

    out = []
    for group in groups:
        for p in _translate_group(src, tgt, group, committed[group], window, mirror_group(state_dir)):
            out.append(Translation(group, p.topic, p.partition, p.source_committed, p.offset,
                                   "end" if p.how == "at the end" else f"kmigrate ({p.how})",
                                   reason="" if p.confirmed else "not confirmed by content: an earlier safe offset"))
    return out
