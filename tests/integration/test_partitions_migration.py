"""Issue 5, must show: a full ``kmigrate partitions`` run against a real cluster (3 ZooKeeper, 3 old + 3 new brokers).

22 topics (replication factor 1 to 3, 1 to 12 partitions, with data, one compacted), a producer
with ``acks=all`` writing during the whole run, a topic created by an application in the middle
of the run. Bad input is refused first, changing nothing. At the end: no replica on an old
broker, every topic recorded once, no throttle config left, leaders are the preferred replicas,
every record produced before and during the run can be read.
"""

from __future__ import annotations

import time

import pytest

from cluster_waits import settled, wait_for
from partitions_support import (
    BOOKKEEPING,
    MAPPING,
    NEW,
    OLD,
    PLAN_ID,
    BackgroundProducer,
    consume_keys,
    create_topic,
    drain,
    events,
    in_flight,
    kmigrate,
    kmigrate_background,
    leaders_not_preferred,
    ledger,
    old_assignment,
    produce,
    replicas_on,
    throttles_left,
    topics,
    under_replicated,
    wait_for_event,
)

pytestmark = pytest.mark.integration

SANDBOX = dict(zookeeper_ids=(1, 2, 3), broker_ids=OLD, spare_broker_ids=NEW)
PARTITION_COUNTS = (1, 2, 3, 4, 6, 8, 12)
N_TOPICS = 22


@pytest.fixture(scope="module")
def loaded(cluster):
    """The topics and their data, all on the old brokers."""
    names, acked = [], {}
    for i in range(N_TOPICS):
        rf = 1 + i % 3
        parts = PARTITION_COUNTS[i % len(PARTITION_COUNTS)]
        name = f"app-{i:02d}-rf{rf}-p{parts}"
        configs = {"min.insync.replicas": "2"} if rf == 3 else {}
        if i == 5:
            name = f"app-{i:02d}-compacted"
            configs = {"cleanup.policy": "compact", "min.compaction.lag.ms": "0", "segment.ms": "5000"}
        create_topic(cluster, name, old_assignment(parts, rf, shift=i), configs)
        count = 20_000 if i % 4 == 0 else 3_000  # ~2 MB or ~0.3 MB per topic
        acked[name] = produce(cluster, name, count, size=100)
        names.append(name)
    return names, acked


def test_bad_input_is_refused_with_one_line_and_changes_nothing(cluster, loaded):
    bs = cluster.bootstrap_servers()
    before = {n: sorted((p.id, tuple(p.replicas)) for p in t.partitions.values()) for n, t in topics(cluster).items()}
    cases = [
        (["--mapping", MAPPING, "--topics", "no-such-topic-.*"], "matches no topic"),
        (["--mapping", MAPPING, "--topics", "(("], "not a valid regular expression"),
        (["--mapping", "1:4,2:5,3:9"], "not alive"),  # unknown / dead target broker
        (["--mapping", MAPPING, "--throttle", "500KB/s"], "below the 1 MB/s minimum"),
        (["--mapping", MAPPING, "--throttle", "fast"], "is not a rate"),
        (["--mapping", "1:4,2"], "is not old:new"),
        ([], "no broker mapping"),
    ]
    for args, phrase in cases:
        r = kmigrate("partitions", "--bootstrap-server", bs, "--bookkeeping-topic", "__kmigrate_refused", *args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and phrase in lines[0], (args, r.stderr)
    after = {n: sorted((p.id, tuple(p.replicas)) for p in t.partitions.values()) for n, t in topics(cluster).items()}
    assert after == before
    assert "__kmigrate_refused" not in topics(cluster)
    assert throttles_left(cluster) == []


def test_dry_run_prints_the_moves_and_changes_nothing(cluster, loaded):
    names, _ = loaded
    r = kmigrate("partitions", "--bootstrap-server", cluster.bootstrap_servers(), "--mapping", MAPPING, "--dry-run", "-O", "json")
    assert r.returncode == 0, r.stderr
    evs = events(r.stdout)
    moved = {e["topic"] for e in evs if e["event"] == "would-move"}
    assert set(names) <= moved
    for e in evs:
        if e["event"] == "would-move":
            for p in e["partitions"]:
                assert not set(p["target"]) & set(OLD) and len(p["target"]) == len(p["current"])
    assert BOOKKEEPING not in topics(cluster)
    assert replicas_on(cluster, NEW, names) == []


def test_full_migration_under_load(cluster, loaded, capsys):
    names, acked = loaded
    live_topics = [names[1], names[2], names[5], names[9]]
    producer = BackgroundProducer(cluster, live_topics, rate_per_s=100).start()
    wait_for(lambda: all(len(producer.acked.get(t, ())) >= 20 for t in live_topics),
             what="the live producer's first 20 records acknowledged on each of its topics", timeout_s=60, interval_s=0.2)
    started = time.monotonic()
    proc = kmigrate_background("partitions", "--bootstrap-server", cluster.bootstrap_servers(), "--mapping", MAPPING,
                               "--throttle", "20MB/s", "-O", "json")
    seen: list[dict] = []
    # an application creates a topic in the middle of the run (replicas on old brokers) and writes to it
    wait_for_event(proc, lambda e: e["event"] == "topic-done" and not e.get("already_on_target"), seen=seen)
    late = "app-late-created"
    create_topic(cluster, late, old_assignment(3, 2))
    acked[late] = produce(cluster, late, 2000)
    code = drain(proc, seen=seen)
    elapsed = time.monotonic() - started
    producer.stop()
    assert code == 0, proc.stderr_text[-3000:]
    done = [e for e in seen if e["event"] == "done"][-1]
    with capsys.disabled():
        print(f"\n[figure] full kmigrate partitions run (22+1 topics, {done['partitions_moved']} partitions, "
              f"{done['bytes_copied']} bytes copied, throttle 20MB/s, producer live): {elapsed:.1f} s wall, "
              f"{done['seconds']} s reported")

    everything = sorted(topics(cluster))
    user_topics = [t for t in everything if t != BOOKKEEPING]
    assert late in user_topics
    # no replica on an old broker (read again while the brokers learn the last moves)
    assert settled(lambda: replicas_on(cluster, OLD), []) == []
    # every topic recorded exactly once, by this plan
    counts = ledger(cluster).moved_counts(PLAN_ID)
    assert sorted(counts) == sorted(user_topics)
    assert set(counts.values()) == {1}
    # no throttle config left, nothing in flight, everything in sync
    assert settled(lambda: throttles_left(cluster), []) == []
    assert in_flight(cluster) == {}
    assert settled(lambda: under_replicated(cluster), []) == []
    # leaders are the preferred replicas
    assert settled(lambda: leaders_not_preferred(cluster), []) == []
    # every record produced before and during the run can be read
    assert not producer.errors, producer.errors[:3]
    for t, keys in {**acked, **producer.acked}.items():
        assert keys, t
    for t in set(acked) | set(producer.acked):
        expected = acked.get(t, set()) | producer.acked.get(t, set())
        missing = expected - consume_keys(cluster, t)
        assert not missing, f"{t}: {len(missing)} acknowledged record(s) missing, e.g. {sorted(missing)[:3]}"
    # events a person or a script can follow
    kinds = {e["event"] for e in seen}
    assert {"start", "throttle-set", "submitted", "partition-done", "topic-done", "progress", "done"} <= kinds
    assert any(e["event"] == "discovered" and late in e["topics"] for e in seen) or any(
        e["event"] == "topic-done" and e["topic"] == late for e in seen)
    assert max(e["copied_bytes"] for e in seen if e["event"] == "progress") > 0


def test_status_and_rerun_after_the_migration(cluster, loaded):
    bs = cluster.bootstrap_servers()
    r = kmigrate("status", "--bootstrap-server", bs, "-O", "json")
    assert r.returncode == 0, r.stderr
    import json

    st = json.loads(r.stdout)
    assert st["state"] == "done" and st["plan_id"] == PLAN_ID
    assert st["partitions_on_old_brokers"] == 0 and st["topics_remaining"] == []
    assert st["throttles"] == [] and st["reassignments_in_flight"] == 0
    # a rerun finds nothing to do and records nothing twice
    r = kmigrate("partitions", "--bootstrap-server", bs, "--mapping", MAPPING, "--resume", "-O", "json")
    assert r.returncode == 0, r.stderr
    done = [e for e in events(r.stdout) if e["event"] == "done"][-1]
    assert done["topics_recorded_now"] == 0
    assert set(ledger(cluster).moved_counts(PLAN_ID).values()) == {1}
    r = kmigrate("status", "--bootstrap-server", bs)
    assert r.returncode == 0 and "done" in r.stdout


def test_status_without_a_plan_record_names_the_plan_of_the_records_and_says_what_it_cannot_count(cluster, loaded):
    """A ledger whose plan record is missing (lost before it was acknowledged) is not 'not started'."""
    from migrate.adapters.kafka.bookkeeping import BookkeepingTopic
    from migrate.core.ledger import make_record
    from migrate.files import client_settings
    from migrate.runner.partitions.status import migration_status

    bs = cluster.bootstrap_servers()
    book = BookkeepingTopic(client_settings(bs), "__kmigrate_no_plan_record")
    from confluent_kafka.admin import AdminClient

    assert book.ensure(AdminClient({"bootstrap.servers": bs}), NEW)
    name = loaded[0][0]
    book.append([make_record("old-plan", "topic-moved", name, time.time(), topic=name, target={"0": [NEW[0]]})])
    book.close()
    st = migration_status(client_settings(bs), "__kmigrate_no_plan_record")
    assert st["plan_id"] == "old-plan" and st["state"] == "in progress"
    assert st["topics_recorded"] == 1 and name not in st["topics_remaining"]
    assert st["warnings"] and "no plan record for old-plan" in st["warnings"][0]


def test_a_bookkeeping_topic_written_by_the_previous_version_reads_the_same(cluster):
    """Raw records as kmigrate 94e2d81 wrote them (every kind), produced to a real topic, are read
    back by this version's BookkeepingTopic and fold to the ledger the same bytes fold to in memory."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient

    from ledger_records import OLD_RECORDS
    from migrate.adapters.kafka.bookkeeping import BookkeepingTopic
    from migrate.core.ledger import Ledger, decode
    from migrate.files import client_settings

    bs = cluster.bootstrap_servers()
    name = "__kmigrate_previous_version"
    book = BookkeepingTopic(client_settings(bs), name)
    assert book.ensure(AdminClient({"bootstrap.servers": bs}), NEW)
    producer = Producer({"bootstrap.servers": bs, "acks": "all", "enable.idempotence": True,
                         "max.in.flight.requests.per.connection": 1})
    for key, value in OLD_RECORDS:
        producer.produce(name, key=key, value=value, partition=0)
    assert producer.flush(60) == 0
    read = book.read()
    expected = Ledger([decode(k, v, 0, i) for i, (k, v) in enumerate(OLD_RECORDS)])
    assert [(r.key, dict(r.value), r.partition) for r in read.records] == [
        (r.key, dict(r.value), r.partition) for r in expected.records]
    for plan_id in ("p1", "p0"):
        assert {t: dict(r.value) for t, r in read.moved(plan_id).items()} == {
            t: dict(r.value) for t, r in expected.moved(plan_id).items()}
        assert read.moved_counts(plan_id) == expected.moved_counts(plan_id)
        assert read.foreign_moved(plan_id) == expected.foreign_moved(plan_id)
        assert read.submitted(plan_id) == expected.submitted(plan_id)
    assert read.submitted() == expected.submitted() == {("orders", 0): (4, 5), ("orders", 1): (5, 6)}
    assert read.broker_throttles() == expected.broker_throttles() != {}
    assert read.topic_throttles() == expected.topic_throttles() != {}
    assert {p: dict(v) for p, v in read.plans().items()} == {p: dict(v) for p, v in expected.plans().items()}
    book.close()
