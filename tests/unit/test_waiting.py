"""runner/waiting.py: the one wait helper, on a fake clock (no test sleeps)."""

import pytest

from migrate.errors import StepFailed
from migrate.waiting import FakeClock, poll, wait_until


def test_poll_returns_the_first_answer_and_sleeps_the_interval():
    clock = FakeClock()
    answers = iter([None, 0, [], "ok"])
    assert poll(lambda: next(answers), timeout_s=60, interval_s=2, clock=clock) == "ok"
    assert clock.slept == [2, 2, 2]


def test_poll_gives_up_at_the_deadline_after_a_last_look():
    clock = FakeClock()
    calls = []
    assert poll(lambda: calls.append(clock.now()), timeout_s=5, interval_s=2, clock=clock) is None
    assert calls == [0, 2, 4, 5]  # the last sleep is cut to the deadline, and the check is asked there


def test_wait_until_names_what_it_waited_for():
    with pytest.raises(StepFailed, match="timed out after 3 s waiting for the leader"):
        wait_until(lambda: None, timeout_s=3, what="the leader", clock=FakeClock())
    with pytest.raises(KeyError):
        wait_until(lambda: None, timeout_s=3, what="x", clock=FakeClock(), on_timeout=lambda: KeyError("mine"))


def test_listed_exceptions_are_retried_and_the_last_one_raised_at_the_deadline():
    clock = FakeClock()
    attempts = iter([ConnectionError("down"), ConnectionError("down"), "up"])

    def check():
        a = next(attempts)
        if isinstance(a, Exception):
            raise a
        return a

    assert poll(check, timeout_s=10, interval_s=1, clock=clock, retry_on=(ConnectionError,)) == "up"

    def always_down():
        raise ConnectionError("still down")

    with pytest.raises(ConnectionError, match="still down"):
        poll(always_down, timeout_s=3, interval_s=1, clock=FakeClock(), retry_on=(ConnectionError,))
    with pytest.raises(ValueError):  # not listed: goes through at once
        poll(lambda: int("x"), timeout_s=3, clock=FakeClock())
