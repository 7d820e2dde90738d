"""Throttles kmigrate owns: set them (recorded first), keep each topic's lists right, remove them.

Every set is recorded in the bookkeeping topic *before* it is made; every removal takes away only
what kmigrate recorded (:func:`clear_recorded_throttles`, also after a crash). Which entries and
which config operation is decided in :mod:`migrate.core.partitions.throttles`; this module reads, records
and writes.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from migrate.adapters.kafka.bookkeeping import BookkeepingTopic
from migrate.adapters.kafka.admin import ReassignmentAdmin
from migrate.adapters.zookeeper.client import broker_config_znodes
from migrate.core.ledger import Ledger, Record, make_record
from migrate.core.partitions.moves import InFlight, PartitionMove
from migrate.runner.events import (
    Emit, ThrottleAdopted, ThrottleCleared, ThrottleSet, ThrottlesAdopted, ThrottlesRemoved, WarningEvent,
)
from migrate.core.partitions.throttles import (
    BROKER_THROTTLE_CONFIGS, FOLLOWER_REPLICAS, LEADER_REPLICAS, MAX_THROTTLE_CONFIG_CHARS, TOPIC_THROTTLE_CONFIGS,
    broker_rate_removal, entries_to_append, list_change, list_operation, list_removal, needed_by, parse_entries,
    rates_in_znode, throttle_entries,
)
from migrate.core.versions import rates_from_zookeeper
from migrate.core.zookeeper.config import split_connect

TopicOps = dict[str, list[tuple[str, str, str | None]]]


def now_s() -> float:
    """Wall-clock time of a bookkeeping record (Unix seconds)."""
    return time.time()


def together(*calls: Callable[[], Any] | None) -> list[Any]:
    """Run the calls at once (each waits on the network), return their results in order; an
    absent call gives ``None``. The first error is raised once all have ended."""
    present = [c for c in calls if c is not None]
    if len(present) < 2:
        return [c() if c is not None else None for c in calls]
    with ThreadPoolExecutor(max_workers=len(present)) as pool:
        futures = [pool.submit(c) if c is not None else None for c in calls]
    return [f.result() if f is not None else None for f in futures]


def see_hidden_rates(admin: ReassignmentAdmin, live: Mapping[int, str], zookeeper: str | None, auth: list,
                     override: bool) -> frozenset[int]:
    """Brokers before Kafka 2.8 leave their throttle rates out of DescribeConfigs: make ``admin`` read
    those brokers' rates from ZooKeeper (``/config/brokers/<id>``), so a rate someone else set is
    recorded and restored as on later releases. ``live``: broker id -> host:port. Without ZooKeeper
    that is BadInput before anything changes, unless ``override``. Returns the brokers read there."""
    releases = admin.broker_releases(live)
    hidden = rates_from_zookeeper(releases, bool(zookeeper), override)
    if not hidden:
        if override:  # unread: a rate kmigrate recorded there is taken as still its own when it is removed
            admin.hidden_rates = rates_from_zookeeper(releases, True, True)
        return hidden
    hosts, chroot = split_connect(zookeeper)

    def read(brokers: list[int]) -> dict[int, dict[str, str]]:
        return {b: rates_in_znode(raw) for b, raw in broker_config_znodes(hosts, chroot, auth, brokers).items()}

    read(sorted(hidden))  # ZooKeeper answers (and takes the login) before anything changes
    admin.hidden_rates, admin.read_hidden_rates = hidden, read
    return hidden


class Throttles:
    """Throttle configs kmigrate sets and removes in one run. It owns two things: the brokers whose
    rates this run set (:attr:`brokers`) and, per (topic, config), the entries this run appended
    (:attr:`ours`)."""

    def __init__(self, admin: ReassignmentAdmin, book: BookkeepingTopic, plan_id: str, rate: int, emit: Emit,
                 max_chars: int = MAX_THROTTLE_CONFIG_CHARS, auto: bool = False):
        self.admin = admin
        self.book = book
        self.plan_id = plan_id
        self.rate = str(rate)
        self.emit = emit
        self.max_chars = max_chars
        # --throttle auto: each broker's rate changes during the run (set_rates); a resumed run adopts
        # the rate an earlier run recorded whatever it is, and rates[b] is then the rate in force
        self.auto = auto
        self.rates: dict[int, str] = {}  # broker -> its own rate (auto), else self.rate
        self.brokers: set[int] = set()  # brokers whose rates this run set
        # (broker, config) -> the value this run put back when it removed an earlier run's rate: the prior
        # of its own rate there. A ZooKeeper-mode broker answers DescribeConfigs from a cache that a
        # ZooKeeper notification updates a moment later, so reading it back could take the removed rate
        # for someone else's and restore it at the end.
        self.restored: dict[tuple[int, str], str | None] = {}
        self.ours: dict[tuple[str, str], set[str]] = {}  # (topic, config) -> entries this run appended

    # ------------------------------------------------------------------ sync
    def sync(self, wanted_by_topic: Mapping[str, list[PartitionMove]], records: Iterable[Record] = (),
             brokers: Iterable[int] = (), live: Iterable[int] = ()) -> None:
        """Make each topic's throttled-replica lists hold exactly the entries of its moves in
        flight, among the entries kmigrate owns, and set the rate on ``brokers`` (those ``live``
        not set yet by this run).

        What is there now is read first (topics and brokers together); then one write records
        every change to come with ``records``; then topics (one request) and brokers (one request
        each) change together. Entries someone else set are never added to kmigrate's, so never
        removed. A broker that refuses its rate is reported and tried again with the next moves
        that need it."""
        live = set(live)
        todo = sorted(b for b in set(brokers) if b not in self.brokers and b in live)
        changes = self._changes(wanted_by_topic)
        topics = sorted({t for t, _ in changes})
        current, rates_now = together(
            (lambda: self.admin.topic_configs(topics, TOPIC_THROTTLE_CONFIGS, dynamic_only=True)) if topics else None,
            (lambda: self.admin.broker_dynamic_configs(todo, BROKER_THROTTLE_CONFIGS)) if todo else None,
        )
        out = [make_record(self.plan_id, "throttle-broker", f"{b}/{cfg}", now_s(), broker=b, config=cfg,
                           value=self.rate_of(b), prior=self.restored[(b, cfg)] if (b, cfg) in self.restored
                           else (rates_now or {}).get(b, {}).get(cfg))
               for b in todo for cfg in BROKER_THROTTLE_CONFIGS]
        out.extend(records)
        ops, added = self._operations(changes, current or {}, out)
        self.book.append(out)
        _, failed = together(
            (lambda: self.admin.alter_topic_configs(ops)) if ops else None,
            (lambda: self.admin.set_brokers_configs({b: {cfg: self.rate_of(b) for cfg in BROKER_THROTTLE_CONFIGS}
                                                     for b in todo})) if todo else None,
        )
        for (t, cfg), (_wanted, _adds, drops) in changes.items():
            ours = self.ours.setdefault((t, cfg), set())
            ours.difference_update(drops)
            ours.update(added.get((t, cfg), ()))
        if todo:
            failed = failed or {}
            for b, why in sorted(failed.items()):  # retried on the next moves that need it
                self.emit(WarningEvent(message=f"cannot set the throttle on broker {b}: {why}"))
            self.brokers.update(b for b in todo if b not in failed)
            done = [b for b in todo if b not in failed]
            if not self.rates:
                self.emit(ThrottleSet(brokers=done, rate_bytes_per_s=int(self.rate)))
            for rate in sorted({self.rate_of(b) for b in done}, key=int) if self.rates else ():
                self.emit(ThrottleSet(brokers=[b for b in done if self.rate_of(b) == rate], rate_bytes_per_s=int(rate)))

    def rate_of(self, broker: int) -> str:
        """The rate ``broker`` is (or will be) set to: its own under ``--throttle auto``, else the run's."""
        return self.rates.get(broker, self.rate)

    def set_rates(self, rates: Mapping[int, int], records: Iterable[Record] = ()) -> dict[int, str]:
        """``--throttle auto``: change the rate of brokers during the run. ``records`` (the decisions)
        and a ``throttle-broker`` record per config (the new value; the fold keeps the first prior,
        so the end of the run still restores what was there before kmigrate) are written first,
        then the brokers this run throttles already are changed; the others take their rate when
        :meth:`sync` first sets them. Returns the brokers that refused (id -> why), kept at their old rate."""
        before = {b: self.rate_of(b) for b in rates}
        changed = {b: str(int(r)) for b, r in rates.items() if self.rate_of(b) != str(int(r)) or b not in self.brokers}
        self.rates.update({b: str(int(r)) for b, r in rates.items()})
        live = sorted(b for b in changed if b in self.brokers)
        out = list(records)
        out += [make_record(self.plan_id, "throttle-broker", f"{b}/{cfg}", now_s(), broker=b, config=cfg,
                            value=changed[b], prior=None)
                for b in live for cfg in BROKER_THROTTLE_CONFIGS]
        if out:
            self.book.append(out)
        if not live:
            return {}
        failed = self.admin.set_brokers_configs({b: {cfg: changed[b] for cfg in BROKER_THROTTLE_CONFIGS} for b in live})
        for b, why in sorted(failed.items()):
            self.emit(WarningEvent(message=f"cannot change the throttle of broker {b}: {why}"))
            self.rates[b] = before[b]
        if failed:  # the config still holds the old rate: recorded so, it is still removed at the end
            self.book.append([make_record(self.plan_id, "throttle-broker", f"{b}/{cfg}", now_s(), broker=b, config=cfg,
                                          value=before[b], prior=None)
                              for b in sorted(failed) for cfg in BROKER_THROTTLE_CONFIGS])
        return dict(failed)

    def _changes(self, wanted_by_topic: Mapping[str, list[PartitionMove]]
                 ) -> dict[tuple[str, str], tuple[set[str], set[str], set[str]]]:
        """(topic, config) -> (wanted, adds, drops) for the lists that must change."""
        changes: dict[tuple[str, str], tuple[set[str], set[str], set[str]]] = {}
        for topic, moves in wanted_by_topic.items():
            leader, follower = throttle_entries(moves)
            wanted = {LEADER_REPLICAS: set(leader), FOLLOWER_REPLICAS: set(follower)}
            for cfg in TOPIC_THROTTLE_CONFIGS:
                adds, drops = list_change(wanted[cfg], self.ours.get((topic, cfg), set()), self.max_chars)
                if adds or drops:
                    changes[(topic, cfg)] = (wanted[cfg], adds, drops)
        return changes

    def _operations(self, changes, current: Mapping[str, Mapping[str, str]], out: list[Record]
                    ) -> tuple[TopicOps, dict[tuple[str, str], set[str]]]:
        """The config operations for ``changes`` given the lists ``current``ly set, and the entries
        kmigrate appends; their write-ahead records go to ``out``."""
        ops: TopicOps = {}
        added: dict[tuple[str, str], set[str]] = {}
        for (t, cfg), (wanted, adds, drops) in sorted(changes.items()):
            present = set(parse_entries(current.get(t, {}).get(cfg)))
            adds = added[(t, cfg)] = entries_to_append(adds, present)
            if adds:
                out.append(make_record(self.plan_id, "throttle-topic", f"{t}/{cfg}", now_s(),
                                       topic=t, config=cfg, entries=sorted(adds)))
            op = list_operation(wanted, adds, drops, present, self.ours.setdefault((t, cfg), set()))
            if op is not None:
                ops.setdefault(t, []).append((cfg, *op))
        return ops, added

    def holds(self, topic: str) -> bool:
        """True when kmigrate's entries are in the topic's throttle lists."""
        return any(self.ours.get((topic, cfg)) for cfg in TOPIC_THROTTLE_CONFIGS)

    def clear(self, topics: Iterable[str]) -> list[Record]:
        """Remove the topics' kmigrate entries now; return the ``throttle-cleared`` records to write."""
        topics = list(topics)
        self.sync({t: [] for t in topics})
        return [r for t in topics for r in self.forget_topic(t)]

    def forget_topic(self, topic: str) -> list[Record]:
        """The topic was deleted (its configs went with it), or its entries were removed: kmigrate
        owns none of them any more; return the ``throttle-cleared`` records to write."""
        out = []
        for cfg in TOPIC_THROTTLE_CONFIGS:
            if self.ours.pop((topic, cfg), None) is not None:
                out.append(make_record(self.plan_id, "throttle-cleared", f"{topic}/{cfg}", now_s(),
                                       scope="topic", topic=topic, config=cfg))
        return out


def clear_recorded_throttles(admin: ReassignmentAdmin, book: BookkeepingTopic, ledger: Ledger, plan_id: str,
                             emit: Emit, adopt: Throttles | None = None,
                             keep_topics: frozenset[str] = frozenset(),
                             keep_brokers: frozenset[int] = frozenset()) -> list[str]:
    """Remove every throttle the bookkeeping records say kmigrate set and did not clear yet (any
    plan id), and only those. A broker config changed since by someone else is left as it is.

    With ``adopt`` (a resuming run), throttles the run needs are taken over instead, so moves in
    flight never run unthrottled: broker rates equal to the run's rate, and kmigrate's entries of
    topics in ``keep_topics``; the run removes them when it is done with them. Without ``adopt``,
    the throttles of ``keep_topics`` and ``keep_brokers`` stay as they are (moves in flight need
    them), still recorded: the run or ``--cancel`` that ends those moves removes them.
    Returns problems that prevented a removal (a broker not answering: run again later)."""
    records, problems = _clear_broker_rates(admin, ledger, plan_id, emit, adopt, keep_brokers)
    records += _clear_topic_lists(admin, ledger, plan_id, emit, adopt, keep_topics)
    if records:
        book.append(records)
    return problems


def _clear_broker_rates(admin: ReassignmentAdmin, ledger: Ledger, plan_id: str, emit: Emit,
                        adopt: Throttles | None, keep: frozenset[int] = frozenset()) -> tuple[list[Record], list[str]]:
    problems: list[str] = []
    records: list[Record] = []
    brokers = {k: v for k, v in ledger.broker_throttles().items() if adopt is not None or k[0] not in keep}
    if not brokers:
        return records, problems
    current = admin.broker_dynamic_configs(sorted({b for b, _ in brokers}), BROKER_THROTTLE_CONFIGS)
    changes: dict[int, dict[str, str | None]] = {}
    actions: dict[tuple[int, str], str] = {}
    for (b, cfg), rec in sorted(brokers.items()):
        if b not in current:
            problems.append(f"broker {b} did not answer: its {cfg} stays until a later run removes it")
            continue
        now = current[b].get(cfg)
        if now is None and b in admin.hidden_rates and admin.read_hidden_rates is None:
            now = rec["value"]  # hidden and not read (--ignore-hidden-broker-rates): taken as kmigrate's still
        ours = rec["value"] if now is None or now not in rec.get("values", ()) else now  # one of kmigrate's values
        if adopt is not None and now == ours and (adopt.auto or now == adopt.rate):
            if all(current[b].get(c) == now and (b, c) in brokers for c in BROKER_THROTTLE_CONFIGS):
                adopt.brokers.add(b)
                if adopt.auto:
                    adopt.rates[b] = now
            emit(ThrottleAdopted(scope="broker", broker=b, config=cfg))
            continue
        action, restore = broker_rate_removal(now, ours, rec["prior"])
        if restore:
            changes.setdefault(b, {})[cfg] = rec["prior"]
        actions[(b, cfg)] = action
    failed = admin.set_brokers_configs(changes)
    for b, why in sorted(failed.items()):
        problems.append(f"broker {b} refused the throttle removal ({why}): it stays until a later run removes it")
    for (b, cfg), action in sorted(actions.items()):
        if b in failed:
            continue  # still recorded as set: a later run tries again
        if adopt is not None and cfg in changes.get(b, {}):
            adopt.restored[(b, cfg)] = changes[b][cfg]
        records.append(make_record(plan_id, "throttle-cleared", f"{b}/{cfg}", now_s(), scope="broker", broker=b, config=cfg))
        emit(ThrottleCleared(scope="broker", broker=b, config=cfg, action=action))
    return records, problems


def _clear_topic_lists(admin: ReassignmentAdmin, ledger: Ledger, plan_id: str, emit: Emit,
                       adopt: Throttles | None, keep_topics: frozenset[str]) -> list[Record]:
    records: list[Record] = []
    topics = ledger.topic_throttles()
    if not topics:
        return records
    current = admin.topic_configs(sorted({t for t, _ in topics}), TOPIC_THROTTLE_CONFIGS, dynamic_only=True)
    ops: TopicOps = {}
    for (t, cfg), entries in sorted(topics.items()):
        present = set(parse_entries(current.get(t, {}).get(cfg)))
        ours = present & entries
        if t in keep_topics:
            if adopt is not None:
                adopt.ours[(t, cfg)] = ours
                if ours:
                    emit(ThrottleAdopted(scope="topic", topic=t, config=cfg, entries=len(ours)))
            continue
        op = list_removal(present, entries)
        if op is not None:
            ops.setdefault(t, []).append((cfg, *op))
        records.append(make_record(plan_id, "throttle-cleared", f"{t}/{cfg}", now_s(), scope="topic", topic=t, config=cfg))
        emit(ThrottleCleared(scope="topic", topic=t, config=cfg, action="absent" if op is None else "removed",
                             entries=len(ours)))
    admin.alter_topic_configs(ops)
    return records


@dataclass(frozen=True)
class Released:
    """What :func:`release_throttles` left: kmigrate's moves still in flight (key -> ``InFlight``),
    the topics and brokers whose throttles they keep, and problems met removing the rest."""

    in_flight: dict[tuple[str, int], InFlight]
    topics: frozenset[str]
    brokers: frozenset[int]
    problems: list[str]


def release_throttles(admin: ReassignmentAdmin, book: BookkeepingTopic, plan_id: str, emit: Emit) -> Released:
    """Remove kmigrate's throttles except those its moves still in flight need (any run's, any
    plan's: :meth:`Ledger.started_by_kmigrate`); those stay recorded until the run or ``--cancel``
    that ends the moves removes them. Never leaves a move of kmigrate's unthrottled."""
    if not book.exists(admin.admin):
        return Released({}, frozenset(), frozenset(), [])
    flights = admin.list_reassignments()  # before the ledger: a submission is recorded before it is sent
    ledger = book.read()
    ours = {k: flights[k] for k in ledger.started_by_kmigrate(flights)}
    topics, brokers = needed_by(ours)
    tally = ThrottleTally(emit)
    problems = clear_recorded_throttles(admin, book, ledger, plan_id, tally, keep_topics=topics, keep_brokers=brokers)
    tally.close()
    return Released(ours, topics, brokers, problems)


class ThrottleTally:
    """An emitter that passes every event on and counts the throttle configs adopted and removed;
    :meth:`close` emits one summary event of each (the text output shows those, ``--verbose``
    and ``--output json`` every config too)."""

    def __init__(self, emit: Emit):
        self.emit = emit
        self.cleared: list[ThrottleCleared] = []
        self.adopted: list[ThrottleAdopted] = []

    def __call__(self, e) -> None:
        if isinstance(e, ThrottleCleared) and e.action != "absent":
            self.cleared.append(e)
        elif isinstance(e, ThrottleAdopted):
            self.adopted.append(e)
        self.emit(e)

    def close(self) -> None:
        if self.adopted:
            self.emit(throttles_summary(ThrottlesAdopted, self.adopted, "adopted (set by an earlier run, kept for this one)"))
        if self.cleared:
            self.emit(throttles_summary(ThrottlesRemoved, self.cleared, "removed"))
        self.adopted, self.cleared = [], []


def throttles_summary(cls, events: list, verb: str):
    """One event saying how many throttle configs (of how many topics and brokers) were ``verb``."""
    topics = sorted({e.topic for e in events if e.scope == "topic"})
    brokers = sorted({e.broker for e in events if e.scope == "broker"})
    entries = sum(e.entries for e in events if e.scope == "topic" and isinstance(e.entries, int))
    parts = []
    if topics:
        parts.append(f"{len(topics)} topic(s), {entries} replica entries")
    if brokers:
        parts.append(f"the rates of broker(s) {', '.join(map(str, brokers))}")
    return cls(configs=len(events), topics=topics, brokers=brokers,
               message=f"{len(events)} throttle config(s) {verb}: {'; '.join(parts)}")
