"""Issues 7 and 18: the whole migration under load on a SASL_SSL + SCRAM-SHA-512 sandbox, with kmigrate killed by
SIGKILL at seeded random points and resumed.

The demo's flow (sandbox, topics with data, canary, plan, verify snapshot, rolling restart, ZooKeeper
swap, partitions, verify compare, decommission) with 4 kills in ``kmigrate zookeeper`` and 7 in
``kmigrate partitions``; each killed command is run again until it finishes. The end state must
be the same as a clean run: nothing lost, nothing left behind. Every step runs as kmigrate's
least-privileged user (the playbook's command_config), the ZooKeeper reconfig as ZooKeeper's super user,
the canary and verify with the same client settings; no secret may be written into the report or the
files the demo leaves. (The secured demo had a module of its own, test_demo_security: the same flow on the
same kind of sandbox, merged here to build that sandbox once.)
"""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource
from kazoo.client import KazooClient

from migrate.adapters.kafka.bookkeeping import BookkeepingTopic
from migrate.sandbox.demo import Demo
from migrate.core.zookeeper.config import parse_config
from migrate.sandbox.testing import free_ip_prefix

# The module fixture runs the whole migration (10-20 min on two cores): more than the default per-test timeout.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(2700)]

SEED = 20261122
THROTTLE_CONFIGS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
TOPIC_THROTTLES = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    rng = random.Random(SEED)
    kills = {
        # within a run's length: a kmigrate zookeeper run lasts about 3 s, a partitions run of this
        # data (resumed or not) several seconds; a kill after the command ends lands nowhere
        "zookeeper": sorted(rng.uniform(0.5, 3.0) for _ in range(4)),
        "partitions": sorted(rng.uniform(1.5, 7.0) for _ in range(7)),
    }
    demo = Demo(tmp_path_factory.mktemp("e2e"), ip_prefix=free_ip_prefix(6), throttle="20MB/s",
                records_scale=0.5, canary_rate=100, kills=kills, security="sasl_ssl", rest_s=3)
    try:
        report = demo.run()
        yield demo, report
    finally:
        demo.teardown()


def test_no_acknowledged_record_is_lost(migrated):
    _demo, report = migrated
    canary = report.canary.to_dict()
    assert canary["lost"] == 0, canary
    assert canary["failed_sends"] == 0 and canary["errors"] == [], canary
    assert canary["acknowledged"] == canary["sent"] > 0, canary
    assert canary["consumed"] == canary["acknowledged"], canary
    print("canary over the whole migration:", {k: canary[k] for k in (
        "sent", "lost", "duplicated", "out_of_order", "produce_stall_s", "consume_stall_s", "latency_p50_ms", "latency_p99_ms",
        "latency_max_ms")})
    print("phases:", [(p.name, round(p.seconds, 1)) for p in report.phases])
    rows = [p.to_dict() for p in report.impact.phases]  # issue 31: at rest first, each step after, the whole run
    for r in rows:
        print(f"{r['name'][:60]:60} {r['seconds']:7.1f} s acks {r['acks']:6} p50 {r['latency_p50_ms']} "
              f"p99 {r['latency_p99_ms']} max {r['latency_max_ms']} ms stall {r['longest_stall_s']} s")
    names = [r["name"] for r in rows]
    assert names[0].startswith("at rest") and names[-1] == "whole run", names
    assert names[:-1] == [p.name for p in report.phases][[p.name for p in report.phases].index(names[0]):], names
    assert rows[-1]["acks"] == canary["acknowledged"], (rows[-1], canary)
    assert rows[-1]["longest_stall_s"] == max(r["longest_stall_s"] for r in rows), rows
    print("kills:", report.kills)


def test_it_ran_as_the_least_privileged_user_and_wrote_no_secret(migrated):
    demo, report = migrated
    assert report.ok, report.to_dict()
    playbook = (demo.dir / "playbook.yaml").read_text()
    assert "command_config" in playbook  # the migration ran as the least-privileged user's client config
    secrets = [v for v in demo.sandbox.security.secrets.values() if len(v) >= 8]
    assert secrets
    written = [json.dumps(report.to_dict())] + [p.read_text(errors="replace") for p in demo.dir.iterdir() if p.is_file()]
    leaks = [s for s in secrets for text in written if s in text]
    assert not leaks, "a sandbox password is in the demo's report or files"


def test_kills_happened_in_both_phases(migrated):
    _demo, report = migrated
    by_command = Counter(k["command"] for k in report.kills if k["killed"])
    assert by_command["kmigrate zookeeper"] + by_command["kmigrate partitions"] >= 6, report.kills
    assert by_command["kmigrate partitions"] >= 3, report.kills
    assert len(report.kills) == 11


def test_verify_passes(migrated):
    _demo, report = migrated
    assert report.verify.get("ok") is True, report.verify


def test_no_replica_on_an_old_broker_and_preferred_leaders(migrated):
    demo, _report = migrated
    admin = AdminClient({"bootstrap.servers": demo.spec.bootstrap_servers(spare=True), **demo.sandbox.kafka_settings("admin")})
    md = admin.list_topics(timeout=30)
    assert sorted(md.brokers) == [4, 5, 6]
    for topic in md.topics.values():
        for p in topic.partitions.values():
            assert not set(p.replicas) & {1, 2, 3}, (topic.topic, p.id, p.replicas)
            assert len(p.isrs) == len(p.replicas), (topic.topic, p.id)


def test_old_zookeeper_servers_are_out_of_the_config(migrated):
    demo, _report = migrated
    new = ",".join(f"{z.host}:{z.client_port}" for z in demo.spec.zookeepers if z.joiner)
    zk = KazooClient(hosts=new, timeout=10)
    zk.start(timeout=30)
    try:
        zk.sync("/zookeeper/config")
        servers = parse_config(zk.get("/zookeeper/config")[0].decode()).servers
        assert sorted(s.id for s in servers if s.role == "participant") == [4, 5, 6]
        assert sorted(s.id for s in servers) == [4, 5, 6]
        assert sorted(zk.get_children("/brokers/ids")) == ["4", "5", "6"]
    finally:
        zk.stop()
        zk.close()


def test_no_throttle_left_and_every_topic_recorded_once(migrated):
    demo, _report = migrated
    bootstrap = demo.spec.bootstrap_servers(spare=True)
    admin = AdminClient({"bootstrap.servers": bootstrap, **demo.sandbox.kafka_settings("admin")})
    md = admin.list_topics(timeout=30)
    for b in (4, 5, 6):
        entries = admin.describe_configs([ConfigResource(ConfigResource.Type.BROKER, str(b))])
        configs = next(iter(entries.values())).result(timeout=30)
        for name in THROTTLE_CONFIGS:
            # a per-broker dynamic config that is not set is absent from the answer
            entry = configs.get(name)
            assert entry is None or entry.source != ConfigSource.DYNAMIC_BROKER_CONFIG.value, (b, name, entry.value)
    resources = [ConfigResource(ConfigResource.Type.TOPIC, t) for t in md.topics]
    for resource, fut in admin.describe_configs(resources).items():
        configs = fut.result(timeout=30)
        for name in TOPIC_THROTTLES:
            assert name in configs and not configs[name].value, (resource.name, name, configs.get(name))
    book = BookkeepingTopic(demo.sandbox.client_settings(bootstrap, "admin"), "__kmigrate_migration")
    try:
        ledger = book.read()
    finally:
        book.close()
    plans = ledger.plans()
    assert len(plans) == 1, plans
    plan_id = next(iter(plans))
    counts = ledger.moved_counts(plan_id)
    assert counts and all(n == 1 for n in counts.values()), counts
    user_topics = {t for t in md.topics if not t.startswith("__kmigrate")}
    assert user_topics <= set(counts), sorted(user_topics - set(counts))
