"""``kmigrate partitions --throttle auto``: the in-process canary, the latency windows, the controller's
decisions applied to the run (rates changed mid-run, moves in flight capped per broker).

How one run drives it (:class:`AutoRunner`, called from :mod:`migrate.runner.partitions.run`):

1. :meth:`AutoRunner.begin`, at the first look with a move to make (after the bookkeeping topic and the
   stale throttles are dealt with, before the first move is submitted): the canary starts on its own topic (acks=all, one partition led by each
   live broker, so the brokers being emptied and filled lead some), warms up ``warmup_s``, runs
   ``baseline_s`` at rest, and the p99 of those acks is the baseline (a resumed run, whose moves
   are in flight, takes the baseline its decisions recorded instead); the controller starts (or, with ``throttle-auto`` records of this
   migration in the bookkeeping topic, resumes at the last rate recorded per broker) and takes its
   first step;
2. :meth:`AutoRunner.tick`, on every look of the loop: every ``window_s``, the acks since the last
   window (per canary partition leader, a wait going on as a stall) and the rails (partitions of the
   run's topics *not being moved* under min ISR, or with a follower out of the ISR; the free disk of
   the brokers taking part, from DescribeLogDirs' totals) go to
   :meth:`Controller.step` for the brokers taking part (those of the moves not finished);
3. each decision: the ``throttle-auto`` record and the ``throttle-broker`` records of the new rate
   are written first, then the rate is set (:meth:`Throttles.set_rates`), the broker's moves in
   flight capped (:attr:`Caps.broker_limits`), a ``throttle-auto`` event emitted;
4. :meth:`AutoRunner.close` on every exit: the canary stops and its topic is deleted. The rates go
   with kmigrate's other throttles (removed at the end; kept, recorded, for moves still in flight).

With ``--canary-report FILE`` no canary is started: the operator's ``kmigrate canary --report FILE``
rewrites FILE every second (:mod:`migrate.core.report.live`); its last ``baseline_s`` before the first
move are the baseline, and each window is read from it (:func:`window_from_live`: the p99 of the
window's acks, the longest stall counting for every broker, no signal when FILE is older than
:data:`STALE_AFTER_S`). Closing leaves that canary running.
"""

from __future__ import annotations

import time
from dataclasses import replace

from migrate.adapters.kafka.canary_clients import delete_topic
from migrate.core.ledger import Ledger, make_record
from migrate.core.partitions.tasks import PartitionState
from migrate.core.throttle.controller import Controller
from migrate.core.throttle.decisions import Decision
from migrate.core.throttle.options import AutoThrottle, whose_canary
from migrate.core.report.live import LiveSignal
from migrate.core.throttle.readings import (STALE_AFTER_S, broker_limits, copy_rates, health_from_partitions, window_from_acks,
                                            window_from_live)
from migrate.core.throttle.signals import Baseline, LatencyWindow, ms
from migrate.core.units import format_rate
from migrate.errors import BadInput
from migrate.files import check_live_report, read_live_report
from migrate.runner.canary import Canary
from migrate.runner.events import ThrottleAuto, ThrottleBaseline, WarningEvent
from migrate.runner.partitions.state import RunState
from migrate.runner.partitions.throttles import now_s


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000.0, 1)


class AutoRunner:
    """The adaptive throttle of one run (see the module docstring)."""

    def __init__(self, run: RunState, auto: AutoThrottle):
        self.run = run
        self.auto = auto
        self.canary: Canary | None = None
        self.controller: Controller | None = None
        self.last_window_s = 0.0
        self.leaders: dict[int, int] = {}

    # ------------------------------------------------------------------ begin
    def begin(self, ledger: Ledger) -> None:
        run, auto = self.run, self.auto
        recorded = ledger.throttle_decisions(run.migration)
        kept = [d["baseline_s"] for d in recorded if d.get("baseline_s")]
        if auto.canary_report is None:
            self.canary = Canary(run.rq.client, topic=auto.canary_topic, rate_per_s=auto.canary_rate_per_s,
                                 replication_factor=3, min_insync_replicas=2)
            self.canary.start()
            assert self.canary.ledger is not None
            with self.canary._lock:
                self.canary.ledger.tap = []
            run.clock.sleep(auto.warmup_s)
            self._take()  # the first sends waited for the topic and its leaders: not the cluster at rest
        whose = whose_canary(auto.canary_report)
        if kept:  # resumed with moves in flight: no rest to measure; the first run measured it
            now = run.clock.now()
            baseline = Baseline(float(kept[0]), 0, now)
            told = f"{whose} p99 at rest was {ms(baseline.p99_s)} (recorded before the first move)"
        elif auto.canary_report is not None:
            baseline = self._report_baseline()
            now = run.clock.now()
            told = (f"{whose} p99 at rest is {ms(baseline.p99_s)} ({baseline.samples} acks in the last "
                    f"{auto.baseline_s:.0f} s)")
        else:
            run.clock.sleep(auto.baseline_s)
            acks = self._take()
            now = run.clock.now()
            baseline = Baseline.from_latencies([latency for _at, _p, latency in acks], at_s=now)
            told = f"{whose} p99 at rest is {ms(baseline.p99_s)} ({baseline.samples} acks in {auto.baseline_s:.0f} s)"
        if recorded:
            self.controller = Controller.resume(auto.settings, baseline, auto.budget, now, recorded)
        else:
            self.controller = Controller(auto.settings, baseline, auto.budget, now)
        c = self.controller
        run.emit(ThrottleBaseline(
            topic=auto.canary_topic, samples=baseline.samples, p99_ms=_ms(baseline.p99_s),
            budget_ms=_ms(auto.budget.seconds), limit_ms=_ms(c.limit_s), resumed=len(c.states),
            message=(f"auto throttle: {told}; budget {ms(auto.budget.seconds)}: the rates rise while the p99 stays "
                     f"within {ms(c.limit_s)}" + (f"; {len(c.states)} broker(s) resume at their last recorded rate"
                                                  if c.states else ""))))
        self.last_window_s = now
        self._refresh_leaders()
        self._apply(c.step(now, None, self._health({}), self._brokers()))

    # ------------------------------------------------------------------- tick
    def tick(self, now: float, described) -> None:
        """One look of the loop: a step of the controller every ``window_s``; the first look with a move to
        make begins (a run with nothing to move measures nothing and starts no canary)."""
        if self.controller is None:
            if self._brokers():
                self.begin(self.run.book.read())
            return
        if now - self.last_window_s < self.auto.window_s:
            return
        self.last_window_s = now
        if self.auto.canary_report is not None:  # the operator's canary: its report, read every window
            window = window_from_live(now, self._live(), time.time(), self.auto.window_s)
            self._apply(self.controller.step(now, window, self._health(described), self._brokers()))
            return
        acks = self._take()
        assert self.canary is not None and self.canary.ledger is not None
        with self.canary._lock:
            waiting = self.canary.ledger.waiting_since()
        mono_now = time.monotonic()  # the canary's clock
        window = window_from_acks(mono_now, acks, self.leaders, waiting)
        window = LatencyWindow(now, window.p99_s, window.samples, window.p99_by_broker, window.stall_by_broker)
        self._refresh_leaders()
        self._apply(self.controller.step(now, window, self._health(described), self._brokers()))

    # ------------------------------------------------------------------ close
    def close(self) -> None:
        """Stop the canary and delete its topic (never raises: the run's own exit comes first)."""
        if self.canary is None or self.canary.ledger is None:
            return
        try:
            self.canary.stop(drain_timeout_s=10)
        except Exception as exc:  # noqa: BLE001 - reported, the run goes on to its end
            self.run.emit(WarningEvent(message=f"auto throttle: stopping the canary failed: {exc}"))
        try:
            delete_topic(self.run.rq.client, self.auto.canary_topic)
        except Exception as exc:  # noqa: BLE001
            self.run.emit(WarningEvent(message=f"auto throttle: the canary topic {self.auto.canary_topic} "
                                               f"was not deleted ({exc}): delete it by hand"))
        self.canary = None

    # ---------------------------------------------------------------- helpers
    def _live(self) -> LiveSignal | None:
        """The operator's canary report, read now (None when it cannot be read: no signal this window)."""
        try:
            return read_live_report(self.auto.canary_report or "")
        except ValueError:
            return None

    def _report_baseline(self) -> Baseline:
        """The p99 of the operator's canary over the last ``baseline_s`` (waiting for them when it started
        less long ago): BadInput when it has no acknowledgement there."""
        auto = self.auto
        path = auto.canary_report or ""
        live = check_live_report(path, time.time(), STALE_AFTER_S)
        short = auto.baseline_s - live.covered_s(time.time())
        if short > 0:  # the canary started a moment ago: its rest is still being measured
            self.run.clock.sleep(short)
            live = check_live_report(path, time.time(), STALE_AFTER_S)
        now_unix = time.time()
        figures = live.figures(now_unix - auto.baseline_s, now_unix)
        if not figures.acks or figures.p99_ms is None:
            raise BadInput(f"--canary-report {path}: no acknowledgement in its last {auto.baseline_s:.0f} s, so no "
                           "p99 at rest: check that your canary can write to the cluster")
        return Baseline(figures.p99_ms / 1000.0, figures.acks, self.run.clock.now())

    def _take(self) -> list[tuple[float, int, float]]:
        assert self.canary is not None and self.canary.ledger is not None
        with self.canary._lock:
            return self.canary.ledger.take_tap()

    def _refresh_leaders(self) -> None:
        if self.auto.canary_report is not None:  # the operator's canary: its leaders are not needed
            return
        try:
            described, _ = self.run.admin.describe_and_brokers([self.auto.canary_topic])
        except Exception:  # noqa: BLE001 - the last leaders known stay
            return
        topic = described.get(self.auto.canary_topic)
        if topic is not None:
            self.leaders = {p.partition: p.leader for p in topic.partitions if p.leader is not None}

    def _brokers(self) -> list[int]:
        """Brokers taking part: those carrying the copy of a move not finished (in flight or to come)."""
        run = self.run
        out: set[int] = set()
        for state in (PartitionState.moving, PartitionState.pending):
            for task in run.tasks.in_state(state):
                out.update((task.flight or task.move).brokers)
        return sorted(out)

    def _health(self, described):
        """The rails: partitions not being moved (under min ISR, lagging) and the free disk of the brokers taking part."""
        run = self.run
        moving = {m.key for m in run.tasks.flying()}
        parts = [(t.name, p.partition, tuple(p.replicas), tuple(p.isr))
                 for t in described.values() for p in t.partitions]
        health = health_from_partitions(parts, run.view.min_isr, moving)
        try:
            disk = run.admin.free_disk(self._brokers())
        except Exception:  # noqa: BLE001 - no totals this time: the disk rail waits for the next window
            disk = {}
        inflow, copied = self._copy_rates()
        return replace(health, free_disk_ratio=disk, inflow_bytes_per_s=inflow, copied_bytes_per_s=copied)

    def _copy_rates(self) -> tuple[dict[int, int], dict[int, int]]:
        """The inflow into the partitions each broker copies and the rate its copies achieved, from the run's last
        two looks at the replicas' sizes; none when the latest is older than two windows (no fresh figure)."""
        looks = self.run.watch.looks
        if len(looks) < 2 or self.run.clock.now() - looks[-1][0] > 2 * self.auto.window_s:
            return {}, {}
        (t0, before), (t1, after) = looks[-2], looks[-1]
        moves = [(m.key[0], m.key[1], tuple(m.current), tuple(m.adding)) for m in self.run.tasks.flying()]
        return copy_rates(before, after, t1 - t0, moves)

    def _apply(self, decisions: list[Decision]) -> None:
        """Record each decision, then change the rates, then cap the moves; emit each one."""
        if not decisions:
            return
        run = self.run
        records = [make_record(run.rq.plan_id, "throttle-auto", str(d.broker), now_s(), **d.to_dict())
                   for d in decisions]
        refused = run.throttles.set_rates({d.broker: d.new_rate for d in decisions}, records)
        assert self.controller is not None
        for b in refused:  # the config keeps the old rate: the controller knows it, the next step tries again
            old = next(d.old_rate for d in decisions if d.broker == b)
            self.controller.states[b] = replace(self.controller.states[b], applied=old)
        run.rq = replace(run.rq, caps=replace(run.rq.caps, broker_limits=broker_limits(
            self.controller.moves(), run.rq.caps.per_broker)))
        for d in decisions:
            change = (f"{format_rate(d.old_rate)} -> {format_rate(d.new_rate)}" if d.rate_changed
                      else f"{format_rate(d.new_rate)}")
            run.emit(ThrottleAuto(
                broker=d.broker, old_rate_bytes_per_s=d.old_rate, new_rate_bytes_per_s=d.new_rate, moves=d.moves,
                reason=d.reason, mode=d.mode, p99_ms=_ms(d.p99_s), limit_ms=_ms(d.limit_s) or 0.0,
                message=f"auto throttle: broker {d.broker} {change}, {d.moves} move(s) at once: {d.reason}"
                        + (f" (the broker refused the change: {format_rate(d.old_rate)} stays; tried again at the "
                           "next step)" if d.broker in refused else "")))
