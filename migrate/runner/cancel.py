"""``kmigrate partitions --cancel``: stop the reassignments kmigrate started and remove its throttles.

Only reassignments whose target is the one kmigrate recorded submitting are cancelled (cancel =
send no target; the partition reverts to its original replicas); others are reported and left
alone. The bookkeeping topic records the cancellation; kmigrate's throttles are removed after.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from migrate.adapters.bookkeeping import BookkeepingTopic
from migrate.adapters.kafka import ReassignmentAdmin
from migrate.core.clientconfig import ClientSettings
from migrate.core.ledger import Ledger, make_record
from migrate.core.mapping import select_topics
from migrate.core.moves import errors_line
from migrate.errors import StepFailed
from migrate.runner.events import CancelDone, CancelDryRun, Cancelled, Emit, LeftAlone, WarningEvent
from migrate.runner.throttles import clear_recorded_throttles, now_s
from migrate.runner.waiting import SYSTEM_CLOCK, Clock, FakeClock, poll

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


def cancel_partitions(client: ClientSettings, bookkeeping_topic: str, emit: Emit, plan_id: str = "cancel",
                      dry_run: bool = False, timeout_s: float = 120.0, include: re.Pattern[str] | None = None,
                      exclude: re.Pattern[str] | None = None) -> dict[str, Any]:
    """Cancel every in-flight reassignment kmigrate started (its ``submitted`` records, any plan,
    with the same target as in flight; only topics matching ``include`` / not ``exclude`` when
    given), wait until none is left, and remove kmigrate's throttles. Reassignments started by
    someone else are reported and left alone."""
    admin = ReassignmentAdmin(client)
    book = BookkeepingTopic(client, bookkeeping_topic)
    try:
        ledger = book.read() if book.exists(admin.admin) else Ledger([])
        submitted = ledger.submitted(None)
        flights = admin.list_reassignments()
        chosen = set(select_topics({t for t, _ in flights}, include, exclude))
        ours = {k: f for k, f in flights.items()
                if k in submitted and tuple(f.target) == tuple(submitted[k]) and k[0] in chosen}
        others = sorted(k for k in flights if k not in ours)
        if others:
            emit(LeftAlone(partitions=[f"{t}-{p}" for t, p in others],
                           message=f"{len(others)} reassignment(s) in flight were not started by kmigrate: left alone"))
        if dry_run:
            dry = CancelDryRun(would_cancel=[f"{t}-{p}" for t, p in sorted(ours)],
                               throttles_recorded=len(ledger.broker_throttles()) + len(ledger.topic_throttles()))
            emit(dry)
            return dry.as_dict()
        left = _cancel_ours(admin, book, ledger, sorted(ours), plan_id, emit, timeout_s) if ours else []
        problems = clear_recorded_throttles(admin, book, ledger, plan_id, emit) if book.exists(admin.admin) else []
        for p in problems:
            emit(WarningEvent(message=p))
        if left:
            raise StepFailed(f"{len(left)} reassignment(s) are still listed after {timeout_s:.0f} s: "
                             f"{', '.join(f'{t}-{p}' for t, p in left[:5])}; run --cancel again")
        done = CancelDone(cancelled=len(ours), left_alone=len(others), throttle_problems=problems)
        emit(done)
        return done.as_dict()
    finally:
        book.close()
        admin.close()


def _cancel_ours(admin: ReassignmentAdmin, book: BookkeepingTopic, ledger: Ledger, ours: list[tuple[str, int]],
                 plan_id: str, emit: Emit, timeout_s: float) -> list[tuple[str, int]]:
    """Cancel ``ours``, wait for them to stop, record it; return those still listed at the timeout."""
    bad = send_cancels(admin, ours)
    if bad:
        raise StepFailed(f"cancelling failed for {errors_line(bad)}; throttles are kept: run --cancel again")
    left = wait_not_in_flight(admin, ours, timeout_s)
    by_topic: dict[str, list[int]] = {}
    for t, p in ours:
        by_topic.setdefault(t, []).append(p)
    book.append([make_record(pid, "cancelled", t, now_s(), topic=t, partitions=ps)
                 for t, ps in by_topic.items() for pid in [ledger.plan_of_submission(t) or plan_id]])
    emit(Cancelled(partitions=[f"{t}-{p}" for t, p in ours],
                   message=f"cancelled {len(ours)} reassignment(s); they are back on their original replicas"))
    return left
