"""Issue 4: kmigrate SIGKILLed right after sending a reconfig, then run again (single and step-by-step).

One ZooKeeper-only sandbox (no broker registered: no broker check, no --bootstrap-server):
voters 1,2,3 and joiners 4..8. First 1,2,3 -> 4,5,6 in one reconfig, killed after sending it;
then 4,5,6 -> 7,8 step by step, killed after its second step; each rerun confirms and finishes.
"""

from __future__ import annotations

import signal

import pytest

from zkswap_support import (
    addresses, committed, figure, run_cli, run_json, seed, session, spec_of, tree, wait_until, zk_nodes,
)

pytestmark = pytest.mark.integration

SANDBOX = dict(zookeeper_ids=(1, 2, 3), spare_zookeeper_ids=(4, 5, 6, 7, 8), broker_ids=())
STATE: dict = {}


def _all(cluster):
    return addresses(cluster.spec.zookeepers)


def test_killed_after_sending_the_reconfig_then_rerun_confirms(cluster):
    before = committed(_all(cluster))
    seed(_all(cluster))
    before_tree = tree(_all(cluster))
    args = ["zookeeper", "--zookeeper", addresses(zk_nodes(cluster, (1, 2, 3))),
            "--add", ",".join(spec_of(z) for z in zk_nodes(cluster, (4, 5, 6))), "--remove", "1,2,3"]
    proc = run_cli(args, env={"KMIGRATE_CRASH_AT": "after-reconfig-sent"})
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stderr)

    new = addresses(zk_nodes(cluster, (4, 5, 6)))
    # the request left the socket before the kill: ZooKeeper commits it without kmigrate
    wait_until(lambda: committed(_all(cluster)).voter_ids == (4, 5, 6), 60, "the reconfig sent before the kill")
    killed_version = committed(new).version
    assert killed_version != before.version

    proc, result = run_json(args)
    assert proc.returncode == 0, proc.stderr
    assert result["status"] == "already-committed" and result["steps"] == []
    assert committed(new).version == killed_version  # not reconfigured twice
    assert result["checks"]["leader"] in (4, 5, 6)
    assert tree(new) == before_tree
    zk = session(new)
    try:
        assert not zk.exists("/kmigrate"), "the killed run's sentinel and probe znodes are cleaned up by the rerun"
    finally:
        zk.stop()
        zk.close()
    STATE["done"] = True


def test_step_by_step_killed_after_its_second_step_resumes_from_the_committed_config(cluster):
    if not STATE.get("done"):
        pytest.skip("needs the first swap")
    current = addresses(zk_nodes(cluster, (4, 5, 6)))
    before_tree = tree(current)
    start = committed(current)
    args = ["zookeeper", "--zookeeper", current, "--step-by-step",
            "--add", ",".join(spec_of(z) for z in zk_nodes(cluster, (7, 8))), "--remove", "4,5,6"]
    proc = run_cli(args, env={"KMIGRATE_CRASH_AT": "after-reconfig-sent:2"})
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stderr)
    wait_until(lambda: committed(_all(cluster)).voter_ids == (4, 5, 6, 7, 8), 60, "two steps committed")
    middle = committed(_all(cluster))
    assert middle.version != start.version

    proc, result = run_json(args)
    assert proc.returncode == 0, proc.stderr
    assert result["status"] == "reconfigured"
    # the rerun starts from the committed config: only the three removals are left, one per step
    assert sorted(s["description"] for s in result["steps"]) == ["remove 4", "remove 5", "remove 6"]
    assert result["steps"][0]["from_version"] == f"{middle.version:x}"
    figure("step-by-step 4,5,6 -> 7,8 (resumed, 3 removals) write_stall_ms", result["write_stall_ms"])
    new = addresses(zk_nodes(cluster, (7, 8)))
    after = committed(new)
    assert after.voter_ids == (7, 8) and after.observer_ids == ()
    assert tree(new) == before_tree
    zk = session(new)
    try:
        assert not zk.exists("/kmigrate")
    finally:
        zk.stop()
        zk.close()

