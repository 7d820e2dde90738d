"""What one look of the ``kmigrate partitions`` loop finds (procedure step 7 of :mod:`migrate.runner.partitions.run`).

Each partition's state changes here from what the cluster shows: a topic deleted meanwhile
(``gone``), a move of ours no longer listed (``done`` on its target; ``cancelled`` when it stays off
target: cancelled outside the run), someone else's reassignment over (planned again), replicas
making no progress (stalls: reported, or cancelled with ``--on-stall cancel``), a short ISR while
moving, and the bytes copied so far.
"""

from __future__ import annotations

from typing import Mapping

from migrate.core.ledger import make_record
from migrate.core.model import Topic
from migrate.core.partitions.moves import InFlight, PartitionMove, ReplicaKey, copied, errors_line, partition_of, plan_targets
from migrate.core.partitions.phases import TopicPhase, advance, observe_progress, stalled_replicas
from migrate.core.partitions.tasks import Key, PartitionState
from migrate.errors import StepFailed
from migrate.runner.events import (
    ForeignFinished, IsrShort, PartitionCancelled, PartitionDone, Progress, Stall, StallCancelled, StallOver, TopicGone,
)
from migrate.runner.partitions.cancel import send_cancels, wait_not_in_flight
from migrate.runner.partitions.state import RunState
from migrate.runner.partitions.throttles import now_s

_MOVING, _DONE, _CANCELLED = PartitionState.moving, PartitionState.done, PartitionState.cancelled


class Observation:
    """Folds one look at the cluster (reassignments listed, topics described, replica sizes) into the
    run's state."""

    def __init__(self, run: RunState):
        self.run = run

    def note_gone(self, described: Mapping[str, Topic]) -> None:
        """Topics deleted meanwhile: gone, their partitions with them."""
        run = self.run
        for tr in run.active():
            if tr.name not in described:
                tr.phase = advance(tr.phase, TopicPhase.gone) if tr.phase != TopicPhase.moved else TopicPhase.gone
                for task in run.tasks.of_topic(tr.name).values():
                    if task.state not in (_DONE, _CANCELLED):
                        run.tasks.to(task.key, PartitionState.gone)
                run.book.append(run.throttles.forget_topic(tr.name))
                run.dirty.discard(tr.name)
                run.emit(TopicGone(topic=tr.name, message=f"topic {tr.name} was deleted meanwhile"))

    def check_finished(self, flights: Mapping[Key, InFlight], described: Mapping[str, Topic], now: float,
                       grace_s: float) -> None:
        """Our moves no longer listed: done on their target, else (after ``grace_s``) cancelled outside."""
        run = self.run
        changed: set[str] = set()
        for task in run.tasks.in_state(_MOVING):
            key, m = task.key, task.flight
            if key in flights:
                task.unlisted_since = None
                continue
            t, p = key
            tp = partition_of(described.get(t), p)
            if tp is None:
                continue
            if tuple(tp.replicas) == tuple(m.target):
                run.tasks.to(key, _DONE)
                changed.add(t)
                for b in m.adding:
                    run.watch.progress.pop((t, p, b), None)
                run.emit(PartitionDone(topic=t, partition=p, replicas=list(tp.replicas)))
                continue
            if task.unlisted_since is None:
                task.unlisted_since = now
            if now - task.unlisted_since >= grace_s:
                # not listed and not on target for grace_s in a row (metadata lags a moment after a
                # move ends; a new controller lists nothing for a moment): someone cancelled it
                run.tasks.to(key, _CANCELLED)
                changed.add(t)
                run.halted = run.halted or "reassignments were cancelled outside this run (kmigrate partitions --cancel?)"
                why = ("reverted by kmigrate partitions --cancel" if run.lease.cancel_seen is not None
                       else f"is no longer moving and is not on its target {list(m.target)}: cancelled outside this run")
                run.emit(PartitionCancelled(topic=t, partition=p, replicas=list(tp.replicas),
                                            message=f"{t}-{p} {why}; it is left where it is, on {list(tp.replicas)}"))
        run.dirty |= changed

    def check_foreign(self, flights: Mapping[Key, InFlight], described: Mapping[str, Topic]) -> None:
        """Someone else's reassignments over: each partition planned again from where it was left."""
        run = self.run
        for task in run.tasks.in_state(PartitionState.foreign):
            key = task.key
            if key in flights:
                continue
            t, p = key
            tp = partition_of(described.get(t), p)
            if tp is None or t not in run.topics:
                run.tasks.to(key, PartitionState.pending)
                continue
            targets, _ = plan_targets([Topic(t, partitions=(tp,))], run.view.brokers, run.rq.mapping, run.rq.keep)
            target = run.rq.plan_targets.get(key) or targets.get(key)
            if target is None or tuple(target) == tuple(tp.replicas):
                run.tasks.drop(key)
            else:
                run.tasks.replan(key, PartitionMove(t, p, tuple(tp.replicas), tuple(target), task.move.size_bytes))
            run.emit(ForeignFinished(topic=t, partition=p, replicas=list(tp.replicas)))

    def measure(self, now: float) -> None:
        """Sizes of the replicas being added; stall detection."""
        run, rq = self.run, self.run.rq
        if not run.tasks.count(_MOVING):
            return
        # sizes every few seconds are enough for progress and stalls; each look costs a request per broker
        if now - run.watch.measured_at < min(max(rq.poll_interval_s, 3.0), rq.stall_timeout_s / 2):
            return
        run.watch.measured_at = now
        wanted: dict[str, list[int]] = {}
        brokers: set[int] = set()
        watched: list[ReplicaKey] = []
        for m in run.tasks.flying():
            t, p = m.key
            wanted.setdefault(t, []).append(p)
            for b in m.adding:
                brokers.add(b)
                watched.append((t, p, b))
            if rq.auto is not None:  # the current replicas too: the inflow the copies must also take
                brokers.update(m.current)
        sizes = run.admin.replica_sizes(sorted(b for b in brokers if b in run.view.live), wanted)
        run.watch.sizes.update(sizes)
        run.watch.looks = (*run.watch.looks[-1:], (now, sizes))
        run.watch.progress = {**{k: v for k, v in run.watch.progress.items() if k not in set(watched)},
                              **observe_progress(run.watch.progress, sizes, watched, now)}
        stalled = [k for k in stalled_replicas({k: run.watch.progress[k] for k in watched}, now, rq.stall_timeout_s)]
        fresh = [k for k in stalled if k not in run.watch.reported_stalls]
        self._report_stalls(fresh, stalled, now)
        if rq.on_stall == "cancel" and fresh:
            self._cancel_stalled(sorted({(t, p) for t, p, _ in fresh}))

    def _report_stalls(self, fresh: list[ReplicaKey], stalled: list[ReplicaKey], now: float) -> None:
        """Replicas newly stalled said (their topic stalled), those moving again said too."""
        run = self.run
        for t, p, b in fresh:
            run.watch.reported_stalls.add((t, p, b))
            tr = run.topics[t]
            tr.phase = advance(tr.phase, TopicPhase.stalled)
            since = now - run.watch.progress[(t, p, b)].changed_at_s
            run.emit(Stall(topic=t, partition=p, broker=b, seconds=round(since, 1), broker_alive=b in run.view.live,
                           bytes=run.watch.progress[(t, p, b)].bytes,
                           message=f"{t}-{p}: new replica on broker {b} has made no progress for {since:.0f} s"
                                   f"{'' if b in run.view.live else ' (broker is not alive)'}"))
        # a replica that moves again is no longer reported as stalled
        for k in list(run.watch.reported_stalls):
            if k in run.watch.progress and k not in stalled:
                run.watch.reported_stalls.discard(k)
                tr = run.topics[k[0]]
                if tr.phase == TopicPhase.stalled and not any(s[0] == k[0] for s in run.watch.reported_stalls):
                    tr.phase = advance(tr.phase, TopicPhase.moving)
                run.emit(StallOver(topic=k[0], partition=k[1], broker=k[2]))

    def _cancel_stalled(self, keys: list[Key]) -> None:
        run = self.run
        keys = [k for k in keys if run.tasks.state(k) == _MOVING]
        if not keys:
            return
        bad = send_cancels(run.admin, keys)
        if bad:
            raise StepFailed(f"cancelling stalled partitions failed: {errors_line(bad)}")
        wait_not_in_flight(run.admin, keys, timeout_s=60.0, clock=run.clock)
        by_topic: dict[str, list[int]] = {}
        for t, p in keys:
            run.tasks.to((t, p), _CANCELLED)
            by_topic.setdefault(t, []).append(p)
        records = [make_record(run.rq.plan_id, "cancelled", t, now_s(), topic=t, partitions=ps) for t, ps in by_topic.items()]
        run.throttles.sync({t: run.tasks.flying(t) for t in by_topic}, records)
        run.dirty -= set(by_topic)
        for t, ps in by_topic.items():
            run.emit(StallCancelled(topic=t, partitions=ps,
                                    message=f"{t}: cancelled stalled partition(s) {ps}; they are back on their original replicas"))

    def check_isr(self, described: Mapping[str, Topic]) -> None:
        """A partition of ours short of in-sync replicas while moving: said once until it recovers."""
        run = self.run
        for m in run.tasks.flying():
            t, p = m.key
            tp = partition_of(described.get(t), p)
            if tp is None:
                continue
            need = min(run.view.min_isr.get(t, 1), len(m.current))
            if len(tp.isr) < need and (t, p) not in run.reported.isr:
                run.reported.isr.add((t, p))
                run.emit(IsrShort(topic=t, partition=p, isr=list(tp.isr), min_isr=need,
                                  message=f"{t}-{p}: only {len(tp.isr)} in-sync replica(s) while moving (min.insync.replicas {need})"))
            elif len(tp.isr) >= need:
                run.reported.isr.discard((t, p))

    def report_progress(self, now: float) -> None:
        """Bytes copied per topic and in all, the rate and the ETA."""
        run = self.run
        per_topic: dict[str, dict[str, int]] = {}
        total = copied_all = 0
        for tr in run.topics.values():
            tasks = run.tasks.of_topic(tr.name)
            if not tasks:
                continue
            tt = tc = 0
            for task in tasks.values():
                finished = task.state == _DONE or tr.phase == TopicPhase.recorded
                c = copied(task.move, run.watch.sizes, finished)
                if task.state == _CANCELLED:
                    continue
                tt += c.total_bytes
                tc += c.copied_bytes
            per_topic[tr.name] = {"copied_bytes": tc, "total_bytes": tt, "phase": tr.phase.value}
            total += tt
            copied_all += tc
        run.watch.rate = run.watch.rate.add(now, copied_all)
        eta = run.watch.rate.eta_s(total - copied_all)
        run.emit(Progress(copied_bytes=copied_all, total_bytes=total,
                          rate_bytes_per_s=round(run.watch.rate.bytes_per_s),
                          eta_s=None if eta is None else round(eta, 1), in_flight=run.tasks.count(_MOVING),
                          topics_left=len(run.active()), topics_recorded=len(run.recorded), topics=per_topic))
