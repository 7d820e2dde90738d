"""Phases: named stretches of a canary run, and the figures of each (pure).

A phase is a :class:`Mark` in seconds after the canary's start. ``kmigrate demo`` marks its own steps; the
standalone ``kmigrate canary`` takes them from what kmigrate recorded in its bookkeeping topic
(:func:`marks_from_bookkeeping`: each ``kmigrate partitions`` run from its ``run`` records, "at rest" before the
first, "after" past the last), and the replication throttle per broker over time (:func:`throttle_steps`,
from ``throttle-broker``/``throttle-cleared`` records; ``throttle-auto`` decisions: :func:`throttle_decisions`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from migrate.core.ledger import RUN_HEARTBEAT_S, record_time_s
from migrate.core.report.timeline import Figures, Timeline

AT_REST = "at rest"
WHOLE_RUN = "whole run"


@dataclass(frozen=True)
class Mark:
    """A phase: ``name``, from ``start_s`` to ``end_s`` seconds after the canary's start."""

    name: str
    start_s: float
    end_s: float

    def to_dict(self) -> dict:
        return {"name": self.name, "start_s": round(self.start_s, 3), "end_s": round(self.end_s, 3)}


@dataclass(frozen=True)
class PhaseFigures:
    mark: Mark
    figures: Figures

    def to_dict(self) -> dict:
        f = self.figures
        return {**self.mark.to_dict(), "seconds": round(self.mark.end_s - self.mark.start_s, 3), "acks": f.acks,
                "failed": f.failed, "latency_p50_ms": f.p50_ms, "latency_p99_ms": f.p99_ms, "latency_max_ms": f.max_ms,
                "longest_stall_s": f.stall_s}


def phase_table(timeline: Timeline, marks: Iterable[Mark]) -> list[PhaseFigures]:
    """Each mark's figures, in the order given, then the whole run's.

    >>> t = Timeline(started_s=100.0)
    >>> for s in range(10): t.on_ack(100.0 + s + 0.5, 10.0 if s < 5 else 300.0)
    >>> [(p.mark.name, p.figures.acks, round(p.figures.p99_ms)) for p in phase_table(t, [Mark("a", 0, 5), Mark("b", 5, 10)])]
    [('a', 5, 10), ('b', 5, 300), ('whole run', 10, 300)]
    """
    rows = [PhaseFigures(m, timeline.figures(m.start_s, m.end_s)) for m in marks]
    rows.append(PhaseFigures(Mark(WHOLE_RUN, 0.0, timeline.duration_s), timeline.figures()))
    return rows


def _offset(value: Mapping[str, Any], started_unix: float) -> float:
    return record_time_s(value) - started_unix


def marks_from_bookkeeping(values: Iterable[Mapping[str, Any]], started_unix: float, duration_s: float) -> list[Mark]:
    """The phases a canary run from ``started_unix`` (Unix seconds) for ``duration_s`` saw, from the bookkeeping
    records' values: each ``kmigrate partitions`` run that overlaps it (from its first ``run`` record to its
    ``ended`` one; without one, a run killed or still going, to its last heartbeat plus one interval), clipped
    to the canary's run; "at rest" before the first, "after kmigrate partitions" past the last. No run: none.

    >>> rec = lambda t, state: {"kind": "run", "run_id": "r1", "plan_id": "p", "state": state,
    ...                         "time": f"2026-01-01T00:00:{t:02d}+00:00"}
    >>> t0 = record_time_s(rec(0, "x"))
    >>> [(m.name, m.start_s, m.end_s) for m in marks_from_bookkeeping([rec(10, "started"), rec(40, "ended")], t0, 60)]
    [('at rest', 0.0, 10.0), ('kmigrate partitions (run r1)', 10.0, 40.0), ('after kmigrate partitions', 40.0, 60)]
    """
    runs: dict[str, list[float]] = {}
    ended: set[str] = set()
    for v in values:
        if v.get("kind") != "run" or "run_id" not in v:
            continue
        at = _offset(v, started_unix)
        span = runs.setdefault(str(v["run_id"]), [at, at])
        span[0], span[1] = min(span[0], at), max(span[1], at)
        if v.get("state") == "ended":
            ended.add(str(v["run_id"]))
    marks = []
    for run_id, (start, end) in sorted(runs.items(), key=lambda kv: kv[1][0]):
        if run_id not in ended:
            end += RUN_HEARTBEAT_S
        start, end = max(0.0, start), min(duration_s, end)
        if end > start:
            marks.append(Mark(f"kmigrate partitions (run {run_id}{'' if run_id in ended else ', no end recorded'})",
                              start, end))
    if not marks:
        return []
    out = [Mark(AT_REST, 0.0, marks[0].start_s)] if marks[0].start_s > 0 else []
    out += marks
    last = max(m.end_s for m in marks)
    if last < duration_s:
        out.append(Mark("after kmigrate partitions", last, duration_s))
    return out


def throttle_steps(values: Iterable[Mapping[str, Any]], started_unix: float,
                   duration_s: float) -> dict[int, list[tuple[float, int | None]]]:
    """Broker -> the replication throttle kmigrate had set on it over the canary's run: ``(offset s, bytes/s or
    None when none)`` at each change (the rate in force at the start at offset 0), from ``throttle-broker`` and
    ``throttle-cleared`` records (a broker's rate: the highest of its leader/follower rates). Brokers kmigrate
    never throttled during the run are left out.

    >>> rec = lambda t, kind, **kw: {"kind": kind, "broker": 4, "config": "leader.replication.throttled.rate",
    ...                              "time": f"2026-01-01T00:00:{t:02d}+00:00", **kw}
    >>> t0 = record_time_s(rec(0, "x"))
    >>> throttle_steps([rec(5, "throttle-broker", value="1000"), rec(20, "throttle-broker", value="2000"),
    ...                 rec(30, "throttle-cleared", scope="broker")], t0 + 10, 60)
    {4: [(0.0, 1000), (10.0, 2000), (20.0, None)]}
    """
    configs: dict[int, dict[str, int]] = {}
    out: dict[int, list[tuple[float, int | None]]] = {}
    for v in values:
        kind = v.get("kind")
        if kind == "throttle-broker":
            try:
                configs.setdefault(int(v["broker"]), {})[str(v["config"])] = int(v["value"])
            except (KeyError, TypeError, ValueError):
                continue
        elif kind == "throttle-cleared" and v.get("scope") == "broker" and "broker" in v:
            configs.get(int(v["broker"]), {}).pop(str(v.get("config")), None)
        else:
            continue
        broker = int(v["broker"])
        at = max(0.0, _offset(v, started_unix))
        if at > duration_s:
            continue
        rates = configs.get(broker) or {}
        rate = max(rates.values()) if rates else None
        steps = out.setdefault(broker, [])
        if steps and steps[-1][0] == at:
            steps[-1] = (at, rate)
        elif not steps or steps[-1][1] != rate:
            steps.append((at, rate))
    return {b: s for b, s in sorted(out.items()) if any(r is not None for _, r in s)}


def throttle_decisions(values: Iterable[Mapping[str, Any]], started_unix: float,
                       duration_s: float) -> list[dict[str, Any]]:
    """The ``throttle-auto`` decisions made during the canary's run: ``at_s`` (offset), broker, rates, reason."""
    out = []
    for v in values:
        if v.get("kind") != "throttle-auto":
            continue
        at = _offset(v, started_unix)
        if 0 <= at <= duration_s:
            out.append({"at_s": round(at, 3), "broker": v.get("broker"), "old_rate": v.get("old_rate"),
                        "new_rate": v.get("new_rate"), "reason": v.get("reason")})
    return out
