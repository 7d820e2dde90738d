"""Issue 4, the card's case against a real ensemble: voters 1,2,3 -> 4,5 with brokers registered.

One sandbox for the module (3 voters, joiners 4 and 5, two brokers); the tests run in order:
joiner configs, refusals while the brokers would lose ZooKeeper, the dry run, the swap itself
(kmigrate's session on server 1, which is removed: the lost-answer case), then the rerun.
"""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from zkswap_support import (
    addresses,
    broker_ids,
    committed,
    figure,
    run_cli,
    run_json,
    seed,
    spec_of,
    tree,
    zk_nodes,
)

pytestmark = pytest.mark.integration

SANDBOX = dict(zookeeper_ids=(1, 2, 3), spare_zookeeper_ids=(4, 5), broker_ids=(1, 2), kafka_heap_mb=256)
STATE: dict = {}


def _old(cluster):
    return addresses(zk_nodes(cluster, (1, 2, 3)))


def _new(cluster):
    return addresses(zk_nodes(cluster, (4, 5)))


def _add(cluster) -> str:
    return ",".join(spec_of(z) for z in zk_nodes(cluster, (4, 5)))


def test_joiner_config_lists_every_joiner_as_observer(cluster):
    for joiner in (4, 5):
        proc = run_cli(["zookeeper", "joiner-config", str(joiner), "--zookeeper", _old(cluster), "--add", _add(cluster)])
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.strip().splitlines()
        z = {n.id: n for n in cluster.spec.zookeepers}
        assert lines == [
            f"server.{i}={z[i].host}:2888:3888:{'participant' if i <= 3 else 'observer'};{z[i].host}:2181"
            for i in (1, 2, 3, 4, 5)
        ]
    # the same with the joiners given one per --add option
    a, b = (spec_of(z) for z in zk_nodes(cluster, (4, 5)))
    proc = run_cli(["zookeeper", "joiner-config", "5", "--zookeeper", _old(cluster), "--add", a, "--add", b])
    assert proc.returncode == 0 and proc.stdout.count("observer") == 2


def test_refused_while_brokers_point_only_at_servers_that_leave(cluster):
    before = committed(_old(cluster))
    base = ["zookeeper", "--zookeeper", _old(cluster), "--add", _add(cluster), "--remove", "1,2,3"]
    proc = run_cli(base)
    assert proc.returncode == 2
    assert "--bootstrap-server" in proc.stderr and "brokers are registered" in proc.stderr
    proc = run_cli([*base, "--bootstrap-server", cluster.bootstrap_servers()])
    assert proc.returncode == 2, proc.stdout
    assert "brokers 1, 2 would point only at servers that leave" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    after = committed(_old(cluster))
    assert after.version == before.version and after.voter_ids == (1, 2, 3)


def test_swap_3_voters_to_4_5_with_the_answer_lost(cluster):
    # the procedure's step before the swap: brokers restarted with old and new servers
    both = addresses(zk_nodes(cluster, (1, 2, 3, 4, 5)))
    for b in (1, 2):  # not one at a time as in production: this test is about the connect string only
        cluster.restart_broker(b, zookeeper_connect=both, wait=False)
    cluster.wait_brokers(["kafka-1", "kafka-2"], timeout_s=180)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers()})
    admin.create_topics([NewTopic("zk-swap-topic", 4, 2)])["zk-swap-topic"].result(timeout=60)
    del admin
    seed(_old(cluster))
    before_tree = tree(_old(cluster))
    before = committed(_old(cluster))

    # dry run first: the exact zkCli reconfig, nothing changed
    server1 = addresses(zk_nodes(cluster, (1,)))
    base = ["zookeeper", "--zookeeper", server1, "--add", _add(cluster), "--remove", "1,2,3",
            "--bootstrap-server", cluster.bootstrap_servers()]
    proc = run_cli([*base, "--dry-run"])
    assert proc.returncode == 0, proc.stderr
    z4, z5 = zk_nodes(cluster, (4, 5))
    expected = (
        f"zkCli.sh -server {server1} reconfig -v {before.version:x} -remove 1,2,3 -add "
        f"'server.4={z4.host}:2888:3888:participant;{z4.host}:2181,server.5={z5.host}:2888:3888:participant;{z5.host}:2181'"
    )
    assert expected in proc.stdout
    assert committed(_old(cluster)).version == before.version

    # the swap; kmigrate's only server (1) is removed by the reconfig
    proc, result = run_json(base)
    assert proc.returncode == 0, proc.stderr
    assert result["status"] == "reconfigured"
    assert any("2 voters, which tolerate no failure" in w for w in result["warnings"])
    (step,) = result["steps"]
    assert step["answer"] in ("received", "lost-confirmed")
    assert step["from_version"] == f"{before.version:x}"
    STATE["answer"] = step["answer"]
    figure("card 3->2 (add 4,5 remove 1,2,3) reconfig answer", step["answer"])
    figure("card 3->2 (add 4,5 remove 1,2,3) write_stall_ms", result["write_stall_ms"])
    assert result["write_probe"]["writes_ok"] > 0

    # the truth, read from the new voters
    after = committed(_new(cluster))
    assert after.voter_ids == (4, 5) and after.observer_ids == ()
    assert all(after.get(i) is None for i in (1, 2, 3))
    assert result["version_after"] == f"{after.version:x}"
    assert result["checks"]["leader"] in (4, 5) and result["checks"]["sentinel_unchanged"] is True
    assert result["checks"]["voters_in_sync"] == [4, 5]
    after_tree = tree(_new(cluster))
    assert after_tree == before_tree  # every znode intact, data byte for byte
    assert broker_ids(_new(cluster)) == [1, 2]
    assert result["broker_zookeeper_connect"] == _new(cluster)
    assert any(f"zookeeper.connect={_new(cluster)}" in s for s in result["next_steps"])
    assert result["decommission"] and all(f"server {i}" in " ".join(result["decommission"]) for i in (1, 2, 3))
    STATE["version"] = after.version


def test_rerun_says_done_and_sends_nothing(cluster):
    if "version" not in STATE:
        pytest.skip("needs the swap")
    proc = run_cli(["zookeeper", "--zookeeper", _new(cluster), "--add", _add(cluster), "--remove", "1,2,3",
                    "--bootstrap-server", cluster.bootstrap_servers()])
    assert proc.returncode == 0, proc.stderr
    assert "already done" in proc.stdout
    assert committed(_new(cluster)).version == STATE["version"]
    assert broker_ids(_new(cluster)) == [1, 2]
