"""``kmigrate partitions --cancel``: stop the reassignments kmigrate started and remove its throttles.

1. a ``cancel-requested`` record is written: a ``partitions`` run that is moving sees it on its
   next look, submits nothing more and stops (exit 3) once its moves are reverted;
2. then, until nothing of kmigrate's is in flight and no run is alive (or the timeout): the
   reassignments are listed, the bookkeeping topic read (in that order: a run records a submission
   before it sends it), every move kmigrate started (:meth:`migrate.core.ledger.Ledger.started_by_kmigrate`,
   the definition ``status`` uses: any run, any plan) is cancelled (cancel = send no target; the
   partition reverts to its original replicas), waited for until it is no longer listed, and recorded;
3. only then kmigrate's throttles are removed, except those a move of kmigrate's still in flight
   needs (one left out by ``--topics``/``--exclude``): :func:`migrate.runner.partitions.throttles.release_throttles`.

Reassignments started by someone else, or left out by ``--topics``/``--exclude``, are named with
why and left alone.
"""

from __future__ import annotations

import os
import re
import socket
from typing import Any, Iterable, Mapping

from migrate.adapters.kafka.bookkeeping import BookkeepingTopic
from migrate.adapters.kafka.admin import ReassignmentAdmin
from migrate.adapters.processes import pid_alive
from migrate.core.clientconfig import ClientSettings
from migrate.core.ledger import Ledger, make_record
from migrate.core.partitions.mapping import select_topics
from migrate.core.partitions.moves import InFlight, errors_line
from migrate.core.permissions import cancel_needs, cancel_read_needs
from migrate.errors import StepFailed
from migrate.runner.permissions import require
from migrate.runner.events import CancelDone, CancelDryRun, Cancelled, Emit, LeftAlone, WarningEvent
from migrate.runner.partitions.throttles import now_s, release_throttles, see_hidden_rates
from migrate.waiting import SYSTEM_CLOCK, Clock, FakeClock, poll

NOT_MOVING = "NoReassignmentInProgressError"
"""A cancel's answer for a partition whose move already ended: nothing to cancel, not an error."""


def send_cancels(admin: ReassignmentAdmin, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], str]:
    """Cancel the reassignments of ``keys``; return the partitions the controller refused, with why."""
    errors = admin.alter_reassignments({k: None for k in keys})
    return {k: e for k, e in errors.items() if e not in (None, NOT_MOVING)}


def wait_not_in_flight(admin: ReassignmentAdmin, keys: Iterable[tuple[str, int]], timeout_s: float,
                       clock: Clock | FakeClock = SYSTEM_CLOCK) -> list[tuple[str, int]]:
    """Wait until none of ``keys`` is listed as moving; return those still listed at the timeout."""
    keys = set(keys)
    left: list[tuple[str, int]] = []

    def none_left() -> bool:
        left[:] = sorted(k for k in admin.list_reassignments() if k in keys)
        return not left

    poll(none_left, timeout_s=timeout_s, interval_s=0.5, clock=clock)
    return left


Key = tuple[str, int]


def _sort_flights(ledger: Ledger, flights: Mapping[Key, InFlight], include: re.Pattern[str] | None,
                  exclude: re.Pattern[str] | None) -> tuple[list[Key], dict[Key, str]]:
    """(kmigrate's moves to cancel, the others -> why they are left alone)."""
    chosen = set(select_topics({t for t, _ in flights}, include, exclude))
    started = set(ledger.started_by_kmigrate(flights))
    ours = sorted(k for k in started if k[0] in chosen)
    why = {k: ("started by kmigrate, left out by --topics/--exclude" if k in started
               else "not started by kmigrate (no bookkeeping record submits this target)")
           for k in flights if k not in ours}
    return ours, why


def cancel_partitions(client: ClientSettings, bookkeeping_topic: str, emit: Emit, plan_id: str = "cancel",
                      dry_run: bool = False, timeout_s: float = 300.0, include: re.Pattern[str] | None = None,
                      exclude: re.Pattern[str] | None = None, clock: Clock | FakeClock = SYSTEM_CLOCK,
                      zookeeper: str | None = None, zk_auth: tuple = (), ignore_hidden_rates: bool = False) -> dict[str, Any]:
    """Cancel every in-flight reassignment kmigrate started (see the module docstring), make a
    running ``partitions`` run stop, wait until the moves are reverted and the run has ended, then
    remove kmigrate's throttles that no move in flight needs."""
    admin = ReassignmentAdmin(client)
    book = BookkeepingTopic(client, bookkeeping_topic)
    try:  # a missing right is named before anything is read or changed (exit 2)
        require(admin.admin, client, cancel_read_needs(bookkeeping_topic, exists=False))
        exists = book.exists(admin.admin)
        if exists:
            require(admin.admin, client, cancel_read_needs(bookkeeping_topic))
        flights = admin.list_reassignments()
        ledger = book.read() if exists else Ledger([])
        ours, why = _sort_flights(ledger, flights, include, exclude)
        if dry_run:
            _left_alone(emit, why)
            dry = CancelDryRun(would_cancel=[f"{t}-{p}" for t, p in ours],
                               throttles_recorded=len(ledger.broker_throttles()) + len(ledger.topic_throttles()))
            emit(dry)
            return dry.as_dict()
        if not exists:
            _left_alone(emit, why)
            done = CancelDone(cancelled=0, left_alone=len(why), throttle_problems=[])
            emit(done)
            return done.as_dict()
        require(admin.admin, client, cancel_needs({t for t, _config in ledger.topic_throttles()}, bookkeeping_topic))
        # before any change: brokers before 2.8 hide their rates (read from ZooKeeper, else refused)
        see_hidden_rates(admin, admin.live_brokers(), zookeeper, list(zk_auth), ignore_hidden_rates)
        plans = list(ledger.plans())
        plan_id = plans[-1] if plans else plan_id
        book.append([make_record(plan_id, "cancel-requested", f"{socket.gethostname()}/{os.getpid()}", now_s(),
                                 host=socket.gethostname(), pid=os.getpid())])
        cancelled, why = _cancel_until_quiet(admin, book, plan_id, emit, timeout_s, include, exclude, clock)
        released = release_throttles(admin, book, plan_id, emit)
        for p in released.problems:
            emit(WarningEvent(message=p))
        _left_alone(emit, why)
        listed = set(admin.list_reassignments())
        left = sorted(k for k in cancelled if k in listed)
        if left:
            raise StepFailed(f"{len(left)} reassignment(s) are still listed after {timeout_s:.0f} s: "
                             f"{', '.join(f'{t}-{p}' for t, p in left[:5])}; kmigrate's throttles are kept for them; "
                             "run --cancel again")
        done = CancelDone(cancelled=len(cancelled), left_alone=len(why), throttle_problems=released.problems)
        emit(done)
        return done.as_dict()
    finally:
        book.close()
        admin.close()


def _cancel_until_quiet(admin: ReassignmentAdmin, book: BookkeepingTopic, plan_id: str, emit: Emit, timeout_s: float,
                        include, exclude, clock) -> tuple[list[Key], dict[Key, str]]:
    """Cancel kmigrate's moves again and again until none is in flight and no ``partitions`` run
    is alive (it may submit once more before it sees the cancel record), or ``timeout_s``.
    Returns the moves cancelled and the others in flight, with why they were left alone."""
    cancelled: list[Key] = []
    why: dict[Key, str] = {}
    deadline = clock.now() + timeout_s
    while True:
        flights = admin.list_reassignments()  # before the ledger (see the module docstring)
        ledger = book.read()
        ours, why = _sort_flights(ledger, flights, include, exclude)
        # a cancel of some topics only does not wait for the run: it stops submitting, and ends
        # once its other moves are over
        runs = ledger.live_runs(now_s(), socket.gethostname(), pid_alive) if include is None and exclude is None else []
        if ours:
            left = _cancel_ours(admin, book, ledger, ours, plan_id, emit, max(1.0, deadline - clock.now()))
            cancelled += [k for k in ours if k not in cancelled]
            if left or clock.now() >= deadline:
                return cancelled, why
        elif not runs or clock.now() >= deadline:
            if runs:
                emit(WarningEvent(message=f"a partitions run (host {runs[-1].get('host')}, pid {runs[-1].get('pid')}) "
                                          f"is still running after {timeout_s:.0f} s"))
            return cancelled, why
        else:
            clock.sleep(0.5)  # a run is alive: it stops once it sees the cancel record


def _left_alone(emit: Emit, why: Mapping[Key, str]) -> None:
    if not why:
        return
    names = {f"{t}-{p}": w for (t, p), w in sorted(why.items())}
    kinds: dict[str, list[str]] = {}
    for name, w in names.items():
        kinds.setdefault(w, []).append(name)
    emit(LeftAlone(partitions=list(names), reasons=names,
                   message="; ".join(f"{len(ns)} reassignment(s) left alone, {w}: {', '.join(ns[:10])}"
                                     f"{'...' if len(ns) > 10 else ''}" for w, ns in kinds.items())))


def _cancel_ours(admin: ReassignmentAdmin, book: BookkeepingTopic, ledger: Ledger, ours: list[Key],
                 plan_id: str, emit: Emit, timeout_s: float) -> list[Key]:
    """Cancel ``ours``, wait until they are no longer listed (back on their original replicas),
    record it; return those still listed at the timeout."""
    bad = send_cancels(admin, ours)
    if bad:
        raise StepFailed(f"cancelling failed for {errors_line(bad)}; throttles are kept: run --cancel again")
    left = wait_not_in_flight(admin, ours, timeout_s)
    by_topic: dict[str, list[int]] = {}
    for t, p in ours:
        by_topic.setdefault(t, []).append(p)
    book.append([make_record(pid, "cancelled", t, now_s(), topic=t, partitions=ps)
                 for t, ps in by_topic.items() for pid in [ledger.plan_of_submission(t) or plan_id]])
    names = [f"{t}-{p}" for t, p in ours if (t, p) not in left]
    emit(Cancelled(partitions=names,
                   message=f"cancelled {len(names)} reassignment(s) kmigrate started, back on their original "
                           f"replicas: {', '.join(names[:10])}{'...' if len(names) > 10 else ''}"))
    return left
