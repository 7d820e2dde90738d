"""Benchmark: ``kmigrate mirror`` against MirrorMaker 2 started by hand with its defaults, copying the same data.

    python tests/bench/bench_mirror.py                    # 2 GB in 20 topics of 3 partitions, 1 KB records
    python tests/bench/bench_mirror.py --mb 200 --json     # a smaller run

Starts two sandboxes (source and target: 1 ZooKeeper and 1 broker each) on free loopback prefixes, writes
the data into ``--topics`` topics of the source with a confluent-kafka producer (not timed), then times,
one after the other on the same clusters:

* kmigrate: ``mirror start`` (plan, topic creation on the target, a dedicated MirrorMaker 2 with
  kmigrate's generated mm2.properties: identity names, exactly-once, 2 tasks) until ``mirror status``
  first reports lag 0 (read every second from MirrorMaker's Connect offsets, which exactly-once commits
  with each transaction, once a second); then ``mirror stop``;
* by hand: the plain ``connect-mirror-maker`` driver (``org.apache.kafka.connect.mirror.MirrorMaker``
  with ``connect-mirror-maker.sh``'s -Xmx2G) on a minimal mm2.properties: ``A->B.enabled = true``, the
  topic filter, DefaultReplicationPolicy (target topics ``A.<topic>``, so both copies fit one target),
  and the replication factors a 1-broker target needs; every other setting is MirrorMaker's default.
  At-least-once (MirrorMaker's default). Done when the target topics' end offsets equal the source's
  (polled every 0.5 s; without transactions, equal offsets mean every record). Then SIGTERM.

Once kmigrate's copy is caught up, with its MirrorMaker still running, as an operator would:

* ``mirror verify`` proves what is copied (one pass, timed: before the switch, outside the window);
* ``--tail`` more records are written over the topics (the traffic until the producers stop) and copied;
* unless ``--groups 0``, ``mirror cutover`` switches ``--groups`` consumer groups (committed half-way
  through every partition before the copy): the cut-over window, from its start (producers already
  stopped) to "clients may switch", its quiet period and the verify of the tail after the proofs included
  (target: under 30 s for 20 topics and 5 groups, at any data size).

With ``--eos-cost``, MirrorMaker 2 by hand runs a second time with kmigrate's exactly-once settings
(``exactly.once.source.support = enabled``, a transaction per second, read_committed), done when its
Connect offsets reach every source end: exactly-once's price on the same driver.

It prints both times, their throughput, when each copied its first records (kmigrate: and when its
MirrorMaker started, after the plan and the topics) and the ratio (kmigrate / by hand; target: within
1.1x). The data is fresh in the page cache for both runs. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from migrate.adapters.jars import MIRROR_MAKER_MAIN, ensure_distribution  # noqa: E402
from migrate.adapters.mirrormaker.mm2 import LOG4J  # noqa: E402
from migrate.runner.mirror.cutover import CutoverRequest, cutover  # noqa: E402
from migrate.runner.mirror.clusters import Request, Side  # noqa: E402
from migrate.runner.mirror.mm2 import MirrorMaker2  # noqa: E402
from migrate.runner.mirror.proving import VerifyRequest, verify_mirror  # noqa: E402
from migrate.adapters.mirrormaker.mm2 import free_port  # noqa: E402
from migrate.sandbox.testing import produce_waiting, running_sandbox, stop_process  # noqa: E402

SMALL = dict(zookeeper_ids=(1,), broker_ids=(1,), zookeeper_heap_mb=64, kafka_heap_mb=512)
PREFIX = "bench-"


def fill(bootstrap: str, topics: int, partitions: int, total_bytes: int, size: int) -> dict[tuple[str, int], int]:
    """Create the topics and write ``total_bytes`` of ``size``-byte records over them; the end offsets."""
    names = [f"{PREFIX}{i:02d}" for i in range(topics)]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(n, partitions, 1) for n in names]).values():
        f.result()
    pool = os.urandom(1 << 20)  # incompressible values, sliced at moving offsets
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20, "acks": "all",
                         "queue.buffering.max.kbytes": 1 << 20})
    records = total_bytes // size
    for i in range(records):
        at = (i * 7919) % ((1 << 20) - size)
        produce_waiting(producer, names[i % topics], str(i).encode(), pool[at:at + size])
        if i % 10000 == 0:
            producer.poll(0)
    assert producer.flush(300) == 0
    return ends(bootstrap, {n: partitions for n in names})


def ends(bootstrap: str, topics: dict[str, int]) -> dict[tuple[str, int], int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-ends"})
    try:
        return {(t, p): consumer.get_watermark_offsets(TopicPartition(t, p), timeout=10)[1]
                for t, n in topics.items() for p in range(n)}
    finally:
        consumer.close()


_last_progress = [0.0]


def progress(line: str, t0: float, every_s: float = 10) -> None:
    """A progress line every ``every_s`` (to stderr)."""
    now = time.monotonic()
    if now - _last_progress[0] >= every_s:
        _last_progress[0] = now
        print(f"  {now - t0:6.1f} s  {line}", file=sys.stderr, flush=True)


def commit_groups(bootstrap: str, groups: int, source_ends: dict[tuple[str, int], int]) -> list[str]:
    """``groups`` consumer groups, each committed half-way through every partition of the source."""
    names = [f"bench-group-{g}" for g in range(groups)]
    for name in names:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": name, "enable.auto.commit": False})
        consumer.commit(offsets=[TopicPartition(t, p, e // 2) for (t, p), e in source_ends.items()], asynchronous=False)
        consumer.close()
    return names


def time_cutover(state_dir: Path, groups: list[str], quiet_s: float) -> tuple[float, float]:
    """``mirror cutover`` of ``groups`` with the producers already stopped: (wall seconds from its start to
    "clients may switch", of which the quiet period that proves the producers stopped)."""
    t0 = time.monotonic()
    result = cutover(CutoverRequest(tuple(groups), state_dir, quiet_s=quiet_s, timeout_s=600),
                     say=lambda m: progress(f"cutover: {m}", t0, every_s=0))
    assert result.clients, "cutover did not say clients may switch"
    seconds = time.monotonic() - t0
    print(f"cut-over verify: {result.verify}; gates: "
          + ", ".join(f"{g.name} {g.seconds:.1f} s" for g in result.gates), flush=True)
    return seconds, quiet_s


def prove(state_dir: Path) -> tuple[float, int]:
    """One pass of ``mirror verify`` (MirrorMaker still running): (seconds, records proven)."""
    t0 = time.monotonic()
    result = verify_mirror(VerifyRequest(state_dir), say=lambda m: progress(f"mirror verify: {m}", t0, every_s=0))
    assert result.ok, "mirror verify found a difference"
    return time.monotonic() - t0, result.proven


def write_tail(bootstrap: str, topics: int, count: int, size: int) -> None:
    """``count`` more records over the topics: what the producers write after the proofs, until they stop."""
    names = [f"{PREFIX}{i:02d}" for i in range(topics)]
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    pool = os.urandom(1 << 16)
    for i in range(count):
        produce_waiting(producer, names[i % topics], f"tail-{i}".encode(), pool[i % 1000:i % 1000 + size])
    assert producer.flush(120) == 0


def time_kmigrate(source: str, target: str, state_dir: Path, records: int,
                  then=lambda: None) -> tuple[float, float, float]:
    """(seconds to lag 0, to MirrorMaker started (plan and topics done), to the first record copied);
    ``then`` runs once caught up, before MirrorMaker is stopped."""
    req = Request(Side(source), Side(target, role="target"), f"{PREFIX}.*")
    t0 = time.monotonic()
    done: list[float] = []
    first: list[float] = []
    MirrorMaker2().start(req, state_dir, heap_mb=1024, tasks=2)
    started = time.monotonic() - t0

    def seen(status) -> None:
        if status.total_lag < records and not first:
            first.append(time.monotonic() - t0)
        if status.caught_up and not done:
            done.append(time.monotonic())
        progress(f"kmigrate: lag {status.total_lag} records", t0)
    try:
        caught_up, last = MirrorMaker2().wait_caught_up(state_dir, None, None, None, timeout_s=3600, interval_s=1.0,
                                                        on_status=seen)
        assert caught_up, f"kmigrate's MirrorMaker not caught up: lag {last.total_lag}"
        then()
        return done[0] - t0, started, first[0]
    finally:
        MirrorMaker2().stop(state_dir, 30)


def connect_positions(bootstrap: str, alias: str) -> dict[tuple[str, int], int]:
    """MirrorMaker's Connect offsets of source cluster ``alias`` (source partition -> last copied offset)."""
    topic = f"mm2-offsets.{alias}.internal"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-positions", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    try:
        meta = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if meta is None or meta.error is not None:
            return {}
        parts = [p for p in meta.partitions
                 if consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] > 0]
        consumer.assign([TopicPartition(topic, p, 0) for p in parts])
        records, todo = [], set(parts)
        deadline = time.monotonic() + 30
        while todo and time.monotonic() < deadline:
            for msg in consumer.consume(1000, timeout=0.2):
                if msg.error():
                    todo.discard(msg.partition())
                else:
                    records.append((msg.key(), msg.value()))
        out: dict[tuple[str, int], int] = {}
        for key, value in records:  # ["MirrorSourceConnector", {"cluster": alias, "partition": p, "topic": t}]
            doc = json.loads(key) if key else None
            if isinstance(doc, list) and len(doc) == 2 and isinstance(doc[1], dict) and doc[1].get("cluster") == alias:
                offset = json.loads(value).get("offset") if value else None
                if isinstance(offset, int):
                    out[(doc[1]["topic"], doc[1]["partition"])] = offset
        return out
    finally:
        consumer.close()


def time_by_hand(source: str, target: str, home: Path, source_ends: dict[tuple[str, int], int],
                 exactly_once: bool = False) -> tuple[float, float]:
    """(seconds until every record is on the target, until the first one is). At-least-once (MirrorMaker's
    default): done when the target's end offsets equal the source's. ``exactly_once``: kmigrate's exactly-once
    settings, done when MirrorMaker's Connect offsets reach every source end (transaction markers take offsets)."""
    a, b = ("E", "C") if exactly_once else ("A", "B")  # aliases apart from kmigrate's ("source", "target")
    props = {
        "clusters": f"{a}, {b}", f"{a}.bootstrap.servers": source, f"{b}.bootstrap.servers": target,
        f"{a}->{b}.enabled": "true", f"{a}->{b}.topics": f"{PREFIX}.*",
        # a 1-broker target: MirrorMaker's defaults (2 and 3) cannot be created there
        "replication.factor": "1", "checkpoints.topic.replication.factor": "1",
        "heartbeats.topic.replication.factor": "1", "offset-syncs.topic.replication.factor": "1",
        "offset.storage.replication.factor": "1", "status.storage.replication.factor": "1",
        "config.storage.replication.factor": "1",
    }
    if exactly_once:
        props.update({f"{b}.exactly.once.source.support": "enabled", f"{a}.consumer.isolation.level": "read_committed",
                      f"{a}->{b}.transaction.boundary": "interval", f"{a}->{b}.transaction.boundary.interval.ms": "1000",
                      "dedicated.mode.enable.internal.rest": "true", "listeners": f"http://127.0.0.1:{free_port()}"})
    (home / "mm2.properties").write_text("".join(f"{k} = {v}\n" for k, v in props.items()))
    (home / "log4j.properties").write_text(LOG4J)
    command = ensure_distribution().java_command(MIRROR_MAKER_MAIN, [str(home / "mm2.properties")], [
        "-Xms256M", "-Xmx2G", f"-Dlog4j.configuration=file:{home / 'log4j.properties'}"])
    wanted = {(f"{a}.{t}", p): e for (t, p), e in source_ends.items()}
    last_wanted = {tp: e - 1 for tp, e in source_ends.items() if e > 0}
    topics: dict[str, int] = {}
    for t, p in wanted:
        topics[t] = max(topics.get(t, 0), p + 1)
    first: list[float] = []
    t0 = time.monotonic()
    with open(home / "mm2.log", "ab") as log:
        proc = subprocess.Popen(command, cwd=home, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    admin = AdminClient({"bootstrap.servers": target})
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"MirrorMaker 2 exited: see {home / 'mm2.log'}")
            present = admin.list_topics(timeout=10).topics
            now = ends(target, {t: n for t, n in topics.items() if t in present})
            if sum(now.values()) and not first:
                first.append(time.monotonic() - t0)
            if exactly_once:
                positions = connect_positions(target, a)
                if all(positions.get(tp, -1) >= last for tp, last in last_wanted.items()):
                    return time.monotonic() - t0, first[0]
            elif now == wanted:
                return time.monotonic() - t0, first[0]
            progress(f"by hand: {sum(now.values())} of {sum(wanted.values())} offsets on the target", t0)
            time.sleep(0.5)
    finally:
        stop_process(proc, 60)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gb", type=float, default=2.0, help="Data to mirror, in GB (default 2).")
    ap.add_argument("--mb", type=float, help="Data to mirror, in MB (overrides --gb).")
    ap.add_argument("--topics", type=int, default=20)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--record-size", type=int, default=1024)
    ap.add_argument("--json", action="store_true", help="Print the figures as JSON too.")
    ap.add_argument("--groups", type=int, default=5, help="Consumer groups switched by mirror cutover after the "
                    "copy, its window timed (0: no cut-over).")
    ap.add_argument("--quiet", type=float, default=10.0, help="cutover's --quiet-period, in seconds (default 10).")
    ap.add_argument("--keep", action="store_true", help="Keep MirrorMakers' logs (their directory is printed).")
    ap.add_argument("--tail", type=int, default=2000, help="Records written after the proofs, before the cut-over "
                    "(default 2000).")
    ap.add_argument("--eos-cost", action="store_true", help="Also time MirrorMaker 2 by hand with kmigrate's "
                    "exactly-once settings.")
    args = ap.parse_args()
    total = int((args.mb * 1e6) if args.mb is not None else args.gb * 1e9)
    with running_sandbox(SMALL) as src, running_sandbox(SMALL) as tgt, tempfile.TemporaryDirectory() as scratch:
        tmp = tempfile.mkdtemp(prefix="bench-mirror-") if args.keep else scratch
        source, target = src.bootstrap_servers(), tgt.bootstrap_servers()
        if args.keep:
            print(f"MirrorMakers' files in {tmp}", flush=True)
        t0 = time.monotonic()
        source_ends = fill(source, args.topics, args.partitions, total, args.record_size)
        records = sum(source_ends.values())
        print(f"wrote {records} records ({total / 1e6:.0f} MB) in {args.topics} topics x {args.partitions} "
              f"partitions in {time.monotonic() - t0:.1f} s", flush=True)
        subprocess.run(["sync"], check=False)
        groups = commit_groups(source, args.groups, source_ends) if args.groups else []
        window: list[tuple[float, float]] = []
        proofs: list[tuple[float, int]] = []
        state = Path(tmp) / "kmigrate"

        def switch() -> None:
            proofs.append(prove(state))
            print(f"mirror verify (one pass, before the switch): {proofs[0][1]} records proven in "
                  f"{proofs[0][0]:.1f} s", flush=True)
            if args.tail:
                write_tail(source, args.topics, args.tail, args.record_size)
                caught, last = MirrorMaker2().wait_caught_up(state, None, None, None, timeout_s=300, interval_s=1.0)
                assert caught, f"the tail was not copied: lag {last.total_lag}"
            if groups:
                window.append(time_cutover(state, groups, args.quiet))
        kmigrate_s, started_s, k_first_s = time_kmigrate(source, target, state, records, then=switch)
        print(f"kmigrate mirror start -> lag 0 (exactly-once)   {kmigrate_s:8.1f} s  {total / 1e6 / kmigrate_s:6.1f} "
              f"MB/s (MirrorMaker started at {started_s:.1f} s, first records copied by {k_first_s:.1f} s)", flush=True)
        source_ends = ends(source, {f"{PREFIX}{i:02d}": args.partitions for i in range(args.topics)})  # with the tail
        (Path(tmp) / "hand").mkdir()
        hand_s, h_first_s = time_by_hand(source, target, Path(tmp) / "hand", source_ends)
        print(f"MirrorMaker 2 by hand -> all copied (at-least-once) {hand_s:8.1f} s  {total / 1e6 / hand_s:6.1f} MB/s "
              f"(first records copied by {h_first_s:.1f} s)", flush=True)
        eos_s = None
        if args.eos_cost:
            (Path(tmp) / "hand-eos").mkdir()
            eos_s, e_first_s = time_by_hand(source, target, Path(tmp) / "hand-eos", source_ends, exactly_once=True)
            print(f"MirrorMaker 2 by hand, exactly-once -> all copied {eos_s:8.1f} s  {total / 1e6 / eos_s:6.1f} MB/s "
                  f"(first records copied by {e_first_s:.1f} s); exactly-once / at-least-once: {eos_s / hand_s:.2f}",
                  flush=True)
        ratio = kmigrate_s / hand_s
        print(f"ratio kmigrate (exactly-once) / by hand (at-least-once): {ratio:.2f} "
              f"(target <= 1.10: {'met' if ratio <= 1.1 else 'NOT met'})")
        if window:
            print(f"cut-over window (producers stopped -> clients may switch), {len(groups)} groups, {args.topics} "
                  f"topics, {args.tail} records written after the proofs: {window[0][0]:.1f} s, of which the "
                  f"{window[0][1]:.0f} s quiet period (target < 30 s: {'met' if window[0][0] < 30 else 'NOT met'})")
        if args.json:
            print(json.dumps({"records": records, "bytes": total, "topics": args.topics, "partitions": args.partitions,
                              "kmigrate_s": round(kmigrate_s, 1), "kmigrate_started_s": round(started_s, 1),
                              "kmigrate_first_copied_s": round(k_first_s, 1), "by_hand_s": round(hand_s, 1),
                              "by_hand_first_copied_s": round(h_first_s, 1),
                              "ratio": round(ratio, 2), "groups": len(groups),
                              "cutover_window_s": round(window[0][0], 1) if window else None,
                              "proof_pass_s": round(proofs[0][0], 1) if proofs else None,
                              "proven_before_switch": proofs[0][1] if proofs else None, "tail_records": args.tail,
                              "by_hand_exactly_once_s": None if eos_s is None else round(eos_s, 1)}))


if __name__ == "__main__":
    main()
