"""Issue 31: phases (a demo's steps, or kmigrate's bookkeeping records) and the figures of each."""

from __future__ import annotations

import doctest
from pathlib import PurePath

import migrate.core.report.impact as impact_module
import migrate.core.report.phases as phases_module
from migrate.core.ledger import make_record, record_time_s
from migrate.core.report.impact import Impact
from migrate.core.report.phases import (AT_REST, WHOLE_RUN, Mark, marks_from_bookkeeping, throttle_decisions,
                                        throttle_steps)
from migrate.core.report.timeline import Timeline

T0 = 1_800_000_000.0  # the canary's start (Unix seconds)


def test_doctests():
    assert doctest.testmod(phases_module).failed == 0
    assert doctest.testmod(impact_module).failed == 0


def _run(run_id: str, at: float, state: str) -> dict:
    return dict(make_record("p1", "run", run_id, T0 + at, run_id=run_id, host="h", pid=1, state=state,
                            started="").value)


def test_each_partitions_run_is_a_phase_between_at_rest_and_after():
    values = [_run("a", -30, "started"), _run("a", -20, "ended"),  # before the canary: not a phase
              _run("b", 12, "started"), _run("b", 22, "alive"), _run("b", 40, "ended"),
              _run("c", 50, "started"), _run("c", 60, "alive")]  # killed: no end recorded
    marks = marks_from_bookkeeping(values, T0, 100.0)
    assert [(m.name, m.start_s, m.end_s) for m in marks] == [
        (AT_REST, 0.0, 12.0), ("kmigrate partitions (run b)", 12.0, 40.0),
        ("kmigrate partitions (run c, no end recorded)", 50.0, 70.0), ("after kmigrate partitions", 70.0, 100.0)]


def test_no_run_during_the_canary_no_phase():
    assert marks_from_bookkeeping([_run("a", -30, "started"), _run("a", -20, "ended")], T0, 100.0) == []
    assert marks_from_bookkeeping([], T0, 100.0) == []


def test_the_throttle_per_broker_over_time_from_its_records():
    def rate(at, broker, cfg, value):
        return dict(make_record("p1", "throttle-broker", f"{broker}/{cfg}", T0 + at, broker=broker, config=cfg,
                                value=value, prior=None).value)

    def cleared(at, broker, cfg):
        return dict(make_record("p1", "throttle-cleared", f"{broker}/{cfg}", T0 + at, scope="broker", broker=broker,
                                config=cfg).value)

    lead, follow = "leader.replication.throttled.rate", "follower.replication.throttled.rate"
    values = [rate(-5, 4, lead, "1000"), rate(-5, 4, follow, "1000"), rate(10, 4, lead, "4000"),
              rate(10, 4, follow, "4000"), rate(15, 5, lead, "2000"), cleared(30, 4, lead), cleared(30, 4, follow),
              cleared(31, 5, lead), rate(200, 6, lead, "9")]  # after the canary: left out
    assert throttle_steps(values, T0, 100.0) == {4: [(0.0, 1000), (10.0, 4000), (30.0, None)],
                                                 5: [(15.0, 2000), (31.0, None)]}
    auto = dict(make_record("p1", "throttle-auto", "4", T0 + 20, broker=4, at_s=1.0, old_rate=1, new_rate=2, moves=1,
                            reason="slow-start: x2").value)
    assert throttle_decisions([*values, auto], T0, 100.0) == [
        {"at_s": 20.0, "broker": 4, "old_rate": 1, "new_rate": 2, "reason": "slow-start: x2"}]


def test_the_phase_table_at_rest_first_and_the_whole_run_last():
    t = Timeline(started_s=0.0)
    for i in range(300):
        at = i / 10
        t.on_ack(at, 10.0 if at < 10 or at >= 20 else 200.0)
    t.on_stall(12.0, 14.5)
    impact = Impact.of("x", t, [Mark(AT_REST, 0, 10), Mark("move", 10, 20), Mark("after", 20, 30)])
    rows = [p.to_dict() for p in impact.phases]
    assert [r["name"] for r in rows] == [AT_REST, "move", "after", WHOLE_RUN]
    assert [r["acks"] for r in rows] == [100, 100, 100, 300]
    assert [round(r["latency_p99_ms"]) for r in rows] == [10, 200, 10, 200]
    assert [r["longest_stall_s"] for r in rows] == [0.0, 2.5, 0.0, 2.5]
    assert impact.at_rest.figures.p99_ms <= 10.2
    d = impact.to_dict()
    assert d["timeline"]["columns"][0] == "at_s" and len(d["timeline"]["rows"]) == 30
    assert "timeline" not in impact.to_dict(timeline=False)


def test_a_record_time_and_its_offset():
    assert record_time_s(_run("a", 12.5, "started")) - T0 == 12.5
    assert str(impact_module.html_path(PurePath("r.json"))) == "r.html"
