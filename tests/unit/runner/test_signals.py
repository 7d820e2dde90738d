"""runner/signals: the one module that installs SIGINT/SIGTERM handlers (run on the main thread)."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from migrate.runner.signals import (
    EXIT_CODES, Interrupted, Terminated, install, interrupted, restore, signal_name, signals_ignored, sigterm_raises,
)


def test_sigterm_raises_terminated_inside_and_the_handler_is_back_after():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated):
        with sigterm_raises():
            os.kill(os.getpid(), signal.SIGTERM)  # the handler runs before the next line
    assert signal.getsignal(signal.SIGTERM) is before


def test_signals_ignored_inside_then_restored():
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    with signals_ignored():
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    assert {s: signal.getsignal(s) for s in before} == before


def test_off_the_main_thread_nothing_is_installed():
    seen = []

    def body():
        with sigterm_raises(), signals_ignored():
            seen.append(signal.getsignal(signal.SIGTERM))

    before = signal.getsignal(signal.SIGTERM)
    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert seen == [before]


def test_an_ignored_signal_stays_ignored_when_asked():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        got = install(lambda *_: None, keep_ignored=True)
        assert signal.SIGINT not in got and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        restore(got)
    finally:
        signal.signal(signal.SIGINT, previous)


def test_the_exit_of_a_signal():
    assert signal_name(Terminated()) == "SIGTERM" and signal_name(KeyboardInterrupt()) == "SIGINT"
    e = interrupted(Terminated(), "nothing was changed")
    assert isinstance(e, Interrupted) and e.exit_code == 143 and e.message == "interrupted (SIGTERM): nothing was changed"
    assert interrupted(KeyboardInterrupt(), "x").exit_code == 130 == EXIT_CODES["SIGINT"]
