"""Issue 31: ``kmigrate partitions --throttle auto --latency-budget``, on a real sandbox.

One run moves a few MB from brokers 1, 2 to 3, 4 with the law tuned to act within seconds
(``KMIGRATE_AUTO_THROTTLE``, a testing hook): the canary's baseline at rest is measured and
reported, the rate starts at the minimum and rises (slow start), each change is a ``throttle-auto``
event and a ``throttle-auto`` bookkeeping record, the brokers' configs follow it, a target broker
paused for a few seconds (SIGSTOP: acks=all writes stall) makes the rate fall; the run is then
SIGKILLed and ``--resume`` takes up each broker's last recorded rate; at the end no throttle is
left and the canary's topic is gone. Before it, a fixed-throttle run finds the canary topic an
auto run killed before its end left behind: it does not move it and deletes it at its end. After them,
a run steered by the operator's own canary (``--canary-report``) moves data back.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from migrate.core.partitions.mapping import mapping_plan_id
from migrate.core.throttle.options import CANARY_TOPIC, TUNING_ENV
from cluster_waits import settled
from partitions_support import (
    create_topic, in_flight, kmigrate, kmigrate_background, ledger, produce, throttles_left, topics,
    wait_for_event,
)

pytestmark = pytest.mark.integration

SANDBOX = dict(zookeeper_ids=(1,), broker_ids=(1, 2), spare_broker_ids=(3, 4))
MAPPING = "1:3,2:4"
PLAN_ID = mapping_plan_id({1: 3, 2: 4})
TUNING = dict(baseline_s=5, warmup_s=2, window_s=2, start_rate=1_000_000, min_rate=1_000_000, max_rate=3_000_000, interval_s=3,
              signal_timeout_s=8, start_moves=1)


def baseline_ok(baseline: dict) -> bool:
    return baseline["samples"] > 50 and baseline["limit_ms"] == pytest.approx(baseline["p99_ms"] + 100, abs=0.2)


def test_a_fixed_run_leaves_a_killed_auto_runs_canary_topic_unmoved_and_deletes_it(cluster):
    create_topic(cluster, CANARY_TOPIC, [[1, 2], [2, 1]])  # as an auto run SIGKILLed before its end leaves it
    create_topic(cluster, "fixed-data", [[1, 2]])
    produce(cluster, "fixed-data", 200)
    done = kmigrate("partitions", "--bootstrap-server", cluster.bootstrap_servers(), "--mapping", MAPPING,
                    "--topics", "fixed-data", "--throttle", "5MB/s")
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"deleted the auto throttle's canary topic {CANARY_TOPIC}" in done.stdout + done.stderr
    assert settled(lambda: CANARY_TOPIC in topics(cluster), False) is False
    assert [tuple(p.replicas) for p in topics(cluster)["fixed-data"].partitions.values()] == [(3, 4)]


def test_the_rate_starts_rises_falls_when_a_broker_hangs_is_recorded_resumed_and_removed_at_the_end(cluster):
    create_topic(cluster, "auto-data", [[1, 2], [2, 1]])
    # 40 MB, 20 MB a partition, each target broker copying two: 7 s at the most (3 MB/s) and 20 s at the least before
    # its end; the kill comes after about 12 s of moving (the rise, the 5 s pause, the fall). With 24 MB a run once
    # ended before it (a full run on a busy machine)
    produce(cluster, "auto-data", 40_000, size=1000)
    refused = kmigrate("partitions", "--bootstrap-server", cluster.bootstrap_servers(), "--mapping", MAPPING,
                       "--latency-budget", "50ms")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "--throttle auto" in refused.stderr
    args = ("partitions", "--bootstrap-server", cluster.bootstrap_servers(), "--mapping", MAPPING, "--topics",
            "auto-data", "--throttle", "auto", "--latency-budget", "100ms", "-O", "json")
    proc = kmigrate_background(*args, env={TUNING_ENV: json.dumps(TUNING)})
    seen: list[dict] = []
    baseline = wait_for_event(proc, lambda e: e["event"] == "throttle-baseline", timeout_s=120, seen=seen)
    assert baseline_ok(baseline)
    wait_for_event(proc, lambda e: e["event"] == "throttle-auto" and e["new_rate_bytes_per_s"] > 1_000_000,
                   timeout_s=60, seen=seen)
    cluster.pause("kafka-3")  # a target broker hangs: the canary's partitions it follows stall
    try:
        time.sleep(5)
    finally:
        cluster.resume("kafka-3")
    fell = wait_for_event(proc, lambda e: e["event"] == "throttle-auto"
                          and e["new_rate_bytes_per_s"] < e["old_rate_bytes_per_s"], timeout_s=60, seen=seen)
    assert "over budget" in fell["reason"] or "stall" in fell["reason"] or "signal" in fell["reason"], fell
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert in_flight(cluster), ("the run ended before it was killed: give it more data",
                                [(e["event"], e.get("broker"), e.get("new_rate_bytes_per_s"), e.get("reason")) for e in seen])
    # what the killed run recorded and did: each broker's last rate stands, in the brokers' configs
    # the killed run's lines, read through the same buffered reader (drain's communicate() reads the
    # pipe's descriptor and would miss the lines wait_for_event's readline already buffered)
    seen.extend(json.loads(line) for line in proc.stdout if line.startswith("{"))
    last = {r["broker"]: r["new_rate"] for r in ledger(cluster).throttle_decisions(PLAN_ID)}
    assert CANARY_TOPIC in topics(cluster)
    resumed = kmigrate_background(*args, "--resume", env={TUNING_ENV: json.dumps(TUNING)})
    after: list[dict] = []
    # moves in flight: no rest to measure; the baseline is the one the killed run measured and recorded
    again_baseline = wait_for_event(resumed, lambda e: e["event"] == "throttle-baseline", timeout_s=120, seen=after)
    assert again_baseline["samples"] == 0 and again_baseline["p99_ms"] == baseline["p99_ms"], again_baseline
    after.extend(json.loads(line) for line in resumed.stdout if line.startswith("{"))
    code = resumed.wait(timeout=240)
    assert code == 0, resumed.stderr.read()[-3000:]
    again = [e for e in after if e["event"] == "throttle-auto" and e["reason"].startswith("resumed")]
    assert again and {e["broker"]: e["new_rate_bytes_per_s"] for e in again} == {
        b: min(TUNING["max_rate"], max(TUNING["min_rate"], r)) for b, r in last.items() if b in {e["broker"] for e in again}}
    starts = [e for e in seen if e["event"] == "throttle-auto" and e["reason"].startswith("start")]
    assert {e["new_rate_bytes_per_s"] for e in starts} == {1_000_000}
    # every decision shown, in order, was recorded first (--resume takes up the last); the SIGKILL may
    # fall between one step's records and its events: those recorded, not shown, are of one step (one
    # per broker taking part, 4 here; seen in a full run: 3)
    book = ledger(cluster)
    raw = [r.value for r in book.records if r.kind == "throttle-auto" and r.plan_id == PLAN_ID]
    recorded = [(v["broker"], v["new_rate"], v["reason"]) for v in raw]
    assert book.throttle_decisions(PLAN_ID) == []  # the rates were removed at the end: a new run starts afresh
    shown_killed, shown_resumed = ([(e["broker"], e["new_rate_bytes_per_s"], e["reason"]) for e in lines
                                    if e["event"] == "throttle-auto"] for lines in (seen, after))
    assert recorded[:len(shown_killed)] == shown_killed and recorded[-len(shown_resumed):] == shown_resumed
    unshown = raw[len(shown_killed):len(raw) - len(shown_resumed)]
    assert len(unshown) <= 4 and len({v["at_s"] for v in unshown}) <= 1, unshown
    assert settled(lambda: throttles_left(cluster), []) == []
    assert in_flight(cluster) == {}
    assert sorted(tuple(p.replicas) for p in topics(cluster)["auto-data"].partitions.values()) == [(3, 4), (4, 3)]
    assert settled(lambda: CANARY_TOPIC in topics(cluster), False) is False


def test_steered_by_the_operators_own_canary_report_which_it_leaves_running(cluster, tmp_path):
    """``--canary-report FILE``: no canary of kmigrate's; the operator's ``kmigrate canary --report FILE`` (another
    process) gives the baseline and every window; that canary paused (its report goes stale) is a lost signal:
    the rate falls to the minimum; at the end that canary still runs and lost nothing."""
    report = tmp_path / "canary.json"
    bootstrap = cluster.bootstrap_servers()
    args = ("partitions", "--bootstrap-server", bootstrap, "--mapping", "3:1,4:2", "--topics", "operator-data",
            "--throttle", "auto", "--latency-budget", "100ms", "--canary-report", str(report))
    refused = kmigrate(*args)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "does not exist" in refused.stderr and "kmigrate canary" in refused.stderr
    create_topic(cluster, "operator-data", [[3, 4], [4, 3]])
    produce(cluster, "operator-data", 40_000, size=1000)  # 40 MB: 20 MB a partition, over 10 s at 1 to 2 MB/s
    canary = subprocess.Popen([sys.executable, "-m", "migrate", "canary", "--bootstrap-server", bootstrap, "--topic",
                               "operator-canary", "--rate", "50", "--replication-factor", "2", "--report", str(report),
                               "--report-interval", "1s", "--output", "json"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    tuning = {**TUNING, "max_rate": 2_000_000, "signal_timeout_s": 3}  # a hung canary: minimum 5 + 3 s later
    try:
        assert settled(lambda: report.exists(), True, timeout_s=60)
        proc = kmigrate_background(*args, "-O", "json", env={TUNING_ENV: json.dumps(tuning)})
        seen: list[dict] = []
        baseline = wait_for_event(proc, lambda e: e["event"] == "throttle-baseline", timeout_s=120, seen=seen)
        assert baseline["samples"] > 100 and str(report) in baseline["message"], baseline  # 5 s of 50 acks/s
        wait_for_event(proc, lambda e: e["event"] == "throttle-auto" and e["new_rate_bytes_per_s"] > 1_000_000,
                       timeout_s=60, seen=seen)
        canary.send_signal(signal.SIGSTOP)  # the operator's canary hangs: its report is no longer rewritten
        try:
            lost = wait_for_event(proc, lambda e: e["event"] == "throttle-auto"
                                  and e["new_rate_bytes_per_s"] < e["old_rate_bytes_per_s"], timeout_s=60, seen=seen)
        finally:
            canary.send_signal(signal.SIGCONT)
        assert lost["new_rate_bytes_per_s"] == tuning["min_rate"] and "signal" in lost["reason"], lost
        seen.extend(json.loads(line) for line in proc.stdout if line.startswith("{"))
        assert proc.wait(timeout=240) == 0, proc.stderr.read()[-3000:]
        assert CANARY_TOPIC not in topics(cluster)  # kmigrate started no canary of its own
        assert canary.poll() is None, "the operator's canary stopped with the run"
    finally:
        canary.send_signal(signal.SIGCONT)
        canary.send_signal(signal.SIGTERM)
        canary.wait(timeout=120)
    final = json.loads(report.read_text())
    assert final["final"] and final["lost"] == 0 and final["failed_sends"] == 0, final
    assert settled(lambda: throttles_left(cluster), []) == []
    assert sorted(tuple(p.replicas) for p in topics(cluster)["operator-data"].partitions.values()) == [(1, 2), (2, 1)]
