"""runner/canary: how long a started canary runs, how often its figures are shown, what stops it (fake clock)."""

from __future__ import annotations

import os
import signal

from migrate.runner.canary import StopRequests, watch
from migrate.waiting import FakeClock


class _Canary:
    def __init__(self, interrupt_after: int | None = None):
        self.reports = 0
        self.interrupt_after = interrupt_after

    def report(self) -> int:
        self.reports += 1
        if self.interrupt_after is not None and self.reports > self.interrupt_after:
            raise KeyboardInterrupt
        return self.reports


def test_runs_for_the_duration_showing_the_figures_every_interval():
    clock, shown = FakeClock(), []
    assert watch(_Canary(), 2.0, shown.append, clock=clock) == "duration"
    assert clock.now() == 2.0
    assert shown == [1, 2, 3, 4, 5]  # at 0, 0.5, 1, 1.5 and 2 s


def test_a_long_report_interval_still_looks_for_a_stop_request_often():
    clock, shown = FakeClock(), []
    asks = []

    def stop_requested():
        asks.append(clock.now())
        return "SIGTERM" if clock.now() >= 12.5 else None

    assert watch(_Canary(), None, shown.append, interval_s=10.0, clock=clock, stop_requested=stop_requested) == "SIGTERM"
    assert clock.now() == 12.5  # not at the next line (20 s)
    assert shown == [1, 2]  # at 0 and 10 s
    assert max(b - a for a, b in zip(asks, asks[1:])) == 0.25


def test_without_a_duration_it_runs_until_ctrl_c_and_returns():
    clock, shown = FakeClock(), []
    assert watch(_Canary(interrupt_after=10), None, shown.append, clock=clock) == "SIGINT"
    assert shown == list(range(1, 11))
    assert clock.now() == 5.0  # the eleventh look, at 5 s, met Ctrl-C


def test_json_output_shows_nothing_and_asks_for_no_figures():
    clock, canary = FakeClock(), _Canary()
    watch(canary, 3.0, clock=clock)
    assert clock.now() == 3.0 and canary.reports == 0


def test_sigterm_and_a_stop_file_are_stop_requests(tmp_path):
    stop_file = tmp_path / "stop"
    before = signal.getsignal(signal.SIGTERM)
    with StopRequests(stop_file) as stop_requested:
        assert stop_requested() is None
        stop_file.touch()
        assert stop_requested() == f"stop file {stop_file}"
    with StopRequests(None) as stop_requested:
        os.kill(os.getpid(), signal.SIGTERM)  # handled: the process goes on
        assert stop_requested() == "SIGTERM"
    assert signal.getsignal(signal.SIGTERM) is before


def test_an_ignored_sigint_stays_ignored(tmp_path):
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as for a script's `&` job
    try:
        with StopRequests(None) as stop_requested:
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            assert stop_requested() is None
    finally:
        signal.signal(signal.SIGINT, previous)
