"""Sequencer of ``kmigrate partitions``: move every topic to the new brokers, throttled, resumably.

The procedure, with what kmigrate adds (every decision is a pure function of core: moves,
scheduler, phases, tasks, throttles, ledger; the runner only observes, asks, and acts). This module
is the loop; the run's parts are :mod:`.state` (what they share), :mod:`.lease` (``run`` records,
heartbeat, a ``--cancel`` seen), :mod:`.preparation` (steps 2-6 and 8), :mod:`.observation`,
:mod:`.submission` and :mod:`.completion` (step 7); throttles are kept by
:mod:`migrate.runner.partitions.throttles`, ``--cancel`` is :mod:`migrate.runner.partitions.cancel`,
``kmigrate status`` :mod:`migrate.runner.partitions.status`, and SIGINT/SIGTERM are
:mod:`migrate.runner.signals`. Each partition's state is explicit
(:class:`migrate.core.partitions.tasks.PartitionState`: pending, held, foreign, moving, done,
cancelled, gone), each topic's too (:class:`migrate.core.partitions.phases.TopicPhase`):

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

from typing import Any

from migrate.adapters.kafka.admin import ReassignmentAdmin
from migrate.adapters.kafka.canary_clients import delete_topic
from migrate.adapters.kafka.retry import transient_error
from migrate.core.partitions.phases import TopicPhase
from migrate.core.partitions.tasks import PartitionState
from migrate.core.throttle.options import CANARY_TOPIC
from migrate.core.units import format_bytes
from migrate.errors import KmigrateError, StepFailed
from migrate.runner.events import OMIT, Aborted, Emit, RunDone, Stopped, WarningEvent
from migrate.runner.partitions.completion import Completion
from migrate.runner.partitions.observation import Observation
from migrate.runner.partitions.preparation import Preparation
from migrate.runner.partitions.state import PartitionsRequest, RunState
from migrate.runner.partitions.submission import NEW_TOPICS_PER_SUBMIT, Submission
from migrate.runner.partitions.throttles import Released, release_throttles
from migrate.runner.signals import Interrupted, interrupted, signal_name, signals_ignored, sigterm_raises
from migrate.waiting import SYSTEM_CLOCK, Clock, FakeClock

EXIT_STOPPED = 3
"""Exit code of a run stopped by ``kmigrate partitions --cancel`` (its moves reverted)."""


class StoppedByCancel(KmigrateError):
    """The run saw ``kmigrate partitions --cancel`` and stopped (exit :data:`EXIT_STOPPED`)."""

    exit_code = EXIT_STOPPED
    kind = ""  # the message begins with "stopped: kmigrate partitions --cancel ...": what the operator asked


UNANSWERED_LOOK_S = 300.0
"""How long the loop keeps looking while the cluster's answers time out, before it stops."""


class PartitionMover:
    """One run of ``kmigrate partitions`` (see the module docstring): the loop, and the way out.

    Its state is :attr:`state` (:class:`migrate.runner.partitions.state.RunState`), shared with the
    parts that prepare (:attr:`preparation`), look (:attr:`observation`), submit (:attr:`submission`)
    and finish topics (:attr:`completion`)."""

    def __init__(self, request: PartitionsRequest, emit: Emit, admin: ReassignmentAdmin | None = None,
                 clock: Clock | FakeClock = SYSTEM_CLOCK):
        self.state = RunState(request, emit, admin, clock)
        self.preparation = Preparation(self.state)
        self.observation = Observation(self.state)
        self.submission = Submission(self.state)
        self.completion = Completion(self.state)
        self.auto = None  # AutoRunner with --throttle auto, once begun

    # ------------------------------------------------------------------ public
    def run(self) -> dict[str, Any]:
        """The run, from the first look to the summary; on any exit the throttles no move needs go."""
        run = self.state
        run.started_s = run.clock.now()
        run.lease.begin()
        try:
            if not run.rq.dry_run:
                # the bookkeeping writer fetches its producer id (idempotence) while the cluster is read
                run.book.start_writer()
            ledger = self.preparation.prepare()
            if run.rq.dry_run:
                return self._summary(dry_run=True)
            self.preparation.start(ledger)
            if run.rq.auto is not None:
                from migrate.runner.throttle.auto import AutoRunner

                self.auto = AutoRunner(run, run.rq.auto)  # begins at its first tick with a move to make
            while True:
                self._loop()
                if run.halted or not self.preparation.discover():
                    break
            self._finish()
            return self._summary()
        except BaseException as exc:
            message = self._cleanup_on_error(exc) if run.changed else None
            if isinstance(exc, KeyboardInterrupt):
                raise interrupted(exc, message or "nothing was changed") from None
            raise
        finally:
            if self.auto is not None:
                self.auto.close()
            run.lease.beat("ended")
            run.book.close()
            run.admin.close()

    # ------------------------------------------------------------------- loop
    def _loop(self) -> None:
        run, rq = self.state, self.state.rq
        grace_s = max(10.0, 3 * rq.poll_interval_s)
        silent_since: float | None = None
        while run.active():
            now = run.clock.now()
            try:
                flights = run.admin.list_reassignments()
                names = [t.name for t in run.active()]
                described, run.view.live = run.admin.describe_and_brokers(names)
            except Exception as exc:  # a broker just died, a controller moves: look again, for a while
                if not transient_error(exc):
                    raise
                silent_since = now if silent_since is None else silent_since
                if now - silent_since > UNANSWERED_LOOK_S:
                    raise StepFailed(f"the cluster has not answered for {now - silent_since:.0f} s ({exc}): check the "
                                     "brokers, then run kmigrate partitions --resume") from None
                run.emit(WarningEvent(message=f"the cluster did not answer ({exc}); looking again"))
                run.clock.sleep(rq.poll_interval_s)
                continue
            silent_since = None
            halted = run.lease.look(now)
            run.halted = halted or run.halted
            self.observation.note_gone(described)
            self.observation.check_finished(flights, described, now, 0.0 if run.lease.cancel_seen else grace_s)
            self.observation.check_foreign(flights, described)
            self.observation.measure(now)
            self.observation.check_isr(described)
            if self.auto is not None:
                self.auto.tick(now, described)
            # slots freed by finished partitions are filled first; finishing topics (election,
            # throttle removal, bookkeeping write) happens while the new moves copy
            self.submission.submit(flights, described)
            self.completion.complete_topics(described)
            self.observation.report_progress(now)
            if not run.active() or (run.halted and not run.tasks.count(PartitionState.moving)):
                break
            run.clock.sleep(max(0.0, self._poll_wait() - (run.clock.now() - now)))

    def _poll_wait(self) -> float:
        """``--poll-interval``, halved while a small move is in flight: it finishes within a second
        or two, and its slot should not stay empty for long."""
        rq = self.state.rq
        small = any(not rq.caps.fits_large_lane(m) for m in self.state.tasks.flying())
        return rq.poll_interval_s / 2 if small else rq.poll_interval_s

    # ----------------------------------------------------------------- finish
    def _finish(self) -> None:
        run = self.state
        run.book.flush()  # every topic recorded is acknowledged before the run says it is done
        if run.lease.cancel_seen is not None:
            self._stopped_by_cancel()
        released = release_throttles(run.admin, run.book, run.rq.plan_id, run.emit)
        run.changed = False  # throttles are cleared: nothing left to clean on the way out
        for p in released.problems:
            run.emit(WarningEvent(message=p))
        if run.leftover_canary and not run.halted:
            self._delete_leftover_canary()
        cancelled_keys = run.tasks.keys(PartitionState.cancelled)
        if run.halted:
            left = sorted(t.name for t in run.active())
            raise StepFailed(
                f"stopped: {run.halted}; {len(cancelled_keys)} partition(s) cancelled, "
                f"{len(left)} topic(s) not finished ({', '.join(left[:5])}{'...' if len(left) > 5 else ''}); "
                f"{self._left_line(released)}; run {run.rq.command} --resume to continue"
            )
        cancelled = [tr.name for tr in run.topics.values() if tr.phase == TopicPhase.cancelled]
        if cancelled:
            raise StepFailed(
                f"{len(cancelled_keys)} partition(s) of {len(cancelled)} topic(s) were cancelled "
                f"({', '.join(f'{t}-{p}' for t, p in cancelled_keys[:5])}): they stay on their old replicas; "
                "fix the cause (a dead or stuck broker) and run kmigrate partitions --resume"
            )

    def _delete_leftover_canary(self) -> None:
        """The canary topic an auto run killed before its end left behind: this run deletes it."""
        run = self.state
        try:
            delete_topic(run.rq.client, CANARY_TOPIC)
        except Exception as exc:  # noqa: BLE001 - reported; the migration itself is done
            run.emit(WarningEvent(message=f"the auto throttle's canary topic {CANARY_TOPIC}, left by an earlier run "
                                          f"killed before its end, was not deleted ({exc}): delete it by hand"))
            return
        run.emit(WarningEvent(message=f"deleted the auto throttle's canary topic {CANARY_TOPIC}, left by an earlier "
                                      "run killed before its end"))

    def _stopped_by_cancel(self) -> None:
        """Raise :class:`StoppedByCancel`: ``--cancel`` reverted the moves and removes the throttles
        once this run has ended (it waits for the ``ended`` record)."""
        run = self.state
        run.changed = False
        reverted = sorted(f"{t}-{p}" for t, p in run.tasks.keys(PartitionState.cancelled))
        finished = sorted(f"{t}-{p}" for t, p in run.tasks.keys(PartitionState.done))
        still = sorted(f"{t}-{p}" for t, p in run.tasks.keys(PartitionState.moving))
        message = (f"stopped: {run.halted}; {len(reverted)} move(s) reverted, {len(finished)} finished before it; "
                   + (f"{len(still)} still in flight ({', '.join(still[:5])})" if still else "nothing left in flight")
                   + f"; --cancel removes kmigrate's throttles; {run.rq.command} --resume starts the migration again")
        run.emit(Stopped(by=run.halted or "", reverted=reverted, finished=finished, message=message))
        raise StoppedByCancel(message)

    def _left_line(self, released: Released) -> str:
        """What is left of kmigrate's in flight and throttled, for an exit message."""
        rq = self.state.rq
        if not released.in_flight:
            return "nothing of kmigrate's is in flight; kmigrate's throttles removed"
        topics = sorted(released.topics)
        return (f"{len(released.in_flight)} of kmigrate's reassignment(s) still moving (topics "
                f"{', '.join(topics[:5])}{'...' if len(topics) > 5 else ''}): they continue throttled at "
                + (f"{format_bytes(rq.throttle_bytes_per_s)}/s per broker" if rq.auto is None
                   else "the last rate the auto throttle set on each broker")
                + f" (throttles kept, recorded in {rq.bookkeeping_topic})")

    def _cleanup_on_error(self, exc: BaseException) -> str | None:
        """Remove the throttles no move needs, keep those of kmigrate's moves in flight; return the
        exit message (what is left, how to finish or revert it)."""
        run = self.state
        with signals_ignored():  # a second Ctrl-C must not stop the cleanup half way
            try:
                released = release_throttles(run.admin, run.book, run.rq.plan_id, run.emit)
                message = self._left_line(released)
                cmd = run.rq.command
                if released.in_flight:
                    message += f"; finish them: {cmd} --resume; or revert them: {cmd} --cancel"
                else:
                    message += f"; continue: {cmd} --resume"
                error = signal_name(exc) if isinstance(exc, KeyboardInterrupt) else (
                    getattr(exc, "message", None) or repr(exc))
                run.emit(Aborted(
                    error=error, in_flight=len(released.in_flight),
                    throttle_problems=released.problems, message=message,
                    in_flight_partitions=[f"{t}-{p}" for t, p in sorted(released.in_flight)],
                    throttled_topics=sorted(released.topics), throttled_brokers=sorted(released.brokers),
                    resume_command=f"{cmd} --resume", cancel_command=f"{cmd} --cancel"))
                return message
            except Exception as cleanup_exc:  # report both; the first error stays the one raised
                message = (f"looking at the throttles after the error failed too ({cleanup_exc}): kmigrate's throttles "
                           f"are kept; run {run.rq.command} --resume or --cancel")
                run.emit(WarningEvent(message=message))
                return message

    def _summary(self, dry_run: bool = False) -> dict[str, Any]:
        """Emit the run's :class:`RunDone` and return it as a dict."""
        run = self.state
        recorded = [t for t in run.topics.values() if t.phase == TopicPhase.recorded]
        summary = RunDone(
            plan_id=run.rq.plan_id, dry_run=dry_run,
            topics_recorded_now=len(recorded), topics_recorded_total=len(run.recorded),
            partitions_moved=sum(len(run.moves(t.name)) for t in recorded),
            bytes_copied=sum(m.bytes_to_copy for t in recorded for m in run.moves(t.name).values()),
            seconds=round(run.clock.now() - run.started_s, 1),
            gone=sorted(t.name for t in run.topics.values() if t.phase == TopicPhase.gone),
            topics_to_move=sorted(t.name for t in run.topics.values() if run.moves(t.name)) if dry_run else OMIT,
            partitions_to_move=sum(len(run.moves(t.name)) for t in run.topics.values()) if dry_run else OMIT,
        )
        run.emit(summary)
        return summary.as_dict()


def run_partitions(request: PartitionsRequest, emit: Emit) -> dict[str, Any]:
    """Move every selected topic to the new brokers (see the module docstring); return the summary.
    SIGTERM is handled as Ctrl-C: moves in flight keep their throttles (exit 143)."""
    with sigterm_raises():
        return PartitionMover(request, emit).run()


__all__ = ["EXIT_STOPPED", "Interrupted", "NEW_TOPICS_PER_SUBMIT", "PartitionsRequest", "PartitionMover",
           "StoppedByCancel", "UNANSWERED_LOOK_S", "run_partitions"]
