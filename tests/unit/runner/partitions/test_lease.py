"""runner/partitions/lease.py: a run's ``run`` records, its heartbeat and a ``--cancel`` seen (fake book and clock)."""

from __future__ import annotations

import os

import pytest

from migrate.core.ledger import RUN_HEARTBEAT_S, Ledger, make_record
from migrate.errors import BadInput
from migrate.runner.partitions.lease import RunLease
from migrate.waiting import FakeClock


class _Book:
    def __init__(self, tail=()):
        self.written = []
        self._tail = list(tail)

    def append(self, records, wait=True):
        self.written += [r.value["state"] for r in records]

    def tail(self):
        fresh, self._tail = self._tail, []
        return fresh


def _lease(book, events=None, clock=None):
    return RunLease(book, "p1", "kmigrate partitions --plan x", (events if events is not None else []).append,
                    clock or FakeClock())


def test_no_heartbeat_before_the_run_has_started_then_one_every_few_seconds():
    book, clock = _Book(), FakeClock()
    lease = _lease(book, clock=clock)
    lease.beat("alive")
    assert book.written == []
    lease.beat("started")
    lease.look(clock.now())
    clock.sleep(RUN_HEARTBEAT_S)
    lease.look(clock.now())
    assert book.written == ["started", "alive"]


def test_a_cancel_request_stops_the_run_once():
    cancel = make_record("p1", "cancel-requested", "cancel", 0, host="h", pid=7, time="t0")
    events = []
    lease = _lease(_Book([cancel]), events)
    halted = lease.look(0.0)
    assert halted == "kmigrate partitions --cancel (host h, pid 7) cancelled this migration at t0"
    assert lease.cancel_seen is cancel and len(events) == 1
    assert lease.look(0.0) is None


def test_another_live_run_on_this_host_is_refused():
    other = make_record("p1", "run", "r0", 0, run_id="r0", host="", pid=os.getpid(), state="alive", started="s0")
    lease = _lease(_Book())
    lease.host = ""
    with pytest.raises(BadInput, match="another kmigrate partitions run .* kmigrate partitions --plan x --cancel"):
        lease.refuse_overlap(Ledger([other]))
