"""Issue 18: ``kmigrate mirror`` (MirrorMaker 2) between two SASL_SSL + SCRAM-SHA-512 clusters.

Two separate one-broker sandboxes, each with its own CA, JKS truststore and passwords, handed in as
Kafka's tools take them (``--source-command-config`` / ``--target-command-config``). The whole
cross-cluster path runs on them: create-topics, start (MirrorMaker 2 gets each side's settings in its
0600 mm2.properties), status --wait, cutover (offsets translated and set, the Spark verify reading
both secured clusters), stop. No password appears in any output, in MirrorMaker's log or state files,
or on any command line sampled while the commands ran.
"""

from __future__ import annotations

import os
import re
import stat

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from migrate.waiting import wait_until
from migrate.sandbox.testing import running_sandbox
from test_security import Runs

pytestmark = pytest.mark.integration

SANDBOX = dict(zookeeper_ids=(1,), broker_ids=(1,), security="sasl_ssl", kafka_heap_mb=256, zookeeper_heap_mb=64)
TOPIC, GROUP, RECORDS, READ_BEFORE = "orders", "billing", 3000, 1200


@pytest.fixture(scope="module")
def clusters():
    with running_sandbox(SANDBOX) as source, running_sandbox(SANDBOX) as target:
        yield source, target


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return Runs(tmp_path_factory.mktemp("mirror-secured"))


def _conf(sandbox) -> dict:
    return sandbox.client_settings(user="admin").confluent()


def _flags(source, target) -> list[str]:
    return ["--source-bootstrap", source.bootstrap_servers(),
            "--source-command-config", str(source.security.properties_file("admin")),
            "--target-bootstrap", target.bootstrap_servers(),
            "--target-command-config", str(target.security.properties_file("admin"))]


def _seed(source) -> None:
    """TOPIC with RECORDS records on the source; GROUP has read and committed READ_BEFORE of them."""
    admin = AdminClient(_conf(source))
    admin.create_topics([NewTopic(TOPIC, num_partitions=3, replication_factor=1)])[TOPIC].result()
    producer = Producer({**_conf(source), "linger.ms": 20})
    for i in range(RECORDS):
        producer.produce(TOPIC, key=str(i).encode(), value=f"value-{i}".encode())
        producer.poll(0)
    assert producer.flush(30) == 0
    consumer = Consumer({**_conf(source), "group.id": GROUP, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([TOPIC])
    read = 0
    while read < READ_BEFORE:
        msg = consumer.poll(2)
        read += msg is not None and not msg.error()
    consumer.commit(asynchronous=False)
    consumer.close()


def _committed(sandbox) -> dict[int, int]:
    consumer = Consumer({**_conf(sandbox), "group.id": GROUP, "enable.auto.commit": False})
    try:
        got = consumer.committed([TopicPartition(TOPIC, p) for p in range(3)], timeout=15)
        return {tp.partition: tp.offset for tp in got}
    finally:
        consumer.close()


def test_start_names_a_right_mirrormaker_would_lack_and_changes_nothing(clusters, runs):
    """The target's client is the least-privileged ``kmigrate`` user, denied WRITE on one topic: ``mirror
    start`` refuses before it creates the topic or starts MirrorMaker (which would fail on it later)."""
    from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
                                       ResourcePatternType, ResourceType)

    source, target = clusters
    on_source = AdminClient(_conf(source))  # kept: a client destroyed before its future is done fails it
    on_source.create_topics([NewTopic("refunds", 2, 1)])["refunds"].result()
    deny = AclBinding(ResourceType.TOPIC, "refunds", ResourcePatternType.LITERAL, "User:kmigrate", "*",
                      AclOperation.WRITE, AclPermissionType.DENY)
    admin = AdminClient(_conf(target))
    admin.create_acls([deny])[deny].result()
    state = runs.work / "refused"
    try:
        r = runs.kmigrate("mirror", "start", "--source-bootstrap", source.bootstrap_servers(),
                          "--source-command-config", str(source.security.properties_file("admin")),
                          "--target-bootstrap", target.bootstrap_servers(),
                          "--target-command-config", str(target.security.properties_file("kmigrate")),
                          "--topics", "refunds", "--state-dir", str(state))
    finally:
        admin.delete_acls([AclBindingFilter(ResourceType.TOPIC, "refunds", ResourcePatternType.LITERAL, "User:kmigrate",
                                            "*", AclOperation.WRITE, AclPermissionType.DENY)])
    assert r.returncode == 2, (r.stdout[-2000:], r.stderr[-2000:])
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    # the sandbox's client user may read topics but not describe their configs: the plan names that right
    plan = runs.kmigrate("mirror", "plan", "--source-bootstrap", source.bootstrap_servers(),
                         "--source-command-config", str(source.security.properties_file("client")),
                         *_flags(source, target)[4:], "--topics", "refunds")
    assert plan.returncode == 2 and "User:client lacks DESCRIBE_CONFIGS on topic refunds" in plan.stderr, plan.stderr
    assert "--operation DescribeConfigs --topic refunds" in plan.stderr and len(plan.stderr.strip().splitlines()) == 1
    assert len(lines) == 1 and "User:kmigrate lacks WRITE on topic refunds" in lines[0], r.stderr
    assert "MirrorMaker 2 write the copies" in lines[0] and "kafka-acls.sh" in lines[0] and "--topic refunds" in lines[0]
    assert "refunds" not in admin.list_topics(timeout=15).topics, "the topic was created before the refusal"
    assert not (state / "mm2.properties").exists() and not any(str(state) in line for line in _ps())
    # the WRITE granted again, the rights kmigrate can ask about are all there; the transactional ids of
    # MirrorMaker 2's exactly-once cannot be asked about first: start sees them refused in MirrorMaker's
    # log, stops it and says how to grant them
    r = runs.kmigrate("mirror", "start", *_flags(source, target)[:6],
                      "--target-command-config", str(target.security.properties_file("kmigrate")),
                      "--topics", "refunds", "--state-dir", str(state), "--heap-mb", "256")
    assert r.returncode == 1, (r.stdout[-2000:], r.stderr[-2000:])
    assert "TransactionalIdAuthorizationException" in r.stderr and "stopped again" in r.stderr, r.stderr
    assert "--transactional-id source-mm2 --resource-pattern-type prefixed" in r.stderr, r.stderr
    assert "--transactional-id connect-cluster-source-mm2" in r.stderr, r.stderr
    assert not any("MirrorMaker" in line and str(state) in line for line in _ps()), "MirrorMaker left running"


@pytest.fixture(scope="module")
def mirrored(clusters, runs):
    source, target = clusters
    _seed(source)
    state = runs.work / "state"
    flags = _flags(source, target)
    steps = {
        "create-topics": runs.kmigrate("mirror", "create-topics", *flags, "--topics", TOPIC),
        "start": runs.kmigrate("mirror", "start", *flags, "--topics", TOPIC, "--groups", GROUP,
                               "--state-dir", str(state), "--heap-mb", "256"),
    }
    steps["status"] = runs.kmigrate("mirror", "status", "--state-dir", str(state), "--wait", timeout_s=300)
    steps["cutover"] = runs.kmigrate("mirror", "cutover", "--state-dir", str(state), "--group", GROUP,
                                     "--master", "local[1]", "--quiet-period", "5s", timeout_s=600,
                                     env={"COLUMNS": "200"})
    steps["stop"] = runs.kmigrate("mirror", "stop", "--state-dir", str(state))
    return state, steps


def test_the_cross_cluster_migration_runs_on_two_sasl_ssl_clusters(clusters, mirrored):
    source, target = clusters
    state, steps = mirrored
    for name, r in steps.items():
        assert r.returncode == 0, (name, r.stderr[-3000:], r.stdout[-3000:])
    assert "clients may switch" in steps["cutover"].stdout
    # every record copied, and the group's position on the target is where it stopped on the source (or
    # before it: duplicates, which cutover counts)
    consumer = Consumer({**_conf(target), "group.id": "check", "enable.auto.commit": False})
    ends = [consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=15)[1] for p in range(3)]
    consumer.close()
    assert sum(ends) >= RECORDS
    on_source, on_target = _committed(source), _committed(target)
    # a partition the seed consumer never read from has no commit (-1001); only committed ones translate.
    # Offsets differ between the sides (exactly-once writes transaction markers on the target): the
    # records before the group's target offset must be the first records of the source partition (none
    # skipped), as many as or fewer than it had read there (the rest are duplicates, which cutover counts)
    committed = {p: o for p, o in on_source.items() if o >= 0}
    assert committed and sum(committed.values()) == READ_BEFORE, on_source
    duplicates = 0
    for p, offset in committed.items():
        assert on_target[p] >= 0, (on_source, on_target)
        before = _keys(target, p, below=on_target[p])
        assert 0 < len(before) <= offset and before == _keys(source, p)[:len(before)], (p, offset, len(before))
        duplicates += offset - len(before)
    assert re.search(rf"\b{duplicates}\s+duplicate\(s\)", steps["cutover"].stdout), (duplicates, steps["cutover"].stdout[-2000:])
    # nothing left running: MirrorMaker stopped
    wait_until(lambda: not any("MirrorMaker" in line and str(state) in line for line in _ps()), timeout_s=30,
               interval_s=0.5, what="MirrorMaker gone")
    props = state / "mm2.properties"  # holds both sides' passwords, as MirrorMaker needs them: owner only
    assert stat.S_IMODE(os.stat(props).st_mode) == 0o600


def _keys(sandbox, partition: int, below: int | None = None) -> list[bytes]:
    """The keys of one partition's records in offset order (only those at offsets below ``below``)."""
    consumer = Consumer({**_conf(sandbox), "group.id": "keys", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, partition), timeout=15)
        stop = high if below is None else min(below, high)
        consumer.assign([TopicPartition(TOPIC, partition, low)])
        keys: list[bytes] = []
        while True:
            pos = consumer.position([TopicPartition(TOPIC, partition)])[0].offset
            if pos >= stop:
                return keys
            msg = consumer.poll(5)
            if msg is None or msg.error():
                continue
            if msg.offset() >= stop:
                return keys
            keys.append(msg.key())
    finally:
        consumer.close()


def _ps() -> list[str]:
    import subprocess

    return subprocess.run(["ps", "-eww", "-o", "args="], capture_output=True, text=True).stdout.splitlines()


def test_no_secret_in_any_output_log_state_file_or_command_line(clusters, runs, mirrored):
    source, target = clusters
    state, _steps = mirrored
    secrets = source.security.secret_values() + target.security.secret_values()
    assert len(secrets) >= 6 and all(len(s) >= 16 for s in secrets)
    assert any("MirrorMaker" in line for line in runs.command_lines), "ps never saw MirrorMaker: sample more often"
    texts = list(runs.texts) + [(f"command line {i}", line) for i, line in enumerate(sorted(runs.command_lines))]
    texts += [(str(p), p.read_text(errors="replace")) for p in state.rglob("*") if p.is_file() and p.name != "mm2.properties"]
    hits = sorted({name for name, text in texts for secret in secrets if secret in text})
    assert hits == [], f"secrets found in: {hits}"
