"""Topics of ``kmigrate partitions`` whose partitions are all over: verified, then recorded or cancelled.

A topic whose partitions are all done is checked against the cluster (every planned partition on
its target; partitions added meanwhile are planned and moved too), gets a preferred leader
election, loses its throttles and is recorded (``topic-moved``, one bookkeeping write for all
topics ready); a topic with a cancelled partition is called cancelled and loses its throttles.
"""

from __future__ import annotations

from typing import Any, Mapping

from migrate.core.ledger import make_record
from migrate.core.model import Partition, Topic
from migrate.core.partitions.moves import PartitionMove, leader_not_preferred, partition_of, plan_targets
from migrate.core.partitions.phases import TopicPhase, advance
from migrate.core.partitions.tasks import FINISHED, PartitionState
from migrate.runner.events import LeadersNotPreferred, TopicCancelled, TopicDone, WarningEvent, crash_point
from migrate.runner.partitions.state import RunState, TopicRun
from migrate.runner.partitions.throttles import now_s
from migrate.waiting import poll


class Completion:
    """Finishes the topics whose partitions are all done or cancelled."""

    def __init__(self, run: RunState):
        self.run = run

    def complete_topics(self, described: Mapping[str, Topic]) -> None:
        run = self.run
        ready: list[tuple[TopicRun, Topic]] = []
        cancelled: list[TopicRun] = []
        busy = {k[0] for k in run.tasks.keys(PartitionState.moving)} | {k[0] for k in run.tasks.keys(PartitionState.foreign)}
        for tr in run.active():
            tasks = run.tasks.of_topic(tr.name)
            if tr.name in busy or any(task.state not in FINISHED for task in tasks.values()):
                continue
            if any(task.state == PartitionState.cancelled for task in tasks.values()):
                cancelled.append(tr)
                continue
            t = described.get(tr.name)
            if t is None:
                continue
            if self._not_yet(tr, t):
                continue
            tr.phase = advance(tr.phase, TopicPhase.moved)
            ready.append((tr, t))
        if cancelled:
            run.book.append(run.throttles.clear([tr.name for tr in cancelled]))
            for tr in cancelled:
                tr.phase = TopicPhase.cancelled
                run.dirty.discard(tr.name)
                run.emit(TopicCancelled(topic=tr.name, partitions=sorted(
                    p for p, task in run.tasks.of_topic(tr.name).items() if task.state == PartitionState.cancelled)))
        if ready:
            crash_point("after-complete-before-record")
            self._finish_topics(ready)

    def _not_yet(self, tr: TopicRun, t: Topic) -> bool:
        """Verify every partition: the planned ones on target, partitions added meanwhile planned now.
        True when the topic has more to move (those added, or a partition off target: moved again)."""
        run = self.run
        moves = run.moves(tr.name)
        wrong = [p.partition for p in t.partitions
                 if p.partition in moves and tuple(p.replicas) != tuple(moves[p.partition].target)]
        extra = [p for p in t.partitions if p.partition not in moves and set(p.replicas) & set(run.rq.mapping)]
        if extra:
            targets, _ = plan_targets([Topic(tr.name, partitions=tuple(extra))], run.view.brokers, run.rq.mapping, run.rq.keep)
            added = {k[1]: v for k, v in targets.items() if tuple(v) != tuple(partition_of(t, k[1]).replicas)}
            if added:
                for p, target in added.items():
                    run.tasks.plan(PartitionMove(tr.name, p, tuple(partition_of(t, p).replicas), tuple(target), 0))
                run.emit(WarningEvent(message=f"{tr.name}: partition(s) {sorted(added)} appeared meanwhile; moving them too"))
                return True
        if wrong:
            for p in wrong:  # metadata not yet up to date, or moved back by someone: plan again
                run.tasks.to((tr.name, p), PartitionState.pending)
            return True
        return False

    def _finish_topics(self, ready: list[tuple[TopicRun, Topic]]) -> None:
        """Preferred leader election, throttles removed, then one bookkeeping write for all of them."""
        run = self.run
        names = [tr.name for tr, _ in ready]
        leaders_bad = self._elect(ready, names)
        records = run.throttles.clear(names)
        for tr, t in ready:
            target = {str(p.partition): list(p.replicas) for p in t.partitions}
            records.append(make_record(run.rq.plan_id, "topic-moved", tr.name, now_s(), topic=tr.name, target=target,
                                       moved_partitions=sorted(run.moves(tr.name))))
        run.book.append(records, wait=False)  # checked by the next write-ahead or the final flush
        for tr, _t in ready:
            moves = run.moves(tr.name)
            tr.phase = advance(tr.phase, TopicPhase.recorded)
            run.recorded.add(tr.name)
            run.dirty.discard(tr.name)
            seconds = None if tr.started_s is None else round(run.clock.now() - tr.started_s, 1)
            run.emit(TopicDone(topic=tr.name, partitions_moved=len(moves),
                               bytes=sum(m.bytes_to_copy for m in moves.values()), seconds=seconds,
                               already_on_target=not moves or tr.started_s is None))
            if tr.name in leaders_bad:
                run.emit(LeadersNotPreferred(topic=tr.name, partitions=leaders_bad[tr.name],
                                             message=f"{tr.name}: {len(leaders_bad[tr.name])} partition(s) kept a leader that is not the "
                                                     "first new replica; run kafka-leader-election --election-type PREFERRED later"))

    def _elect(self, ready: list[tuple[TopicRun, Topic]], names: list[str]) -> dict[str, list[dict[str, Any]]]:
        """A preferred leader election where a leader is not the first replica; the partitions whose
        leader is still not preferred a few seconds later, by topic."""
        run = self.run
        leaders_bad: dict[str, list[dict[str, Any]]] = {}
        wrong_leader = [(t.name, p.partition) for _, t in ready for p in t.partitions if leader_not_preferred(p)]
        if wrong_leader:
            errors = run.admin.elect_preferred(wrong_leader)
            bad: list[tuple[str, Partition]] = []

            def preferred_everywhere() -> bool:  # metadata reaches every broker a moment after the election
                after = run.admin.describe(names)
                bad[:] = [(n, p) for n in names for p in after.get(n, Topic(n)).partitions if leader_not_preferred(p)]
                return not bad

            poll(preferred_everywhere, timeout_s=5.0, interval_s=0.25, clock=run.clock)
            for n, p in bad:
                leaders_bad.setdefault(n, []).append({"partition": p.partition, "leader": p.leader, "preferred": p.replicas[0],
                                                      "error": errors.get((n, p.partition))})
        return leaders_bad
