"""Sequencer of ``kmigrate partitions``: move every topic to the new brokers, throttled, resumably.

The procedure, with what kmigrate adds (every decision is a pure function of core: moves,
scheduler, phases, throttles, ledger; this module only observes, asks, and acts; throttles are
kept by :mod:`migrate.runner.partitions.throttles`, ``--cancel`` is :mod:`migrate.runner.partitions.cancel` and
``kmigrate status`` :mod:`migrate.runner.partitions.status`):

1. the old -> new mapping is given (``--mapping``, a playbook or a plan);
2. every new broker is alive (else :class:`BadInput` naming it, unless ``--force``);
3. the bookkeeping topic is read from the beginning if it exists (a record kmigrate did not write:
   :class:`BadInput`); records of another plan id are reported, not trusted;
4. every topic but the bookkeeping topic is listed and filtered (``--topics`` / ``--exclude``);
   those not recorded by this plan are planned (:func:`migrate.core.partitions.moves.plan_targets`);
5. pre-checks before any change: no offline or under-replicated partition (unless ``--force``);
6. the bookkeeping topic is created if missing (replicas on new brokers only); throttles that an
   earlier run left behind are removed (only what kmigrate set, from its records);
7. then, every ``--poll-interval``: list reassignments, describe topics, measure new replicas;
   finished partitions are checked against their target; a topic whose partitions are all on
   target gets a preferred leader election, loses its throttles and is recorded; stalled
   replicas are reported (or cancelled with ``--on-stall cancel``); the scheduler admits more
   partitions under the per-broker and cluster caps, throttles are set first (recorded before
   they are set), the submission is recorded, then sent; reassignments already in flight are
   adopted;
8. when nothing is left, topics are listed again (topics created meanwhile) until none is new;
   the brokers' throttle rates are restored.

Throttles a move of kmigrate's still in flight needs are never removed: on every exit (done, an
error, SIGINT: exit 130, SIGTERM: exit 143) the run removes the throttles of topics whose moves are
over and keeps, recorded, those of moves in flight (:func:`migrate.runner.partitions.throttles.release_throttles`);
the exit message names what is still moving and the ``--resume`` / ``--cancel`` commands. After a
SIGKILL the next run adopts or removes them.

Overlapping runs: a run writes ``run`` records (started, a heartbeat every few seconds, ended) to the
bookkeeping topic. A run that finds another run alive (same host: its pid exists; another host: a
heartbeat younger than :data:`migrate.core.ledger.RUN_STALE_S`) refuses before changing anything
(exit 2), naming it. ``--cancel`` writes a ``cancel-requested`` record; a running run reads the
records written after its start on every look, stops submitting, lets ``--cancel`` revert its moves
and exits with :data:`EXIT_STOPPED` (3), saying who cancelled it.

Testing hook (:func:`migrate.runner.events.crash_point`): ``KMIGRATE_CRASH_AT=<point>[:<n>]``
makes the process SIGKILL itself the n-th time (default first) it reaches ``<point>``: ``after-throttle`` (throttles set, nothing submitted),
``after-submit`` (a reassignment submitted and recorded), ``after-complete-before-record`` (a
topic verified on target, not yet recorded). Used by the resume tests only.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import uuid
from datetime import datetime, timezone
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

from migrate.adapters.kafka.bookkeeping import BookkeepingTopic
from migrate.adapters.kafka.client import ReassignmentAdmin, transient_error
from migrate.core.clientconfig import ClientSettings
from migrate.core.ledger import RUN_HEARTBEAT_S, RUN_STALE_S, Ledger, Record, make_record
from migrate.core.partitions.mapping import select_topics
from migrate.core.model import Broker, Partition, Topic
from migrate.core.partitions.moves import (
    InFlight, PartitionMove, ReplicaKey, copied, errors_line, leader_not_preferred, partition_of, plan_targets,
)
from migrate.core.partitions.phases import (
    DEFAULT_POLL_INTERVAL_S, Decision, Rate, ReplicaProgress, TopicPhase, advance, decide, observe_progress,
    stalled_replicas,
)
from migrate.core.partitions.scheduler import SMALL_MOVE_SECONDS, Caps, schedule
from migrate.core.partitions.throttles import fill_throttle_lists
from migrate.core.units import format_bytes
from migrate.errors import BadInput, KmigrateError, StepFailed
from migrate.adapters.processes import pid_alive
from migrate.runner.partitions.cancel import send_cancels, wait_not_in_flight
from migrate.runner.events import (
    OMIT, Aborted, Adopted, BookkeepingCreated, Discovered, Emit, ForeignFinished, ForeignPlan, Held, IsrShort,
    LeadersNotPreferred, PartitionCancelled, PartitionDone, Progress, Resume, RunDone, Stall, StallCancelled, StallOver,
    RunStarted, Start, Stopped, Submitted, TopicCancelled, TopicDone, TopicGone, WaitingForeign, WarningEvent, WouldMove,
    WouldRecord, crash_point,
)
from migrate.core.permissions import bookkeeping_needs, partitions_needs
from migrate.runner.permissions import require, require_after_create
from migrate.runner.partitions.throttles import (
    Released, Throttles, ThrottleTally, clear_recorded_throttles, now_s, release_throttles, see_hidden_rates,
)
from migrate.waiting import SYSTEM_CLOCK, Clock, FakeClock, poll

Key = tuple[str, int]  # (topic, partition)


@dataclass(frozen=True)
class PartitionsRequest:
    """What the operator asked for (the command builds it from options, playbook or plan)."""

    client: ClientSettings
    mapping: Mapping[int, int]
    plan_id: str
    throttle_bytes_per_s: int
    bookkeeping_topic: str
    caps: Caps = field(default_factory=Caps)
    keep: tuple[int, ...] = ()
    plan_targets: Mapping[tuple[str, int], tuple[int, ...]] = field(default_factory=dict)
    include: re.Pattern[str] | None = None
    exclude: re.Pattern[str] | None = None
    poll_interval_s: float = DEFAULT_POLL_INTERVAL_S
    stall_timeout_s: float = 120.0
    on_stall: str = "report"  # report | cancel
    dry_run: bool = False
    force: bool = False
    resume: bool = False
    command: str = "kmigrate partitions"  # the command line to give again with --resume / --cancel
    zookeeper: str | None = None  # connect string (chroot included): broker rates Kafka before 2.8 hides
    zk_auth: tuple = ()  # its login (parse_auth)
    ignore_hidden_rates: bool = False  # go on without ZooKeeper on brokers before 2.8


EXIT_STOPPED = 3
"""Exit code of a run stopped by ``kmigrate partitions --cancel`` (its moves reverted)."""


class Interrupted(KmigrateError):
    """SIGINT (exit 130) or SIGTERM (exit 143): the message says what is left in flight."""

    kind = ""  # the message begins with "interrupted (SIGINT)": not an error of kmigrate's

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code


class StoppedByCancel(KmigrateError):
    """The run saw ``kmigrate partitions --cancel`` and stopped (exit :data:`EXIT_STOPPED`)."""

    exit_code = EXIT_STOPPED
    kind = ""  # the message begins with "stopped: kmigrate partitions --cancel ...": what the operator asked


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the run is, as Ctrl-C raises KeyboardInterrupt."""




UNANSWERED_LOOK_S = 300.0
"""How long the loop keeps looking while the cluster's answers time out, before it stops."""

NEW_TOPICS_PER_SUBMIT = 5
"""Topics whose throttle lists are first written in one submission (see ``_few_new_topics``)."""


# ==================================================================== the run


@dataclass
class _TopicRun:
    """One topic of the run: its phase, the partitions that must change, those done and cancelled."""

    name: str
    phase: TopicPhase = TopicPhase.pending
    moves: dict[int, PartitionMove] = field(default_factory=dict)  # every partition that must change
    done: set[int] = field(default_factory=set)
    started_s: float | None = None
    cancelled: set[int] = field(default_factory=set)


@dataclass
class _ClusterView:
    """The cluster as last looked at: live brokers (id -> host:port), brokers with racks, and each
    topic's ``min.insync.replicas``."""

    live: dict[int, str] = field(default_factory=dict)
    brokers: list[Broker] = field(default_factory=list)
    min_isr: dict[str, int] = field(default_factory=dict)


@dataclass
class _Flights:
    """Reassignments in flight as this run knows them: ``ours`` (submitted or adopted), ``foreign``
    (to another target: waited for, then planned again), ``suspect`` (ours, not listed and not on
    target: since when) and the partitions found ``cancelled``."""

    ours: dict[Key, PartitionMove] = field(default_factory=dict)
    foreign: dict[Key, InFlight] = field(default_factory=dict)
    suspect: dict[Key, float] = field(default_factory=dict)
    cancelled: list[Key] = field(default_factory=list)

    def of_topic(self, topic: str) -> list[PartitionMove]:
        return [m for k, m in self.ours.items() if k[0] == topic]


@dataclass
class _CopyWatch:
    """Bytes copied by the replicas being added: sizes, per-replica progress, stalls reported, the
    rate; ``measured_at``: when sizes were last asked for."""

    sizes: dict[ReplicaKey, int] = field(default_factory=dict)
    progress: dict[ReplicaKey, ReplicaProgress] = field(default_factory=dict)
    reported_stalls: set[ReplicaKey] = field(default_factory=set)
    measured_at: float = float("-inf")
    rate: Rate = field(default_factory=Rate)


@dataclass
class _Reported:
    """Partitions already reported as held (short ISR before a move) or short of ISR while moving,
    so each is said once until it recovers."""

    held: set[Key] = field(default_factory=set)
    isr: set[Key] = field(default_factory=set)


class PartitionMover:
    """One run of ``kmigrate partitions`` (see the module docstring).

    Its state is a few objects, each owning one concern: :attr:`topics` (each topic's phase and
    moves), :attr:`flights` (what is moving), :attr:`view` (the cluster as last seen),
    :attr:`watch` (bytes copied, stalls), :attr:`reported`, :attr:`throttles` (what kmigrate set);
    plus the run's :attr:`recorded` topics, :attr:`dirty` topics (throttle lists to update) and
    :attr:`halted` (why nothing more is submitted)."""

    def __init__(self, request: PartitionsRequest, emit: Emit, admin: ReassignmentAdmin | None = None,
                 clock: Clock | FakeClock = SYSTEM_CLOCK):
        if request.caps.small_move_bytes is None:  # small: what the throttle copies in SMALL_MOVE_SECONDS
            request = replace(request, caps=replace(
                request.caps, small_move_bytes=int(request.throttle_bytes_per_s * SMALL_MOVE_SECONDS)))
        self.rq = request
        self.emit = emit
        self.clock = clock
        self.admin = admin or ReassignmentAdmin(request.client)
        self.book = BookkeepingTopic(request.client, request.bookkeeping_topic)
        self.throttles = Throttles(self.admin, self.book, request.plan_id, request.throttle_bytes_per_s, emit,
                                   request.caps.throttle_chars)
        self.topics: dict[str, _TopicRun] = {}
        self.flights = _Flights()
        self.view = _ClusterView()
        self.watch = _CopyWatch()
        self.reported = _Reported()
        self.recorded: set[str] = set()
        self.submitted_targets: dict[Key, tuple[int, ...]] = {}  # what this plan's earlier runs submitted
        self.started_s = 0.0
        self.changed = False  # set once kmigrate may have changed the cluster
        self.halted: str | None = None  # why no more work is submitted (a --cancel from outside)
        self.dirty: set[str] = set()  # topics whose moves in flight changed: throttle lists to update
        self.run_id = uuid.uuid4().hex[:12]
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.beat_s: float | None = None  # when this run's last ``run`` record was written (None: not yet)
        self.cancel_seen: Record | None = None  # a ``cancel-requested`` record written after this run began
        self.started_at = ""  # ISO 8601, UTC: when this run began (its ``run`` records)
        self.migration: tuple[str, ...] = (request.plan_id,)  # plan ids naming this migration (same mapping)

    # ------------------------------------------------------------------ public
    def run(self) -> dict[str, Any]:
        rq = self.rq
        self.started_s = self.clock.now()
        self.started_at = datetime.fromtimestamp(now_s(), tz=timezone.utc).isoformat(timespec="seconds")
        try:
            if not rq.dry_run:
                # the bookkeeping writer fetches its producer id (idempotence) while the cluster is read
                self.book.start_writer()
            ledger = self._prepare()
            if rq.dry_run:
                return self._summary(dry_run=True)
            self._start(ledger)
            while True:
                self._loop()
                if self.halted or not self._discover(again=True):
                    break
            self._finish()
            return self._summary()
        except BaseException as exc:
            message = self._cleanup_on_error(exc) if self.changed else None
            if isinstance(exc, KeyboardInterrupt):
                signame, code = ("SIGTERM", 143) if isinstance(exc, Terminated) else ("SIGINT", 130)
                raise Interrupted(f"interrupted ({signame}): " + (message or "nothing was changed"), code) from None
            raise
        finally:
            self._beat("ended")
            self.book.close()
            self.admin.close()

    def _beat(self, state: str) -> None:
        """Write this run's ``run`` record (started, alive, ended); never raises on the way out."""
        if self.beat_s is None and state != "started":
            return
        try:
            self.book.append([make_record(self.rq.plan_id, "run", self.run_id, now_s(), run_id=self.run_id,
                                          host=self.host, pid=self.pid, state=state, started=self.started_at)],
                             wait=state == "ended")
            self.beat_s = self.clock.now()
        except Exception as exc:  # the next heartbeat tries again; a run that ended is seen as dead by its pid
            if state == "ended":
                self.emit(WarningEvent(message=f"cannot record the end of this run: {exc}"))

    # ------------------------------------------------------------- preparation
    def _prepare(self) -> Ledger:
        rq = self.rq
        self.view.brokers = self.admin.brokers()
        self.view.live = {b.id: f"{b.host}:{b.port}" for b in self.view.brokers}
        if not rq.dry_run:  # before any change: refused without ZooKeeper on brokers before 2.8
            see_hidden_rates(self.admin, self.view.live, rq.zookeeper, list(rq.zk_auth), rq.ignore_hidden_rates)
        new = sorted(set(rq.mapping.values()))
        missing = [b for b in new if b not in self.view.live]
        if missing and not rq.force:
            raise BadInput(
                f"new broker(s) {', '.join(map(str, missing))} are not alive in the cluster (live: "
                f"{', '.join(map(str, sorted(self.view.live)))}): start them or fix the mapping (--force moves anyway)"
            )
        if missing:
            self.emit(WarningEvent(message=f"new broker(s) {missing} are not alive; moves to them will stall (--force)"))
        ledger = Ledger([])
        if self.book.exists(self.admin.admin):
            ledger = self.book.read()
        if not rq.dry_run:
            self._refuse_overlap(ledger)
        self.migration = ledger.migration(rq.plan_id, rq.mapping)
        self.recorded = set(ledger.moved(self.migration))
        self.submitted_targets = ledger.submitted(self.migration)
        for counts_topic, n in ledger.moved_counts(self.migration).items():
            if n > 1:
                self.emit(WarningEvent(message=f"topic {counts_topic} is recorded {n} times by plan {rq.plan_id}"))
        for other, topics in sorted(ledger.foreign_moved(self.migration).items()):
            self.emit(ForeignPlan(plan_id=other, topics=len(topics),
                                  message=f"{len(topics)} topic(s) were recorded by a migration with another broker "
                                          f"mapping (plan {other}): kmigrate checks where they are instead"))
        all_topics = self.admin.describe(None)
        all_topics.pop(rq.bookkeeping_topic, None)
        if rq.include is not None and not select_topics(all_topics, rq.include, None):
            raise BadInput(f"--topics {rq.include.pattern!r} matches no topic of the cluster: check the expression")
        selected = select_topics(all_topics, rq.include, rq.exclude)
        old = set(rq.mapping)
        stale = sorted(t for t in selected if t in self.recorded
                       and any(set(p.replicas) & old for p in all_topics[t].partitions))
        if stale:  # recreated, or partitions added, after it was recorded: the record no longer holds
            self.recorded -= set(stale)
            self.emit(WarningEvent(message=f"{len(stale)} recorded topic(s) have replicas on old brokers "
                                           f"again ({', '.join(stale[:5])}): moving them again"))
        flights = self.admin.list_reassignments()
        self._plan_topics([all_topics[t] for t in selected if t not in self.recorded], flights)
        if not rq.force:
            self._precheck(flights)
        self._check_rights()
        moves = [m for tr in self.topics.values() for m in tr.moves.values()]
        self.emit(Start(
            plan_id=rq.plan_id, mapping={str(k): v for k, v in sorted(rq.mapping.items())},
            throttle_bytes_per_s=rq.throttle_bytes_per_s, bookkeeping_topic=rq.bookkeeping_topic,
            topics_selected=len(selected), topics_recorded=len([t for t in selected if t in self.recorded]),
            topics_to_move=len([t for t in self.topics.values() if t.moves]),
            topics_to_record=len(self.topics), partitions_to_move=len(moves),
            bytes_to_copy=sum(m.bytes_to_copy for m in moves), dry_run=rq.dry_run,
            max_moves_per_broker=rq.caps.per_broker, max_moves_cluster=rq.caps.cluster,
        ))
        if rq.dry_run:
            for tr in sorted(self.topics.values(), key=lambda t: t.name):
                if not tr.moves:
                    self.emit(WouldRecord(topic=tr.name))
                    continue
                self.emit(WouldMove(topic=tr.name, partitions=[
                    {"partition": m.partition, "current": list(m.current), "target": list(m.target), "bytes": m.size_bytes}
                    for m in sorted(tr.moves.values(), key=lambda m: m.partition)]))
        return ledger

    def _rights(self) -> list:
        return partitions_needs([t for t, tr in self.topics.items() if tr.moves], self.rq.bookkeeping_topic,
                                self.book.exists(self.admin.admin))

    def _check_rights(self) -> None:
        """BadInput (nothing changed) when the principal lacks a right the run needs; a dry run warns."""
        warn = (lambda line: self.emit(WarningEvent(message=line))) if self.rq.dry_run else None
        require(self.admin.admin, self.rq.client, self._rights(), warn=warn)

    def _refuse_overlap(self, ledger: Ledger, first_only: bool = False) -> None:
        """BadInput (nothing changed) when another ``partitions`` run is alive (see the module
        docstring); ``first_only``: only a run recorded before this one counts."""
        live = ledger.live_runs(now_s(), self.host, pid_alive, but=self.run_id)
        if first_only:
            order = list(ledger.runs())
            before = set(order[:order.index(self.run_id)] if self.run_id in order else order)
            live = [r for r in live if r.get("run_id") in before]
        if live:
            r = live[-1]
            raise BadInput(
                f"another kmigrate partitions run is moving this cluster (host {r.get('host')}, pid {r.get('pid')}, "
                f"started {r.get('started')}, last heard {r.get('time')}): let it finish, or stop it with "
                f"{self.rq.command} --cancel (or SIGINT/SIGTERM it, then run again with --resume); a run killed on "
                f"another machine counts as gone {RUN_STALE_S:.0f} s after its last heartbeat")

    def _plan_topics(self, topics: list[Topic], flights: Mapping[tuple[str, int], InFlight]) -> list[str]:
        """Plan the moves of ``topics`` (partitions in flight planned from where they came from)."""
        rq = self.rq
        if not topics:
            return []
        source: list[Topic] = []
        for t in topics:
            parts = []
            for p in t.partitions:
                f = flights.get((t.name, p.partition))
                reps = f.original if f is not None else p.replicas
                parts.append(Partition(p.partition, tuple(reps), p.isr, p.leader))
            source.append(Topic(t.name, t.internal, {}, tuple(parts)))
        old = set(rq.mapping)
        movable = [t for t in source if any(b in old for p in t.partitions for b in p.replicas)]
        targets, warnings = plan_targets(movable, self.view.brokers, rq.mapping, rq.keep)
        names_set = {x.name for x in source}
        for (t, p), target in rq.plan_targets.items():
            if t in names_set:
                targets[(t, p)] = tuple(target)
        for key, f in flights.items():  # adopt what an earlier run of this plan submitted
            if key[0] in names_set and self.submitted_targets.get(key) == tuple(f.target):
                targets[key] = tuple(f.target)
        for w in warnings:
            self.emit(WarningEvent(message=w))
        names = [t.name for t in source]
        self.view.min_isr.update({t: int(c.get("min.insync.replicas", "1") or 1)
                             for t, c in self.admin.topic_configs(names, ("min.insync.replicas",)).items()})
        sizes = self._source_sizes(source, targets)
        for t in source:
            tr = self.topics.setdefault(t.name, _TopicRun(t.name))
            for p in t.partitions:
                target = targets.get((t.name, p.partition))
                if target is None or tuple(target) == tuple(p.replicas):
                    continue
                tr.moves[p.partition] = PartitionMove(t.name, p.partition, tuple(p.replicas), tuple(target),
                                                      sizes.get((t.name, p.partition), 0))
        return names

    def _source_sizes(self, topics: list[Topic], targets: Mapping[tuple[str, int], tuple[int, ...]]) -> dict[tuple[str, int], int]:
        wanted: dict[str, list[int]] = {}
        brokers: set[int] = set()
        for t in topics:
            for p in t.partitions:
                if (t.name, p.partition) in targets:
                    wanted.setdefault(t.name, []).append(p.partition)
                    brokers.update(p.replicas)
        got = self.admin.replica_sizes(sorted(b for b in brokers if b in self.view.live), wanted)
        out: dict[tuple[str, int], int] = {}
        for (t, p, _b), size in got.items():
            out[(t, p)] = max(out.get((t, p), 0), size)
        return out

    def _precheck(self, flights: Mapping[tuple[str, int], InFlight]) -> None:
        offline, under = self._unhealthy(sorted(self.topics), flights)
        if offline or under:
            # a move that ended between listing the moves and describing the topics looks short of
            # its original replicas: look once more, both reads fresh, at the topics concerned
            again = sorted({name for name, _ in offline + under})
            offline, under = self._unhealthy(again, self.admin.list_reassignments())
        offline = [f"{t}-{p}" for t, p in offline]
        under = [f"{t}-{p}" for t, p in under]
        if offline:
            raise BadInput(f"{len(offline)} partition(s) are offline ({', '.join(offline[:5])}): bring their brokers back "
                           "before moving data (--force moves anyway)")
        if under:
            raise BadInput(f"{len(under)} partition(s) are under-replicated ({', '.join(under[:5])}): wait until every "
                           "replica is in sync (--force moves anyway)")
        dead = sorted({b for tr in self.topics.values() for m in tr.moves.values() for b in m.target if b not in self.view.live})
        if dead:
            raise BadInput(f"the targets use broker(s) {dead} that are not alive: start them or fix the mapping "
                           "(--force moves anyway)")

    def _unhealthy(self, names: list[str], flights: Mapping[tuple[str, int], InFlight]
                   ) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
        """(offline, under-replicated) partitions of ``names``; a partition moving counts as
        under-replicated only if one of its original replicas is out of sync."""
        offline, under = [], []
        for name, t in self.admin.describe(names).items():
            for p in t.partitions:
                key = (name, p.partition)
                if p.leader is None:
                    offline.append(key)
                    continue
                f = flights.get(key)
                expected = f.original if f is not None else p.replicas
                if any(b not in p.isr for b in expected):
                    under.append(key)
        return offline, under

    # ------------------------------------------------------------------ start
    def _start(self, ledger: Ledger) -> None:
        rq = self.rq
        new_live = [b for b in sorted(set(rq.mapping.values())) if b in self.view.live]
        created = self.book.ensure(self.admin.admin, new_live)
        if created:
            self.emit(BookkeepingCreated(topic=rq.bookkeeping_topic, replicas=new_live[:3]))
            # READ and WRITE of a topic not created yet could not be asked before: now, before any other change
            require_after_create(self.admin.admin, rq.client, bookkeeping_needs(rq.bookkeeping_topic, exists=False))
        self.book.warm()
        plans = ledger.plans()
        mapping_doc = {str(k): v for k, v in sorted(rq.mapping.items())}
        if plans.get(rq.plan_id, {}).get("mapping") != mapping_doc or plans[rq.plan_id].get("throttle_bytes_per_s") != rq.throttle_bytes_per_s:
            # not waited for: the first write-ahead below checks it (a run that dies first writes it again)
            self.book.append([make_record(rq.plan_id, "plan", "plan", now_s(), mapping=mapping_doc,
                                          throttle_bytes_per_s=rq.throttle_bytes_per_s)], wait=False)
        self._beat("started")
        self.book.flush()
        # two runs that started at the same moment both passed the first look: the one recorded
        # first goes on, the other stops here, having changed nothing but its own records
        self._refuse_overlap(self.book.read(), first_only=True)
        self.changed = True
        self.emit(RunStarted(run_id=self.run_id, host=self.host, pid=self.pid))
        tally = ThrottleTally(self.emit)
        problems = clear_recorded_throttles(self.admin, self.book, ledger, rq.plan_id, tally,
                                            adopt=self.throttles, keep_topics=frozenset(self.topics))
        tally.close()
        for p in problems:
            self.emit(WarningEvent(message=p))
        if rq.resume:
            self.emit(Resume(records=len(ledger.records), topics_recorded=len(self.recorded)))
        # No throttle is set up front: each topic's lists are written with its first submission
        # (see _throttle_for), so the first moves start after a few config writes, not after one
        # per topic of the whole run (each is a ZooKeeper write in the controller).

    # ------------------------------------------------------------------- loop
    def _active(self) -> list[_TopicRun]:
        return [t for t in self.topics.values() if t.phase not in (TopicPhase.recorded, TopicPhase.cancelled, TopicPhase.gone)]

    def _loop(self) -> None:
        rq = self.rq
        grace_s = max(10.0, 3 * rq.poll_interval_s)
        silent_since: float | None = None
        while self._active():
            now = self.clock.now()
            try:
                flights = self.admin.list_reassignments()
                names = [t.name for t in self._active()]
                described, self.view.live = self.admin.describe_and_brokers(names)
            except Exception as exc:  # a broker just died, a controller moves: look again, for a while
                if not transient_error(exc):
                    raise
                silent_since = now if silent_since is None else silent_since
                if now - silent_since > UNANSWERED_LOOK_S:
                    raise StepFailed(f"the cluster has not answered for {now - silent_since:.0f} s ({exc}): check the "
                                     "brokers, then run kmigrate partitions --resume") from None
                self.emit(WarningEvent(message=f"the cluster did not answer ({exc}); looking again"))
                self.clock.sleep(rq.poll_interval_s)
                continue
            silent_since = None
            self._look_for_cancel(now)
            self._note_gone(described)
            self._check_finished(flights, described, now, 0.0 if self.cancel_seen else grace_s)
            self._check_foreign(flights, described)
            self._measure(now)
            self._check_isr(described)
            # slots freed by finished partitions are filled first; finishing topics (election,
            # throttle removal, bookkeeping write) happens while the new moves copy
            self._submit(flights, described)
            self._complete_topics(described)
            self._report_progress(now)
            if not self._active() or (self.halted and not self.flights.ours):
                break
            self.clock.sleep(max(0.0, self._poll_wait() - (self.clock.now() - now)))

    def _look_for_cancel(self, now: float) -> None:
        """Heartbeat, and the records written since this run began: a ``cancel-requested`` stops it."""
        if self.beat_s is not None and now - self.beat_s >= RUN_HEARTBEAT_S:
            self._beat("alive")
        if self.cancel_seen is not None:
            return
        try:
            fresh = self.book.tail()
        except Exception as exc:  # the next look tries again
            self.emit(WarningEvent(message=f"reading new bookkeeping records failed ({exc}); looking again"))
            return
        for r in fresh:
            if r.kind == "cancel-requested":
                self.cancel_seen = r
                v = r.value
                self.halted = (f"kmigrate partitions --cancel (host {v.get('host')}, pid {v.get('pid')}) cancelled "
                               f"this migration at {v.get('time')}")
                self.emit(WarningEvent(message=f"{self.halted}: submitting nothing more; its moves are being reverted"))
                return

    def _poll_wait(self) -> float:
        """``--poll-interval``, halved while a small move is in flight: it finishes within a second
        or two, and its slot should not stay empty for long."""
        small = any(not self.rq.caps.fits_large_lane(m) for m in self.flights.ours.values())
        return self.rq.poll_interval_s / 2 if small else self.rq.poll_interval_s

    def _note_gone(self, described: Mapping[str, Topic]) -> None:
        for tr in self._active():
            if tr.name not in described:
                tr.phase = advance(tr.phase, TopicPhase.gone) if tr.phase != TopicPhase.moved else TopicPhase.gone
                for key in [k for k in self.flights.ours if k[0] == tr.name]:
                    self.flights.ours.pop(key)
                self.book.append(self.throttles.forget_topic(tr.name))
                self.dirty.discard(tr.name)
                self.emit(TopicGone(topic=tr.name, message=f"topic {tr.name} was deleted meanwhile"))

    def _check_finished(self, flights, described, now: float, grace_s: float) -> None:
        changed: set[str] = set()
        for key, m in list(self.flights.ours.items()):
            if key in flights:
                self.flights.suspect.pop(key, None)
                continue
            t, p = key
            tp = partition_of(described.get(t), p)
            if tp is None:
                continue
            tr = self.topics[t]
            if tuple(tp.replicas) == tuple(m.target):
                self.flights.ours.pop(key)
                self.flights.suspect.pop(key, None)
                tr.done.add(p)
                changed.add(t)
                for b in m.adding:
                    self.watch.progress.pop((t, p, b), None)
                self.emit(PartitionDone(topic=t, partition=p, replicas=list(tp.replicas)))
            elif now - self.flights.suspect.setdefault(key, now) >= grace_s:
                # not listed and not on target for grace_s in a row (metadata lags a moment after a
                # move ends; a new controller lists nothing for a moment): someone cancelled it
                self.flights.ours.pop(key)
                self.flights.suspect.pop(key, None)
                tr.cancelled.add(p)
                self.flights.cancelled.append(key)
                changed.add(t)
                self.halted = self.halted or "reassignments were cancelled outside this run (kmigrate partitions --cancel?)"
                why = ("reverted by kmigrate partitions --cancel" if self.cancel_seen is not None
                       else f"is no longer moving and is not on its target {list(m.target)}: cancelled outside this run")
                self.emit(PartitionCancelled(topic=t, partition=p, replicas=list(tp.replicas),
                                             message=f"{t}-{p} {why}; it is left where it is, on {list(tp.replicas)}"))
        self.dirty |= changed

    def _check_foreign(self, flights, described) -> None:
        for key, f in list(self.flights.foreign.items()):
            if key in flights:
                continue
            self.flights.foreign.pop(key)
            t, p = key
            tp = partition_of(described.get(t), p)
            tr = self.topics.get(t)
            if tp is None or tr is None:
                continue
            targets, _ = plan_targets([Topic(t, partitions=(tp,))], self.view.brokers, self.rq.mapping, self.rq.keep)
            target = self.rq.plan_targets.get(key) or targets.get(key)
            if target is None or tuple(target) == tuple(tp.replicas):
                tr.moves.pop(p, None)
            else:
                old = tr.moves.get(p)
                tr.moves[p] = PartitionMove(t, p, tuple(tp.replicas), tuple(target), old.size_bytes if old else 0)
            self.emit(ForeignFinished(topic=t, partition=p, replicas=list(tp.replicas)))

    def _measure(self, now: float) -> None:
        """Sizes of the replicas being added; stall detection."""
        rq = self.rq
        if not self.flights.ours:
            return
        # sizes every few seconds are enough for progress and stalls; each look costs a request per broker
        if now - self.watch.measured_at < min(max(rq.poll_interval_s, 3.0), rq.stall_timeout_s / 2):
            return
        self.watch.measured_at = now
        wanted: dict[str, list[int]] = {}
        brokers: set[int] = set()
        watched: list[ReplicaKey] = []
        for (t, p), m in self.flights.ours.items():
            wanted.setdefault(t, []).append(p)
            for b in m.adding:
                brokers.add(b)
                watched.append((t, p, b))
        sizes = self.admin.replica_sizes(sorted(b for b in brokers if b in self.view.live), wanted)
        self.watch.sizes.update(sizes)
        self.watch.progress = {**{k: v for k, v in self.watch.progress.items() if k not in set(watched)},
                         **observe_progress(self.watch.progress, sizes, watched, now)}
        stalled = [k for k in stalled_replicas({k: self.watch.progress[k] for k in watched}, now, rq.stall_timeout_s)]
        fresh = [k for k in stalled if k not in self.watch.reported_stalls]
        for t, p, b in fresh:
            self.watch.reported_stalls.add((t, p, b))
            tr = self.topics[t]
            tr.phase = advance(tr.phase, TopicPhase.stalled)
            since = now - self.watch.progress[(t, p, b)].changed_at_s
            self.emit(Stall(topic=t, partition=p, broker=b, seconds=round(since, 1), broker_alive=b in self.view.live,
                            bytes=self.watch.progress[(t, p, b)].bytes,
                            message=f"{t}-{p}: new replica on broker {b} has made no progress for {since:.0f} s"
                                    f"{'' if b in self.view.live else ' (broker is not alive)'}"))
        # a replica that moves again is no longer reported as stalled
        for k in list(self.watch.reported_stalls):
            if k in self.watch.progress and k not in stalled:
                self.watch.reported_stalls.discard(k)
                tr = self.topics[k[0]]
                if tr.phase == TopicPhase.stalled and not any(s[0] == k[0] for s in self.watch.reported_stalls):
                    tr.phase = advance(tr.phase, TopicPhase.moving)
                self.emit(StallOver(topic=k[0], partition=k[1], broker=k[2]))
        if rq.on_stall == "cancel" and fresh:
            self._cancel_stalled(sorted({(t, p) for t, p, _ in fresh}))

    def _cancel_stalled(self, keys: list[tuple[str, int]]) -> None:
        keys = [k for k in keys if k in self.flights.ours]
        if not keys:
            return
        bad = send_cancels(self.admin, keys)
        if bad:
            raise StepFailed(f"cancelling stalled partitions failed: {errors_line(bad)}")
        wait_not_in_flight(self.admin, keys, timeout_s=60.0, clock=self.clock)
        by_topic: dict[str, list[int]] = {}
        for t, p in keys:
            self.flights.ours.pop((t, p), None)
            self.topics[t].cancelled.add(p)
            self.flights.cancelled.append((t, p))
            by_topic.setdefault(t, []).append(p)
        records = [make_record(self.rq.plan_id, "cancelled", t, now_s(), topic=t, partitions=ps) for t, ps in by_topic.items()]
        self.throttles.sync({t: self.flights.of_topic(t) for t in by_topic}, records)
        self.dirty -= set(by_topic)
        for t, ps in by_topic.items():
            self.emit(StallCancelled(topic=t, partitions=ps,
                                     message=f"{t}: cancelled stalled partition(s) {ps}; they are back on their original replicas"))

    def _check_isr(self, described: Mapping[str, Topic]) -> None:
        for (t, p), m in self.flights.ours.items():
            tp = partition_of(described.get(t), p)
            if tp is None:
                continue
            need = min(self.view.min_isr.get(t, 1), len(m.current))
            if len(tp.isr) < need and (t, p) not in self.reported.isr:
                self.reported.isr.add((t, p))
                self.emit(IsrShort(topic=t, partition=p, isr=list(tp.isr), min_isr=need,
                                   message=f"{t}-{p}: only {len(tp.isr)} in-sync replica(s) while moving (min.insync.replicas {need})"))
            elif len(tp.isr) >= need:
                self.reported.isr.discard((t, p))

    def _complete_topics(self, described: Mapping[str, Topic]) -> None:
        ready: list[tuple[_TopicRun, Topic]] = []
        cancelled: list[_TopicRun] = []
        busy = {k[0] for k in self.flights.ours} | {k[0] for k in self.flights.foreign}
        for tr in self._active():
            if tr.name in busy or any(p not in tr.done and p not in tr.cancelled for p in tr.moves):
                continue
            if tr.cancelled:
                cancelled.append(tr)
                continue
            t = described.get(tr.name)
            if t is None:
                continue
            # verify every partition: the planned ones on target, partitions added meanwhile planned now
            wrong = [p.partition for p in t.partitions
                     if p.partition in tr.moves and tuple(p.replicas) != tuple(tr.moves[p.partition].target)]
            extra = [p for p in t.partitions if p.partition not in tr.moves and set(p.replicas) & set(self.rq.mapping)]
            if extra:
                targets, _ = plan_targets([Topic(tr.name, partitions=tuple(extra))], self.view.brokers, self.rq.mapping, self.rq.keep)
                added = {k[1]: v for k, v in targets.items() if tuple(v) != tuple(partition_of(t, k[1]).replicas)}
                if added:
                    for p, target in added.items():
                        tr.moves[p] = PartitionMove(tr.name, p, tuple(partition_of(t, p).replicas), tuple(target), 0)
                    self.emit(WarningEvent(message=f"{tr.name}: partition(s) {sorted(added)} appeared meanwhile; moving them too"))
                    continue
            if wrong:
                for p in wrong:  # metadata not yet up to date, or moved back by someone: plan again
                    tr.done.discard(p)
                continue
            tr.phase = advance(tr.phase, TopicPhase.moved)
            ready.append((tr, t))
        if cancelled:
            self.book.append(self.throttles.clear([tr.name for tr in cancelled]))
            for tr in cancelled:
                tr.phase = TopicPhase.cancelled
                self.dirty.discard(tr.name)
                self.emit(TopicCancelled(topic=tr.name, partitions=sorted(tr.cancelled)))
        if ready:
            crash_point("after-complete-before-record")
            self._finish_topics(ready)

    def _finish_topics(self, ready: list[tuple[_TopicRun, Topic]]) -> None:
        """Preferred leader election, throttles removed, then one bookkeeping write for all of them."""
        names = [tr.name for tr, _ in ready]
        leaders_bad: dict[str, list[dict[str, Any]]] = {}
        wrong_leader = [(t.name, p.partition) for _, t in ready for p in t.partitions if leader_not_preferred(p)]
        if wrong_leader:
            errors = self.admin.elect_preferred(wrong_leader)
            bad: list[tuple[str, Partition]] = []

            def preferred_everywhere() -> bool:  # metadata reaches every broker a moment after the election
                after = self.admin.describe(names)
                bad[:] = [(n, p) for n in names for p in after.get(n, Topic(n)).partitions if leader_not_preferred(p)]
                return not bad

            poll(preferred_everywhere, timeout_s=5.0, interval_s=0.25, clock=self.clock)
            for n, p in bad:
                leaders_bad.setdefault(n, []).append({"partition": p.partition, "leader": p.leader, "preferred": p.replicas[0],
                                                      "error": errors.get((n, p.partition))})
        records = self.throttles.clear(names)
        for tr, t in ready:
            target = {str(p.partition): list(p.replicas) for p in t.partitions}
            records.append(make_record(self.rq.plan_id, "topic-moved", tr.name, now_s(), topic=tr.name, target=target,
                                       moved_partitions=sorted(tr.moves)))
        self.book.append(records, wait=False)  # checked by the next write-ahead or the final flush
        for tr, _t in ready:
            tr.phase = advance(tr.phase, TopicPhase.recorded)
            self.recorded.add(tr.name)
            self.dirty.discard(tr.name)
            seconds = None if tr.started_s is None else round(self.clock.now() - tr.started_s, 1)
            self.emit(TopicDone(topic=tr.name, partitions_moved=len(tr.moves),
                                bytes=sum(m.bytes_to_copy for m in tr.moves.values()), seconds=seconds,
                                already_on_target=not tr.moves or tr.started_s is None))
            if tr.name in leaders_bad:
                self.emit(LeadersNotPreferred(topic=tr.name, partitions=leaders_bad[tr.name],
                                              message=f"{tr.name}: {len(leaders_bad[tr.name])} partition(s) kept a leader that is not the "
                                                      "first new replica; run kafka-leader-election --election-type PREFERRED later"))

    def _submit(self, flights: Mapping[Key, InFlight], described: Mapping[str, Topic]) -> None:
        """Adopt the moves in flight to our targets, then submit what the scheduler admits."""
        if self.halted:
            self._sync_dirty()
            return
        pending, held, adopted = self._sort_partitions(flights, described)
        if adopted:
            self._throttle_for(adopted, [])
            self._moving(adopted, self.clock.now())
            self.emit(Adopted(partitions=[{"topic": m.topic, "partition": m.partition, "target": list(m.target)}
                                                           for m in adopted]))
        chosen = self._few_new_topics(schedule(pending, list(self.flights.ours.values()), self.rq.caps, frozenset(held)))
        if not chosen:
            self._sync_dirty()
            return
        self._send(chosen)

    def _sort_partitions(self, flights: Mapping[Key, InFlight], described: Mapping[str, Topic]
                         ) -> tuple[list[PartitionMove], set[Key], list[PartitionMove]]:
        """(pending, held, adopted): each partition still to move, by what :func:`decide` says of
        it; partitions done are marked, others' moves noted as foreign, held ones reported once."""
        pending: list[PartitionMove] = []
        held: set[Key] = set()
        adopted: list[PartitionMove] = []
        for tr in self._active():
            t = described.get(tr.name)
            if t is None:
                continue
            for p, m in tr.moves.items():
                key = (tr.name, p)
                if p in tr.done or p in tr.cancelled or key in self.flights.ours or key in self.flights.foreign:
                    continue
                tp = partition_of(t, p)
                if tp is None:
                    continue
                d = decide(tp.replicas, m.target, flights.get(key), tp.isr, self.view.min_isr.get(tr.name, 1))
                if d == Decision.done:
                    tr.done.add(p)
                elif d == Decision.adopt:
                    adopted.append(PartitionMove(m.topic, p, flights[key].original, m.target, m.size_bytes))
                elif d == Decision.wait:
                    self.flights.foreign[key] = flights[key]
                    self.emit(WaitingForeign(topic=tr.name, partition=p, target=list(flights[key].target),
                                             message=f"{tr.name}-{p} is being moved to {list(flights[key].target)} by someone else: waiting"))
                elif d == Decision.hold:
                    held.add(key)
                    if key not in self.reported.held:
                        self.reported.held.add(key)
                        self.emit(Held(topic=tr.name, partition=p, isr=list(tp.isr), replicas=list(tp.replicas),
                                       min_isr=self.view.min_isr.get(tr.name, 1),
                                       message=f"{tr.name}-{p}: ISR {list(tp.isr)} is short; not moving it until it recovers"))
                else:
                    self.reported.held.discard(key)
                    pending.append(PartitionMove(m.topic, p, tuple(tp.replicas), m.target, m.size_bytes))
        return pending, held, adopted

    def _moving(self, moves: Iterable[PartitionMove], now: float) -> None:
        """``moves`` are in flight, ours: their topics are moving."""
        for m in moves:
            self.flights.ours[m.key] = m
            tr = self.topics[m.topic]
            tr.phase = advance(tr.phase, TopicPhase.moving)
            tr.started_s = tr.started_s or now

    def _send(self, chosen: list[PartitionMove]) -> None:
        """Throttles and the submission recorded (one write), throttles set, then the reassignments sent."""
        by_topic: dict[str, dict[str, list[int]]] = {}
        for m in chosen:
            by_topic.setdefault(m.topic, {})[str(m.partition)] = list(m.target)
        # one write: the throttle entries about to be set and the submission about to be sent
        self._throttle_for(chosen, [make_record(self.rq.plan_id, "submitted", t, now_s(), topic=t, partitions=ps)
                                    for t, ps in by_topic.items()])
        crash_point("after-throttle")
        errors = self.admin.alter_reassignments({m.key: m.target for m in chosen})
        self._moving([m for m in chosen if errors.get(m.key) is None], self.clock.now())
        bad = {m.key: errors[m.key] for m in chosen if errors.get(m.key) is not None}
        others = {k: e for k, e in bad.items() if e != "UnknownTopicOrPartitionError"}
        if others:
            raise StepFailed(f"the controller refused reassignments: {errors_line(others)}; nothing else was submitted")
        if bad:  # refused partitions of vanished topics: their entries go
            self.dirty |= {k[0] for k in bad}
            self._sync_dirty()
        self.emit(Submitted(partitions=[{"topic": m.topic, "partition": m.partition, "target": list(m.target),
                                                         "bytes": m.bytes_to_copy} for m in chosen if m.key in self.flights.ours]))
        crash_point("after-submit")

    def _few_new_topics(self, chosen: Iterable[PartitionMove]) -> list[PartitionMove]:
        """``chosen`` (in the scheduler's order) with at most :data:`NEW_TOPICS_PER_SUBMIT` topics
        whose throttle lists are not written yet. Each is a ZooKeeper write in the broker, one
        after the other: a first batch of many topics would hold every move back until the last
        is written. The rest go out on the next look, a moment later."""
        out: list[PartitionMove] = []
        new: set[str] = set()
        for m in chosen:
            fresh = not self.throttles.holds(m.topic)
            if fresh and m.topic not in new:
                if len(new) >= NEW_TOPICS_PER_SUBMIT:
                    continue
                new.add(m.topic)
            out.append(m)
        return out

    def _throttle_for(self, moves: Iterable[PartitionMove], records: list[Record]) -> None:
        """Broker rates on every broker of ``moves`` and the throttle lists of their topics (and of
        topics whose moves finished), ``records`` written with their write-ahead records."""
        moves = list(moves)
        brokers = {b for m in moves for b in (*m.current, *m.target)}
        topics = {m.topic for m in moves} | self.dirty
        wanted = {t: self._listed(t, [m for m in moves if m.topic == t and m.key not in self.flights.ours]) for t in topics}
        self.throttles.sync(wanted, records, brokers=brokers, live=self.view.live)
        self.dirty.clear()

    def _sync_dirty(self) -> None:
        if self.dirty:
            self.throttles.sync({t: self._listed(t) for t in self.dirty})
            self.dirty.clear()

    def _listed(self, topic: str, admitted: Iterable[PartitionMove] = ()) -> list[PartitionMove]:
        """The moves whose entries a topic's throttle lists hold: those in flight and ``admitted``,
        then the topic's moves still to come, as many as fit the size limit. Kafka throttles only
        replicas out of sync, so entries of partitions not moving yet cost nothing, and the
        topic's later submissions need no config write (one ZooKeeper write each)."""
        listed = self.flights.of_topic(topic) + list(admitted)
        tr = self.topics.get(topic)
        if tr is None:
            return listed
        keys = {m.key for m in listed}
        upcoming = (m for p, m in sorted(tr.moves.items()) if m.key not in keys and p not in tr.done and p not in tr.cancelled)
        return fill_throttle_lists(listed, upcoming, self.rq.caps.throttle_chars)

    def _report_progress(self, now: float) -> None:
        per_topic: dict[str, dict[str, int]] = {}
        total = copied_all = 0
        for tr in self.topics.values():
            if not tr.moves:
                continue
            tt = tc = 0
            for p, m in tr.moves.items():
                finished = p in tr.done or tr.phase == TopicPhase.recorded
                c = copied(m, self.watch.sizes, finished)
                if p in tr.cancelled:
                    continue
                tt += c.total_bytes
                tc += c.copied_bytes
            per_topic[tr.name] = {"copied_bytes": tc, "total_bytes": tt, "phase": tr.phase.value}
            total += tt
            copied_all += tc
        self.watch.rate = self.watch.rate.add(now, copied_all)
        eta = self.watch.rate.eta_s(total - copied_all)
        self.emit(Progress(copied_bytes=copied_all, total_bytes=total,
                           rate_bytes_per_s=round(self.watch.rate.bytes_per_s),
                           eta_s=None if eta is None else round(eta, 1), in_flight=len(self.flights.ours),
                           topics_left=len(self._active()), topics_recorded=len(self.recorded), topics=per_topic))

    # --------------------------------------------------------------- discover
    def _discover(self, again: bool) -> bool:
        """List the topics again (procedure step 8): True when new ones must move or be recorded."""
        rq = self.rq
        ledger = self.book.read()
        self.recorded |= set(ledger.moved(self.migration))
        all_topics = self.admin.describe(None)
        all_topics.pop(rq.bookkeeping_topic, None)
        fresh = [t for t in select_topics(all_topics, rq.include, rq.exclude)
                 if t not in self.recorded and (t not in self.topics or self.topics[t].phase == TopicPhase.gone)]
        fresh = [t for t in fresh if t not in self.topics]
        if not fresh:
            return False
        flights = self.admin.list_reassignments()
        self.view.live = self.admin.live_brokers()
        self.view.brokers = self.admin.brokers()
        self._plan_topics([all_topics[t] for t in fresh], flights)
        self.emit(Discovered(topics=fresh,
                             message=f"{len(fresh)} topic(s) appeared during the run: {', '.join(fresh[:5])}"))
        return True

    # ----------------------------------------------------------------- finish
    def _finish(self) -> None:
        self.book.flush()  # every topic recorded is acknowledged before the run says it is done
        if self.cancel_seen is not None:
            self._stopped_by_cancel()
        released = release_throttles(self.admin, self.book, self.rq.plan_id, self.emit)
        self.changed = False  # throttles are cleared: nothing left to clean on the way out
        for p in released.problems:
            self.emit(WarningEvent(message=p))
        if self.halted:
            left = sorted(t.name for t in self._active())
            raise StepFailed(
                f"stopped: {self.halted}; {len(self.flights.cancelled)} partition(s) cancelled, "
                f"{len(left)} topic(s) not finished ({', '.join(left[:5])}{'...' if len(left) > 5 else ''}); "
                f"{self._left_line(released)}; run {self.rq.command} --resume to continue"
            )
        cancelled = [tr.name for tr in self.topics.values() if tr.phase == TopicPhase.cancelled]
        if cancelled:
            raise StepFailed(
                f"{len(self.flights.cancelled)} partition(s) of {len(cancelled)} topic(s) were cancelled "
                f"({', '.join(f'{t}-{p}' for t, p in self.flights.cancelled[:5])}): they stay on their old replicas; "
                "fix the cause (a dead or stuck broker) and run kmigrate partitions --resume"
            )

    def _stopped_by_cancel(self) -> None:
        """Raise :class:`StoppedByCancel`: ``--cancel`` reverted the moves and removes the throttles
        once this run has ended (it waits for the ``ended`` record)."""
        self.changed = False
        reverted = sorted(f"{t}-{p}" for t, p in self.flights.cancelled)
        finished = sorted(f"{tr.name}-{p}" for tr in self.topics.values() for p in tr.done if p in tr.moves)
        still = sorted(f"{t}-{p}" for t, p in self.flights.ours)
        message = (f"stopped: {self.halted}; {len(reverted)} move(s) reverted, {len(finished)} finished before it; "
                   + (f"{len(still)} still in flight ({', '.join(still[:5])})" if still else "nothing left in flight")
                   + f"; --cancel removes kmigrate's throttles; {self.rq.command} --resume starts the migration again")
        self.emit(Stopped(by=self.halted or "", reverted=reverted, finished=finished, message=message))
        raise StoppedByCancel(message)

    def _left_line(self, released: Released) -> str:
        """What is left of kmigrate's in flight and throttled, for an exit message."""
        if not released.in_flight:
            return "nothing of kmigrate's is in flight; kmigrate's throttles removed"
        topics = sorted(released.topics)
        return (f"{len(released.in_flight)} of kmigrate's reassignment(s) still moving (topics "
                f"{', '.join(topics[:5])}{'...' if len(topics) > 5 else ''}): they continue throttled at "
                f"{format_bytes(self.rq.throttle_bytes_per_s)}/s per broker (throttles kept, recorded in "
                f"{self.rq.bookkeeping_topic})")

    def _cleanup_on_error(self, exc: BaseException) -> str | None:
        """Remove the throttles no move needs, keep those of kmigrate's moves in flight; return the
        exit message (what is left, how to finish or revert it)."""
        handlers = _ignore_signals()  # a second Ctrl-C must not stop the cleanup half way
        try:
            released = release_throttles(self.admin, self.book, self.rq.plan_id, self.emit)
            message = self._left_line(released)
            cmd = self.rq.command
            if released.in_flight:
                message += f"; finish them: {cmd} --resume; or revert them: {cmd} --cancel"
            else:
                message += f"; continue: {cmd} --resume"
            error = ("SIGTERM" if isinstance(exc, Terminated) else "SIGINT") if isinstance(exc, KeyboardInterrupt) else (
                getattr(exc, "message", None) or repr(exc))
            self.emit(Aborted(
                error=error, in_flight=len(released.in_flight),
                throttle_problems=released.problems, message=message,
                in_flight_partitions=[f"{t}-{p}" for t, p in sorted(released.in_flight)],
                throttled_topics=sorted(released.topics), throttled_brokers=sorted(released.brokers),
                resume_command=f"{cmd} --resume", cancel_command=f"{cmd} --cancel"))
            return message
        except Exception as cleanup_exc:  # report both; the first error stays the one raised
            message = (f"looking at the throttles after the error failed too ({cleanup_exc}): kmigrate's throttles "
                       f"are kept; run {self.rq.command} --resume or --cancel")
            self.emit(WarningEvent(message=message))
            return message
        finally:
            _restore_signals(handlers)

    def _summary(self, dry_run: bool = False) -> dict[str, Any]:
        """Emit the run's :class:`RunDone` and return it as a dict."""
        recorded = [t for t in self.topics.values() if t.phase == TopicPhase.recorded]
        summary = RunDone(
            plan_id=self.rq.plan_id, dry_run=dry_run,
            topics_recorded_now=len(recorded), topics_recorded_total=len(self.recorded),
            partitions_moved=sum(len(t.moves) for t in recorded),
            bytes_copied=sum(m.bytes_to_copy for t in recorded for m in t.moves.values()),
            seconds=round(self.clock.now() - self.started_s, 1),
            gone=sorted(t.name for t in self.topics.values() if t.phase == TopicPhase.gone),
            topics_to_move=sorted(t.name for t in self.topics.values() if t.moves) if dry_run else OMIT,
            partitions_to_move=sum(len(t.moves) for t in self.topics.values()) if dry_run else OMIT,
        )
        self.emit(summary)
        return summary.as_dict()


_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _ignore_signals() -> dict[int, Any] | None:
    """Ignore SIGINT and SIGTERM (main thread only); return the handlers to put back."""
    try:
        return {s: signal.signal(s, signal.SIG_IGN) for s in _SIGNALS}
    except ValueError:  # not the main thread
        return None


def _restore_signals(handlers: dict[int, Any] | None) -> None:
    for s, h in (handlers or {}).items():
        signal.signal(s, h)


def _raise_terminated(_signum, _frame) -> None:
    raise Terminated()


def run_partitions(request: PartitionsRequest, emit: Emit) -> dict[str, Any]:
    """Move every selected topic to the new brokers (see the module docstring); return the summary.
    SIGTERM is handled as Ctrl-C: moves in flight keep their throttles (exit 143)."""
    try:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread
        previous = None
    try:
        return PartitionMover(request, emit).run()
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


__all__ = ["EXIT_STOPPED", "Interrupted", "PartitionsRequest", "PartitionMover", "StoppedByCancel", "run_partitions"]
