"""Issue 18: ``kmigrate demo --security sasl_ssl``: the whole migration on a SASL_SSL + SCRAM-SHA-512 sandbox.

A lean sandbox (1 ZooKeeper voter and 3 joiners, 2 old and 2 new brokers, two small topics): the demo
runs every step as kmigrate's least-privileged user (the playbook's command_config), the ZooKeeper
reconfig as ZooKeeper's super user, the canary and verify with the same client settings. It must
lose nothing, verify every record, and write no secret into its report or the files it leaves.
"""

from __future__ import annotations

import json

import pytest

from migrate.sandbox.demo import Demo
from migrate.sandbox.testing import free_ip_prefix

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

LEAN = {"zookeeper_ids": (1,), "spare_zookeeper_ids": (2, 3, 4), "broker_ids": (1, 2), "spare_broker_ids": (3, 4),
        "kafka_heap_mb": 256, "zookeeper_heap_mb": 64}
SHAPES = (
    ("orders", 4, 2, {"min.insync.replicas": "2"}, 3000),
    ("customers", 2, 2, {"cleanup.policy": "compact"}, 600),
)


def test_the_demo_on_a_sasl_ssl_sandbox_loses_nothing_and_verifies(tmp_path):
    demo = Demo(tmp_path / "demo", ip_prefix=free_ip_prefix(4), throttle="5MB/s", canary_rate=50,
                security="sasl_ssl", spec=LEAN, topic_shapes=SHAPES)
    try:
        report = demo.run()
        got = report.to_dict()
        canary = got["canary"]
        assert canary["lost"] == 0 and canary["failed_sends"] == 0, canary
        assert canary["acknowledged"] == canary["sent"] == canary["consumed"] > 0, canary
        assert got["verify"].get("ok") is True, got["verify"]
        assert report.ok, got
        assert got["partitions_moved"] >= 6, got  # orders and customers, off brokers 1 and 2
        playbook = (demo.dir / "playbook.yaml").read_text()
        assert "command_config" in playbook  # the migration ran as the least-privileged user's client config
        secrets = [v for v in demo.sandbox.security.secrets.values() if len(v) >= 8]
        assert secrets
        written = [json.dumps(got)] + [p.read_text(errors="replace") for p in demo.dir.iterdir() if p.is_file()]
        leaks = [s for s in secrets for text in written if s in text]
        assert not leaks, "a sandbox password is in the demo's report or files"
    finally:
        demo.teardown()
