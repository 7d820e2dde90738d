"""What every part of one ``kmigrate partitions`` run shares: the request, the clients, the run's state.

:class:`RunState` is handed to each part of the run (:mod:`.preparation`, :mod:`.observation`,
:mod:`.submission`, :mod:`.completion` and the loop in :mod:`.run`). Each topic's phase is its
:class:`TopicRun`; each partition's state is in :attr:`RunState.tasks`
(:class:`migrate.core.partitions.tasks.PartitionTasks`: pending, held, foreign, moving, done,
cancelled, gone).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Mapping

from migrate.adapters.kafka.bookkeeping import BookkeepingTopic
from migrate.adapters.kafka.admin import ReassignmentAdmin
from migrate.core.clientconfig import ClientSettings
from migrate.core.model import Broker
from migrate.core.partitions.moves import PartitionMove, ReplicaKey
from migrate.core.partitions.phases import DEFAULT_POLL_INTERVAL_S, Rate, ReplicaProgress, TopicPhase
from migrate.core.partitions.scheduler import SMALL_MOVE_SECONDS, Caps
from migrate.core.partitions.tasks import Key, PartitionTasks
from migrate.core.throttle.options import CANARY_TOPIC, AutoThrottle
from migrate.runner.events import Emit
from migrate.runner.partitions.lease import RunLease
from migrate.runner.partitions.throttles import Throttles
from migrate.waiting import SYSTEM_CLOCK, Clock, FakeClock


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
    auto: AutoThrottle | None = None  # --throttle auto: rates and moves steered by the canary's latency

    def not_moved(self) -> tuple[str, ...]:
        """kmigrate's own topics a run never moves: the bookkeeping topic, the auto throttle's canary
        (whatever this run's throttle: an auto run killed before its end leaves the topic behind)."""
        return (self.bookkeeping_topic, CANARY_TOPIC) + (
            (self.auto.canary_topic,) if self.auto is not None and self.auto.canary_topic != CANARY_TOPIC else ())


@dataclass
class TopicRun:
    """One topic of the run: its phase and when its first move began (its partitions are in
    :attr:`RunState.tasks`)."""

    name: str
    phase: TopicPhase = TopicPhase.pending
    started_s: float | None = None


@dataclass
class ClusterView:
    """The cluster as last looked at: live brokers (id -> host:port), brokers with racks, and each
    topic's ``min.insync.replicas``."""

    live: dict[int, str] = field(default_factory=dict)
    brokers: list[Broker] = field(default_factory=list)
    min_isr: dict[str, int] = field(default_factory=dict)


@dataclass
class CopyWatch:
    """Bytes copied by the replicas being added: sizes, per-replica progress, stalls reported, the
    rate; ``measured_at``: when sizes were last asked for."""

    sizes: dict[ReplicaKey, int] = field(default_factory=dict)
    progress: dict[ReplicaKey, ReplicaProgress] = field(default_factory=dict)
    reported_stalls: set[ReplicaKey] = field(default_factory=set)
    measured_at: float = float("-inf")
    rate: Rate = field(default_factory=Rate)
    # the last two looks at the sizes, (when, sizes): the auto throttle's copy and inflow rates
    looks: tuple[tuple[float, dict[ReplicaKey, int]], ...] = ()


@dataclass
class Reported:
    """Partitions already reported as held (short ISR before a move) or short of ISR while moving,
    so each is said once until it recovers."""

    held: set[Key] = field(default_factory=set)
    isr: set[Key] = field(default_factory=set)


class RunState:
    """One run's state, each object owning one concern: :attr:`topics` (each topic's phase),
    :attr:`tasks` (each partition's move and state), :attr:`view` (the cluster as last seen),
    :attr:`watch` (bytes copied, stalls), :attr:`reported`, :attr:`throttles` (what kmigrate set),
    :attr:`lease` (this run's ``run`` records, a ``--cancel`` seen); plus the run's :attr:`recorded`
    topics, :attr:`dirty` topics (throttle lists to update) and :attr:`halted` (why nothing more is
    submitted)."""

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
                                   request.caps.throttle_chars, auto=request.auto is not None)
        self.lease = RunLease(self.book, request.plan_id, request.command, emit, clock)
        self.topics: dict[str, TopicRun] = {}
        self.tasks = PartitionTasks()
        self.view = ClusterView()
        self.watch = CopyWatch()
        self.reported = Reported()
        self.recorded: set[str] = set()
        self.submitted_targets: dict[Key, tuple[int, ...]] = {}  # what this plan's earlier runs submitted
        self.started_s = 0.0
        self.changed = False  # set once kmigrate may have changed the cluster
        self.halted: str | None = None  # why no more work is submitted (a --cancel from outside)
        self.canary_exists = False  # the auto throttle's canary topic, when the run began
        self.leftover_canary = False  # a fixed-throttle run found the canary topic of an auto run killed before its end
        self.dirty: set[str] = set()  # topics whose moves in flight changed: throttle lists to update
        self.migration: tuple[str, ...] = (request.plan_id,)  # plan ids naming this migration (same mapping)

    def active(self) -> list[TopicRun]:
        """Topics still to finish (not recorded, cancelled or gone)."""
        return [t for t in self.topics.values() if t.phase not in (TopicPhase.recorded, TopicPhase.cancelled, TopicPhase.gone)]

    def moves(self, topic: str) -> dict[int, PartitionMove]:
        """The topic's planned moves, partition -> move (every partition that must change)."""
        return self.tasks.moves(topic)
