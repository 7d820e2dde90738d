"""``kmigrate verify --source-bootstrap A --target-bootstrap B`` on two real clusters, with real local Spark.

Two one-broker sandboxes get the same records from two separate producers (same keys, values,
headers and timestamps; different offsets, since the target's logs start elsewhere). One SparkSession
(local[2]) for the module; the CLI runs in-process and reuses it.
"""

from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from migrate.adapters.kafka.client import TRUSTED_PRODUCER
from migrate.adapters.spark.session import SparkSettings, spark_session
from migrate.sandbox.testing import running_sandbox, unique_topic
from cluster_waits import wait_for
from cli_support import run as run_cli

pytestmark = pytest.mark.integration

# retention checked every second (a static broker setting), for the test of records expired on one side
ONE_BROKER = dict(zookeeper_ids=(1,), broker_ids=(1,), kafka_settings={"log.retention.check.interval.ms": "1000"})
MASTER = "local[2]"
BASE_TS = int(time.time() * 1000) - 3_600_000  # recent: older records would be deleted by retention


@pytest.fixture(scope="module")
def clusters():
    with running_sandbox(ONE_BROKER) as source, running_sandbox(ONE_BROKER) as target:
        yield source.bootstrap_servers(), target.bootstrap_servers()


@pytest.fixture(scope="module")
def spark(clusters):
    # small reads (at most 160,000 records, test_verify's heap test): the driver compiles with C1 only (quick_jit)
    with spark_session(SparkSettings(master=MASTER), records=200_000) as session:
        yield session


def run(capsys, *args: str) -> tuple[int, dict, str]:
    """kmigrate in-process, its stdout parsed as the JSON report (``{"text": ...}`` when it is not JSON)."""
    code, out, err = run_cli(capsys, *args)
    return code, (json.loads(out) if out.strip().startswith("{") else {"text": out}), err


def verify(capsys, clusters, *extra: str) -> tuple[int, dict, str]:
    src, tgt = clusters
    return run(capsys, "verify", "--source-bootstrap", src, "--target-bootstrap", tgt, "--master", MASTER,
               "--output", "json", *extra)


def create(bs: str, name: str, partitions: int, config: dict | None = None) -> None:
    a = AdminClient({"bootstrap.servers": bs})
    a.create_topics([NewTopic(name, partitions, 1, config=config or {})])[name].result(timeout=60)

    def led() -> bool:
        t = a.list_topics(name, timeout=10).topics.get(name)
        return t is not None and t.error is None and all(p.leader >= 0 for p in t.partitions.values())

    wait_for(led, what=f"a leader for every partition of {name}", timeout_s=60, interval_s=0.2)


def write(bs: str, topic: str, partitions: int, count: int, key_mod: int | None = None, start: int = 0,
          only_partition: int | None = None) -> None:
    """Deterministic records: the same call on two clusters writes the same content."""
    p = Producer({"bootstrap.servers": bs, **TRUSTED_PRODUCER})
    for i in range(start, start + count):
        part = i % partitions
        if only_partition is not None and part != only_partition:
            continue
        key = None if (key_mod is None and i % 7 == 0) else str(i % key_mod if key_mod else i).encode()
        value = None if (key_mod and i % 11 == 10) else f"value-{i}".encode()  # tombstones on compacted topics
        headers = [("trace", f"t{i}".encode()), ("empty", None)] if i % 4 == 0 else None
        p.produce(topic, key=key, value=value, partition=part, headers=headers, timestamp=BASE_TS + i)
    assert p.flush(60) == 0


def shift_offsets(bs: str, topic: str, partitions: int, junk: int = 5, compacted: bool = False) -> None:
    """Make the target's offsets start elsewhere than the source's: junk records deleted (delete-records),
    or on a compacted topic (where delete-records is refused) tombstones of keys never used, outside its table."""
    p = Producer({"bootstrap.servers": bs})
    for part in range(partitions):
        for j in range(junk + part):
            if compacted:
                p.produce(topic, key=b"junk-%d" % j, value=None, partition=part)
            else:
                p.produce(topic, value=b"junk", partition=part)
    p.flush(30)
    if compacted:
        return
    a = AdminClient({"bootstrap.servers": bs})
    for f in a.delete_records([TopicPartition(topic, part, junk + part) for part in range(partitions)]).values():
        f.result(timeout=30)


def same_on_both(clusters, topic: str, partitions: int, count: int, config: dict | None = None,
                 key_mod: int | None = None) -> None:
    src, tgt = clusters
    create(src, topic, partitions, config)
    create(tgt, topic, partitions, config)
    shift_offsets(tgt, topic, partitions, compacted=bool(config and config.get("cleanup.policy") == "compact"))
    write(src, topic, partitions, count, key_mod)
    write(tgt, topic, partitions, count, key_mod)


def test_same_data_from_two_producers_passes(clusters, spark, capsys):
    plain, table = unique_topic("x-plain"), unique_topic("x-table")
    same_on_both(clusters, plain, 4, 2000)
    same_on_both(clusters, table, 2, 600, {"cleanup.policy": "compact"}, key_mod=40)
    code, report, err = verify(capsys, clusters, "--topic", plain, "--topic", table)
    assert code == 0, [(x["topic"], x["partition"], x["problems"]) for x in report["partitions"] if not x["ok"]] if report.get("partitions") else err
    assert report["mode"] == "cross-cluster" and report["summary"]["partitions"] == 6
    assert report["summary"]["left_records"] == report["summary"]["right_records"] == 2000 + 36  # 36 live keys
    row = next(p for p in report["partitions"] if p["topic"] == plain and p["partition"] == 1)
    assert row["source"]["read_from"] != row["target"]["read_from"]  # offsets differ, content matches
    assert report["left"]["cluster_id"] != report["right"]["cluster_id"]


def test_one_altered_topic_fails_on_exactly_that_topic(clusters, spark, capsys):
    prefix = unique_topic("alter")
    plain, table = f"{prefix}.plain", f"{prefix}.table"
    same_on_both(clusters, plain, 3, 900)
    same_on_both(clusters, table, 2, 400, {"cleanup.policy": "compact"}, key_mod=30)
    assert verify(capsys, clusters, "--include", rf"{prefix}\..*")[0] == 0
    # the same key with a changed value, on the target's compacted topic
    p = Producer({"bootstrap.servers": clusters[1]})
    p.produce(table, key=b"7", value=b"changed", partition=1, timestamp=BASE_TS + 7)
    p.flush(30)
    code, report, err = verify(capsys, clusters, "--include", rf"{prefix}\..*")
    assert code == 1, err
    assert report["summary"]["differing_topics"] == [table]
    bad = [(x["topic"], x["partition"]) for x in report["partitions"] if not x["ok"]]
    assert bad == [(table, 1)]
    code, report, _ = run(capsys, "verify", "--source-bootstrap", clusters[0], "--target-bootstrap", clusters[1],
                          "--master", MASTER, "--include", rf"{prefix}\..*")
    assert code == 1 and f"{table}-1" in report["text"] and "DIFFERENT" in report["text"]


def test_extra_deleted_missing_records_and_a_lagging_target(clusters, spark, capsys):
    src, tgt = clusters
    prefix = unique_topic("cases")
    extra, deleted, empty, lag = (f"{prefix}.{n}" for n in ("extra", "deleted", "empty", "lag"))
    for t in (extra, deleted, lag):
        same_on_both(clusters, t, 3, 300)
    create(src, empty, 2)
    create(tgt, empty, 2)
    write(src, empty, 2, 200)
    write(tgt, empty, 2, 200, only_partition=1)  # partition 0 stays empty on the target
    write(tgt, extra, 3, 1, start=1000)  # record 1000 goes to partition 1000 % 3 == 1, on the target only
    a = AdminClient({"bootstrap.servers": tgt})
    for f in a.delete_records([TopicPartition(deleted, 2, 5 + 2 + 1)]).values():  # first real record of partition 2
        f.result(timeout=30)
    write(src, lag, 3, 6, start=5000)  # the source is ahead: 2 records per partition not yet on the target
    code, report, err = verify(capsys, clusters, "--include", rf"{prefix}\..*")
    assert code == 1, err
    bad = {(x["topic"], x["partition"]): x for x in report["partitions"] if not x["ok"]}
    assert set(bad) == {(extra, 1), (deleted, 2), (empty, 0)}, list(bad)
    assert "past the source's last one" in bad[(extra, 1)]["problems"][0]
    assert bad[(deleted, 2)]["source"]["records"] == 100 and bad[(deleted, 2)]["target"]["records"] == 99
    assert bad[(empty, 0)]["target"]["records"] == 0 and bad[(empty, 0)]["source"]["records"] == 100
    lagging = [x for x in report["partitions"] if x["topic"] == lag]
    assert all(x["ok"] and x["tail_records"] == 2 and x["tail_side"] == "source" for x in lagging)
    code, report, _ = verify(capsys, clusters, "--include", rf"{prefix}\.lag", "--fail-on-tail")
    assert code == 1 and all(not x["ok"] for x in report["partitions"])


def test_one_record_duplicated_in_the_middle_fails_unless_duplicates_are_allowed(clusters, spark, capsys):
    """Every source record is on the target, one of them twice in the middle of partition 0: a consumer
    would process it twice. Strict by default (exit 1, that partition named, counted); accepted with
    --allow-duplicates, still counted."""
    src, tgt = clusters
    topic = unique_topic("dup")
    create(src, topic, 3)
    create(tgt, topic, 3)
    write(src, topic, 3, 300)
    write(tgt, topic, 3, 150)
    write(tgt, topic, 3, 1, start=147)  # record 147 (partition 0) again, between 147 and 150
    write(tgt, topic, 3, 150, start=150)
    code, report, err = verify(capsys, clusters, "--topic", topic)
    assert code == 1, err
    bad = [(x["partition"], x["duplicate_records"], x["problems"]) for x in report["partitions"] if not x["ok"]]
    assert [(p, d) for p, d, _ in bad] == [(0, 1)], bad
    assert "1 records more than once" in bad[0][2][0] and "--allow-duplicates" in bad[0][2][0]
    assert report["summary"]["duplicate_records"] == 1 and report["summary"]["differing_records"] == 1
    code, out, err = run_cli(capsys, "verify", "--source-bootstrap", src, "--target-bootstrap", tgt, "--master", MASTER,
                             "--topic", topic, "--allow-duplicates")
    assert code == 0, err
    assert "OK" in out and "300 records verified" in out and "1 copied more than once on the target" in out, out


def test_a_topic_missing_on_the_target_is_a_difference(clusters, spark, capsys):
    only = unique_topic("only-source")
    create(clusters[0], only, 2)
    write(clusters[0], only, 2, 20)
    code, report, _ = verify(capsys, clusters, "--topic", only)
    assert code == 1 and {x["problems"][0] for x in report["partitions"]} == {"missing on the target"}


def write_aged(bs: str, topic: str, now_ms: int, changed: tuple[int, int] | None = None) -> None:
    """Per partition (2), 100 records stamped two days before ``now_ms`` then 60 stamped ``now_ms``: the first
    new record rolls the segment (segment.ms 60 s), so the old records are a closed segment of their own.
    ``changed`` (batch, i): that record gets another value."""
    p = Producer({"bootstrap.servers": bs, **TRUSTED_PRODUCER})
    for batch, (count, stamp) in enumerate(((100, now_ms - 48 * 3_600_000), (60, now_ms))):
        for i in range(count * 2):
            value = b"changed" if changed == (batch, i) else f"value-{batch}-{i}".encode()
            p.produce(topic, key=f"{batch}-{i}".encode(), value=value, partition=i % 2, timestamp=stamp + i)
        assert p.flush(60) == 0


def test_records_expired_on_the_source_only_are_reported_not_a_difference(clusters, spark, capsys):
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, OffsetSpec

    src, tgt = clusters
    expired, altered = unique_topic("expired"), unique_topic("expired-altered")
    now_ms = int(time.time() * 1000)
    for topic in (expired, altered):
        for bs in clusters:
            create(bs, topic, 2, {"retention.ms": "-1", "segment.ms": "60000"})
        shift_offsets(tgt, topic, 2)
        write_aged(src, topic, now_ms)
        write_aged(tgt, topic, now_ms, (1, 5) if topic == altered else None)  # new record 5: partition 1
    a = AdminClient({"bootstrap.servers": src})
    for topic in (expired, altered):  # the source's retention becomes one hour: its two-day-old segment goes
        resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
            ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])
        a.incremental_alter_configs([resource])[resource].result(timeout=60)
    wanted = {TopicPartition(t, p): OffsetSpec.earliest() for t in (expired, altered) for p in (0, 1)}
    wait_for(lambda: {f.result(timeout=30).offset for f in a.list_offsets(wanted, request_timeout=30).values()} == {100},
             what="retention to delete the source's old segments (earliest offset 100 everywhere)", timeout_s=180,
             interval_s=1)

    code, report, err = verify(capsys, clusters, "--topic", expired)
    assert code == 0, [x["problems"] for x in report.get("partitions", [])] or err
    for x in report["partitions"]:
        assert (x["verified_records"], x["expired_records"], x["expired_side"]) == (60, 100, "source"), x
        assert "100 older records on the target only: expired as configured on the source (retention.ms 3600000" \
            in x["notes"][0]
    assert report["summary"]["expired_records"] == 200 and report["summary"]["differing_records"] == 0

    code, report, err = verify(capsys, clusters, "--topic", altered)
    assert code == 1, err
    assert [(x["partition"], x["ok"]) for x in report["partitions"]] == [(0, True), (1, False)]
    assert "the records both hold differ" in report["partitions"][1]["problems"][0]
