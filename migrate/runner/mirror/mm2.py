"""The MirrorMaker 2 engine of ``kmigrate mirror`` (the default): a dedicated MirrorMaker 2 started,
stopped and watched, and what the cut-over reads of it (its stored positions, checkpoints and
offset-syncs on the target).

Killing any of these at any line is safe: the plan only reads; topic creation leaves existing topics
as they are (a rerun creates what is missing); ``start`` writes the properties, then the process,
then its pid (a MirrorMaker whose pid file was never written is found by its command line).
"""

from __future__ import annotations

import re
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from migrate.adapters.kafka.mirror import MirrorCluster
from migrate.adapters.mirrormaker.mm2 import MirrorMakerProcess, free_port
from migrate.adapters.processes import StopResult
from migrate.core.clientconfig import ClientSettings
from migrate.core.mirror.cutover import Translation, choose_offset, exact_offset, mirror_history, offset_syncs
from migrate.core.mirror.plan import (CHECKPOINTS_TOPIC, CONNECT_OFFSETS_TOPIC, CONNECT_STATUS_TOPIC, HEARTBEATS_TOPIC,
                                      INTERNAL_TOPICS, OFFSET_SYNCS_TOPIC, STARTED_MARKER, WORKER_GROUP, MirrorPlan,
                                      TopicReading, authorization_refusals, compile_filter, config_differences,
                                      heartbeat_timestamp, is_internal_topic, latest_checkpoints, mirrored_positions,
                                      mm2_properties, render_properties, same_configuration, target_topic, task_states)
from migrate.core.mirror.rights import Needs, mm2_needs, refusal_message
from migrate.core.mirror.status import ConnectState, GroupOffset, MirrorStatus, PartitionLag, partition_lags
from migrate.core.mirror.translation import PartitionTranslation, translate as translate_partition
from migrate.core.permissions import principal_of
from migrate.errors import BadInput, KmigrateError, StepFailed
from migrate.runner.mirror.clusters import Clusters, Request, Started, read_plan
from migrate.runner.mirror.connect import ConnectConfigs, connect_configs
from migrate.runner.mirror.engine import TP, Engine, Say
from migrate.runner.mirror.topics import CreateResult, create_topics, record_created
from migrate.runner.mirror.translate import content_facts
from migrate.waiting import Clock, poll

CONTENT_WINDOW = 10000  # target records read per partition, at most, to find the copy of a group's next record
HEADER = "Written by kmigrate mirror start: regenerated at every start, do not edit."


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

    def lines(self) -> list[str]:
        if self.already_running:
            return [f"MirrorMaker 2 is already running (pid {self.pid}) with this configuration: nothing started"]
        return [f"MirrorMaker 2 started (pid {self.pid}); configuration {self.properties}, log {self.log}"]


@dataclass(frozen=True)
class StopReport:
    result: StopResult

    def to_dict(self) -> dict:
        r = self.result
        return {"pid": r.pid, "how": r.how, "waited_s": round(r.waited_s, 1)}

    def lines(self) -> list[str]:
        r = self.result
        if r.pid is None:
            return ["MirrorMaker 2 is not running: nothing to stop"]
        if r.how == "SIGTERM":
            return [f"MirrorMaker 2 (pid {r.pid}) stopped cleanly after SIGTERM in {r.waited_s:.1f} s"]
        return [f"MirrorMaker 2 (pid {r.pid}) did not stop after SIGTERM: killed (SIGKILL) after {r.waited_s:.1f} s"]


class MirrorMaker2(Engine):
    """A dedicated MirrorMaker 2 (``--clusters target``) with kmigrate's ``mm2.properties``."""

    name = "mirrormaker2"
    label = "MirrorMaker 2"
    cutover_reads = (CONNECT_OFFSETS_TOPIC, CHECKPOINTS_TOPIC, OFFSET_SYNCS_TOPIC)

    def needs(self, plan: MirrorPlan, group: str | None = None) -> Needs:
        return mm2_needs([t.name for t in plan.topics], [t.name for t in plan.to_create()], plan.groups,
                         {name: name in plan.target.topics for name in INTERNAL_TOPICS}, group or WORKER_GROUP)

    def refuse_if_running(self, state_dir: Path) -> None:
        if MirrorMakerProcess(state_dir).pid() is not None:
            raise BadInput(f"a MirrorMaker 2 runs from {state_dir}: run kmigrate mirror stop first, or give another --state-dir")

    def start(self, req: Request, state_dir: Path, *, heap_mb: int, tasks: int = 2, instances: int = 1) -> StartResult:
        """Plan, create the target's topics, write ``mm2.properties`` and start MirrorMaker 2 (once)."""
        mm = MirrorMakerProcess(state_dir)
        running = mm.pid()
        clusters = Clusters(req.source, req.target)
        plan = read_plan(req, clusters)
        props = mm2_properties(plan, clusters.java_properties("source"), clusters.java_properties("target"),
                               rest_port=free_port(), tasks=tasks)
        text = render_properties(props, HEADER)
        if running is not None:
            old = mm.read_properties() or ""
            if not same_configuration(old, text):
                raise BadInput(f"MirrorMaker 2 is already running (pid {running}) from {state_dir} with another "
                               "configuration: run kmigrate mirror stop first, then start again")
            return StartResult(running, True, mm.properties_path, mm.log_path, None)
        topics = create_topics(clusters, plan, engine_needs=self.needs(plan), record=False)
        mm.write_properties(text)
        mm.write_state({"source_bootstrap": req.source.bootstrap, "target_bootstrap": req.target.bootstrap,
                        "source_command_config": req.source.command_config,
                        "target_command_config": req.target.command_config,
                        "topics": {t.name: t.source.partitions for t in plan.topics}, "groups": plan.groups_filter})
        log_from = mm.log_size()
        pid = mm.start(heap_mb)
        # while its JVM starts (seconds): the record of the topics created (the bookkeeping topic's first write)
        try:
            record_created(clusters, plan, topics)
        except BaseException:
            mm.stop()
            raise
        if not mm.alive_after(pid, 5.0):
            tail = " | ".join(mm.log_tail(3)) or "no output"
            raise StepFailed(f"MirrorMaker 2 exited at start (see {mm.log_path}): {tail}")
        _refuse_if_refused(mm, clusters.settings("target"), log_from)
        clusters.book(plan.source.cluster_id, plan.target.cluster_id).append(
            "mirror-step", "mirrormaker-started", step="mirrormaker-started", pid=pid, host=socket.gethostname(),
            state_dir=str(state_dir), topics=sorted(t.name for t in plan.topics))
        return StartResult(pid, False, mm.properties_path, mm.log_path, topics)

    def stop(self, state_dir: Path, timeout_s: float = 30.0) -> StopReport:
        """Stop the MirrorMaker of ``state_dir`` (SIGTERM, wait, SIGKILL). The stop is recorded in the
        bookkeeping when both clusters answer (a stop never fails for want of them)."""
        result = MirrorMakerProcess(state_dir).stop(timeout_s)
        if result.pid is not None:
            try:
                Started.open(state_dir, timeout_s=5.0).clusters.book().append(
                    "mirror-step", "mirrormaker-stopped", step="mirrormaker-stopped", pid=result.pid, how=result.how,
                    host=socket.gethostname())
            except KmigrateError:
                pass
        return StopReport(result)

    def read_status(self, mirror: Started, topic_re: re.Pattern[str], quick: bool = False) -> MirrorStatus:
        """Per source partition the lag in records (source end vs MirrorMaker's stored position in its
        Connect offsets topic on the target), the tasks' states, the process; per consumer group its
        committed offset on the source and the translated ones (checkpoints, and committed on the target)."""
        src, tgt = mirror.clusters.source, mirror.clusters.target
        recorded = mirror.topics
        if recorded is None:
            recorded = {n: c for n, c in src.topic_partitions().items() if not is_internal_topic(n)}
        recorded = {n: c for n, c in recorded.items() if topic_re.fullmatch(n)}
        ends = src.end_offsets(recorded)
        positions = mirrored_positions(tgt.read_topic(CONNECT_OFFSETS_TOPIC))
        lagging = {lag.key: lag.next_offset for lag in partition_lags(ends, positions) if lag.lag > 0}
        next_times = src.next_record_times(lagging, {tp: ends[tp][1] for tp in lagging})
        now_ms = int(time.time() * 1000)
        tasks = task_states(tgt.read_topic(CONNECT_STATUS_TOPIC))
        mm = MirrorMakerProcess(mirror.state_dir)
        pid = mm.pid()
        process = {"running": pid is not None, "pid": pid, "state_dir": str(mirror.state_dir), "log": str(mm.log_path)}
        lags = partition_lags(ends, positions, next_times, now_ms)
        if quick:  # the quick look of a wait
            return MirrorStatus(self.label, (process,), lags, PartitionLag.COLUMNS, complete=False,
                                connect=ConnectState(tasks))
        groups = _group_offsets(src, tgt, mirror.groups_filter, set(recorded),
                                {p.key: p.source_end for p in lags if p.lag == 0})
        book = mirror.clusters.book()
        history = mirror_history(book.values()) if book.exists() else mirror_history([])
        return MirrorStatus(self.label, (process,), lags, PartitionLag.COLUMNS, connect=ConnectState(
            tasks, groups, _config_differences(src, tgt, sorted(recorded)), _heartbeat_age(tgt), history))

    def next_to_copy(self, mirror: Started, ends: dict[TP, tuple[int, int]]) -> dict[TP, int]:
        """MirrorMaker's stored positions (its Connect offsets on the target)."""
        positions = mirrored_positions(mirror.clusters.target.read_topic(CONNECT_OFFSETS_TOPIC))
        return {lag.key: lag.next_offset for lag in partition_lags(ends, positions) if lag.lag > 0}

    def translate_offsets(self, mirror: Started, topics: dict[str, int], groups: tuple[str, ...],
                          committed: dict[str, dict[TP, int]], timeout_s: float, say: Say,
                          clock: Clock) -> list[Translation]:
        """MirrorMaker's checkpoints and offset-syncs (:func:`migrate.core.mirror.cutover.choose_offset`),
        made exact by content (:func:`migrate.core.mirror.cutover.exact_offset`: the copy is complete at
        the switch). MirrorMaker's checkpoints of the groups' last commits are waited for (up to 3
        checkpoint intervals) only where content cannot decide."""
        src, tgt = mirror.clusters.source, mirror.clusters.target
        # MirrorMaker's own offsets first: an exactly-once copy's are safe lower bounds of the copies, from
        # which content is read (content_facts: the timestamp bound is loose behind commit markers)
        first = _translate_once(mirror.clusters, topics, groups, committed)
        safe: dict[tuple[str, TP], int] = {(t.group, t.key): t.offset for t in first if t.offset is not None}
        content: dict[tuple[str, str, int], PartitionTranslation] = {}

        def facts_of(group: str) -> dict:  # each group's reads wait on the network: the groups read together
            lower = {tp: o for (g, tp), o in safe.items() if g == group}
            return content_facts(src, tgt, group, committed[group], CONTENT_WINDOW, target_topic, lower)

        with ThreadPoolExecutor(max_workers=max(1, min(4, len(groups)))) as pool:
            for group, facts in zip(groups, pool.map(facts_of, groups)):
                content.update({(group, *tp): translate_partition(group, *tp, f) for tp, f in facts.items()})
        latest: list[list[Translation]] = [[]]

        unread = [first]  # the first look reuses MirrorMaker's offsets read above; later ones read them again

        def exact() -> bool:
            mm = unread.pop() if unread else _translate_once(mirror.clusters, topics, groups, committed)
            latest[0] = [exact_offset(t, content.get((t.group, *t.key))) for t in mm]
            return all(t.how in ("content", "end", "log-start")
                       or (t.checkpoint is not None and t.checkpoint[0] == t.source_committed) for t in latest[0])

        if not poll(exact, timeout_s=min(16.0, timeout_s), interval_s=2.0, clock=clock):
            say("MirrorMaker has no checkpoint yet of some groups' last commit, and content did not decide: "
                "translating from its offset-syncs")
        return latest[0]

    def connect_configs(self, req: Request, tasks: int, out: Path | None) -> ConnectConfigs:
        return connect_configs(req, tasks, out)


def _refuse_if_refused(mm: MirrorMakerProcess, target: ClientSettings, log_from: int, timeout_s: float = 120.0) -> None:
    """Wait (at most ``timeout_s``: on a busy host its worker takes well over 30 s) until MirrorMaker 2's
    worker has started what it was given, or has exited; if it logged a refused right by then (one kmigrate
    could not ask the brokers about first: the transactional ids of its exactly-once), stop it and say which
    right and how to grant it (StepFailed). Only what this start logged counts (``log_from``: the log's size
    before it)."""
    poll(lambda: STARTED_MARKER in mm.log_text(log_from) or authorization_refusals(mm.log_text(log_from))
         or mm.pid() is None, timeout_s=timeout_s, interval_s=0.5)
    refusals = authorization_refusals(mm.log_text(log_from))
    if refusals:
        mm.stop()
        raise StepFailed(refusal_message(refusals, str(mm.log_path), principal_of(target.settings),
                                         target.bootstrap_servers))


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


def _translate_once(clusters: Clusters, topics: dict[str, int], groups: tuple[str, ...],
                    committed: dict[str, dict[TP, int]]) -> list[Translation]:
    src, tgt = clusters.source, clusters.target
    checkpoints = latest_checkpoints(tgt.read_topic(CHECKPOINTS_TOPIC))
    syncs = offset_syncs(tgt.read_topic(OFFSET_SYNCS_TOPIC))
    ends = {tp: end for tp, (_start, end) in src.end_offsets(topics).items()}
    target = tgt.end_offsets(topics)
    out = []
    for group in groups:
        for tp, offset in sorted(committed[group].items()):
            out.append(choose_offset(group, tp, offset, checkpoints.get((group, *tp)), syncs.get(tp, []),
                                     ends[tp], True, target[tp][1], target[tp][0]))
    return out
