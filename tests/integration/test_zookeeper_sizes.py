"""Issue 4: 3 voters -> 3 new (4,5,6) and 5 voters -> 5 new, each on a fresh ensemble with a broker.

Each case needs an ensemble of its own (a reconfig changes it for good), so each test starts a
lean sandbox: the ZooKeeper servers and one small broker. Before the swap the broker is
restarted with old and new servers in ``zookeeper.connect`` (the procedure's prerequisite);
after it, the broker is still registered and every znode is intact.
"""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from migrate.sandbox.testing import running_sandbox
from zkswap_support import addresses, broker_ids, committed, figure, run_json, seed, spec_of, tree, zk_nodes

pytestmark = pytest.mark.integration


def _swap(old: tuple[int, ...], new: tuple[int, ...], chroot: str = "", via: tuple[int, ...] | None = None,
          env: dict | None = None) -> dict:
    spec = dict(zookeeper_ids=old, spare_zookeeper_ids=new, broker_ids=(1,), kafka_heap_mb=256, chroot=chroot)
    with running_sandbox(spec) as cluster:
        old_hosts, new_hosts = addresses(zk_nodes(cluster, old)), addresses(zk_nodes(cluster, new))
        cluster.restart_broker(1, zookeeper_connect=addresses(cluster.spec.zookeepers) + chroot)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers()})
        admin.create_topics([NewTopic("sizes-topic", 3, 1)])["sizes-topic"].result(timeout=60)
        del admin
        seed(old_hosts)
        before_tree = tree(old_hosts)
        before = committed(old_hosts)
        proc, result = run_json([
            "zookeeper", "--zookeeper", addresses(zk_nodes(cluster, via or old)) + chroot,
            "--add", ",".join(spec_of(z) for z in zk_nodes(cluster, new)),
            "--remove", ",".join(map(str, old)),
            "--bootstrap-server", cluster.bootstrap_servers(),
        ], env)
        assert proc.returncode == 0, proc.stderr
        assert result["status"] == "reconfigured"
        assert result["warnings"] == [
            "brokers [1] still list servers that leave; after the change restart them with the new connect string"
        ]
        assert result["steps"][0]["from_version"] == f"{before.version:x}"
        label = f"{len(old)}->{len(new)} new ({','.join(map(str, new))})"
        figure(f"{label} reconfig answer", result["steps"][0]["answer"])
        figure(f"{label} write_stall_ms", result["write_stall_ms"])
        after = committed(new_hosts)
        assert after.voter_ids == new and after.observer_ids == ()
        assert tree(new_hosts) == before_tree
        assert broker_ids(new_hosts, chroot) == [1]
        assert result["broker_zookeeper_connect"] == new_hosts + chroot
        assert sorted(result["checks"]["voters_in_sync"]) == list(new)
        return result


def test_three_voters_to_three_new_with_the_answer_lost():
    """kmigrate's session is on server 1, which leaves; its connection drops right after the reconfig is
    sent (the testing hook makes the lost answer certain): kmigrate reconnects to the surviving and new
    members, finds the target committed, and does not send the reconfig again."""
    result = _swap((1, 2, 3), (4, 5, 6), via=(1,), env={"KMIGRATE_CRASH_AT": "drop-connection-after-reconfig-sent"})
    (step,) = result["steps"]
    assert step["answer"] == "lost-confirmed"


def test_five_voters_to_five_new_with_a_kafka_chroot():
    _swap((1, 2, 3, 4, 5), (6, 7, 8, 9, 10), chroot="/kafka")
