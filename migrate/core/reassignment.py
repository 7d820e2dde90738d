"""Moving partitions to new brokers, as pure decisions. No I/O, no clock: times are passed in.

The runner (``migrate.runner.partitions``) observes the cluster, asks the functions here what to
do, and does it. Everything here is a function over frozen values:

* **targets** - :func:`plan_targets` asks the planner (:mod:`migrate.core.planner`), which replaces
  each old broker id by its new id (the procedure's rule), keeps an id without mapping (and
  says so), repairs lists the mapping would break and balances preferred leaders;
* **throttles** - :func:`throttle_entries` gives the ``partition:broker`` entries of
  ``leader.replication.throttled.replicas`` (the current replicas, the sources) and
  ``follower.replication.throttled.replicas`` (the replicas being added) for the partitions in
  flight, and :func:`schedule` keeps each list under :data:`MAX_THROTTLE_CONFIG_CHARS`;
* **scheduling** - :func:`schedule` picks the next partitions to submit under a per-broker cap
  and a cluster cap, smallest topics first and one partition per topic per round, so a small
  topic never waits for a large one to finish;
* **state** - :class:`TopicPhase` and :func:`advance` are the legal life of a topic move;
  :func:`decide` says what to do with a partition found in a given state (resume adopts);
* **stalls** - :func:`observe_progress` and :func:`stalled_replicas` find replicas being added
  that have made no byte progress for a while;
* **safety** - :func:`isr_short` says when a partition must be held (its ISR is short).

Example::

    >>> throttle_entries([PartitionMove("t", 0, (1, 2), (4, 5))])
    (('0:1', '0:2'), ('0:4', '0:5'))
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping, Sequence

from migrate.errors import BadInput
from migrate.core.model import Broker, ClusterSnapshot, Topic, ZkEnsemble

MAX_THROTTLE_CONFIG_CHARS = 50_000
"""Longest ``*.replication.throttled.replicas`` value kmigrate writes for one topic.

Topic configs live in one ZooKeeper znode (``jute.maxbuffer``, 1 MB by default, for all of the
topic's configs) and travel in every config request; a topic with thousands of partitions moved
at once would exceed it. The scheduler limits the partitions in flight per topic instead.
"""

DEFAULT_MAX_MOVES_PER_BROKER = 5
DEFAULT_STALL_TIMEOUT_S = 120.0
DEFAULT_POLL_INTERVAL_S = 0.5

_MAPPING_ITEM = re.compile(r"^\s*(\d+)\s*[:=]\s*(\d+)\s*$")


# --------------------------------------------------------------------------- input


def parse_mapping(text: str | None, option: str = "--mapping") -> dict[int, int]:
    """``"1:4,2:5,3:6"`` -> ``{1: 4, 2: 5, 3: 6}`` (old broker id -> new broker id).

    Refused (:class:`BadInput`): empty, unreadable items, an old id given twice, an id that is
    both old and new, two old brokers sent to the same new one.

    >>> parse_mapping("1:4, 2:5")
    {1: 4, 2: 5}
    """
    if text is None or not text.strip():
        raise BadInput(f"{option} is empty: give old:new broker ids, like 1:4,2:5,3:6")
    mapping: dict[int, int] = {}
    for item in text.split(","):
        m = _MAPPING_ITEM.match(item)
        if not m:
            raise BadInput(f"{option} {text!r}: {item.strip()!r} is not old:new broker ids; write e.g. 1:4,2:5,3:6")
        old, new = int(m.group(1)), int(m.group(2))
        if old in mapping:
            raise BadInput(f"{option} {text!r}: broker {old} is mapped twice; give each old broker one new id")
        mapping[old] = new
    check_mapping(mapping, option)
    return mapping


def check_mapping(mapping: Mapping[int, int], source: str = "--mapping") -> None:
    """Refuse a mapping that is empty, maps a broker onto itself or onto another old broker, or
    sends two old brokers to the same new one (the replication factor could not be kept)."""
    if not mapping:
        raise BadInput(f"{source} is empty: give old:new broker ids, like 1:4,2:5,3:6")
    both = sorted(set(mapping) & set(mapping.values()))
    if both:
        raise BadInput(f"{source}: broker {both[0]} is both an old and a new broker; map old brokers to new ids only")
    seen: dict[int, int] = {}
    for old, new in sorted(mapping.items()):
        if new in seen:
            raise BadInput(f"{source}: brokers {seen[new]} and {old} both map to {new}; give each old broker its own new broker")
        seen[new] = old


def compile_topic_filter(include: str | None, exclude: str | None) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    """Compile ``--topics`` / ``--exclude`` (Python regular expressions, matched in full)."""
    out: list[re.Pattern[str] | None] = []
    for option, text in (("--topics", include), ("--exclude", exclude)):
        if text is None:
            out.append(None)
            continue
        try:
            out.append(re.compile(text))
        except re.error as exc:
            raise BadInput(f"{option} {text!r} is not a valid regular expression ({exc}): e.g. 'orders\\..*'") from None
    return out[0], out[1]


def select_topics(topics: Iterable[str], include: re.Pattern[str] | None, exclude: re.Pattern[str] | None) -> list[str]:
    """Topics matched in full by ``include`` (all when None) and not by ``exclude``, sorted."""
    return sorted(
        t for t in topics
        if (include is None or include.fullmatch(t)) and not (exclude is not None and exclude.fullmatch(t))
    )


# --------------------------------------------------------------------------- targets


def plan_targets(topics: Sequence[Topic], brokers: Sequence[Broker], mapping: Mapping[int, int],
                 keep: Iterable[int] = ()) -> tuple[dict[tuple[str, int], tuple[int, ...]], list[str]]:
    """Target replicas of every partition of ``topics`` that must move, by the planner's rule
    (:func:`migrate.core.planner.build_plan`: each old id replaced in place by its new id, an id
    without mapping kept with a warning, invalid lists repaired across racks, preferred leaders
    balanced), and the planner's warnings. Partitions already on target are absent.

    ``topics`` carry the replicas to plan from: for a partition in flight, pass the replicas it
    came from (:attr:`InFlight.original`). ``brokers`` need ``id`` and ``rack``.

    >>> from migrate.core.model import Broker, Partition, Topic
    >>> t = Topic("t", partitions=(Partition(0, (1, 2), (1, 2), 1),))
    >>> bs = [Broker(i, "h", 9092, f"AD-{(i - 1) % 3 + 1}/FD-1") for i in (1, 2, 4, 5)]
    >>> sorted(plan_targets([t], bs, {1: 4, 2: 5})[0][("t", 0)])
    [4, 5]
    """
    from migrate.core.planner import build_plan
    from migrate.core.playbook import BrokerSettings, KafkaSettings, Playbook, ZooKeeperSettings

    if not topics:
        return {}, []
    snapshot = ClusterSnapshot(zookeeper=ZkEnsemble(connect="localhost:2181"), brokers=tuple(brokers),
                               topics=tuple(topics))
    playbook = Playbook(
        source="kmigrate partitions",
        kafka=KafkaSettings(bootstrap_servers="localhost:9092"),
        zookeeper=ZooKeeperSettings(connect="localhost:2181"),
        brokers=BrokerSettings(mapping=dict(mapping), keep=tuple(sorted(set(keep)))),
    )
    plan = build_plan(snapshot, playbook, allow_merge=True)
    return {(m.topic, m.partition): tuple(m.target) for m in plan.moves}, list(plan.warnings)


# --------------------------------------------------------------------------- moves


@dataclass(frozen=True)
class PartitionMove:
    """One partition to move: its replicas when the move was planned (``current``, first is the
    preferred leader) and its ``target``. ``size_bytes`` is the data each new replica copies."""

    topic: str
    partition: int
    current: tuple[int, ...]
    target: tuple[int, ...]
    size_bytes: int = 0
    lane: str = field(default="", compare=False)  # "large" | "small": how the scheduler admitted it

    @property
    def adding(self) -> tuple[int, ...]:
        return tuple(b for b in self.target if b not in self.current)

    @property
    def removing(self) -> tuple[int, ...]:
        return tuple(b for b in self.current if b not in self.target)

    @property
    def brokers(self) -> frozenset[int]:
        """Brokers that carry the copy: the source (the leader, normally the first current replica)
        and every new replica. The per-broker cap counts a move on each of them, as Cruise
        Control does (its ``oldLeader`` and ``replicasToAdd``); a follower that only drops its
        replica does no work."""
        if not self.adding:
            return frozenset()
        return frozenset(self.adding) | frozenset(self.current[:1])

    @property
    def bytes_to_copy(self) -> int:
        return self.size_bytes * len(self.adding)

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    @property
    def needed(self) -> bool:
        """False when the partition already sits on its target (order included)."""
        return tuple(self.current) != tuple(self.target)


# --------------------------------------------------------------------------- throttles

LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
TOPIC_THROTTLE_CONFIGS = (LEADER_REPLICAS, FOLLOWER_REPLICAS)
BROKER_THROTTLE_CONFIGS = (LEADER_RATE, FOLLOWER_RATE)


def throttle_entries(moves: Iterable[PartitionMove]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(leader entries, follower entries) for moving partitions, as Kafka's own tool sets them:
    leader throttle on every current replica (any may be the source), follower throttle on the
    replicas being added. Sorted by partition then broker, no repeats."""
    leader: set[tuple[int, int]] = set()
    follower: set[tuple[int, int]] = set()
    for m in moves:
        leader.update((m.partition, b) for b in m.current)
        follower.update((m.partition, b) for b in m.adding)
    return tuple(f"{p}:{b}" for p, b in sorted(leader)), tuple(f"{p}:{b}" for p, b in sorted(follower))


def fill_throttle_lists(listed: Sequence[PartitionMove], upcoming: Iterable[PartitionMove],
                        max_chars: int = MAX_THROTTLE_CONFIG_CHARS) -> list[PartitionMove]:
    """``listed`` (moves whose entries a topic's lists must hold), then ``upcoming`` moves in
    order, as long as both lists stay within ``max_chars``. Linear in the moves, for topics with
    thousands of partitions.

    >>> ms = [PartitionMove("t", p, (1,), (4,)) for p in range(3)]
    >>> [m.partition for m in fill_throttle_lists(ms[:1], ms[1:], max_chars=len("0:1,1:1"))]
    [0, 1]
    """
    out = list(listed)
    leader_entries, follower_entries = throttle_entries(out)
    leader, follower = set(leader_entries), set(follower_entries)
    # config_chars of a list = sum(len(entry) + 1) - 1 (no comma after the last entry)
    sizes = [sum(len(e) + 1 for e in leader), sum(len(e) + 1 for e in follower)]
    for m in upcoming:
        adds = ({f"{m.partition}:{b}" for b in m.current} - leader, {f"{m.partition}:{b}" for b in m.adding} - follower)
        grown = [size + sum(len(e) + 1 for e in add) for size, add in zip(sizes, adds)]
        if max(grown) - 1 > max_chars:
            break
        leader |= adds[0]
        follower |= adds[1]
        sizes = grown
        out.append(m)
    return out


def parse_entries(value: str | None) -> tuple[str, ...]:
    """A throttled-replicas config value -> its entries (``"0:1, 1:2"`` -> ``("0:1", "1:2")``).
    ``"*"`` stays ``("*",)``."""
    if not value:
        return ()
    return tuple(e.strip() for e in value.split(",") if e.strip())


def format_entries(entries: Iterable[str]) -> str:
    return ",".join(entries)


def config_chars(entries: Iterable[str]) -> int:
    """Length of the config value the entries make (commas included)."""
    items = list(entries)
    return sum(len(e) for e in items) + max(0, len(items) - 1)


# --------------------------------------------------------------------------- scheduling


@dataclass(frozen=True)
class Caps:
    """Concurrency limits: partitions moving at once per broker and in the whole cluster
    (``None``: no cluster cap), and the longest throttle list per topic.

    ``small_move_bytes``: a move copying more than this may go in the *large lane* (``None``: no
    move does). The large lane holds at most ``per_broker - per_broker // 2`` slots of a broker
    (at least one) and takes the largest moves first, where the busiest brokers are, so every
    broker's throttled bandwidth stays in use and the biggest copies do not all end up last; the
    other slots always serve the smallest topics first. The runner sets it to what the throttle
    copies in :data:`SMALL_MOVE_SECONDS`.
    """

    per_broker: int = DEFAULT_MAX_MOVES_PER_BROKER
    cluster: int | None = None
    throttle_chars: int = MAX_THROTTLE_CONFIG_CHARS
    small_move_bytes: int | None = None

    def __post_init__(self) -> None:
        if self.per_broker < 1:
            raise BadInput(f"--max-moves-per-broker {self.per_broker}: give 1 or more")
        if self.cluster is not None and self.cluster < 1:
            raise BadInput(f"--max-moves-cluster {self.cluster}: give 1 or more")

    @property
    def large_per_broker(self) -> int:
        return max(1, self.per_broker - self.per_broker // 2)

    def is_large(self, move: "PartitionMove") -> bool:
        """In the large lane: admitted there, or (not admitted yet / adopted) big enough for it."""
        if move.lane:
            return move.lane == "large"
        return self.fits_large_lane(move)

    def fits_large_lane(self, move: "PartitionMove") -> bool:
        """Big enough for the large lane: copies more than :attr:`small_move_bytes`."""
        return self.small_move_bytes is not None and move.bytes_to_copy > self.small_move_bytes


SMALL_MOVE_SECONDS = 1.0
"""A move the throttle copies in less than this is small (see :class:`Caps`)."""


def broker_load(in_flight: Iterable[PartitionMove]) -> dict[int, int]:
    """Partitions moving per broker (each move counts on every broker of :attr:`PartitionMove.brokers`)."""
    load: dict[int, int] = {}
    for m in in_flight:
        for b in m.brokers:
            load[b] = load.get(b, 0) + 1
    return load


def _data_brokers(m: PartitionMove) -> tuple[int, ...]:
    """Brokers that carry the copy: the new replicas (follower side) and the source (the leader,
    normally the first current replica)."""
    return tuple(dict.fromkeys((*m.adding, *m.current[:1])))


def broker_work(moves: Iterable[PartitionMove]) -> dict[int, int]:
    """Bytes each broker must carry for ``moves``: received by new replicas, sent by the source."""
    work: dict[int, int] = {}
    for m in moves:
        for b in m.adding:
            work[b] = work.get(b, 0) + m.size_bytes
        if m.current and m.adding:
            work[m.current[0]] = work.get(m.current[0], 0) + m.bytes_to_copy
    return work


def schedule(pending: Sequence[PartitionMove], in_flight: Sequence[PartitionMove], caps: Caps,
             held: frozenset[tuple[str, int]] = frozenset()) -> tuple[PartitionMove, ...]:
    """The partitions to submit now, in order.

    * A move is admitted only if every broker it involves stays within ``caps.per_broker`` and
      the cluster within ``caps.cluster`` (each move counts once on every broker that gains or
      loses its replica, as in Cruise Control).
    * The large lane goes first (moves above :attr:`Caps.small_move_bytes`), holding at most
      :attr:`Caps.large_per_broker` slots of each broker: the most work first, on the brokers
      with the most bytes left to carry, so every broker's bandwidth stays in use.
    * The small lane fills the other slots: topics take turns, one partition per topic per round,
      topics with the fewest bytes left first, so a small topic gets the next free slot even while
      large ones are moving. Within a topic, smaller partitions first (then partition number).
    * A topic's throttle lists (entries of the partitions in flight and admitted) stay within
      ``caps.throttle_chars``; at least one partition per topic is always allowed.
    * Partitions in ``held`` (short ISR) are skipped; a move that needs nothing is never returned.

    Pure and deterministic: same inputs, same answer.
    """
    load = broker_load(in_flight)
    large_load = broker_load(m for m in in_flight if caps.is_large(m))
    total = [len(in_flight)]
    candidates = [m for m in pending if m.needed and m.key not in held]
    flying: dict[str, list[PartitionMove]] = {}
    for m in in_flight:
        flying.setdefault(m.topic, []).append(m)
    chosen: list[PartitionMove] = []

    def fits_lists(m: PartitionMove) -> bool:
        group = flying.get(m.topic, [])
        if not group:
            return True
        leader, follower = throttle_entries([*group, m])
        return max(config_chars(leader), config_chars(follower)) <= caps.throttle_chars

    def admit(m: PartitionMove, lane: str) -> None:
        m = replace(m, lane=lane)
        for b in m.brokers:
            load[b] = load.get(b, 0) + 1
            if lane == "large":
                large_load[b] = large_load.get(b, 0) + 1
        total[0] += 1
        flying.setdefault(m.topic, []).append(m)
        chosen.append(m)

    def cluster_full() -> bool:
        return caps.cluster is not None and total[0] >= caps.cluster

    # -- large moves: most work first, where the busiest brokers are
    large = sorted((m for m in candidates if caps.fits_large_lane(m)), key=lambda m: (m.topic, m.partition))
    work = broker_work(candidates)  # bytes no move in flight is carrying yet
    while large and not cluster_full():
        best, best_key = None, None
        for m in large:
            if any(load.get(b, 0) + 1 > caps.per_broker or large_load.get(b, 0) + 1 > caps.large_per_broker
                   for b in m.brokers) or not fits_lists(m):
                continue
            key = (max(work.get(b, 0) for b in _data_brokers(m)), m.bytes_to_copy)
            if best_key is None or key > best_key:
                best, best_key = m, key
        if best is None:
            break
        admit(best, "large")
        large.remove(best)
        for b, w in broker_work([best]).items():
            work[b] = work.get(b, 0) - w
    if cluster_full():
        return tuple(chosen)

    # -- small moves: topics take turns, smallest first
    by_topic: dict[str, list[PartitionMove]] = {}
    for m in candidates:
        if not caps.fits_large_lane(m):  # large moves wait for a large-lane slot: they never crowd out small topics
            by_topic.setdefault(m.topic, []).append(m)
    for moves in by_topic.values():
        moves.sort(key=lambda m: (m.size_bytes, m.partition))
    remaining = {t: sum(m.bytes_to_copy for m in ms) for t, ms in by_topic.items()}
    order = sorted(by_topic, key=lambda t: (remaining[t], len(by_topic[t]), t))
    cursor = {t: 0 for t in order}
    progress = True
    while progress:
        progress = False
        for t in order:
            queue = by_topic[t]
            while cursor[t] < len(queue):
                if cluster_full():
                    return tuple(chosen)
                m = queue[cursor[t]]
                cursor[t] += 1
                if any(load.get(b, 0) + 1 > caps.per_broker for b in m.brokers):
                    continue  # this one waits; try the topic's next partition
                if not fits_lists(m):
                    cursor[t] = len(queue)  # the topic's lists are full for now
                    break
                admit(m, "small")
                progress = True
                break  # next topic's turn
    return tuple(chosen)


# --------------------------------------------------------------------------- state


class TopicPhase(str, enum.Enum):
    """The life of one topic's move.

    ``pending -> moving -> moved -> recorded``; ``pending -> moved`` when every partition is
    already on target (resume after a crash before the bookkeeping write); ``moving -> stalled ->
    moving`` while a replica makes no progress; ``moving|stalled -> cancelled`` (``--cancel`` or
    ``--on-stall cancel``); ``pending|moving -> gone`` when the topic is deleted meanwhile.
    """

    pending = "pending"
    moving = "moving"
    stalled = "stalled"
    moved = "moved"  # every partition on target, verified; not yet recorded
    recorded = "recorded"
    cancelled = "cancelled"
    gone = "gone"


_LEGAL: dict[TopicPhase, frozenset[TopicPhase]] = {
    TopicPhase.pending: frozenset({TopicPhase.moving, TopicPhase.moved, TopicPhase.gone, TopicPhase.recorded}),
    TopicPhase.moving: frozenset({TopicPhase.moved, TopicPhase.stalled, TopicPhase.cancelled, TopicPhase.gone}),
    TopicPhase.stalled: frozenset({TopicPhase.moving, TopicPhase.moved, TopicPhase.cancelled, TopicPhase.gone}),
    TopicPhase.moved: frozenset({TopicPhase.recorded, TopicPhase.moving}),  # moving: partitions added meanwhile
    TopicPhase.recorded: frozenset(),
    TopicPhase.cancelled: frozenset(),
    TopicPhase.gone: frozenset(),
}


def advance(phase: TopicPhase, to: TopicPhase) -> TopicPhase:
    """``to`` when the transition is legal (staying put is), else ``ValueError``."""
    if to == phase or to in _LEGAL[phase]:
        return to
    raise ValueError(f"illegal topic transition {phase.value} -> {to.value}")


class Decision(str, enum.Enum):
    """What to do with one partition, from what the cluster shows."""

    done = "done"  # replicas equal the target: nothing to move
    adopt = "adopt"  # a reassignment to our target is in flight: wait for it
    wait = "wait"  # a reassignment to another target is in flight (not ours): wait, then re-plan
    submit = "submit"  # nothing in flight and not on target: submit it
    hold = "hold"  # not on target but the ISR is short: do not touch it yet


@dataclass(frozen=True)
class InFlight:
    """An ongoing reassignment as ``ListPartitionReassignments`` shows it."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def target(self) -> tuple[int, ...]:
        """Where the reassignment goes: the full replica list without the replicas leaving."""
        return tuple(b for b in self.replicas if b not in self.removing)

    @property
    def original(self) -> tuple[int, ...]:
        """Where it came from (where a cancel sends it back)."""
        return tuple(b for b in self.replicas if b not in self.adding)


def decide(replicas: Sequence[int], target: Sequence[int], in_flight: InFlight | None,
           isr: Sequence[int] | None = None, min_isr: int = 1) -> Decision:
    """Resume adopts, never refuses.

    >>> decide((4, 5), (4, 5), None)
    <Decision.done: 'done'>
    >>> decide((4, 5, 1, 2), (4, 5), InFlight((4, 5, 1, 2), (4, 5), (1, 2)))
    <Decision.adopt: 'adopt'>
    >>> decide((1, 2), (4, 5), None, isr=(1,), min_isr=1)
    <Decision.hold: 'hold'>
    """
    if in_flight is not None:
        return Decision.adopt if tuple(in_flight.target) == tuple(target) else Decision.wait
    if tuple(replicas) == tuple(target):
        return Decision.done
    if isr is not None and isr_short(replicas, isr, min_isr):
        return Decision.hold
    return Decision.submit


def isr_short(replicas: Sequence[int], isr: Sequence[int], min_isr: int) -> bool:
    """True when a partition must not be moved now: some replica is out of sync and the ISR has no
    margin over ``min.insync.replicas`` (a move adds load and could drop it below), or the ISR is
    already below it.

    >>> isr_short((1, 2, 3), (1, 2, 3), 2), isr_short((1, 2, 3), (1, 2), 2), isr_short((1, 2, 3), (1, 2), 1)
    (False, True, False)
    """
    in_sync = [b for b in replicas if b in set(isr)]
    if len(in_sync) < min(min_isr, len(replicas)):
        return True
    return len(in_sync) < len(replicas) and len(in_sync) <= min_isr


def same_replicas(a: Sequence[int], b: Sequence[int]) -> bool:
    """Equal lists, order included (the first replica is the preferred leader)."""
    return tuple(a) == tuple(b)


# --------------------------------------------------------------------------- progress and stalls


@dataclass(frozen=True)
class ReplicaProgress:
    """Bytes held by one replica being added, and when they last grew (seconds, caller's clock)."""

    bytes: int
    changed_at_s: float
    reported: bool = False  # a stall of this replica was already reported


ReplicaKey = tuple[str, int, int]  # (topic, partition, broker)


def observe_progress(previous: Mapping[ReplicaKey, ReplicaProgress], sizes: Mapping[ReplicaKey, int | None],
                     watched: Iterable[ReplicaKey], now_s: float) -> dict[ReplicaKey, ReplicaProgress]:
    """Fold one observation of replica sizes into the progress of every ``watched`` replica.

    A replica whose size is unknown (``None`` or absent: its broker did not answer) keeps its
    previous state, so a dead broker shows no progress. New replicas start now.
    """
    out: dict[ReplicaKey, ReplicaProgress] = {}
    for key in watched:
        size = sizes.get(key)
        prev = previous.get(key)
        if prev is None:
            out[key] = ReplicaProgress(size or 0, now_s)
        elif size is not None and size > prev.bytes:
            out[key] = ReplicaProgress(size, now_s)
        elif size is not None and size < prev.bytes:
            out[key] = replace(prev, bytes=size)  # truncated/restarted: no progress
        else:
            out[key] = prev
    return out


def stalled_replicas(progress: Mapping[ReplicaKey, ReplicaProgress], now_s: float, timeout_s: float) -> list[ReplicaKey]:
    """Replicas being added whose size has not grown for ``timeout_s`` (sorted).

    A replica that holds all the source's bytes but stays out of the ISR is stalled too: a
    caught-up replica joins the ISR within seconds, so waiting longer means it is stuck.
    """
    return sorted(k for k, p in progress.items() if now_s - p.changed_at_s >= timeout_s)


@dataclass(frozen=True)
class Totals:
    """Bytes to copy and copied for a set of moves, for progress bars."""

    total_bytes: int = 0
    copied_bytes: int = 0

    def add(self, other: "Totals") -> "Totals":
        return Totals(self.total_bytes + other.total_bytes, self.copied_bytes + other.copied_bytes)


def copied(move: PartitionMove, sizes: Mapping[ReplicaKey, int | None], finished: bool) -> Totals:
    """Bytes copied so far for ``move``: each added replica's size, capped at the source size."""
    total = move.bytes_to_copy
    if finished:
        return Totals(total, total)
    done = 0
    for b in move.adding:
        s = sizes.get((move.topic, move.partition, b)) or 0
        done += min(s, move.size_bytes)
    return Totals(total, done)


@dataclass(frozen=True)
class Rate:
    """A bytes-per-second estimate from (time, bytes) samples, with an ETA."""

    samples: tuple[tuple[float, int], ...] = field(default_factory=tuple)
    window_s: float = 30.0

    def add(self, now_s: float, copied_bytes: int) -> "Rate":
        kept = tuple(s for s in self.samples if now_s - s[0] <= self.window_s)
        return Rate(kept + ((now_s, copied_bytes),), self.window_s)

    @property
    def bytes_per_s(self) -> float:
        if len(self.samples) < 2:
            return 0.0
        (t0, b0), (t1, b1) = self.samples[0], self.samples[-1]
        return max(0.0, (b1 - b0) / (t1 - t0)) if t1 > t0 else 0.0

    def eta_s(self, remaining_bytes: int) -> float | None:
        rate = self.bytes_per_s
        return remaining_bytes / rate if rate > 0 else None


# --------------------------------------------------------------------------- plan id


def mapping_plan_id(mapping: Mapping[int, int]) -> str:
    """A stable plan id for a migration given only by its mapping: ``mapping-1.4-2.5-3.6``.

    Readable on purpose: the bookkeeping topic shows which migration a record belongs to.
    """
    return "mapping-" + "-".join(f"{o}.{n}" for o, n in sorted(mapping.items()))
