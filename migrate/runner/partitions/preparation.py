"""Before the loop of ``kmigrate partitions`` (procedure steps 2-6 of :mod:`migrate.runner.partitions.run`),
and the topics that appear during it (step 8): look, plan, check, then start.

:meth:`Preparation.prepare` changes nothing: it reads the brokers and the bookkeeping topic, refuses
an overlapping run, plans the topics not recorded yet (partitions in flight planned from where
they came from), and checks health and rights. :meth:`Preparation.start` makes the first changes:
the bookkeeping topic, the plan and ``run`` records, the throttles an earlier run left behind.
"""

from __future__ import annotations

from typing import Mapping

from migrate.core.ledger import Ledger, make_record
from migrate.core.model import Partition, Topic
from migrate.core.partitions.mapping import select_topics
from migrate.core.partitions.moves import InFlight, PartitionMove, plan_targets
from migrate.core.partitions.phases import TopicPhase
from migrate.core.throttle.options import CANARY_TOPIC
from migrate.core.permissions import bookkeeping_needs, partitions_needs
from migrate.errors import BadInput
from migrate.runner.events import (
    OMIT,
    BookkeepingCreated, Discovered, ForeignPlan, Resume, RunStarted, Start, WarningEvent, WouldMove, WouldRecord,
)
from migrate.runner.partitions.state import RunState, TopicRun
from migrate.runner.partitions.throttles import ThrottleTally, clear_recorded_throttles, now_s, see_hidden_rates
from migrate.runner.permissions import require, require_after_create


class Preparation:
    """Looks, plans and checks before the loop (:meth:`prepare`), makes the first changes (:meth:`start`)
    and plans the topics created meanwhile (:meth:`discover`)."""

    def __init__(self, run: RunState):
        self.run = run

    # ------------------------------------------------------------- preparation
    def prepare(self) -> Ledger:
        """Look, plan and check (nothing changed); the bookkeeping records read."""
        run, rq = self.run, self.run.rq
        run.view.brokers = run.admin.brokers()
        run.view.live = {b.id: f"{b.host}:{b.port}" for b in run.view.brokers}
        if not rq.dry_run:  # before any change: refused without ZooKeeper on brokers before 2.8
            see_hidden_rates(run.admin, run.view.live, rq.zookeeper, list(rq.zk_auth), rq.ignore_hidden_rates)
        new = sorted(set(rq.mapping.values()))
        missing = [b for b in new if b not in run.view.live]
        if missing and not rq.force:
            raise BadInput(
                f"new broker(s) {', '.join(map(str, missing))} are not alive in the cluster (live: "
                f"{', '.join(map(str, sorted(run.view.live)))}): start them or fix the mapping (--force moves anyway)"
            )
        if missing:
            run.emit(WarningEvent(message=f"new broker(s) {missing} are not alive; moves to them will stall (--force)"))
        ledger = Ledger([])
        if run.book.exists(run.admin.admin):
            ledger = run.book.read()
        if not rq.dry_run:
            run.lease.refuse_overlap(ledger)
        self._read_ledger(ledger)
        all_topics = run.admin.describe(None)
        run.canary_exists = (rq.auto.canary_topic if rq.auto is not None else CANARY_TOPIC) in all_topics
        run.leftover_canary = rq.auto is None and run.canary_exists
        for own in rq.not_moved():
            all_topics.pop(own, None)
        if rq.include is not None and not select_topics(all_topics, rq.include, None):
            raise BadInput(f"--topics {rq.include.pattern!r} matches no topic of the cluster: check the expression")
        selected = select_topics(all_topics, rq.include, rq.exclude)
        old = set(rq.mapping)
        stale = sorted(t for t in selected if t in run.recorded
                       and any(set(p.replicas) & old for p in all_topics[t].partitions))
        if stale:  # recreated, or partitions added, after it was recorded: the record no longer holds
            run.recorded -= set(stale)
            run.emit(WarningEvent(message=f"{len(stale)} recorded topic(s) have replicas on old brokers "
                                          f"again ({', '.join(stale[:5])}): moving them again"))
        flights = run.admin.list_reassignments()
        self.plan_topics([all_topics[t] for t in selected if t not in run.recorded], flights)
        if not rq.force:
            self._precheck(flights)
        self._check_rights()
        self._announce(selected)
        return ledger

    def _read_ledger(self, ledger: Ledger) -> None:
        """This migration's plan ids, topics recorded and submissions, from the bookkeeping records."""
        run, rq = self.run, self.run.rq
        run.migration = ledger.migration(rq.plan_id, rq.mapping)
        run.recorded = set(ledger.moved(run.migration))
        run.submitted_targets = ledger.submitted(run.migration)
        for counts_topic, n in ledger.moved_counts(run.migration).items():
            if n > 1:
                run.emit(WarningEvent(message=f"topic {counts_topic} is recorded {n} times by plan {rq.plan_id}"))
        for other, topics in sorted(ledger.foreign_moved(run.migration).items()):
            run.emit(ForeignPlan(plan_id=other, topics=len(topics),
                                 message=f"{len(topics)} topic(s) were recorded by a migration with another broker "
                                         f"mapping (plan {other}): kmigrate checks where they are instead"))

    def _announce(self, selected: list[str]) -> None:
        """The run's :class:`Start`; a dry run's moves."""
        run, rq = self.run, self.run.rq
        moves = [m for tr in run.topics.values() for m in run.moves(tr.name).values()]
        run.emit(Start(
            plan_id=rq.plan_id, mapping={str(k): v for k, v in sorted(rq.mapping.items())},
            throttle_bytes_per_s=rq.throttle_bytes_per_s, bookkeeping_topic=rq.bookkeeping_topic,
            topics_selected=len(selected), topics_recorded=len([t for t in selected if t in run.recorded]),
            topics_to_move=len([t for t in run.topics.values() if run.moves(t.name)]),
            topics_to_record=len(run.topics), partitions_to_move=len(moves),
            bytes_to_copy=sum(m.bytes_to_copy for m in moves), dry_run=rq.dry_run,
            max_moves_per_broker=rq.caps.per_broker, max_moves_cluster=rq.caps.cluster,
            throttle_auto=OMIT if rq.auto is None else {
                "latency_budget_ms": round(rq.auto.budget.seconds * 1000.0, 1),
                "start_rate_bytes_per_s": rq.auto.settings.start_rate,
                "min_rate_bytes_per_s": rq.auto.settings.min_rate,
                "max_rate_bytes_per_s": rq.auto.settings.max_rate,
                "canary_report": rq.auto.canary_report},
        ))
        if rq.dry_run:
            for tr in sorted(run.topics.values(), key=lambda t: t.name):
                moves_of = run.moves(tr.name)
                if not moves_of:
                    run.emit(WouldRecord(topic=tr.name))
                    continue
                run.emit(WouldMove(topic=tr.name, partitions=[
                    {"partition": m.partition, "current": list(m.current), "target": list(m.target), "bytes": m.size_bytes}
                    for m in sorted(moves_of.values(), key=lambda m: m.partition)]))

    def _rights(self) -> list:
        run = self.run
        auto = run.rq.auto
        return partitions_needs([t for t in run.topics if run.moves(t)], run.rq.bookkeeping_topic,
                                run.book.exists(run.admin.admin),
                                None if auto is None or auto.canary_report else auto.canary_topic,
                                run.canary_exists)

    def _check_rights(self) -> None:
        """BadInput (nothing changed) when the principal lacks a right the run needs; a dry run warns."""
        run = self.run
        warn = (lambda line: run.emit(WarningEvent(message=line))) if run.rq.dry_run else None
        require(run.admin.admin, run.rq.client, self._rights(), warn=warn)

    def plan_topics(self, topics: list[Topic], flights: Mapping[tuple[str, int], InFlight]) -> list[str]:
        """Plan the moves of ``topics`` (partitions in flight planned from where they came from)."""
        run, rq = self.run, self.run.rq
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
        targets, warnings = plan_targets(movable, run.view.brokers, rq.mapping, rq.keep)
        names_set = {x.name for x in source}
        for (t, p), target in rq.plan_targets.items():
            if t in names_set:
                targets[(t, p)] = tuple(target)
        for key, f in flights.items():  # adopt what an earlier run of this plan submitted
            if key[0] in names_set and run.submitted_targets.get(key) == tuple(f.target):
                targets[key] = tuple(f.target)
        for w in warnings:
            run.emit(WarningEvent(message=w))
        names = [t.name for t in source]
        run.view.min_isr.update({t: int(c.get("min.insync.replicas", "1") or 1)
                                 for t, c in run.admin.topic_configs(names, ("min.insync.replicas",)).items()})
        sizes = self._source_sizes(source, targets)
        for t in source:
            run.topics.setdefault(t.name, TopicRun(t.name))
            for p in t.partitions:
                target = targets.get((t.name, p.partition))
                if target is None or tuple(target) == tuple(p.replicas):
                    continue
                run.tasks.plan(PartitionMove(t.name, p.partition, tuple(p.replicas), tuple(target),
                                             sizes.get((t.name, p.partition), 0)))
        return names

    def _source_sizes(self, topics: list[Topic], targets: Mapping[tuple[str, int], tuple[int, ...]]) -> dict[tuple[str, int], int]:
        wanted: dict[str, list[int]] = {}
        brokers: set[int] = set()
        for t in topics:
            for p in t.partitions:
                if (t.name, p.partition) in targets:
                    wanted.setdefault(t.name, []).append(p.partition)
                    brokers.update(p.replicas)
        got = self.run.admin.replica_sizes(sorted(b for b in brokers if b in self.run.view.live), wanted)
        out: dict[tuple[str, int], int] = {}
        for (t, p, _b), size in got.items():
            out[(t, p)] = max(out.get((t, p), 0), size)
        return out

    def _precheck(self, flights: Mapping[tuple[str, int], InFlight]) -> None:
        run = self.run
        offline, under = self._unhealthy(sorted(run.topics), flights)
        if offline or under:
            # a move that ended between listing the moves and describing the topics looks short of
            # its original replicas: look once more, both reads fresh, at the topics concerned
            again = sorted({name for name, _ in offline + under})
            offline, under = self._unhealthy(again, run.admin.list_reassignments())
        offline = [f"{t}-{p}" for t, p in offline]
        under = [f"{t}-{p}" for t, p in under]
        if offline:
            raise BadInput(f"{len(offline)} partition(s) are offline ({', '.join(offline[:5])}): bring their brokers back "
                           "before moving data (--force moves anyway)")
        if under:
            raise BadInput(f"{len(under)} partition(s) are under-replicated ({', '.join(under[:5])}): wait until every "
                           "replica is in sync (--force moves anyway)")
        dead = sorted({b for tr in run.topics.values() for m in run.moves(tr.name).values() for b in m.target
                       if b not in run.view.live})
        if dead:
            raise BadInput(f"the targets use broker(s) {dead} that are not alive: start them or fix the mapping "
                           "(--force moves anyway)")

    def _unhealthy(self, names: list[str], flights: Mapping[tuple[str, int], InFlight]
                   ) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
        """(offline, under-replicated) partitions of ``names``; a partition moving counts as
        under-replicated only if one of its original replicas is out of sync."""
        offline, under = [], []
        for name, t in self.run.admin.describe(names).items():
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
    def start(self, ledger: Ledger) -> None:
        """The first changes: the bookkeeping topic, the plan and ``run`` records, then the throttles
        an earlier run left behind removed (those a move in flight needs adopted)."""
        run, rq = self.run, self.run.rq
        new_live = [b for b in sorted(set(rq.mapping.values())) if b in run.view.live]
        created = run.book.ensure(run.admin.admin, new_live)
        if created:
            run.emit(BookkeepingCreated(topic=rq.bookkeeping_topic, replicas=new_live[:3]))
            # READ and WRITE of a topic not created yet could not be asked before: now, before any other change
            require_after_create(run.admin.admin, rq.client, bookkeeping_needs(rq.bookkeeping_topic, exists=False))
        run.book.warm()
        plans = ledger.plans()
        mapping_doc = {str(k): v for k, v in sorted(rq.mapping.items())}
        if plans.get(rq.plan_id, {}).get("mapping") != mapping_doc or plans[rq.plan_id].get("throttle_bytes_per_s") != rq.throttle_bytes_per_s:
            # not waited for: the first write-ahead below checks it (a run that dies first writes it again)
            run.book.append([make_record(rq.plan_id, "plan", "plan", now_s(), mapping=mapping_doc,
                                         throttle_bytes_per_s=rq.throttle_bytes_per_s)], wait=False)
        run.lease.beat("started")
        run.book.flush()
        # two runs that started at the same moment both passed the first look: the one recorded
        # first goes on, the other stops here, having changed nothing but its own records
        run.lease.refuse_overlap(run.book.read(), first_only=True)
        run.changed = True
        run.emit(RunStarted(run_id=run.lease.run_id, host=run.lease.host, pid=run.lease.pid))
        tally = ThrottleTally(run.emit)
        problems = clear_recorded_throttles(run.admin, run.book, ledger, rq.plan_id, tally,
                                            adopt=run.throttles, keep_topics=frozenset(run.topics))
        tally.close()
        for p in problems:
            run.emit(WarningEvent(message=p))
        if rq.resume:
            run.emit(Resume(records=len(ledger.records), topics_recorded=len(run.recorded)))
        # No throttle is set up front: each topic's lists are written with its first submission
        # (see Submission._throttle_for), so the first moves start after a few config writes, not after
        # one per topic of the whole run (each is a ZooKeeper write in the controller).

    # --------------------------------------------------------------- discover
    def discover(self) -> bool:
        """List the topics again (procedure step 8): True when new ones must move or be recorded."""
        run, rq = self.run, self.run.rq
        ledger = run.book.read()
        run.recorded |= set(ledger.moved(run.migration))
        all_topics = run.admin.describe(None)
        for own in rq.not_moved():
            all_topics.pop(own, None)
        fresh = [t for t in select_topics(all_topics, rq.include, rq.exclude)
                 if t not in run.recorded and (t not in run.topics or run.topics[t].phase == TopicPhase.gone)]
        fresh = [t for t in fresh if t not in run.topics]
        if not fresh:
            return False
        flights = run.admin.list_reassignments()
        run.view.live = run.admin.live_brokers()
        run.view.brokers = run.admin.brokers()
        self.plan_topics([all_topics[t] for t in fresh], flights)
        run.emit(Discovered(topics=fresh,
                            message=f"{len(fresh)} topic(s) appeared during the run: {', '.join(fresh[:5])}"))
        return True
