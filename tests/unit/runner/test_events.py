"""The typed events of ``kmigrate partitions`` (runner/events.py): one list, and JSON lines as before."""

from __future__ import annotations

import json
from dataclasses import fields

from migrate.runner import events as ev

# Every kind with the keys its JSON line had when events were dicts (before the events were typed).
KEYS = {
    "warning": {"message"},
    "start": {"plan_id", "mapping", "throttle_bytes_per_s", "bookkeeping_topic", "topics_selected", "topics_recorded",
              "topics_to_move", "topics_to_record", "partitions_to_move", "bytes_to_copy", "dry_run",
              "max_moves_per_broker", "max_moves_cluster"},
    "would-move": {"topic", "partitions"},
    "would-record": {"topic"},
    "foreign-plan": {"plan_id", "topics", "message"},
    "bookkeeping-created": {"topic", "replicas"},
    "resume": {"records", "topics_recorded"},
    "throttle-set": {"brokers", "rate_bytes_per_s"},
    "topic-gone": {"topic", "message"},
    "partition-done": {"topic", "partition", "replicas"},
    "partition-cancelled": {"topic", "partition", "replicas", "message"},
    "foreign-finished": {"topic", "partition", "replicas"},
    "waiting-foreign": {"topic", "partition", "target", "message"},
    "held": {"topic", "partition", "isr", "replicas", "min_isr", "message"},
    "isr-short": {"topic", "partition", "isr", "min_isr", "message"},
    "stall": {"topic", "partition", "broker", "seconds", "broker_alive", "bytes", "message"},
    "stall-over": {"topic", "partition", "broker"},
    "stall-cancelled": {"topic", "partitions", "message"},
    "adopted": {"partitions"},
    "submitted": {"partitions"},
    "topic-cancelled": {"topic", "partitions"},
    "topic-done": {"topic", "partitions_moved", "bytes", "seconds", "already_on_target"},
    "leaders-not-preferred": {"topic", "partitions", "message"},
    "progress": {"copied_bytes", "total_bytes", "rate_bytes_per_s", "eta_s", "in_flight", "topics_left",
                 "topics_recorded", "topics"},
    "discovered": {"topics", "message"},
    "aborted": {"error", "in_flight", "throttle_problems", "message"},
    "left-alone": {"partitions", "message"},
    "throttles-adopted": {"configs", "topics", "brokers", "message"},
    "throttles-removed": {"configs", "topics", "brokers", "message"},
    "run-started": {"run_id", "host", "pid"},
    "stopped": {"by", "reverted", "finished", "message"},
    "cancelled": {"partitions", "message"},
    "throttle-baseline": {"topic", "samples", "p99_ms", "budget_ms", "limit_ms", "resumed", "message"},
    "throttle-auto": {"broker", "old_rate_bytes_per_s", "new_rate_bytes_per_s", "moves", "reason", "mode", "p99_ms",
                      "limit_ms", "message"},
}


# keys added later, written only when the event has them (OMIT otherwise)
OPTIONAL = {
    "aborted": {"in_flight_partitions", "throttled_topics", "throttled_brokers", "resume_command", "cancel_command"},
    "left-alone": {"reasons"},
    "start": {"throttle_auto"},
}


def _required(cls) -> set[str]:
    return {f.name for f in fields(cls) if f.default is not ev.OMIT}


def test_one_list_holds_every_kind_with_the_keys_it_always_had():
    single = {cls.kind: cls for cls in ev.PARTITION_EVENTS if cls.kind not in ("done", "throttle-adopted", "throttle-cleared")}
    assert set(single) == set(KEYS)
    for kind, cls in single.items():
        assert _required(cls) == KEYS[kind], kind
        assert {f.name for f in fields(cls)} - OPTIONAL.get(kind, set()) == KEYS[kind], kind


def test_json_lines_are_the_dicts_of_before():
    cleared = ev.ThrottleCleared(scope="broker", broker=4, config="leader.replication.throttled.rate", action="removed")
    assert cleared.as_dict() == {"event": "throttle-cleared", "scope": "broker", "broker": 4,
                                 "config": "leader.replication.throttled.rate", "action": "removed"}
    cleared_t = ev.ThrottleCleared(scope="topic", topic="t", config="c", action="absent", entries=0)
    assert cleared_t.as_dict() == {"event": "throttle-cleared", "scope": "topic", "topic": "t", "config": "c",
                                   "action": "absent", "entries": 0}
    assert ev.ThrottleAdopted(scope="broker", broker=4, config="c").as_dict() == {
        "event": "throttle-adopted", "scope": "broker", "broker": 4, "config": "c"}
    run = dict(plan_id="p", dry_run=False, topics_recorded_now=1, topics_recorded_total=2, partitions_moved=3,
               bytes_copied=4, seconds=5.0, gone=[])
    assert ev.RunDone(**run).as_dict() == {"event": "done", **run}
    dry = ev.RunDone(**{**run, "dry_run": True}, topics_to_move=["a"], partitions_to_move=2).as_dict()
    assert dry == {"event": "done", **run, "dry_run": True, "topics_to_move": ["a"], "partitions_to_move": 2}
    assert ev.CancelDone(cancelled=1, left_alone=0, throttle_problems=[]).as_dict() == {
        "event": "done", "cancelled": 1, "left_alone": 0, "throttle_problems": []}
    assert ev.CancelDryRun(would_cancel=["t-0"], throttles_recorded=2).as_dict() == {
        "event": "done", "dry_run": True, "would_cancel": ["t-0"], "throttles_recorded": 2}
    stall = ev.Stall(topic="t", partition=0, broker=4, seconds=12.5, broker_alive=False, bytes=0, message="m")
    assert json.dumps(stall.as_dict(), sort_keys=True) == json.dumps(
        {"event": "stall", "topic": "t", "partition": 0, "broker": 4, "seconds": 12.5, "broker_alive": False,
         "bytes": 0, "message": "m"}, sort_keys=True)
