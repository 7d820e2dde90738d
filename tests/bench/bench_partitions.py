"""kmigrate partitions against the stock ``kafka-reassign-partitions.sh --execute``: figures, not pass/fail.

One sandbox (3 ZooKeeper, old brokers 1-3, new brokers 4-6). 52 topics of mixed sizes (a few
large, many small; replication factor 1 to 3) are written to the old brokers. Then, at the same
throttle:

1. ``kmigrate partitions --mapping 1:4,2:5,3:6`` moves them to the new brokers;
2. the stock tool moves the same partitions back (``--execute --throttle``), its completion
   observed with ``ListPartitionReassignments`` every 0.5 s (then ``--verify`` removes its
   throttles, timed apart).

Both directions copy the same bytes through the same number of brokers. Printed: bytes moved,
both wall times and their ratio, and both against two limits: ``bytes moved / throttle`` (as if
one broker copied everything) and ``busiest broker's bytes / throttle`` (each broker is throttled
on its own, leader and follower side, so the busiest one bounds the copy: the attainable limit).
Run::

    python tests/bench/bench_partitions.py [--data-mb 1200] [--topics 52] [--throttle 10MB/s] [--repeat 3]

A third limit is measured first: the rate one move alone reaches under the throttle (Kafka's
quota lets a little less than the throttle through), and the busiest broker's bytes at that rate.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from migrate.core.units import parse_rate as parse_throttle
from migrate.sandbox.testing import running_sandbox

OLD, NEW = (1, 2, 3), (4, 5, 6)
MAPPING = dict(zip(OLD, NEW))


def sizes_mb(total_mb: int, topics: int, rng: random.Random) -> list[float]:
    """Mixed sizes: a long tail of small topics and a few large ones, summing to ``total_mb``."""
    weights = [rng.paretovariate(1.2) for _ in range(topics)]
    scale = total_mb / sum(weights)
    return [w * scale for w in weights]


def load(bs: str, n_topics: int, data_mb: int, seed: int) -> dict[str, list[list[int]]]:
    rng = random.Random(seed)
    admin = AdminClient({"bootstrap.servers": bs})
    layout: dict[str, list[list[int]]] = {}
    for i, mb in enumerate(sizes_mb(data_mb, n_topics, rng)):
        rf = 1 + i % 3
        parts = (1, 2, 3, 4, 6, 8)[i % 6]
        name = f"bench-{i:02d}"
        assignment = [[OLD[(p + r + i) % 3] for r in range(rf)] for p in range(parts)]
        admin.create_topics([NewTopic(name, num_partitions=parts, replica_assignment=assignment)])[name].result(60)
        layout[name] = assignment
    time.sleep(2)
    # idempotent, as Kafka's own producer is by default since 3.0: the brokers have handed out
    # producer ids before the migration starts, as on any live cluster
    producer = Producer({"bootstrap.servers": bs, "acks": "all", "enable.idempotence": True, "linger.ms": 50,
                         "batch.size": 1_000_000, "compression.type": "none", "queue.buffering.max.kbytes": 512_000})
    value = os.urandom(10_000)  # incompressible
    rng = random.Random(seed)
    for i, mb in enumerate(sizes_mb(data_mb, n_topics, rng)):
        name = f"bench-{i:02d}"
        for j in range(max(1, int(mb * 100))):  # 10 kB records
            while True:
                try:
                    producer.produce(name, value=value, key=str(j).encode())
                    break
                except BufferError:
                    producer.poll(0.05)
            producer.poll(0)
    assert producer.flush(600) == 0
    return layout


def replica_bytes(bs: str, brokers, prefix: str = "bench-") -> dict[tuple[str, int, int], int]:
    from kafka.admin import KafkaAdminClient

    kp = KafkaAdminClient(bootstrap_servers=bs.split(","))
    try:
        out = {}
        for b in brokers:
            for answer in kp.describe_log_dirs(brokers=[b]):
                for d in answer["log_dirs"]:
                    for t in d["topics"]:
                        if t["name"].startswith(prefix):
                            for p in t["partitions"]:
                                out[(t["name"], p["partition_index"], answer["broker"])] = p["partition_size"]
        return out
    finally:
        kp.close()


def busiest(layout: dict[str, list[list[int]]], sizes: dict[tuple[str, int], int], mapping: dict[int, int]) -> tuple[int, int]:
    """(total bytes copied, busiest broker's bytes in or out) for moving ``layout`` by ``mapping``."""
    inb: dict[int, int] = {}
    outb: dict[int, int] = {}
    total = 0
    for t, parts in layout.items():
        for p, reps in enumerate(parts):
            size = sizes.get((t, p), 0)
            for r in reps:
                total += size
                inb[mapping[r]] = inb.get(mapping[r], 0) + size
            leader = reps[0]
            outb[leader] = outb.get(leader, 0) + size * len(reps)
    return total, max(list(inb.values()) + list(outb.values()))


def in_flight(bs: str) -> int:
    from kafka.admin import KafkaAdminClient

    kp = KafkaAdminClient(bootstrap_servers=bs.split(","))
    try:
        return len(kp.list_partition_reassignments())
    finally:
        kp.close()


def calibrate(sb, bs: str, throttle_bytes: int, mb: int = 100) -> float:
    """The copy rate one throttled move reaches here (bytes/s): a partition of ``mb`` MB moved
    alone from broker 1 to broker 4 by the stock tool. Kafka's quota lets a little less than the
    throttle through; the busiest broker cannot copy faster than this."""
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic("calibration", num_partitions=1, replica_assignment=[[1]])])["calibration"].result(60)
    time.sleep(2)
    producer = Producer({"bootstrap.servers": bs, "linger.ms": 50, "batch.size": 1_000_000,
                         "queue.buffering.max.kbytes": 512_000})
    value = os.urandom(10_000)
    for _ in range(mb * 100):
        while True:
            try:
                producer.produce("calibration", value=value)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(600) == 0
    size = sum(replica_bytes(bs, [1], prefix="calibration").values())
    if not size:
        raise SystemExit("no replica of calibration on broker 1")
    doc = {"version": 1, "partitions": [{"topic": "calibration", "partition": 0, "replicas": [4]}]}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(doc, f)
        path = f.name
    cmd = sb.dist.tool_command("kafka-reassign-partitions", ["--bootstrap-server", bs, "--reassignment-json-file", path,
                                                             "--execute", "--throttle", str(throttle_bytes)])
    subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True)
    started = time.monotonic()  # the tool returns once the move is submitted
    while in_flight(bs):
        time.sleep(0.2)
    elapsed = time.monotonic() - started
    cmd = sb.dist.tool_command("kafka-reassign-partitions", ["--bootstrap-server", bs, "--reassignment-json-file", path, "--verify"])
    subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    Path(path).unlink()
    admin.delete_topics(["calibration"])["calibration"].result(60)
    return size / elapsed


def run_kmigrate(bs: str, throttle: str, per_broker: int) -> float:
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "migrate", "partitions", "--bootstrap-server", bs,
                           "--mapping", ",".join(f"{o}:{n}" for o, n in MAPPING.items()), "--topics", "bench-.*",
                           "--throttle", throttle, "--max-moves-per-broker", str(per_broker), "-O", "json"],
                          capture_output=True, text=True, timeout=7200)
    elapsed = time.monotonic() - started
    events_file = Path(tempfile.gettempdir()) / f"bench_partitions_kmigrate_{per_broker}.jsonl"
    events_file.write_text(proc.stdout)
    print(f"  kmigrate events: {events_file}")
    if proc.returncode != 0:
        raise SystemExit(f"kmigrate exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    done = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")][-1]
    print(f"  kmigrate reported: {done['partitions_moved']} partitions, {done['bytes_copied']} bytes, {done['seconds']} s")
    return elapsed


def run_stock(sb, bs: str, layout: dict[str, list[list[int]]], throttle_bytes: int) -> tuple[float, float]:
    back = {n: o for o, n in MAPPING.items()}
    doc = {"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": [back[MAPPING[r]] for r in reps]}
        for t, parts in layout.items() for p, reps in enumerate(parts)]}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(doc, f)
        path = f.name
    cmd = sb.dist.tool_command("kafka-reassign-partitions", ["--bootstrap-server", bs, "--reassignment-json-file", path,
                                                             "--execute", "--throttle", str(throttle_bytes)])
    started = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"kafka-reassign-partitions --execute failed: {out.stdout[-1000:]} {out.stderr[-1000:]}")
    time.sleep(0.5)
    while in_flight(bs):
        time.sleep(0.5)
    elapsed = time.monotonic() - started
    v0 = time.monotonic()
    cmd = sb.dist.tool_command("kafka-reassign-partitions", ["--bootstrap-server", bs, "--reassignment-json-file", path, "--verify"])
    subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    Path(path).unlink()
    return elapsed, time.monotonic() - v0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=52)
    parser.add_argument("--data-mb", type=int, default=1200, help="data written (before replication)")
    parser.add_argument("--throttle", default="10MB/s")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--max-moves-per-broker", type=int, nargs="+", default=[5, 20],
                        help="kmigrate's per-broker cap, one kmigrate run (and one stock run) per value")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each tool per cap, alternating (mean, min, max printed)")
    ns = parser.parse_args()
    throttle_bytes = parse_throttle(ns.throttle)
    spec = dict(zookeeper_ids=(1, 2, 3), broker_ids=OLD, spare_broker_ids=NEW,
                kafka_settings={"log.segment.bytes": str(256 * 1024 * 1024)})
    with running_sandbox(spec) as sb:
        bs = sb.bootstrap_servers()
        t0 = time.monotonic()
        layout = load(bs, ns.topics, ns.data_mb, ns.seed)
        sizes = {}
        for (t, p, _b), s in replica_bytes(bs, OLD).items():
            sizes[(t, p)] = max(sizes.get((t, p), 0), s)
        total, busy = busiest(layout, sizes, MAPPING)
        parts = sum(len(v) for v in layout.values())
        print(f"data: {len(layout)} topics, {parts} partitions, {total / 1e9:.2f} GB to move per run "
              f"(written in {time.monotonic() - t0:.0f} s); throttle {ns.throttle} = {throttle_bytes} B/s per broker")
        limit_total = total / throttle_bytes
        limit_busy = busy / throttle_bytes
        print(f"limits: bytes moved / throttle = {limit_total:.1f} s; busiest broker's bytes ({busy / 1e6:.0f} MB) / throttle = {limit_busy:.1f} s")
        rate = calibrate(sb, bs, throttle_bytes)
        limit_rate = busy / rate
        print(f"one move alone copies at {rate / 1e6:.2f} MB/s under this throttle: busiest broker's bytes at that rate = {limit_rate:.1f} s")
        runs: dict[int, list[tuple[float, float, float]]] = {}

        # each kmigrate run (old -> new) is followed by a stock run (new -> old) that puts the data back
        for per_broker in [c for c in ns.max_moves_per_broker for _ in range(ns.repeat)]:
            k = run_kmigrate(bs, ns.throttle, per_broker)
            print(f"kmigrate partitions (--max-moves-per-broker {per_broker}): {k:7.1f} s wall  "
                  f"({k / limit_busy:.2f}x busiest-broker limit, {k / limit_total:.2f}x bytes/throttle)")
            s, verify = run_stock(sb, bs, layout, throttle_bytes)
            print(f"kafka-reassign-partitions --execute:          {s:7.1f} s wall  "
                  f"({s / limit_busy:.2f}x busiest-broker limit, {s / limit_total:.2f}x bytes/throttle)"
                  f"  + {verify:.1f} s for --verify (removes its throttles)")
            print(f"ratio kmigrate / stock --execute:             {k / s:.2f}")
            # kmigrate's time includes removing its throttles; the stock tool's job ends with --verify
            print(f"ratio kmigrate / stock --execute + --verify:  {k / (s + verify):.2f}")
            print(f"  at the one-move rate: kmigrate {k / limit_rate:.2f}x, stock --execute {s / limit_rate:.2f}x")
            runs.setdefault(per_broker, []).append((k, s, verify))
        if ns.repeat > 1:
            for per_broker, rs in runs.items():
                ks, ss, vs = [r[0] for r in rs], [r[1] for r in rs], [r[1] + r[2] for r in rs]
                print(f"--max-moves-per-broker {per_broker}, {len(rs)} runs each: kmigrate mean {statistics.mean(ks):.1f} s "
                      f"(min {min(ks):.1f}, max {max(ks):.1f}); stock --execute mean {statistics.mean(ss):.1f} s "
                      f"(min {min(ss):.1f}, max {max(ss):.1f}); ratio of means {statistics.mean(ks) / statistics.mean(ss):.2f} "
                      f"(vs --execute + --verify {statistics.mean(ks) / statistics.mean(vs):.2f})")


if __name__ == "__main__":
    main()
