"""runner/canary.watch: how long a started canary runs and how often its figures are shown (fake clock)."""

from __future__ import annotations

from migrate.runner.canary import watch
from migrate.runner.waiting import FakeClock


class _Canary:
    def __init__(self, interrupt_after: int | None = None):
        self.reports = 0
        self.interrupt_after = interrupt_after

    def report(self) -> int:
        self.reports += 1
        if self.interrupt_after is not None and self.reports > self.interrupt_after:
            raise KeyboardInterrupt
        return self.reports


def test_runs_for_the_duration_showing_the_figures_every_half_second():
    clock, shown = FakeClock(), []
    watch(_Canary(), 2.0, shown.append, clock=clock)
    assert clock.now() == 2.0
    assert shown == [1, 2, 3, 4, 5]  # at 0, 0.5, 1, 1.5 and 2 s


def test_without_a_duration_it_runs_until_ctrl_c_and_returns():
    clock, shown = FakeClock(), []
    watch(_Canary(interrupt_after=10), None, shown.append, clock=clock)
    assert shown == list(range(1, 11))
    assert clock.now() == 5.0  # the eleventh look, at 5 s, met Ctrl-C


def test_json_output_shows_nothing_and_asks_for_no_figures():
    clock, canary = FakeClock(), _Canary()
    watch(canary, 3.0, clock=clock)
    assert clock.now() == 3.0 and canary.reports == 0
