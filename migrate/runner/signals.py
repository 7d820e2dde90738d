"""SIGINT and SIGTERM for the commands that keep state on them: the one module that installs handlers.

* ``kmigrate partitions``: SIGTERM is raised where the run is as :class:`Terminated`, a
  KeyboardInterrupt as Ctrl-C raises (:func:`sigterm_raises`), so one ``except`` leaves the moves
  in flight throttled after both; that cleanup runs with both signals ignored
  (:func:`signals_ignored`: a second Ctrl-C must not stop it half way); :func:`interrupted` is the
  exit: ``interrupted (SIGINT): ...`` with exit 130, ``interrupted (SIGTERM): ...`` with 143.
* ``kmigrate canary``: either signal only asks the canary to stop and drain
  (:class:`migrate.runner.canary.StopRequests` installs its handler with :func:`install`; a signal
  the shell ignores, as for a script's ``&`` job, stays ignored).

Off the main thread Python installs no handler (``ValueError``): :func:`sigterm_raises` and
:func:`signals_ignored` then change nothing. The crash hook of the resume tests
(:func:`migrate.runner.events.crash_point`) sends SIGKILL to its own process: not a handler.
"""

from __future__ import annotations

import signal
from contextlib import contextmanager
from typing import Any, ContextManager, Iterable, Iterator

from migrate.errors import KmigrateError

SIGNALS = (signal.SIGINT, signal.SIGTERM)
EXIT_CODES = {"SIGINT": 130, "SIGTERM": 143}
"""The exit code of a run a signal stopped (128 + the signal's number, as a shell reports it)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the run is, as Ctrl-C raises KeyboardInterrupt."""


class Interrupted(KmigrateError):
    """SIGINT (exit 130) or SIGTERM (exit 143): the message says what is left in flight."""

    kind = ""  # the message begins with "interrupted (SIGINT)": not an error of kmigrate's

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code


def signal_name(exc: BaseException) -> str:
    """``"SIGTERM"`` for :class:`Terminated`, else ``"SIGINT"`` (a KeyboardInterrupt)."""
    return "SIGTERM" if isinstance(exc, Terminated) else "SIGINT"


def interrupted(exc: KeyboardInterrupt, message: str) -> Interrupted:
    """The exit of a run ``exc`` stopped: ``interrupted (SIGINT|SIGTERM): <message>``, exit 130 or 143."""
    name = signal_name(exc)
    return Interrupted(f"interrupted ({name}): {message}", EXIT_CODES[name])


def install(handler: Any, signals: Iterable[int] = SIGNALS, keep_ignored: bool = False) -> dict[int, Any]:
    """Set ``handler`` (a function or ``signal.SIG_IGN``) for ``signals``; with ``keep_ignored`` a signal
    ignored now stays ignored. Returns the handlers to put back (:func:`restore`); ``ValueError`` off
    the main thread."""
    previous: dict[int, Any] = {}
    for sig in signals:
        if keep_ignored and signal.getsignal(sig) is signal.SIG_IGN:
            continue
        previous[sig] = signal.signal(sig, handler)
    return previous


def restore(previous: dict[int, Any] | None) -> None:
    """Put back the handlers :func:`install` returned."""
    for sig, handler in (previous or {}).items():
        signal.signal(sig, handler)


@contextmanager
def _installed(handler: Any, signals: Iterable[int]) -> Iterator[None]:
    try:
        previous = install(handler, signals)
    except ValueError:  # not the main thread
        previous = None
    try:
        yield
    finally:
        restore(previous)


def _raise_terminated(_signum: int, _frame: object) -> None:
    raise Terminated()


def sigterm_raises() -> ContextManager[None]:
    """Inside it, SIGTERM raises :class:`Terminated` where the program is (main thread only)."""
    return _installed(_raise_terminated, (signal.SIGTERM,))


def signals_ignored() -> ContextManager[None]:
    """Inside it, SIGINT and SIGTERM are ignored (main thread only); the handlers are back after it."""
    return _installed(signal.SIG_IGN, SIGNALS)


__all__ = ["EXIT_CODES", "Interrupted", "SIGNALS", "Terminated", "install", "interrupted", "restore",
           "signal_name", "signals_ignored", "sigterm_raises"]
