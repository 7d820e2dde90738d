"""``kmigrate mirror``: read both clusters and plan, create the target's topics, start and stop a
dedicated MirrorMaker 2, and read its progress.

Killing any of these at any line is safe: the plan only reads; topic creation leaves existing topics
as they are (a rerun creates what is missing); ``start`` writes the properties, then the process,
then its pid (a MirrorMaker whose pid file was never written is found by its command line).
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

from migrate.adapters.kafka.bookkeeping import BookkeepingTopic
from migrate.adapters.kafka.mirror import MirrorCluster
from migrate.adapters.mirrormaker.mm2 import MirrorMakerProcess, default_state_dir, free_port  # noqa: F401 (default_state_dir: for commands)
from migrate.core.clientconfig import ClientSettings
from migrate.core.mirror.plan import (CHECKPOINTS_TOPIC, HEARTBEATS_TOPIC, INTERNAL_TOPICS, STARTED_MARKER, WORKER_GROUP,
                                 authorization_refusals, refusal_message, CONNECT_OFFSETS_TOPIC, CONNECT_STATUS_TOPIC, GroupOffset,
                                 MirrorPlan, MirrorStatus, TopicReading, compile_filter, config_differences,
                                 heartbeat_timestamp, is_internal_topic, latest_checkpoints,
                                 mirrored_positions, mm2_properties, partition_lags, plan_mirror, render_properties,
                                 same_configuration, task_states)
from migrate.core.ledger import MIRROR_TOPIC, make_record, mirror_plan_id
from migrate.core.permissions import Need, mirror_needs, principal_of
from migrate.errors import BadInput, KmigrateError, StepFailed
from migrate.files import client_settings, load_command_config
from migrate.runner.permissions import require, require_after_create
from migrate.waiting import poll


@dataclass(frozen=True)
class Side:
    """One cluster as the operator named it: bootstrap and ``--*-command-config`` file."""

    bootstrap: str
    command_config: str | None = None
    role: str = "source"  # names the flags in messages: --source-command-config, --target-command-config

    def settings(self) -> ClientSettings:
        try:
            return client_settings(self.bootstrap, self.command_config)
        except BadInput as exc:
            raise BadInput(self._named(exc.message)) from None

    def java_properties(self) -> dict[str, str]:
        try:
            return load_command_config(self.command_config)
        except BadInput as exc:
            raise BadInput(self._named(exc.message)) from None

    def _named(self, message: str) -> str:
        return (message.replace("--command-config", f"--{self.role}-command-config")
                .replace("--bootstrap-server", f"--{self.role}-bootstrap")
                .replace(" (or a playbook with kafka.bootstrap_servers)", ""))


@dataclass(frozen=True)
class Request:
    source: Side
    target: Side
    topics: str | None = None
    groups: str | None = None


def read_plan(req: Request) -> MirrorPlan:
    """Read both clusters and plan (refusals are :class:`BadInput`; nothing is changed)."""
    wanted = compile_filter(req.topics, "--topics").fullmatch
    compile_filter(req.groups, "--groups")
    src_settings, tgt_settings = req.source.settings(), req.target.settings()
    source = MirrorCluster(src_settings, "source").read(configs_of=wanted)
    target = MirrorCluster(tgt_settings, "target").read(with_groups=False, with_acls=False, configs_of=wanted)
    return plan_mirror(source, target, req.topics, req.groups)


@dataclass
class CreateResult:
    created: list[str] = field(default_factory=list)
    would_create: list[str] = field(default_factory=list)
    existing: list[str] = field(default_factory=list)
    differences: dict[str, dict[str, tuple[str | None, str | None]]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"created": self.created, "would_create": self.would_create, "existing": self.existing,
                "config_differences": {t: {k: {"source": s, "target": v} for k, (s, v) in d.items()}
                                       for t, d in self.differences.items()},
                "warnings": self.warnings}


def create_topics(req: Request, plan: MirrorPlan, dry_run: bool = False, engine: str | None = None,
                  consumer_group: str | None = None) -> CreateResult:
    """Create the plan's missing topics on the target (same partitions, capped replication factor, the
    source's effective non-default configs); report config differences of topics that exist.

    First, every right this needs on both clusters, and with ``engine`` the rights of the MirrorMaker
    about to start with the same settings (BadInput naming the first missing one: nothing created,
    nothing started; a dry run lists them as warnings). Rights on topics not created yet that the
    brokers could not answer for are asked again right after they are created."""
    result = CreateResult(warnings=plan.warnings)
    for t in plan.topics:
        if t.to_create:
            (result.would_create if dry_run else result.created).append(t.name)
        else:
            result.existing.append(t.name)
            if t.config_differences:
                result.differences[t.name] = t.config_differences
    source = MirrorCluster(req.source.settings(), "source")
    target = MirrorCluster(req.target.settings(), "target")
    book = MirrorBook(target, plan.source.cluster_id, plan.target.cluster_id)
    on_target = _check_rights(source, target, plan, book.exists(), engine, consumer_group,
                              warn=result.warnings.append if dry_run else None)
    if dry_run or not result.created:
        return result
    specs = [(t.name, t.source.partitions, t.create_replication_factor, t.create_configs) for t in plan.to_create()]
    target.create_topics(specs)
    require_after_create(target.admin, target.settings, [n for n in on_target if n.resource.name in result.created])
    book.append("mirror-step", "topics-created", step="topics-created",
                topics={name: {"partitions": n, "replication_factor": rf, "configs": c} for name, n, rf, c in specs})
    return result


def _check_rights(source: MirrorCluster, target: MirrorCluster, plan: MirrorPlan, book_exists: bool,
                  engine: str | None, consumer_group: str | None, warn=None) -> list[Need]:
    """What :func:`create_topics` and the MirrorMaker after it need (see :func:`mirror_needs`); the target's needs."""
    on_source, on_target = mirror_needs(
        [t.name for t in plan.topics], [t.name for t in plan.to_create()], plan.groups, engine,
        {name: name in plan.target.topics for name in INTERNAL_TOPICS}, MIRROR_TOPIC, book_exists,
        consumer_group or (WORKER_GROUP if engine == "mirrormaker2" else None))
    require(source.admin, source.settings, on_source, warn=warn)
    require(target.admin, target.settings, on_target, warn=warn)
    return on_target


class MirrorBook:
    """The bookkeeping of one mirror (source cluster -> target cluster) in :data:`MIRROR_TOPIC` on the
    target: what ``kmigrate mirror`` did, read back by ``status`` and by a re-run of ``cutover``."""

    def __init__(self, target: MirrorCluster, source_id: str, target_id: str | None = None):
        self.target = target
        self.topic = BookkeepingTopic(target.settings, MIRROR_TOPIC)
        self.plan_id = mirror_plan_id(source_id, target_id or target.cluster_id())

    def exists(self) -> bool:
        return self.topic.exists(self.target.admin)

    def values(self) -> list[dict]:
        """Every record value of this mirror, in order (``[]`` before the first)."""
        return [dict(r.value) for r in self.topic.read().records if r.value.get("plan_id") == self.plan_id]

    def append(self, kind: str, subject: str, **fields) -> dict:
        """Write one record (``acks=all``, waited for); the topic is created on first use."""
        if not self.exists():
            self.topic.ensure(self.target.admin, self.target.broker_ids())
        rec = make_record(self.plan_id, kind, subject, time.time(), **fields)
        self.topic.append([rec])
        return dict(rec.value)


@dataclass(frozen=True)
class StartResult:
    pid: int
    already_running: bool
    properties: Path
    log: Path
    topics: CreateResult | None

    def to_dict(self) -> dict:
        return {"pid": self.pid, "already_running": self.already_running, "properties": str(self.properties),
                "log": str(self.log), "topics": None if self.topics is None else self.topics.to_dict()}


def start(req: Request, state_dir: Path, heap_mb: int = 1024, tasks: int = 2) -> StartResult:
    """Plan, create the target's topics, write ``mm2.properties`` and start MirrorMaker 2 (once)."""
    mm = MirrorMakerProcess(state_dir)
    running = mm.pid()
    plan = read_plan(req)
    props = mm2_properties(plan, req.source.java_properties(), req.target.java_properties(),
                           rest_port=free_port(), tasks=tasks)
    text = render_properties(props, "Written by kmigrate mirror start: regenerated at every start, do not edit.")
    if running is not None:
        old = mm.read_properties() or ""
        if not same_configuration(old, text):
            raise BadInput(f"MirrorMaker 2 is already running (pid {running}) from {state_dir} with another "
                           "configuration: run kmigrate mirror stop first, then start again")
        return StartResult(running, True, mm.properties_path, mm.log_path, None)
    topics = create_topics(req, plan, engine="mirrormaker2")
    mm.write_properties(text)
    mm.write_state({"source_bootstrap": req.source.bootstrap, "target_bootstrap": req.target.bootstrap,
                    "source_command_config": req.source.command_config,
                    "target_command_config": req.target.command_config,
                    "topics": {t.name: t.source.partitions for t in plan.topics}, "groups": plan.groups_filter})
    log_from = mm.log_size()
    pid = mm.start(heap_mb)
    if not mm.alive_after(pid, 5.0):
        tail = " | ".join(mm.log_tail(3)) or "no output"
        raise StepFailed(f"MirrorMaker 2 exited at start (see {mm.log_path}): {tail}")
    _refuse_if_refused(mm, req.target.settings(), log_from)
    MirrorBook(MirrorCluster(req.target.settings(), "target"), plan.source.cluster_id, plan.target.cluster_id).append(
        "mirror-step", "mirrormaker-started", step="mirrormaker-started", pid=pid, host=socket.gethostname(),
        state_dir=str(state_dir), topics=sorted(t.name for t in plan.topics))
    return StartResult(pid, False, mm.properties_path, mm.log_path, topics)


def _refuse_if_refused(mm: MirrorMakerProcess, target: ClientSettings, log_from: int, timeout_s: float = 30.0) -> None:
    """Wait (at most ``timeout_s``) until MirrorMaker 2's worker has started what it was given; if it
    logged a refused right by then (one kmigrate could not ask the brokers about first: the transactional
    ids of its exactly-once), stop it and say which right and how to grant it (StepFailed). Only what
    this start logged counts (``log_from``: the log's size before it)."""
    poll(lambda: STARTED_MARKER in mm.log_text(log_from) or authorization_refusals(mm.log_text(log_from)),
         timeout_s=timeout_s, interval_s=0.5)
    refusals = authorization_refusals(mm.log_text(log_from))
    if refusals:
        mm.stop()
        raise StepFailed(refusal_message(refusals, str(mm.log_path), principal_of(target.settings),
                                         target.bootstrap_servers))


def stop(state_dir: Path, timeout_s: float = 30.0):
    """Stop the MirrorMaker of ``state_dir`` (SIGTERM, wait, SIGKILL); a :class:`StopResult`. The stop
    is recorded in the bookkeeping when both clusters answer (a stop never fails for want of them)."""
    result = MirrorMakerProcess(state_dir).stop(timeout_s)
    if result.pid is not None:
        try:
            source, target, _, _ = resolve_sides(state_dir, None, None)
            src = MirrorCluster(source.settings(), "source", timeout_s=5.0)
            MirrorBook(MirrorCluster(target.settings(), "target", timeout_s=5.0), src.cluster_id()).append(
                "mirror-step", "mirrormaker-stopped", step="mirrormaker-stopped", pid=result.pid, how=result.how,
                host=socket.gethostname())
        except KmigrateError:
            pass
    return result


def resolve_sides(state_dir: Path, source: Side | None, target: Side | None) -> tuple[Side, Side, dict[str, int] | None, str]:
    """Both sides for ``status``: the flags given, else what ``start`` recorded in ``state_dir``."""
    state = MirrorMakerProcess(state_dir).read_state() or {}
    if source is None and state.get("source_bootstrap"):
        source = Side(state["source_bootstrap"], state.get("source_command_config"), "source")
    if target is None and state.get("target_bootstrap"):
        target = Side(state["target_bootstrap"], state.get("target_command_config"), "target")
    if source is None or target is None:
        raise BadInput(f"no mirror was started from {state_dir}: give --source-bootstrap and --target-bootstrap "
                       "(or the --state-dir of kmigrate mirror start)")
    return source, target, state.get("topics"), state.get("groups") or ".*"


def status(state_dir: Path, source: Side | None = None, target: Side | None = None,
           topics_filter: str | None = None, with_groups: bool = True) -> MirrorStatus:
    """Per source partition the lag in records (source end vs MirrorMaker's stored position in its
    Connect offsets topic on the target), the tasks' states, the process; per consumer group its
    committed offset on the source and the translated ones (checkpoints, and committed on the target)."""
    topic_re = compile_filter(topics_filter, "--topics")
    source, target, recorded, groups_filter = resolve_sides(state_dir, source, target)
    src = MirrorCluster(source.settings(), "source")
    tgt = MirrorCluster(target.settings(), "target")
    if recorded is None:
        recorded = {n: c for n, c in src.topic_partitions().items() if not is_internal_topic(n)}
    recorded = {n: c for n, c in recorded.items() if topic_re.fullmatch(n)}
    ends = src.end_offsets(recorded)
    positions = mirrored_positions(tgt.read_topic(CONNECT_OFFSETS_TOPIC))
    lagging = {lag.key: lag.next_offset for lag in partition_lags(ends, positions) if lag.lag > 0}
    next_times = src.next_record_times(lagging, {tp: ends[tp][1] for tp in lagging})
    now_ms = int(time.time() * 1000)
    tasks = task_states(tgt.read_topic(CONNECT_STATUS_TOPIC))
    mm = MirrorMakerProcess(state_dir)
    pid = mm.pid()
    process = {"running": pid is not None, "pid": pid, "state_dir": str(state_dir), "log": str(mm.log_path)}
    if not with_groups:  # the quick look of a wait
        return MirrorStatus(process, partition_lags(ends, positions, next_times, now_ms), tasks)
    lags = partition_lags(ends, positions, next_times, now_ms)
    groups = _group_offsets(src, tgt, groups_filter, set(recorded), {p.key: p.source_end for p in lags if p.lag == 0})
    from migrate.core.mirror.cutover import mirror_history

    book = MirrorBook(tgt, src.cluster_id())
    history = mirror_history(book.values()) if book.exists() else mirror_history([])
    return MirrorStatus(process, lags, tasks, groups, _config_differences(src, tgt, sorted(recorded)),
                        _heartbeat_age(tgt), history)


def _config_differences(src: MirrorCluster, tgt: MirrorCluster, topics: list[str]) -> dict:
    """topic -> its config differences (kmigrate owns configs: MirrorMaker's config sync is off)."""
    sources, targets = src.topic_configs(topics), tgt.topic_configs([t for t in topics if t in tgt.topic_partitions()])
    out = {}
    for t in topics:
        if t in targets:
            diff = config_differences(TopicReading(t, 0, 0, *sources[t]), TopicReading(t, 0, 0, *targets[t]))
            if diff:
                out[t] = diff
    return out


def _heartbeat_age(tgt: MirrorCluster) -> float | None:
    import time

    stamps = [heartbeat_timestamp(v) for _, v in tgt.read_topic(HEARTBEATS_TOPIC, last=20)]
    newest = max((s for s in stamps if s is not None), default=None)
    return None if newest is None else max(0.0, time.time() - newest / 1000)


def _group_offsets(src: MirrorCluster, tgt: MirrorCluster, groups_filter: str, topics: set[str],
                   copied: dict[tuple[str, int], int]) -> tuple[GroupOffset, ...]:
    """Each group's partitions: committed on the source, MirrorMaker's checkpoint, committed on the
    target, and (partitions copied to their end: ``copied`` = their source end) the duplicates."""
    group_re = compile_filter(groups_filter, "--groups")
    checkpoints = latest_checkpoints(tgt.read_topic(CHECKPOINTS_TOPIC))
    target_ends = {tp: e for tp, (_s, e) in tgt.end_offsets({t: 1 + max(p for tt, p in copied if tt == t)
                                                              for t in {t for t, _ in copied}}).items()}
    out: list[GroupOffset] = []
    for group in (g for g in src.groups() if group_re.fullmatch(g)):
        committed = {tp: o for tp, o in src.committed_offsets(group, []).items() if tp[0] in topics}
        if not committed:
            continue
        on_target = tgt.committed_offsets(group, sorted(committed))
        starts = {tp: on_target.get(tp, checkpoints.get((group, *tp), (0, None))[1]) for tp in committed}
        countable = {tp: o for tp, o in starts.items() if o is not None and tp in copied and tp in target_ends}
        src_after = src.count_records({tp: (committed[tp], copied[tp]) for tp in countable})
        tgt_after = tgt.count_records({tp: (o, target_ends[tp]) for tp, o in countable.items()})
        for (topic, partition), offset in sorted(committed.items()):
            cp = checkpoints.get((group, topic, partition))
            tp = (topic, partition)
            out.append(GroupOffset(group, topic, partition, offset, None if cp is None else cp[0],
                                   None if cp is None else cp[1], on_target.get(tp),
                                   tgt_after[tp] - src_after[tp] if tp in countable else None))
    return tuple(out)


def wait_caught_up(state_dir: Path, source: Side | None, target: Side | None, topics_filter: str | None,
                   timeout_s: float, interval_s: float = 2.0, on_status=lambda s: None) -> tuple[bool, MirrorStatus]:
    """Read :func:`status` every ``interval_s`` until every partition's lag is 0 or ``timeout_s``
    passes: ``(caught up, the last status)`` (the last one with the consumer groups)."""
    from migrate.waiting import poll

    def check() -> MirrorStatus | None:
        current = status(state_dir, source, target, topics_filter, with_groups=False)
        on_status(current)
        return current if current.caught_up else None

    done = poll(check, timeout_s=timeout_s, interval_s=interval_s)
    return done is not None, status(state_dir, source, target, topics_filter)
