"""Submitting the moves of ``kmigrate partitions``: adopt what is in flight to our targets, then what the
scheduler admits, throttled first (procedure step 7 of :mod:`migrate.runner.partitions.run`).

Each partition still to move is decided on (:func:`migrate.core.partitions.phases.decide`): already
on target (``done``), a reassignment to our target in flight (adopted: ``moving``), one to another
target (``foreign``: waited for), a short ISR (``held``), else ``pending`` for the scheduler. The
throttle entries about to be set and the submission are recorded in one write, the throttles set,
then the reassignments sent.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from migrate.core.ledger import Record, make_record
from migrate.core.model import Topic
from migrate.core.partitions.moves import InFlight, PartitionMove, errors_line, partition_of
from migrate.core.partitions.phases import Decision, TopicPhase, advance, decide
from migrate.core.partitions.scheduler import schedule
from migrate.core.partitions.tasks import FINISHED, Key, PartitionState
from migrate.core.partitions.throttles import fill_throttle_lists
from migrate.errors import StepFailed
from migrate.runner.events import Adopted, Held, Submitted, WaitingForeign, crash_point
from migrate.runner.partitions.state import RunState
from migrate.runner.partitions.throttles import now_s

NEW_TOPICS_PER_SUBMIT = 5
"""Topics whose throttle lists are first written in one submission (see ``_few_new_topics``)."""


class Submission:
    """Adopts, schedules and sends the moves; keeps the throttle lists of the topics moving right."""

    def __init__(self, run: RunState):
        self.run = run

    def submit(self, flights: Mapping[Key, InFlight], described: Mapping[str, Topic]) -> None:
        """Adopt the moves in flight to our targets, then submit what the scheduler admits."""
        run = self.run
        if run.halted:
            self._sync_dirty()
            return
        pending, held, adopted = self._sort_partitions(flights, described)
        if adopted:
            self._throttle_for(adopted, [])
            self._moving(adopted, run.clock.now())
            run.emit(Adopted(partitions=[{"topic": m.topic, "partition": m.partition, "target": list(m.target)}
                                         for m in adopted]))
        chosen = self._few_new_topics(schedule(pending, run.tasks.flying(), run.rq.caps, frozenset(held)))
        if not chosen:
            self._sync_dirty()
            return
        self._send(chosen)

    def _sort_partitions(self, flights: Mapping[Key, InFlight], described: Mapping[str, Topic]
                         ) -> tuple[list[PartitionMove], set[Key], list[PartitionMove]]:
        """(pending, held, adopted): each partition still to move, by what :func:`decide` says of
        it; partitions done are marked, others' moves noted as foreign, held ones reported once."""
        run = self.run
        pending: list[PartitionMove] = []
        held: set[Key] = set()
        adopted: list[PartitionMove] = []
        for tr in run.active():
            t = described.get(tr.name)
            if t is None:
                continue
            for p, task in run.tasks.of_topic(tr.name).items():
                key, m = (tr.name, p), task.move
                if task.state not in (PartitionState.pending, PartitionState.held):
                    continue
                tp = partition_of(t, p)
                if tp is None:
                    continue
                d = decide(tp.replicas, m.target, flights.get(key), tp.isr, run.view.min_isr.get(tr.name, 1))
                if d == Decision.done:
                    run.tasks.to(key, PartitionState.done)
                elif d == Decision.adopt:
                    adopted.append(PartitionMove(m.topic, p, flights[key].original, m.target, m.size_bytes))
                elif d == Decision.wait:
                    run.tasks.wait_for(key, flights[key])
                    run.emit(WaitingForeign(topic=tr.name, partition=p, target=list(flights[key].target),
                                            message=f"{tr.name}-{p} is being moved to {list(flights[key].target)} by someone else: waiting"))
                elif d == Decision.hold:
                    held.add(key)
                    run.tasks.to(key, PartitionState.held)
                    if key not in run.reported.held:
                        run.reported.held.add(key)
                        run.emit(Held(topic=tr.name, partition=p, isr=list(tp.isr), replicas=list(tp.replicas),
                                      min_isr=run.view.min_isr.get(tr.name, 1),
                                      message=f"{tr.name}-{p}: ISR {list(tp.isr)} is short; not moving it until it recovers"))
                else:
                    run.reported.held.discard(key)
                    run.tasks.to(key, PartitionState.pending)
                    pending.append(PartitionMove(m.topic, p, tuple(tp.replicas), m.target, m.size_bytes))
        return pending, held, adopted

    def _moving(self, moves: Iterable[PartitionMove], now: float) -> None:
        """``moves`` are in flight, ours: their topics are moving."""
        run = self.run
        for m in moves:
            run.tasks.start_moving(m)
            tr = run.topics[m.topic]
            tr.phase = advance(tr.phase, TopicPhase.moving)
            tr.started_s = tr.started_s or now

    def _send(self, chosen: list[PartitionMove]) -> None:
        """Throttles and the submission recorded (one write), throttles set, then the reassignments sent."""
        run = self.run
        by_topic: dict[str, dict[str, list[int]]] = {}
        for m in chosen:
            by_topic.setdefault(m.topic, {})[str(m.partition)] = list(m.target)
        # one write: the throttle entries about to be set and the submission about to be sent
        self._throttle_for(chosen, [make_record(run.rq.plan_id, "submitted", t, now_s(), topic=t, partitions=ps)
                                    for t, ps in by_topic.items()])
        crash_point("after-throttle")
        errors = run.admin.alter_reassignments({m.key: m.target for m in chosen})
        self._moving([m for m in chosen if errors.get(m.key) is None], run.clock.now())
        bad = {m.key: errors[m.key] for m in chosen if errors.get(m.key) is not None}
        others = {k: e for k, e in bad.items() if e != "UnknownTopicOrPartitionError"}
        if others:
            raise StepFailed(f"the controller refused reassignments: {errors_line(others)}; nothing else was submitted")
        if bad:  # refused partitions of vanished topics: their entries go
            run.dirty |= {k[0] for k in bad}
            self._sync_dirty()
        run.emit(Submitted(partitions=[{"topic": m.topic, "partition": m.partition, "target": list(m.target),
                                        "bytes": m.bytes_to_copy} for m in chosen
                                       if run.tasks.state(m.key) == PartitionState.moving]))
        crash_point("after-submit")

    def _few_new_topics(self, chosen: Iterable[PartitionMove]) -> list[PartitionMove]:
        """``chosen`` (in the scheduler's order) with at most :data:`NEW_TOPICS_PER_SUBMIT` topics
        whose throttle lists are not written yet. Each is a ZooKeeper write in the broker, one
        after the other: a first batch of many topics would hold every move back until the last
        is written. The rest go out on the next look, a moment later."""
        out: list[PartitionMove] = []
        new: set[str] = set()
        for m in chosen:
            fresh = not self.run.throttles.holds(m.topic)
            if fresh and m.topic not in new:
                if len(new) >= NEW_TOPICS_PER_SUBMIT:
                    continue
                new.add(m.topic)
            out.append(m)
        return out

    def _throttle_for(self, moves: Iterable[PartitionMove], records: list[Record]) -> None:
        """Broker rates on every broker of ``moves`` and the throttle lists of their topics (and of
        topics whose moves finished), ``records`` written with their write-ahead records."""
        run = self.run
        moves = list(moves)
        brokers = {b for m in moves for b in (*m.current, *m.target)}
        topics = {m.topic for m in moves} | run.dirty
        wanted = {t: self._listed(t, [m for m in moves if m.topic == t and run.tasks.state(m.key) != PartitionState.moving])
                  for t in topics}
        run.throttles.sync(wanted, records, brokers=brokers, live=run.view.live)
        run.dirty.clear()

    def _sync_dirty(self) -> None:
        run = self.run
        if run.dirty:
            run.throttles.sync({t: self._listed(t) for t in run.dirty})
            run.dirty.clear()

    def _listed(self, topic: str, admitted: Iterable[PartitionMove] = ()) -> list[PartitionMove]:
        """The moves whose entries a topic's throttle lists hold: those in flight and ``admitted``,
        then the topic's moves still to come, as many as fit the size limit. Kafka throttles only
        replicas out of sync, so entries of partitions not moving yet cost nothing, and the
        topic's later submissions need no config write (one ZooKeeper write each)."""
        run = self.run
        listed = run.tasks.flying(topic) + list(admitted)
        if topic not in run.topics:
            return listed
        keys = {m.key for m in listed}
        upcoming = (task.move for _p, task in sorted(run.tasks.of_topic(topic).items(), key=lambda pt: pt[0])
                    if task.key not in keys and task.state not in FINISHED)
        return fill_throttle_lists(listed, upcoming, run.rq.caps.throttle_chars)
