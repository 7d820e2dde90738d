"""Issue 18, must show: kmigrate on secured clusters, with the stores handed in as a Java tool takes them,
and no secret in anything the runs leave behind.

One SASL_SSL + SCRAM-SHA-512 sandbox for the module (1 ZooKeeper with digest authentication and ACLs,
brokers 1 and 2, spares 3 and 4, AclAuthorizer with no allow-everyone): ``topics create``, ``plan``,
``verify snapshot`` (local Spark), ``partitions`` killed after a submit then ``--resume``d, ``status``,
``verify compare`` and a snapshot equal to a local one (on a Spark standalone cluster of two workers), ``canary``, all as the sandbox's ``kmigrate``
user through ``--command-config`` with a JKS truststore. A smaller mTLS sandbox (1 broker and a spare,
JKS key and trust stores) runs ``topics create``, ``partitions``, ``status`` and ``verify snapshot``.

Every run is a subprocess whose stdout and stderr are kept and whose process table is sampled while it
runs (``ps``); the last test greps them, every file the runs wrote (plan, snapshots, reports, Spark's
logs) and the bookkeeping topic's raw records for the sandboxes' passwords and private keys.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from migrate.adapters.kafka.local_cluster import produce_records
from migrate.adapters.spark.session import standalone_cluster
from migrate.sandbox.testing import free_ip_prefix, running_sandbox

pytestmark = pytest.mark.integration

SANDBOX = dict(zookeeper_ids=(1,), broker_ids=(1, 2), spare_broker_ids=(3, 4), security="sasl_ssl")
REPO = Path(__file__).resolve().parents[2]
BOOKKEEPING = "__kmigrate_migration"


class Runs:
    """Every kmigrate run of the module: its output, and the command lines of every process meanwhile."""

    def __init__(self, work: Path):
        self.work = work
        self.texts: list[tuple[str, str]] = []  # (what, text)
        self.command_lines: set[str] = set()

    def _sample(self, stop: threading.Event) -> None:
        while not stop.is_set():
            ps = subprocess.run(["ps", "-eww", "-o", "args="], capture_output=True, text=True)
            self.command_lines.update(ps.stdout.splitlines())
            stop.wait(0.2)

    def kmigrate(self, *args: str, env: dict[str, str] | None = None, timeout_s: float = 600) -> subprocess.CompletedProcess:
        stop = threading.Event()
        sampler = threading.Thread(target=self._sample, args=(stop,), daemon=True)
        sampler.start()
        try:
            full_env = {k: v for k, v in os.environ.items() if k != "KMIGRATE_CRASH_AT"}
            full_env.update(env or {})
            r = subprocess.run([sys.executable, "-m", "migrate", *args], capture_output=True, text=True,
                               timeout=timeout_s, cwd=REPO, env=full_env)
        finally:
            stop.set()
            sampler.join()
        self.texts += [(f"stdout of kmigrate {args[0]}", r.stdout), (f"stderr of kmigrate {args[0]}", r.stderr)]
        return r


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return Runs(tmp_path_factory.mktemp("secured"))


def _create_topic(runs, cluster, props_file, name: str, replication_factor: int, spares: str) -> None:
    """``kmigrate topics create`` on the old brokers only (``spares`` left out)."""
    r = runs.kmigrate("topics", "create", name, "--partitions", "2", "--replication-factor", str(replication_factor),
                      "--exclude-brokers", spares, "--bootstrap-server", cluster.bootstrap_servers(),
                      "--command-config", str(props_file))
    assert r.returncode == 0, r.stderr[-2000:]


def _produce(cluster, topic: str, count: int) -> None:
    records = ((topic, b"k%d" % i, b"v%d" % i * 20) for i in range(count))
    assert produce_records(cluster.bootstrap_servers(), records, settings=cluster.kafka_settings("client")) == 0


@pytest.fixture(scope="module")
def secured(cluster, runs):
    """The cluster with its kmigrate user's files, two topics on the old brokers and data in them."""
    cc = cluster.security.properties_file("kmigrate")
    assert "ssl.truststore.type=JKS" in cc.read_text()
    for name in ("orders", "payments"):
        _create_topic(runs, cluster, cc, name, 2, "3,4")
        _produce(cluster, name, 2000)
    playbook = runs.work / "playbook.yaml"
    playbook.write_text(
        f'kafka:\n  bootstrap_servers: "{cluster.bootstrap_servers()}"\n  command_config: "{cc}"\n'
        f'zookeeper:\n  connect: "{cluster.zookeeper_connect()}"\n'
        "brokers:\n  mapping: {1: 3, 2: 4}\nmigration:\n  throttle: 30MB/s\n")
    return cc, playbook


def test_plan_and_snapshot_as_the_least_privileged_user(cluster, runs, secured):
    cc, playbook = secured
    r = runs.kmigrate("plan", "--playbook", str(playbook), "-o", str(runs.work / "plan.json"), "-O", "json")
    assert r.returncode == 0, r.stderr[-2000:]
    plan_text = (runs.work / "plan.json").read_text()
    assert '"orders"' in plan_text and '"payments"' in plan_text
    r = runs.kmigrate("verify", "snapshot", "-o", str(runs.work / "before.json"), "--bootstrap-server",
                      cluster.bootstrap_servers(), "--command-config", str(cc), "--topic", "orders,payments")
    assert r.returncode == 0, r.stderr[-2000:]
    snap = json.loads((runs.work / "before.json").read_text())
    assert sum(p["digest"]["records"] for p in snap["partitions"]) == 4000


def test_partitions_killed_after_a_submit_then_resumed_and_status(cluster, runs, secured):
    cc, playbook = secured
    plan = str(runs.work / "plan.json")
    r = runs.kmigrate("partitions", "--playbook", str(playbook), "--plan", plan, "-O", "json",
                      env={"KMIGRATE_CRASH_AT": "after-submit"})
    assert r.returncode == -9, (r.returncode, r.stderr[-2000:])
    r = runs.kmigrate("partitions", "--playbook", str(playbook), "--plan", plan, "--resume", "-O", "json")
    assert r.returncode == 0, r.stderr[-2000:]
    done = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    assert done[-1]["event"] == "done", done[-1]
    r = runs.kmigrate("status", "--bootstrap-server", cluster.bootstrap_servers(), "--command-config", str(cc),
                      "--mapping", "1:3,2:4", "-O", "json")
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout)["partitions_on_old_brokers"] == 0


def test_compare_on_a_spark_standalone_cluster_and_a_snapshot_there_equals_a_local_one(cluster, runs, secured):
    """``verify compare`` on a real Spark standalone cluster (a master and two workers from the installed pyspark) as
    the least-privileged user, against a snapshot taken on ``local[*]``, a compacted topic's table included: the
    snapshot the compare took there (``-o``) equals the local one (test_verify_standalone's check, merged here)."""
    cc, _ = secured
    r = runs.kmigrate("topics", "create", "ledger", "--partitions", "2", "--replication-factor", "2", "--config",
                      "cleanup.policy=compact", "--bootstrap-server", cluster.bootstrap_servers(), "--command-config", str(cc))
    assert r.returncode == 0, r.stderr[-2000:]
    # 500 records on 25 keys, each key on both partitions (i % 25, i % 2): the table has 2 x 25 keys
    producer = Producer({**cluster.kafka_settings("client"), "bootstrap.servers": cluster.bootstrap_servers(),
                         "acks": "all", "enable.idempotence": True})
    for i in range(500):
        producer.produce("ledger", key=str(i % 25).encode(), value=b"v%d" % i, partition=i % 2)
    assert producer.flush(60) == 0
    topics = "orders,payments,ledger"
    local = runs.work / "local.json"
    r = runs.kmigrate("verify", "snapshot", "-o", str(local), "--bootstrap-server", cluster.bootstrap_servers(spare=True),
                      "--command-config", str(cc), "--topic", topics, "--master", "local[*]")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "log level" not in r.stderr, r.stderr  # Spark's shell banner ("Setting default log level to ...")
    host = free_ip_prefix(1) + ".1"
    spark_dir = runs.work / "spark"
    spark_conf = ["--spark-conf", f"spark.driver.host={host}", "--spark-conf", f"spark.driver.bindAddress={host}",
                  "--spark-conf", "spark.executor.memory=512m", "--spark-conf", "spark.executor.cores=1",
                  # a few thousand records: the executors' C2 compiler would cost more CPU than it saves
                  "--spark-conf", "spark.executor.extraJavaOptions=-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"]
    on_cluster = runs.work / "cluster.json"
    with standalone_cluster(host, spark_dir, workers=2, cores=1, memory="1g") as master:
        # the compare writes the snapshot it took (-o): one application on the cluster, not a compare and a snapshot
        r = runs.kmigrate("verify", "compare", str(local), "--bootstrap-server", cluster.bootstrap_servers(spare=True),
                          "--command-config", str(cc), "--master", master, *spark_conf, "-o", str(on_cluster),
                          "-O", "json")
        assert r.returncode == 0, r.stderr[-2000:] + r.stdout[-2000:]
        doc = json.loads(r.stdout)
    # both workers ran executors of kmigrate's application
    ran = [d for d in spark_dir.glob("worker-*/app-*/*") if d.is_dir()]
    assert {d.parent.parent.name for d in ran} == {"worker-1", "worker-2"}, ran
    assert doc["ok"] is True and len(doc["partitions"]) == 6, doc
    assert sum(p["verified_records"] for p in doc["partitions"] if p["topic"] != "ledger") == 4000
    a_local, a_cluster = json.loads(local.read_text()), json.loads(on_cluster.read_text())
    strip = lambda s: {(x["topic"], x["partition"]): x for x in s["partitions"]}  # noqa: E731
    assert strip(a_local) == strip(a_cluster)
    assert sum(x["digest"]["records"] for x in a_cluster["partitions"]) == 4000 + 2 * 25
    assert len(a_cluster["partitions"]) == 6


def test_canary_briefly(cluster, runs, secured):
    cc, _ = secured
    report = runs.work / "canary.json"
    r = runs.kmigrate("canary", "--bootstrap-server", cluster.bootstrap_servers(), "--command-config", str(cc),
                      "--topic", "canary-secured", "--rate", "50", "--duration", "4s", "--report", str(report),
                      "--report-interval", "1s")
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(report.read_text())
    assert doc["ok"] is True and doc["lost"] == 0 and doc["acknowledged"] > 0, doc


def test_mtls_cluster_with_jks_key_and_trust_stores(runs):
    with running_sandbox(dict(zookeeper_ids=(1,), broker_ids=(1,), spare_broker_ids=(2,), security="mtls"),
                         base_dir=str(runs.work)) as mtls:
        cc = mtls.security.properties_file("kmigrate")
        assert "ssl.keystore.type=JKS" in cc.read_text()
        _create_topic(runs, mtls, cc, "mtls-orders", 1, "2")
        _produce(mtls, "mtls-orders", 500)
        r = runs.kmigrate("partitions", "--bootstrap-server", mtls.bootstrap_servers(), "--command-config", str(cc),
                          "--mapping", "1:2", "--topics", "mtls-.*", "-O", "json")
        assert r.returncode == 0, r.stderr[-2000:]
        r = runs.kmigrate("status", "--bootstrap-server", mtls.bootstrap_servers(), "--command-config", str(cc),
                          "--mapping", "1:2")
        assert r.returncode == 0, r.stderr[-2000:]
        r = runs.kmigrate("verify", "snapshot", "-o", str(runs.work / "mtls.json"), "--bootstrap-server",
                          mtls.bootstrap_servers(spare=True), "--command-config", str(cc), "--topic", "mtls-orders")
        assert r.returncode == 0, r.stderr[-2000:]
        assert sum(p["digest"]["records"] for p in json.loads((runs.work / "mtls.json").read_text())["partitions"]) == 500
        runs.texts.append(("mtls bookkeeping records", _raw_records(mtls, BOOKKEEPING)))
        runs.secrets = getattr(runs, "secrets", []) + mtls.security.secret_values()


def _raw_records(cluster, topic: str) -> str:
    """Every record of ``topic`` as bytes decoded leniently, read as the admin user."""
    c = Consumer({**cluster.kafka_settings("admin"), "bootstrap.servers": cluster.bootstrap_servers(),
                  "group.id": "kmigrate-test-raw", "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        md = c.list_topics(topic, timeout=30).topics[topic]
        c.assign([TopicPartition(topic, p, 0) for p in md.partitions])
        out, idle = [], 0
        while idle < 3:
            msg = c.poll(1.0)
            if msg is None:
                idle += 1
                continue
            if msg.error() is None:
                out.append((msg.key() or b"") + b" " + (msg.value() or b""))
        return b"\n".join(out).decode("utf-8", "replace")
    finally:
        c.close()


def test_no_secret_in_any_output_file_log_record_or_command_line(cluster, runs):
    secrets = cluster.security.secret_values() + getattr(runs, "secrets", [])
    assert len(secrets) >= 6 and all(len(s) >= 16 for s in secrets)
    # the needles are the real ones: the kmigrate user's file, as the runs were given it, holds its password
    assert cluster.security.password("kmigrate") in cluster.security.properties_file("kmigrate").read_text()
    texts = list(runs.texts)
    texts.append(("sasl_ssl bookkeeping records", _raw_records(cluster, BOOKKEEPING)))
    assert "mapping" in texts[-1][1]  # the records were read
    texts += [(f"command line: {line[:80]}", line) for line in runs.command_lines]
    assert any("org.apache.spark" in line for line in runs.command_lines), "ps saw no Spark JVM: sample more often"
    for path in runs.work.rglob("*"):
        if path.is_file() and "kmigrate-sandbox-" not in str(path):  # the mtls sandbox's own files hold its secrets
            texts.append((str(path.relative_to(runs.work)), path.read_bytes().decode("utf-8", "replace")))
    assert any(name.startswith("spark/") for name, _ in texts), "no Spark log was read"
    hits = [(name, i) for name, text in texts for i, secret in enumerate(secrets) if secret in text]
    assert hits == [], f"secrets found in: {sorted({name for name, _ in hits})}"
