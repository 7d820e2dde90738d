"""The MirrorMaker 1 engine of ``kmigrate mirror`` (``--engine mirrormaker1``): N MirrorMaker 1
processes sharing one consumer group on the source, started, stopped and watched; it keeps no consumer
offsets, so the cut-over translates them with kmigrate's own translation (``runner/mirror/translate.py``).

Kill-safety: ``start`` plans (reads only), creates the missing topics (idempotent), writes the
properties and ``mirror.json`` (which names the engine), then starts each instance and writes its pid;
an instance whose pid file was never written is found by its command line. A rerun starts only the
instances not running.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from migrate.adapters.kafka import translation as reads
from migrate.adapters.mirrormaker.mm1 import PRODUCER_FILE, MirrorMaker1Process, instance_indexes, wait_alive
from migrate.adapters.mirrormaker.mm2 import MirrorMakerProcess
from migrate.adapters.processes import StopResult
from migrate.core.mirror.cutover import Translation
from migrate.core.mirror.mm1 import (DEFAULT_GROUP, DEPRECATION, ENGINE, PARTITIONING, GroupLag, arguments, check_instances,
                                     consumer_properties, duplicates_note, group_lags, producer_properties)
from migrate.core.mirror.plan import MirrorPlan, render_properties
from migrate.core.mirror.rights import Needs, mm1_needs
from migrate.core.mirror.status import GroupCopy, MirrorStatus
from migrate.errors import BadInput, StepFailed
from migrate.files import write_private
from migrate.runner.mirror.clusters import Clusters, Request, Started, read_plan
from migrate.runner.mirror.engine import TP, Engine, Say
from migrate.runner.mirror.topics import CreateResult, create_topics
from migrate.runner.mirror.translate import cutover_translations, mirror_group
from migrate.waiting import Clock

HEADER = "Written by kmigrate mirror start --engine mirrormaker1: regenerated at every start, do not edit."


def _procs(state_dir: Path, count: int | None = None) -> list[MirrorMaker1Process]:
    indexes = list(range(count)) if count is not None else instance_indexes(state_dir)
    return [MirrorMaker1Process(state_dir, i) for i in indexes]


@dataclass(frozen=True)
class Start1Result:
    pids: list[int]
    started: list[int]  # instance indexes started now
    group: str
    include: str
    topics: CreateResult | None
    log: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"engine": ENGINE, "pids": self.pids, "pid": self.pids[0] if self.pids else None,
                "started": self.started, "already_running": not self.started, "group": self.group,
                "include": self.include, "logs": self.log,
                "topics": None if self.topics is None else self.topics.to_dict()}

    def lines(self) -> list[str]:
        pids = ", ".join(map(str, self.pids))
        if not self.started:
            return [f"MirrorMaker 1 is already running (pids {pids}) with this configuration: nothing started"]
        return [f"MirrorMaker 1 started: {len(self.pids)} instance(s), pids {pids}, consumer group {self.group} on the "
                f"source, topics {self.include}; logs {', '.join(self.log)}"]


@dataclass(frozen=True)
class Stop1Report:
    results: list[StopResult]

    def to_dict(self) -> dict:
        return {"engine": ENGINE, "instances": [
            {"pid": r.pid, "how": r.how, "waited_s": round(r.waited_s, 1)} for r in self.results]}

    def lines(self) -> list[str]:
        out = [] if any(r.pid for r in self.results) else ["MirrorMaker 1 is not running: nothing to stop"]
        for r in self.results:
            if r.pid is None:
                continue
            how = "stopped cleanly after SIGTERM" if r.how == "SIGTERM" else "did not stop after SIGTERM: killed (SIGKILL)"
            out.append(f"MirrorMaker 1 (pid {r.pid}) {how} in {r.waited_s:.1f} s")
        return out


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


class MirrorMaker1(Engine):
    """Kafka's legacy ``kafka.tools.MirrorMaker`` (deprecated since Kafka 3.0, removed in 4.0)."""

    name = ENGINE
    exactly_once = False
    label = "MirrorMaker 1"
    notices = (DEPRECATION, PARTITIONING)
    live_progress = False  # a wait prints a line per look, as kafka-consumer-groups would

    def check_options(self, instances: int = 1) -> None:
        check_instances(instances)

    def needs(self, plan: MirrorPlan, group: str | None = None) -> Needs:
        return mm1_needs([t.name for t in plan.topics], [t.name for t in plan.to_create()], group)

    def refuse_if_running(self, state_dir: Path) -> None:
        """A running MirrorMaker 1 would be left unmanaged by another engine started from ``state_dir``."""
        running = [p.index for p in _procs(state_dir) if p.pid() is not None]
        if running:
            raise BadInput(f"MirrorMaker 1 runs from {state_dir} (instances {running}): run kmigrate mirror stop first, "
                           "or give another --state-dir")

    def start(self, req: Request, state_dir: Path, *, heap_mb: int, tasks: int = 2, instances: int = 1,
              group: str = DEFAULT_GROUP) -> Start1Result:
        """Plan, create the target's topics, write the properties and start the instances not running."""
        state = MirrorMakerProcess(state_dir).read_state() or {}
        clusters = Clusters(req.source, req.target)
        plan = read_plan(req, clusters)  # refuses a --topics that matches no topic
        include = plan.topic_filter()
        procs = _procs(state_dir, instances)
        extra = [p for p in _procs(state_dir) if p.index >= instances and p.pid() is not None]
        if extra:
            raise BadInput(f"{len(extra) + instances} MirrorMaker 1 instances run from {state_dir}: run kmigrate mirror "
                           f"stop first to change --instances to {instances}")
        topics = create_topics(clusters, plan, engine_needs=self.needs(plan, group))
        consumer = render_properties(consumer_properties(req.source.bootstrap, clusters.java_properties("source"), group),
                                     HEADER)
        producer = render_properties(producer_properties(req.target.bootstrap, clusters.java_properties("target")), HEADER)
        # MirrorMaker 1's start records its instances (MirrorMaker 2's does not): an earlier run of these instances
        unclean = _record_unclean(state_dir, procs) if "instances" in state else []
        MirrorMakerProcess(state_dir).write_state({
            "engine": self.name, "source_bootstrap": req.source.bootstrap, "target_bootstrap": req.target.bootstrap,
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

    def stop(self, state_dir: Path, timeout_s: float = 30.0) -> Stop1Report:
        """Stop every MirrorMaker 1 instance of ``state_dir`` (SIGTERM, wait, SIGKILL)."""
        procs = _procs(state_dir)
        results = [p.stop(timeout_s) for p in procs]
        _record_unclean(state_dir, procs)
        return Stop1Report(results)

    def read_status(self, mirror: Started, topic_re: re.Pattern[str], quick: bool = False) -> MirrorStatus:
        """MirrorMaker 1's group on the source per partition (current offset, log end, lag, owner), the
        time lag (newest timestamps on both sides), the processes, and any unclean stop (duplicates).
        Its quick look is the whole look."""
        state = MirrorMakerProcess(mirror.state_dir).read_state() or {}
        group = state.get("group") or DEFAULT_GROUP
        procs = _procs(mirror.state_dir)
        unclean = _record_unclean(mirror.state_dir, procs)
        src, tgt = mirror.clusters.source, mirror.clusters.target
        recorded = {n: c for n, c in (mirror.topics or {}).items() if topic_re.fullmatch(n)}
        ends = src.end_offsets(recorded)
        committed = src.committed_offsets(group, sorted(ends))
        owners = src.group_members(group).owners
        on_target = tgt.topic_partitions()
        src_ts = reads.newest_timestamps(src, sorted(ends))
        tgt_ts = reads.newest_timestamps(tgt, [tp for tp in sorted(ends) if tp[1] < on_target.get(tp[0], 0)])
        time_lags = {tp: max(0, ts - tgt_ts.get(tp, 0)) if tp in tgt_ts else None for tp, ts in src_ts.items()}
        instances = tuple({"index": p.index, "running": (pid := p.pid()) is not None, "pid": pid, "log": str(p.log_path)}
                          for p in procs)
        note = duplicates_note(unclean)
        return MirrorStatus(self.label, instances, group_lags(ends, committed, owners, time_lags), GroupLag.COLUMNS,
                            (note,) if note else (), group_copy=GroupCopy(self.name, group, tuple(unclean)))

    def next_to_copy(self, mirror: Started, ends: dict[TP, tuple[int, int]]) -> dict[TP, int]:
        """Its consumer group's committed offsets on the source."""
        committed = mirror.clusters.source.committed_offsets(mirror_group(mirror.state_dir), sorted(ends))
        return {lag.topic_partition: lag.current_offset or lag.log_start for lag in group_lags(ends, committed) if lag.lag}

    def translate_offsets(self, mirror: Started, topics: dict[str, int], groups: tuple[str, ...],
                          committed: dict[str, dict[TP, int]], timeout_s: float, say: Say,
                          clock: Clock) -> list[Translation]:
        """No checkpoints: kmigrate's own translation (timestamp, then content)."""
        return cutover_translations(mirror.clusters.source, mirror.clusters.target, mirror.state_dir, groups, committed)

    def connect_configs(self, req: Request, tasks: int, out: Path | None):
        raise BadInput("--connect-config prints MirrorMaker 2 connectors: leave --engine mirrormaker1 out")
