"""``kmigrate kraft rollback``'s option parsing: one line and exit 2 for bad input, before any cluster is asked."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


@pytest.mark.parametrize("args, message", [
    (["--zookeeper", "127.0.0.1:9/kafka"], "no Kafka brokers given: use --bootstrap-server"),
    (["--bootstrap-server", "127.0.0.1:9"], "no ZooKeeper given"),
    (["--zookeeper", "127.0.0.1:9", "--bootstrap-server", "127.0.0.1:9", "--timeout", "soon"], "--timeout"),
    (["--zookeeper", "127.0.0.1:9", "--bootstrap-server", "127.0.0.1:9", "--broker-list", "1,x"], "--broker-list"),
])
def test_bad_input_exits_2_naming_the_fix(args, message):
    env = {k: v for k, v in os.environ.items() if k not in ("ZOOKEEPER_CONNECT", "KAFKA_BOOTSTRAP_SERVERS")}
    r = subprocess.run([sys.executable, "-m", "migrate", "kraft", "rollback", *args], capture_output=True, text=True,
                       timeout=60, env=env)
    assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
