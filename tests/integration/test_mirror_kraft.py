"""Leaving ZooKeeper blue/green: ``kmigrate mirror`` from a ZooKeeper-mode Kafka 3.9 cluster to a KRaft Kafka 4.4
cluster (``sandbox up --target-cluster --target-kraft``): 1 ZooKeeper and 1 broker, then 1 controller and 1 broker.

MirrorMaker 2 (the 3.9 jars kmigrate fetches) copies two topics, one with topic configs Kafka 4 removed
(``message.format.version``, ``message.downconversion.enable``, ``message.timestamp.difference.max.ms``: the
target would refuse the topic); the gated
cut-over sets the group's translated offsets on the target (nothing on the target reads ZooKeeper); a consumer of
that group on the target then reads every record it had not read on the source, plus exactly the duplicates reported.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

import migrate
from migrate.sandbox.cluster import Sandbox
from migrate.sandbox.kraft_layout import target_kraft_spec
from migrate.sandbox.layout import SandboxSpec
from migrate.sandbox.testing import free_ip_prefix
from cli_support import run_json, sides
from cluster_waits import wait_for
from test_mirror import create, produce, state_dir  # noqa: F401 (state_dir: a fixture)
from test_mirror_cutover import committed, consume_and_commit, read_from

pytestmark = pytest.mark.integration

ORDERS, LEGACY, GROUP = "kr-orders", "kr-legacy", "kr-app"
COUNTS = {ORDERS: 300, LEGACY: 20}
PARTITIONS = {ORDERS: 2, LEGACY: 1}
LEGACY_CONFIGS = {"message.format.version": "2.8", "message.downconversion.enable": "false",
                  "message.timestamp.difference.max.ms": "86400000", "retention.ms": "3600000"}


@pytest.fixture(scope="module")
def pair():
    """The sandbox of ``sandbox up --zookeepers 1 --brokers 1 --target-cluster --target-kraft``."""
    directory = Path(tempfile.mkdtemp(prefix="kmigrate-sandbox-"))
    sandbox = Sandbox(directory)
    spec = SandboxSpec(zookeeper_ids=(1,), broker_ids=(1,), zookeeper_heap_mb=64, kafka_heap_mb=256,
                       ip_prefix=free_ip_prefix(1))
    failed = True
    try:
        sandbox.up(spec)
        sandbox.up_target(target_kraft_spec(spec, 1, free_ip_prefix(1)))
        yield sandbox
        failed = False
    finally:
        sandbox.down()
        if not failed:
            shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def clusters(pair):
    env = pair.env()
    return env["KAFKA_BOOTSTRAP_SERVERS"], env["KAFKA_TARGET_BOOTSTRAP_SERVERS"]


def ends(bs: str, topic: str) -> list[int]:
    c = Consumer({"bootstrap.servers": bs, "group.id": "test-ends"})
    try:
        return [c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(PARTITIONS[topic])]
    finally:
        c.close()


@pytest.fixture(scope="module")
def mirrored(clusters, state_dir):
    src, tgt = clusters
    create(src, ORDERS, PARTITIONS[ORDERS])
    create(src, LEGACY, PARTITIONS[LEGACY], LEGACY_CONFIGS)
    for topic, count in COUNTS.items():
        produce(src, topic, PARTITIONS[topic], count)
    consume_and_commit(src, GROUP, {(ORDERS, 0): 100, (ORDERS, 1): 150, (LEGACY, 0): 5})
    # in a child process, as a user runs it (this module's fixtures have no capsys)
    root = str(Path(migrate.__file__).resolve().parents[1])
    done = subprocess.run([sys.executable, "-m", "migrate", "mirror", "start", *sides(clusters), "--topics", "kr-.*",
                           "--state-dir", str(state_dir), "--heap-mb", "256", "--tasks", "1", "--output", "json"],
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (root, os.environ.get("PYTHONPATH"))))),
                          capture_output=True, text=True, timeout=180)
    code, doc, err = done.returncode, json.loads(done.stdout or "{}"), done.stderr
    assert code == 0, err
    wait_for(lambda: all(sum(ends(tgt, t)) >= n for t, n in COUNTS.items()),
             what="MirrorMaker copying every record to the KRaft target", timeout_s=90, interval_s=0.5)
    return doc


def test_the_sandbox_pair_is_a_zookeeper_source_and_a_kraft_4_target(pair):
    env = pair.env()
    assert env["ZOOKEEPER_CONNECT"] and "TARGET_ZOOKEEPER_CONNECT" not in env
    assert env["KAFKA_TARGET_BOOTSTRAP_CONTROLLERS"].endswith(":9093")
    assert pair.target.spec.kraft and pair.target.spec.kafka_version.startswith("4.")
    assert not pair.spec.kraft


def test_mirror_start_copies_every_record_and_leaves_out_the_configs_kafka_4_removed(clusters, mirrored):
    src, tgt = clusters
    assert "message.format.version=2.8" in json.dumps(mirrored) and "(Kafka 4)" in json.dumps(mirrored)
    starts = {(t, p): 0 for t in COUNTS for p in range(PARTITIONS[t])}
    copied, original = read_from(tgt, None, starts), read_from(src, None, starts)
    assert copied == original and sum(map(len, copied.values())) == sum(COUNTS.values())
    admin = AdminClient({"bootstrap.servers": tgt})  # kept: the futures fail once the client is collected
    got = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, LEGACY)])
    configs = next(iter(got.values())).result(timeout=30)
    assert configs["retention.ms"].value == "3600000" and "message.format.version" not in configs
    # the removed timestamp bound, carried by the two that replaced it
    assert configs["message.timestamp.before.max.ms"].value == configs["message.timestamp.after.max.ms"].value == "86400000"


def test_the_cutover_switches_the_group_with_translated_offsets_and_nothing_lost(clusters, mirrored, state_dir, capsys):
    src, tgt = clusters
    code, doc, err = run_json(capsys, "mirror", "cutover", "--state-dir", str(state_dir), "--group", GROUP,
                              "--quiet-period", "2s", "--timeout", "90s", "--master", "local[2]")
    assert code == 0, err
    assert [g["gate"] for g in doc["gates"]] == ["producers-stopped", "replicated", "groups-stopped", "offsets-set",
                                                 "verified"]
    by = {(o["topic"], o["partition"]): o for o in doc["offsets"] if o["group"] == GROUP}
    on_source = committed(src, GROUP)
    assert set(by) == set(on_source) == {(ORDERS, 0), (ORDERS, 1), (LEGACY, 0)}
    left = read_from(src, None, on_source)  # what the group had not read on the source
    on_target = committed(tgt, GROUP)
    assert set(on_target) == set(on_source), (on_target, on_source)
    got = read_from(tgt, GROUP, on_target)  # what it reads on the target after the switch
    for tp, values in left.items():
        dup = by[tp]["duplicates"]
        assert got[tp][len(got[tp]) - len(values):] == values, tp  # 0 lost, in order
        assert len(got[tp]) - len(values) == dup, (tp, len(got[tp]), len(values), dup)
    unread = sum(COUNTS.values()) - (100 + 150 + 5)  # 65 records the group had not read on the source
    assert sum(len(v) for v in left.values()) == unread
    assert sum(len(v) for v in got.values()) == unread + sum(o["duplicates"] for o in by.values())
