"""The run lease of ``kmigrate partitions``: who is running, its heartbeat, and a ``--cancel`` seen.

A run writes ``run`` records to the bookkeeping topic: ``started``, ``alive`` every
:data:`migrate.core.ledger.RUN_HEARTBEAT_S`, ``ended``. A run that finds another run alive (same
host: its pid exists; another host: a heartbeat younger than :data:`migrate.core.ledger.RUN_STALE_S`)
refuses before changing anything (:meth:`RunLease.refuse_overlap`, exit 2), naming it. On every
look a run reads the records written since it began (:meth:`RunLease.look`): a ``cancel-requested``
record (``kmigrate partitions --cancel``) stops it.
"""

from __future__ import annotations

import os
import socket
import uuid
from datetime import datetime, timezone

from migrate.adapters.kafka.bookkeeping import BookkeepingTopic
from migrate.adapters.processes import pid_alive
from migrate.core.ledger import RUN_HEARTBEAT_S, RUN_STALE_S, Ledger, Record, make_record
from migrate.errors import BadInput
from migrate.runner.events import Emit, WarningEvent
from migrate.runner.partitions.throttles import now_s
from migrate.waiting import Clock, FakeClock


class RunLease:
    """This run's ``run`` records (its id, host and pid, when it began, when it last wrote one) and the
    ``cancel-requested`` record seen since it began."""

    def __init__(self, book: BookkeepingTopic, plan_id: str, command: str, emit: Emit, clock: Clock | FakeClock):
        self.book = book
        self.plan_id = plan_id
        self.command = command  # the command line to give again with --cancel
        self.emit = emit
        self.clock = clock
        self.run_id = uuid.uuid4().hex[:12]
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.beat_s: float | None = None  # when this run's last ``run`` record was written (None: not yet)
        self.cancel_seen: Record | None = None  # a ``cancel-requested`` record written after this run began
        self.started_at = ""  # ISO 8601, UTC: when this run began (its ``run`` records)

    def begin(self) -> None:
        """This run begins now (the time its ``run`` records give)."""
        self.started_at = datetime.fromtimestamp(now_s(), tz=timezone.utc).isoformat(timespec="seconds")

    def beat(self, state: str) -> None:
        """Write this run's ``run`` record (started, alive, ended); never raises on the way out."""
        if self.beat_s is None and state != "started":
            return
        try:
            self.book.append([make_record(self.plan_id, "run", self.run_id, now_s(), run_id=self.run_id,
                                          host=self.host, pid=self.pid, state=state, started=self.started_at)],
                             wait=state == "ended")
            self.beat_s = self.clock.now()
        except Exception as exc:  # the next heartbeat tries again; a run that ended is seen as dead by its pid
            if state == "ended":
                self.emit(WarningEvent(message=f"cannot record the end of this run: {exc}"))

    def refuse_overlap(self, ledger: Ledger, first_only: bool = False) -> None:
        """BadInput (nothing changed) when another ``partitions`` run is alive (see the module
        docstring); ``first_only``: only a run recorded before this one counts."""
        live = ledger.live_runs(now_s(), self.host, pid_alive, but=self.run_id)
        if first_only:
            order = list(ledger.runs())
            before = set(order[:order.index(self.run_id)] if self.run_id in order else order)
            live = [r for r in live if r.get("run_id") in before]
        if live:
            r = live[-1]
            raise BadInput(
                f"another kmigrate partitions run is moving this cluster (host {r.get('host')}, pid {r.get('pid')}, "
                f"started {r.get('started')}, last heard {r.get('time')}): let it finish, or stop it with "
                f"{self.command} --cancel (or SIGINT/SIGTERM it, then run again with --resume); a run killed on "
                f"another machine counts as gone {RUN_STALE_S:.0f} s after its last heartbeat")

    def look(self, now: float) -> str | None:
        """Heartbeat, and the records written since this run began: the first ``cancel-requested`` one
        seen is said, and why the run stops is returned (else None)."""
        if self.beat_s is not None and now - self.beat_s >= RUN_HEARTBEAT_S:
            self.beat("alive")
        if self.cancel_seen is not None:
            return None
        try:
            fresh = self.book.tail()
        except Exception as exc:  # the next look tries again
            self.emit(WarningEvent(message=f"reading new bookkeeping records failed ({exc}); looking again"))
            return None
        for r in fresh:
            if r.kind == "cancel-requested":
                self.cancel_seen = r
                v = r.value
                halted = (f"kmigrate partitions --cancel (host {v.get('host')}, pid {v.get('pid')}) cancelled "
                          f"this migration at {v.get('time')}")
                self.emit(WarningEvent(message=f"{halted}: submitting nothing more; its moves are being reverted"))
                return halted
        return None
