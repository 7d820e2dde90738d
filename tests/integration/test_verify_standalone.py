"""The same verification on a real Spark standalone cluster (a master and two workers started from the
installed pyspark) gives the same result as ``local[*]``.

kmigrate runs as a subprocess here (one Spark driver per process: a standalone master cannot be
reached from a process that already runs a local session).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from migrate.adapters.spark.session import standalone_cluster
from migrate.sandbox.testing import free_ip_prefix, running_sandbox, unique_topic

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def kmigrate(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "migrate", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=REPO, env=os.environ.copy())


@pytest.mark.timeout(2400)  # three Spark applications and a JVM cluster on a 2-core machine
def test_standalone_cluster_gives_the_same_result_as_local(tmp_path):
    with running_sandbox(dict(zookeeper_ids=(1,), broker_ids=(1,))) as sandbox:
        bs = sandbox.bootstrap_servers()
        plain, table = unique_topic("sa-plain"), unique_topic("sa-table")
        a = AdminClient({"bootstrap.servers": bs})
        for name, parts, conf in ((plain, 6, {}), (table, 2, {"cleanup.policy": "compact"})):
            a.create_topics([NewTopic(name, parts, 1, config=conf)])[name].result(timeout=60)
        p = Producer({"bootstrap.servers": bs, "acks": "all"})
        for i in range(6000):
            p.produce(plain, key=str(i).encode(), value=b"%d" % i * 20, partition=i % 6)
            if i < 500:
                p.produce(table, key=str(i % 25).encode(), value=b"v%d" % i, partition=i % 2)
            if i % 1000 == 0:
                p.poll(0)
        assert p.flush(60) == 0

        local = tmp_path / "local.json"
        r = kmigrate("verify", "snapshot", "--bootstrap-server", bs, "-o", str(local), "--master", "local[*]",
                     "--topic", f"{plain},{table}")
        assert r.returncode == 0, r.stderr[-2000:]
        assert "log level" not in r.stderr, r.stderr  # Spark's shell banner ("Setting default log level to ...")

        host = free_ip_prefix(1) + ".1"
        with standalone_cluster(host, tmp_path / "spark", workers=2, cores=1, memory="1g") as master:
            on_cluster = tmp_path / "cluster.json"
            spark_conf = ["--spark-conf", f"spark.driver.host={host}", "--spark-conf", f"spark.driver.bindAddress={host}",
                          "--spark-conf", "spark.executor.memory=512m", "--spark-conf", "spark.executor.cores=1"]
            r = kmigrate("verify", "snapshot", "--bootstrap-server", bs, "-o", str(on_cluster), "--master", master,
                         "--topic", f"{plain},{table}", *spark_conf)
            assert r.returncode == 0, r.stderr[-2000:]
            # both workers ran executors of kmigrate's applications
            ran = [d for d in (tmp_path / "spark").glob("worker-*/app-*/*") if d.is_dir()]
            assert {d.parent.parent.name for d in ran} == {"worker-1", "worker-2"}, ran

        a_local, a_cluster = json.loads(local.read_text()), json.loads(on_cluster.read_text())
        strip = lambda s: {(x["topic"], x["partition"]): x for x in s["partitions"]}  # noqa: E731
        assert strip(a_local) == strip(a_cluster)
        # 6000 plain records; the compacted topic's table: keys 0..24 land on both partitions (i % 25, i % 2)
        assert sum(x["digest"]["records"] for x in a_cluster["partitions"]) == 6000 + 2 * 25
        assert len(a_cluster["partitions"]) == 8
