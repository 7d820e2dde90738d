"""A reconfig that ZooKeeper commits but whose new voters then serve no client: ``kmigrate zookeeper`` ends (it
does not wait for a server forever), exits 1, and a re-run says the ensemble is not serving instead of "already
done" with a rolling restart onto it.

The fault, on a real ensemble: each new voter's client address given as a bare port (``;2181``, every address).
On one host whose servers listen on their own 127.x addresses at the same port, a server cannot rebind its client
port to every address at the reconfig, so the new voters elect a leader but answer no client.
"""

from __future__ import annotations

import time

import pytest

from zkswap_support import addresses, run_cli, zk_nodes

pytestmark = pytest.mark.integration

SANDBOX = dict(zookeeper_ids=(1, 2, 3), spare_zookeeper_ids=(4, 5, 6), broker_ids=())


def test_new_voters_that_serve_no_client_fail_the_swap_and_its_rerun(cluster):
    wildcard = ",".join(f"{z.id}={z.host}:{z.quorum_port}:{z.election_port};{z.client_port}"
                        for z in zk_nodes(cluster, (4, 5, 6)))
    args = ["zookeeper", "--zookeeper", addresses(zk_nodes(cluster, (1, 2, 3))), "--add", wildcard,
            "--remove", "1,2,3", "--post-timeout", "10"]
    started = time.monotonic()
    first = run_cli(args, timeout_s=400)
    took = time.monotonic() - started
    assert first.returncode == 1, (first.returncode, first.stdout[-2000:], first.stderr[-2000:])
    assert len(first.stderr.strip().splitlines()) == 1 and "command again" in first.stderr, first.stderr
    assert took < 240, took  # bounded: the answer-lost wait (60 s) or the post-checks (10 s each), not forever
    again = run_cli(args, timeout_s=400)
    assert again.returncode == 1, (again.returncode, again.stdout[-2000:], again.stderr[-2000:])
    assert "already done" not in again.stdout
    assert ("is committed but no leader among the new voters [4, 5, 6] answers on its client port" in again.stderr
            and "the ensemble is not serving" in again.stderr and "do not move the brokers" in again.stderr), again.stderr
