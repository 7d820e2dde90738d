"""Issue 30, the first "must show": ``kmigrate demo --kraft-cluster`` moves a whole Kafka 4.4.0 KRaft cluster
(controllers 3000 to 3001 at the suite's size, the leader among the removed; brokers 1-2 to 3-4) to new machines under the
canary, each kmigrate step a process of its own, at a small scale (``--scale 0.1``).

The demo runs once, as an operator runs it (the command, ``--output json``); the tests read its report: exit 0, the
voters the new controllers, the old nodes stopped, no stale broker registration, verify clean against the snapshot
taken before the first change, the canary 0 lost, group offsets and topic configs the same after as before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from migrate.sandbox.testing import free_ip_prefix

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]

# the suite's size (the demo's default is 3 + 3 of each): 1 controller to 1 new one (still the leader among the
# removed), 2 brokers to 2 new ones: 6 JVMs instead of 12 (the full size took 345 s in a full run, under load)
OLD_CONTROLLERS, NEW_CONTROLLERS = [3000], [3001]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    work = tmp_path_factory.mktemp("demo-kraft-cluster")
    proc = subprocess.run([sys.executable, "-m", "migrate", "demo", "--kraft-cluster", "--scale", "0.1", "--controllers", "1", "--brokers", "2",
                           "--ip-prefix", free_ip_prefix(6), "--dir", str(work), "--output", "json"],
                          capture_output=True, text=True, timeout=1140, env=os.environ.copy())
    doc = json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else None
    assert doc is not None, f"exit {proc.returncode}, no report: {proc.stderr[-2000:]}"
    doc["_exit"] = proc.returncode
    print("demo --kraft-cluster:", json.dumps({"phases": [(p["name"], p["seconds"], (p.get("canary") or {}).get(
        "latency_p99_ms")) for p in doc["phases"]], "longest_stall_s": doc["longest_stall_s"],
        "lost": (doc["canary"] or {}).get("lost")}))
    return doc


def test_the_demo_exits_0_with_nothing_failed(report):
    assert report["failed"] == [] and report["ok"] is True and report["_exit"] == 0, (report["failed"], report["phases"])


def test_the_voters_are_the_new_controllers_the_old_leader_among_the_removed(report):
    assert sorted(report["voters_after"]) == NEW_CONTROLLERS, report["voters_after"]
    assert report["leader_before"] in OLD_CONTROLLERS
    done = report["controllers"]
    assert done["event"] == "done" and sorted(done["voters_after"]) == NEW_CONTROLLERS and done["leader_after"] in NEW_CONTROLLERS
    assert sorted(s["controller"] for s in done["steps"] if s["step"] == "stop") == OLD_CONTROLLERS, done["steps"]


def test_the_old_nodes_are_stopped_and_no_stale_registration_is_left(report):
    assert report["old_nodes_running"] == []
    assert sorted(report["registrations_after"]) == ["3", "4"], report["registrations_after"]
    assert report["no_stale_registration"] is True
    assert sorted(report["unregister"]["unregistered"]) == [1, 2] and report["unregister"]["registered_after"] == []


def test_verify_is_clean_and_the_state_the_same(report):
    assert report["verify"].get("ok") is True, report["verify"].get("summary")
    state = report["state"]
    assert state["compared"] and state["same"], state["differences"]
    before = state["before"]
    assert before["configs"]["customers"]["cleanup.policy"] == "compact"
    assert before["configs"]["orders"]["min.insync.replicas"] == "2"
    assert all(before["offsets"][g] for g in ("demo-billing", "demo-payments-audit")), before["offsets"]
    assert report["partitions_moved"] > 0


def test_the_canary_lost_nothing_and_each_phase_has_its_time(report):
    canary = report["canary"]
    assert canary["lost"] == 0 and canary["failed_sends"] == 0, canary
    assert canary["acknowledged"] == canary["sent"] == canary["consumed"] > 0, canary
    assert report["longest_stall_s"] is not None
    assert all(p["seconds"] >= 0 for p in report["phases"])
    assert any((p.get("canary") or {}).get("latency_p99_ms") is not None for p in report["phases"]), report["phases"]
