"""``kmigrate mirror cutover`` on two real clusters with a real MirrorMaker 2 and a real Spark verify.

Two sandboxes of 1 ZooKeeper and 1 broker. The source has an orders topic, a compacted one, one
written with transactions (a committed and an aborted one) and one a live producer writes to; group
``near`` committed at the end of some partitions and part-way through orders, group ``far`` far
behind (MirrorMaker's own translation re-reads records there; kmigrate's by content does not), and
group ``exact`` committed part-way on every partition it reads (one at 0, one at the end, one inside
a transaction, one in the compacted topic). In order: a group active on the target is refused (exit
2, nothing changed); producers still writing fail the first gate (exit 1, the partition named); the
producer stops; cutover is killed at two seeded points (after the first group's offsets, after the
verify) and run again, and no offset on the target ever moves backwards; consumers started on the
target from the translated offsets read every record they had not read, and exactly the duplicates
reported; each group's target offsets point at the copies of the records it reads next on the
source (0 re-read). ``mirror verify`` proves the copy while MirrorMaker runs and producers write (a rerun
proves only what is new), so the cut-over verifies only the tail, without Spark; a record written
straight to the target is named at the switch; the Python hashes of that tail equal Spark's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

from migrate.adapters.kafka.bookkeeping import BookkeepingTopic
from migrate.core.clientconfig import ClientSettings
from migrate.core.ledger import MIRROR_TOPIC
from migrate.runner.mirror.clusters import Request, Side
from migrate.runner.mirror.mm2 import MirrorMaker2
from migrate.sandbox.testing import running_sandbox
from cli_support import run, run_json
from cluster_waits import wait_for
from test_mirror import create, produce, produce_transactions, state_dir  # noqa: F401 (state_dir: a fixture)

pytestmark = pytest.mark.integration

SMALL = dict(zookeeper_ids=(1,), broker_ids=(1,), zookeeper_heap_mb=64, kafka_heap_mb=256)
ORDERS, TABLE, TX, LIVE = "c-orders", "c-table", "c-tx", "c-live"
# seven more small topics, each with configs of its own, make the "10+ topics"
SMALL_TOPICS = {f"c-small-{i}": {"retention.ms": str(86_400_000 * (i + 1)), "max.message.bytes": str(100_000 + i),
                                 **({"cleanup.policy": "compact,delete"} if i % 3 == 0 else {})} for i in range(7)}
PARTITIONS = {ORDERS: 2, TABLE: 1, TX: 1, LIVE: 1, **{t: 1 + i % 2 for i, t in enumerate(SMALL_TOPICS)}}
EXACT = "exact"
GROUPS = ("near", "far", EXACT)
MASTER = "local[2]"
QUIET = ("--quiet-period", "2s")


@pytest.fixture(scope="module")
def clusters():
    with running_sandbox(SMALL) as source, running_sandbox(SMALL) as target:
        yield source.bootstrap_servers(), target.bootstrap_servers()


def consume_and_commit(bs: str, group: str, upto: dict[tuple[str, int], int]) -> None:
    """``group`` reads each partition up to an offset and commits it (then leaves)."""
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False,
                  "isolation.level": "read_committed"})
    c.assign([TopicPartition(t, p, 0) for t, p in upto])
    c.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in upto.items()], asynchronous=False)
    c.close()


def ends(bs: str, topic: str) -> list[int]:
    c = Consumer({"bootstrap.servers": bs, "group.id": "test-ends", "isolation.level": "read_committed"})
    try:
        return [c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(PARTITIONS[topic])]
    finally:
        c.close()


def committed(bs: str, group: str) -> dict[tuple[str, int], int]:
    a = AdminClient({"bootstrap.servers": bs})
    from confluent_kafka import ConsumerGroupTopicPartitions

    got = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(timeout=30)
    return {(tp.topic, tp.partition): tp.offset for tp in got.topic_partitions if tp.offset >= 0}


def read_from(bs: str, group: str | None, starts: dict[tuple[str, int], int]) -> dict[tuple[str, int], list[bytes]]:
    """Every committed record value from each start (or, with a group, its committed offset) to the end."""
    c = Consumer({"bootstrap.servers": bs, "group.id": group or "test-reader", "enable.auto.commit": False,
                  "isolation.level": "read_committed", "enable.partition.eof": True, "auto.offset.reset": "earliest"})
    out: dict[tuple[str, int], list[bytes]] = {tp: [] for tp in starts}
    try:
        c.assign([TopicPartition(t, p, o) for (t, p), o in starts.items()])
        todo = set(starts)
        deadline = time.monotonic() + 60
        while todo and time.monotonic() < deadline:
            for m in c.consume(500, timeout=1.0):
                tp = (m.topic(), m.partition())
                if m.error():
                    if m.error().code() == -191:
                        todo.discard(tp)
                    continue
                out[tp].append(m.value())
        assert not todo, f"not read to the end: {todo}"
    finally:
        c.close()
    return out


@pytest.fixture(scope="module")
def source(clusters):
    src, _ = clusters
    for t, n in PARTITIONS.items():
        create(src, t, n, {"cleanup.policy": "compact"} if t == TABLE else SMALL_TOPICS.get(t))
    for t in SMALL_TOPICS:
        produce(src, t, PARTITIONS[t], 20, key_mod=7)
    produce(src, ORDERS, 2, 600)
    produce(src, TABLE, 1, 150, key_mod=40)
    produce_transactions(src, TX, 1)
    produce(src, LIVE, 1, 50)
    o, tb, tx = ends(src, ORDERS), ends(src, TABLE), ends(src, TX)
    consume_and_commit(src, "near", {(ORDERS, 0): o[0] - 30, (ORDERS, 1): o[1], (TABLE, 0): tb[0], (TX, 0): tx[0]})
    consume_and_commit(src, "far", {(ORDERS, 0): 12, (ORDERS, 1): 40, (TABLE, 0): 7})
    small = ends(src, "c-small-1")
    consume_and_commit(src, EXACT, {(ORDERS, 0): 0, (ORDERS, 1): 137, (TABLE, 0): 61, (TX, 0): 50,
                                    ("c-small-1", 0): small[0], ("c-small-1", 1): 4, ("c-small-2", 0): 9})
    return src


class LiveProducer:
    def __init__(self, bs: str):
        self.stop_event = threading.Event()
        self.sent = 0
        self.producer = Producer({"bootstrap.servers": bs, "linger.ms": 5})
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self) -> None:
        while not self.stop_event.is_set():
            self.producer.produce(LIVE, value=f"live-{self.sent}".encode(), partition=0)
            self.sent += 1
            self.producer.poll(0)
            time.sleep(0.05)

    def stop(self) -> float:
        self.stop_event.set()
        self.thread.join(10)
        assert self.producer.flush(30) == 0
        return time.monotonic()


@pytest.fixture(scope="module")
def mirror(clusters, source, state_dir):
    src, tgt = clusters
    live = LiveProducer(src)
    MirrorMaker2().start(Request(Side(src), Side(tgt, role="target"), "c-.*"), state_dir, heap_mb=256)
    wait_for(lambda: sum(ends(tgt, ORDERS)) >= 600, what=f"MirrorMaker copying the bulk of {ORDERS} (600 records; "
             "EOS adds markers)", timeout_s=120, interval_s=0.5)
    assert sum(ends(tgt, ORDERS)) >= 600
    return live


def cutover_args(clusters, state_dir, *extra: str) -> list[str]:
    return ["mirror", "cutover", "--state-dir", str(state_dir), *(a for g in GROUPS for a in ("--group", g)),
            *QUIET, "--timeout", "90s", "--master", MASTER, *extra]


def subprocess_cutover(clusters, state_dir, crash_at: str) -> int:
    env = dict(os.environ, KMIGRATE_CRASH_AT=crash_at)
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "migrate", *cutover_args(clusters, state_dir)], env=env,
                          capture_output=True, text=True, timeout=240)
    print(f"\n{crash_at}: exit {done.returncode} after {time.monotonic() - began:.1f} s\n{done.stdout}{done.stderr}", file=sys.__stderr__)
    return done.returncode


def target_offsets(tgt: str) -> dict[tuple[str, str, int], int]:
    return {(g, *tp): o for g in GROUPS for tp, o in committed(tgt, g).items()}


def no_step_back(before: dict, after: dict) -> None:
    back = {k: (before[k], after.get(k)) for k in before if after.get(k, -1) < before[k]}
    assert not back, f"offsets moved backwards on the target: {back}"


def test_a_group_active_on_the_target_is_refused_and_nothing_changes(clusters, mirror, state_dir, capsys):
    _, tgt = clusters
    c = Consumer({"bootstrap.servers": tgt, "group.id": "far", "enable.auto.commit": False})
    c.subscribe([ORDERS])

    def joined():
        c.poll(0.5)
        return c.assignment()

    wait_for(joined, what="the group far's consumer assigned its partitions on the target", timeout_s=30, interval_s=0)
    try:
        before = committed(tgt, "far")
        code, _out, err = run(capsys, *cutover_args(clusters, state_dir))
        after = committed(tgt, "far")  # read while the group is active: MirrorMaker's sync cannot write either
    finally:
        c.close()
    assert code == 2, err
    assert "far is active on the target" in err and len(err.strip().splitlines()) == 1
    assert after == before
    assert cutover_records(tgt) == []  # mirror start's records only


def cutover_records(tgt: str) -> list[dict]:
    """The cut-over's bookkeeping records on the target (gates passed, offsets set)."""
    book = BookkeepingTopic(ClientSettings(tgt), MIRROR_TOPIC)
    return [r.value for r in book.read().records if r.kind in ("mirror-gate", "mirror-offsets")]


def test_producers_still_writing_fail_the_first_gate_naming_the_partition(clusters, mirror, state_dir, capsys):
    code, _out, err = run(capsys, *cutover_args(clusters, state_dir)[:-4], "--timeout", "5s")
    assert code == 1, err
    assert "producers still write" in err and f"{LIVE}-0" in err
    assert cutover_records(clusters[1]) == []


def test_mirror_verify_proves_the_copy_while_producers_write_and_reads_nothing_proven_again(clusters, mirror, state_dir,
                                                                                            capsys):
    src, _tgt = clusters
    code, first, err = run_json(capsys, "mirror", "verify", "--state-dir", str(state_dir))
    assert code == 0 and first["ok"], err
    parts = {(p["topic"], p["partition"]): p for p in first["partitions"]}
    # compacted topics are compared whole at the switch; every plain partition copied so far is proven
    assert TABLE in first["compacted_topics"] and (TABLE, 0) not in parts
    assert parts[(ORDERS, 0)]["proven"] > 0 and parts[(ORDERS, 1)]["proven"] > 0 and parts[(TX, 0)]["proven"] <= 100
    assert all(p["problem"] is None and p["dropped"] is None for p in parts.values())
    produce(src, ORDERS, 2, 200, start=600)  # more records while the live producer writes on
    code, second, err = run_json(capsys, "mirror", "verify", "--state-dir", str(state_dir))
    assert code == 0 and second["ok"], err
    for p in second["partitions"]:  # a rerun proves only the records after the proof: the proven ones count once
        before = parts[(p["topic"], p["partition"])]["proven"]
        assert p["proved_now"] == p["proven"] - before and p["proven"] >= before, (p, before)
    code, third, err = run_json(capsys, "mirror", "verify", "--state-dir", str(state_dir), "--follow",
                                "--interval", "1s", "--timeout", "6s")
    assert code == 0 and third["ok"] and third["passes"] >= 2, err
    assert third["proven"] >= second["proven"] > first["proven"]
    produce(src, ORDERS, 2, 100, start=800)  # the tail: written after the last proof, verified at the switch
    print(f"\nmirror verify: {first['proven']} records proven in {first['seconds']} s, then {second['proven']} "
          f"({second['proved_now']} new) in {second['seconds']} s", file=sys.__stderr__)


def test_killed_at_seeded_points_then_run_again_converges_without_moving_offsets_back(clusters, mirror, state_dir, capsys):
    src, tgt = clusters
    stopped = mirror.stop()
    seen = target_offsets(tgt)
    for point in ("cutover-offsets-written:1", "cutover-verified"):
        assert subprocess_cutover(clusters, state_dir, point) == -9, point
        now = target_offsets(tgt)
        no_step_back(seen, now)
        seen = now
    code, doc, err = run_json(capsys, *cutover_args(clusters, state_dir))
    window = time.monotonic() - stopped
    assert code == 0, err
    no_step_back(seen, target_offsets(tgt))
    gates = {g["gate"]: g for g in doc["gates"]}
    assert list(gates) == ["producers-stopped", "replicated", "groups-stopped", "offsets-set", "verified"]
    assert gates["producers-stopped"]["how"] == "bookkeeping" and gates["verified"]["how"] == "bookkeeping"
    assert all(w["action"] in ("already", "kept") for w in doc["writes"]), doc["writes"]
    print(f"\ncut-over window with two kills and re-runs: {window:.1f} s (last run {doc['seconds']} s)", file=sys.__stderr__)
    # the verify at the switch: only the tail after mirror verify's proofs (recorded by the run killed after it)
    assert doc["verify"]["how"] == "bookkeeping" and doc["verify"]["proven_before"] > 0, doc["verify"]
    assert doc["verify"]["at_switch"] >= 100, doc["verify"]  # the tail written after the last proof, at least
    by = {(o["group"], o["topic"], o["partition"]): o for o in doc["offsets"]}
    assert by[("near", TX, 0)]["duplicates"] == 0  # at the end, past the aborted transaction's marker
    # far behind: MirrorMaker's few offset-syncs give an earlier offset; content finds the exact one
    far = by[("far", ORDERS, 0)]
    assert far["duplicates"] == 0 and far["how"] == "content", far
    assert far["mirrormaker"]["target_offset"] < far["target_offset"], far
    # consumers started on the target from the translated offsets: none skipped, duplicates as reported
    for group in GROUPS:
        on_source = committed(src, group)
        expected = read_from(src, None, on_source)
        got = read_from(tgt, group, {tp: committed(tgt, group)[tp] for tp in on_source})
        for tp, values in expected.items():
            dup = by[(group, *tp)]["duplicates"]
            assert got[tp][len(got[tp]) - len(values):] == values, (group, tp)
            assert len(got[tp]) - len(values) == dup, (group, tp, len(got[tp]), len(values), dup)


def next_record(bs: str, topic: str, partition: int, offset: int) -> tuple | None:
    """The first committed record at or after ``offset``: (key, value, headers, timestamp); None at the end."""
    c = Consumer({"bootstrap.servers": bs, "group.id": "test-next", "enable.auto.commit": False,
                  "isolation.level": "read_committed", "enable.partition.eof": True})
    try:
        c.assign([TopicPartition(topic, partition, offset)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:
                    return None
                continue
            return m.key(), m.value(), m.headers(), m.timestamp()[1]
        raise AssertionError(f"{topic}-{partition} not read from {offset}")
    finally:
        c.close()


def test_a_group_committed_part_way_on_every_partition_resumes_on_its_next_record(clusters, mirror, state_dir, capsys):
    """At the switch the copy is complete: each partition's target offset is the copy of the record the
    group reads next on the source (content equal), and no record is read twice."""
    src, tgt = clusters
    code, doc, err = run_json(capsys, *cutover_args(clusters, state_dir))
    assert code == 0, err
    mine = {(o["topic"], o["partition"]): o for o in doc["offsets"] if o["group"] == EXACT}
    on_source = committed(src, EXACT)
    assert set(mine) == set(on_source) and len(mine) == 7
    rereads = {tp: o["duplicates"] for tp, o in mine.items()}
    print(f"\ngroup {EXACT}: re-reads per partition {rereads}, total {sum(rereads.values())}", file=sys.__stderr__)
    assert sum(rereads.values()) == 0, rereads
    on_target = committed(tgt, EXACT)
    for (topic, partition), offset in sorted(on_source.items()):
        expected = next_record(src, topic, partition, offset)
        assert next_record(tgt, topic, partition, on_target[(topic, partition)]) == expected, (topic, partition)
        assert (expected is None) == (mine[(topic, partition)]["how"] == "end"), mine[(topic, partition)]
    assert mine[(ORDERS, 1)]["how"] == "content" and mine[(TX, 0)]["how"] == "content"
    groups = {g["group"]: g for g in doc["groups"]}
    assert groups[EXACT]["rereads"] == 0 and groups[EXACT]["partitions"] == 7
    assert all(g["rereads"] == 0 for g in groups.values()), groups
    code, out, err = run(capsys, *cutover_args(clusters, state_dir))
    assert code == 0, err
    assert f"group {EXACT}: 0 record(s) read twice on the target" in out
    assert "proven before the switch (mirror verify)" in out and "at the switch (from the bookkeeping)" in out


def test_status_after_the_cutover_reads_the_bookkeeping_and_counts_the_same_duplicates(clusters, mirror, state_dir, capsys):
    src, tgt = clusters
    code, doc, err = run_json(capsys, "mirror", "status", "--state-dir", str(state_dir))
    assert code == 0, err
    history = doc["bookkeeping"]
    # offsets kmigrate wrote itself (MirrorMaker's group sync may have set some groups to the same values)
    assert history["stage"] == "cut over: clients may switch" and "near" in history["offsets_set"]
    assert set(history["topics_created"]) == set(PARTITIONS) and history["mirrormaker"]["step"] == "mirrormaker-started"
    assert all(p["lag"] == 0 and p["time_lag_s"] == 0 for p in doc["partitions"])
    # the target's topics: the same partitions, and the configs kmigrate set (MirrorMaker's sync is off)
    assert doc["config_differences"] == {}
    assert {(p["topic"], p["partition"]) for p in doc["partitions"]} == {
        (t, i) for t, n in PARTITIONS.items() for i in range(n)}
    a = AdminClient({"bootstrap.servers": tgt})
    described = a.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, t) for t in SMALL_TOPICS])
    for resource, future in described.items():
        got = future.result(timeout=30)
        assert {k: got[k].value for k in SMALL_TOPICS[resource.name]} == SMALL_TOPICS[resource.name], resource.name
    assert {t: len(m.partitions) for t, m in a.list_topics(timeout=30).topics.items() if t in PARTITIONS} == PARTITIONS
    _, cut, _ = run_json(capsys, *cutover_args(clusters, state_dir), "--dry-run")
    expected = {(o["group"], o["topic"], o["partition"]): o["duplicates"] for o in cut["offsets"]}
    assert {(g["group"], g["topic"], g["partition"]): g["duplicates"] for g in doc["groups"]
            if g["group"] in GROUPS} == expected


def test_the_python_hashes_equal_spark_s_on_the_same_records(clusters):
    """The tail verify at the switch hashes records in Python; the bulk verify in Spark: the same definition.
    Records of every shape (null and empty keys and values, headers with null, empty and repeated keys, old and
    new timestamps, an aborted transaction that neither reads) hashed both ways, each record on its own."""
    from migrate.adapters.kafka.mirror import MirrorCluster
    from migrate.adapters.kafka.translation import hashed_records
    from migrate.adapters.spark.job import digest_ranges
    from migrate.adapters.spark.session import SparkSettings, spark_session
    from migrate.core.verify.records import digest_sums
    from migrate.core.verify.snapshot import ReadRange

    src, _ = clusters
    topic = "hashes-check"
    create(src, topic, 1)
    shapes = [(None, None, None), (b"", b"", []), (b"k", None, [("h", None)]), (None, b"v", [("h", b"")]),
              (b"k\x00\xff", b"\x00" * 300, [("a", b"1"), ("a", b"1"), ("\u00e9", b"2")]),
              (b"x" * 70, b"y" * 33, [("h", b"z" * 40)])]
    p = Producer({"bootstrap.servers": src, "transactional.id": "hashes-writer"})
    p.init_transactions(60)
    for commit in (True, False, True):
        p.begin_transaction()
        for i, (key, value, headers) in enumerate(shapes):
            p.produce(topic, key=key, value=value, headers=headers, partition=0,
                      timestamp=[1, 1_500_000_000_123, 1_700_000_000_000 + i][i % 3])
        if commit:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)
    end = ends_of(src, topic)
    side = MirrorCluster(ClientSettings(src), "source")
    python = hashed_records(side, {(topic, 0): (0, end)})[(topic, 0)]
    assert len(python) == 2 * len(shapes)
    with spark_session(SparkSettings(master=MASTER)) as spark:
        found = digest_ranges(spark, ClientSettings(src).spark_options(), [ReadRange(topic, 0, 0, end, end, False, 0, 1)],
                              include_offsets=False)[(topic, 0)]
    per_offset = {c.start: (c.hash1, c.hash2) for c in found.chunks if c.records}
    assert per_offset == {r.offset: (r.h1, r.h2) for r in python}
    assert digest_sums(python) == (found.digest.records, found.digest.hash1, found.digest.hash2)


def ends_of(bs: str, topic: str) -> int:
    c = Consumer({"bootstrap.servers": bs, "group.id": "test-ends", "isolation.level": "read_committed"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)[1]
    finally:
        c.close()


def test_a_record_written_straight_to_the_target_is_caught_at_the_switch_and_named(clusters, mirror, state_dir, capsys):
    """A producer pointed at the wrong cluster: its record lands after the proven records; the tail verify names it."""
    _src, tgt = clusters
    p = Producer({"bootstrap.servers": tgt})
    p.produce(ORDERS, value=b"stray", partition=0)
    assert p.flush(30) == 0
    code, _out, err = run(capsys, *cutover_args(clusters, state_dir))
    assert code == 1, err
    assert f"{ORDERS}-0: the target holds 1 record(s) past the source's end" in err, err

