"""``kmigrate partitions --throttle auto`` against the stock tool at a throttle tuned by hand: figures, not pass/fail.

One sandbox (1 ZooKeeper, old brokers 1-3, new brokers 4-6). Topics of mixed sizes are written to
the old brokers (``--data-mb`` before replication, replication factor 2). Throughout every move an
acks=all producer writes to its own topic (``bench-load``, six partitions over all six brokers),
alternating busy and quiet stretches as daily traffic does: Kafka's own ``ProducerPerformance``
(``kafka-producer-perf-test``, from the jars kmigrate fetches), one process per stretch, so the
latency is not measured by kmigrate. Each stretch's p50/p99/max is its steady-state summary: the
tool of Kafka 4.4 (``--warmup-records``, KIP-1052, from 4.2; the brokers stay on 3.9) leaves out
its first 2 s, whose sends wait for the new process's connections and metadata (without it, two
busy stretches at rest measured p99 1553 ms and 234 ms).

1. **At rest**: two busy and two quiet stretches before any move (after one of each not counted:
   the brokers' first writes to the new topic); the worst stretch p99 is the baseline, and
   ``baseline + --budget`` the limit.
2. **Stock tool, tuned by hand**: ``kafka-reassign-partitions.sh --execute --throttle R`` for each
   R of ``--grid`` in ascending order, each move measured under the load (its completion seen with
   ``ListPartitionReassignments`` every 0.5 s, then ``--verify`` removes its throttles), the data
   moved back unthrottled and without load after each. The grid stops at the first rate whose
   worst stretch p99 leaves the limit; the tuned rate is the highest within it.
3. **Unthrottled**: the stock tool without ``--throttle``, under the same load.
4. **kmigrate**: ``kmigrate partitions --mapping 1:4,2:5,3:6 --throttle auto --latency-budget``.

Printed: each move's time and the producer's p50 (median of the stretches), p99 (worst stretch)
and max during the move, within the limit or not; then kmigrate's time against the tuned stock
tool's (target at most 0.7x at a p99 within the same budget) and against the unthrottled move
(target at most 1.2x when the budget allows it). Run alone on a quiet machine::

    python tests/bench/bench_autothrottle.py [--data-mb 1500] [--budget 50] [--grid 5 10 20 50 100] [--canary-rate N]

``--canary-rate N``: kmigrate steers on an operator's canary (``kmigrate canary --rate N --report FILE``,
started before the first stock move, read with ``--canary-report``) instead of its own 50 records/s one.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from migrate.adapters.jars import ensure_distribution
from migrate.sandbox.testing import running_sandbox

TOOL_VERSION = "4.4.0"  # ProducerPerformance with --warmup-records (Kafka 4.2+)
WARMUP_S = 2
OLD, NEW = (1, 2, 3), (4, 5, 6)
MAPPING = dict(zip(OLD, NEW))
LOAD_TOPIC = "bench-load"
SUMMARY = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
                     r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th")


@dataclass(frozen=True)
class Stretch:
    kind: str  # busy or quiet
    start: float
    end: float
    records: int
    p50_ms: float
    p99_ms: float
    max_ms: float


class Load:
    """Busy and quiet stretches of ``ProducerPerformance`` (acks=all), one process each, until stopped."""

    def __init__(self, dist, bs: str, busy_rate: int, quiet_rate: int, stretch_s: int, size: int = 1000):
        self.dist, self.bs = dist, bs
        self.rates = (("busy", busy_rate), ("quiet", quiet_rate))
        self.stretch_s, self.size = stretch_s, size
        self.stretches: list[Stretch] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def one(self, kind: str, rate: int) -> None:
        cmd = self.dist.tool_command("kafka-producer-perf-test", [
            "--topic", LOAD_TOPIC, "--num-records", str(rate * (self.stretch_s + WARMUP_S)),
            "--warmup-records", str(rate * WARMUP_S), "--record-size", str(self.size),
            "--throughput", str(rate), "--producer-props", f"bootstrap.servers={self.bs}", "acks=all",
            "linger.ms=5"], jvm_opts=["-Xmx256m", "-XX:TieredStopAtLevel=1"])
        start = time.monotonic()
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=self.stretch_s * 10 + 120)
        end = time.monotonic()
        found = SUMMARY.findall(out.stdout)
        if out.returncode != 0 or not found or "steady state" not in out.stdout.lower():
            self.failures.append(f"{kind} stretch exited {out.returncode}: {out.stdout.strip()[-600:]} "
                                 f"{out.stderr.strip()[-300:]}")
            return
        sent, _rps, _mbps, _avg, mx, p50, _p95, p99 = found[-1]
        self.stretches.append(Stretch(kind, start, end, int(sent), float(p50), float(p99), float(mx)))

    def start(self) -> None:
        def loop() -> None:
            while not self._stop.is_set():
                for kind, rate in self.rates:
                    if self._stop.is_set():
                        return
                    self.one(kind, rate)

        self._stop.clear()
        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Ask the loop to stop; the stretch going on runs to its end (its summary counts)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def during(self, start: float, end: float) -> list[Stretch]:
        return [s for s in self.stretches if s.start < end and s.end > start]


def figures(stretches: list[Stretch]) -> tuple[float, float, float]:
    """(p50: median of the stretches' p50, p99: the worst stretch's, max) of ``stretches``."""
    if not stretches:
        return float("nan"), float("nan"), float("nan")
    return (statistics.median(s.p50_ms for s in stretches), max(s.p99_ms for s in stretches),
            max(s.max_ms for s in stretches))


def load_data(bs: str, n_topics: int, data_mb: int, seed: int) -> dict[str, list[list[int]]]:
    rng = random.Random(seed)
    admin = AdminClient({"bootstrap.servers": bs})
    weights = [rng.paretovariate(1.2) for _ in range(n_topics)]
    sizes = [w * data_mb / sum(weights) for w in weights]
    layout: dict[str, list[list[int]]] = {}
    for i in range(n_topics):
        name = f"bench-data-{i:02d}"
        parts = (1, 2, 3, 6)[i % 4]
        assignment = [[OLD[(p + i) % 3], OLD[(p + i + 1) % 3]] for p in range(parts)]
        admin.create_topics([NewTopic(name, num_partitions=parts, replica_assignment=assignment)])[name].result(60)
        layout[name] = assignment
    load_assignment = [[(p % 6) + 1, ((p + 2) % 6) + 1, ((p + 4) % 6) + 1] for p in range(6)]
    admin.create_topics([NewTopic(LOAD_TOPIC, num_partitions=6, replica_assignment=load_assignment,
                                  config={"min.insync.replicas": "2"})])[LOAD_TOPIC].result(60)
    time.sleep(2)
    producer = Producer({"bootstrap.servers": bs, "acks": "all", "linger.ms": 50, "batch.size": 1_000_000,
                         "compression.type": "none", "queue.buffering.max.kbytes": 512_000})
    value = os.urandom(10_000)  # incompressible
    for name, mb in zip(layout, sizes):
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


def in_flight(bs: str) -> int:
    from kafka.admin import KafkaAdminClient

    kp = KafkaAdminClient(bootstrap_servers=bs.split(","))
    try:
        return len(kp.list_partition_reassignments())
    finally:
        kp.close()


def stock_move(sb, bs: str, layout: dict[str, list[list[int]]], mapping: dict[int, int],
               throttle_bytes: int | None) -> float:
    """The stock tool's move of ``layout``'s partitions by ``mapping``: seconds from --execute to no
    reassignment in flight (its --verify, which removes the throttles, runs after, not timed)."""
    doc = {"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": [mapping.get(r, r) for r in reps]}
        for t, parts in layout.items() for p, reps in enumerate(parts)]}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(doc, f)
        path = f.name
    args = ["--bootstrap-server", bs, "--reassignment-json-file", path, "--execute"]
    if throttle_bytes is not None:
        args += ["--throttle", str(throttle_bytes)]
    started = time.monotonic()
    out = subprocess.run(sb.dist.tool_command("kafka-reassign-partitions", args), capture_output=True, text=True,
                         timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"kafka-reassign-partitions --execute failed: {out.stdout[-1000:]} {out.stderr[-1000:]}")
    time.sleep(0.5)
    while in_flight(bs):
        time.sleep(0.5)
    elapsed = time.monotonic() - started
    subprocess.run(sb.dist.tool_command("kafka-reassign-partitions", ["--bootstrap-server", bs,
                                                                       "--reassignment-json-file", path, "--verify"]),
                   capture_output=True, text=True, timeout=600)
    Path(path).unlink()
    return elapsed


def kmigrate_move(bs: str, budget_ms: int, canary_report: str | None = None) -> tuple[float, list[dict]]:
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "migrate", "partitions", "--bootstrap-server", bs,
                           "--mapping", ",".join(f"{o}:{n}" for o, n in MAPPING.items()), "--topics", "bench-data-.*",
                           "--throttle", "auto", "--latency-budget", f"{budget_ms}ms", "-O", "json"]
                          + (["--canary-report", canary_report] if canary_report else []),
                          capture_output=True, text=True, timeout=7200)
    elapsed = time.monotonic() - started
    events = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0:
        raise SystemExit(f"kmigrate exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return elapsed, events


def measured(load: Load, name: str, move, limit_ms: float) -> tuple[float, float, bool]:
    """Run ``move()`` under the load: (seconds, worst stretch p99, within the limit), printed."""
    start = time.monotonic()
    seconds = move()
    end = time.monotonic()
    time.sleep(1)
    while not load.during(end, end + 1e9) and not load.failures:  # the stretch going on at the end counts
        time.sleep(1)
    p50, p99, mx = figures(load.during(start, end))
    ok = p99 <= limit_ms
    print(f"{name:<44} {seconds:7.1f} s   producer p50 {p50:5.0f} ms  p99 {p99:6.0f} ms  max {mx:6.0f} ms  "
          f"{'within' if ok else 'OVER'} the limit {limit_ms:.0f} ms", flush=True)
    return seconds, p99, ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-mb", type=int, default=1500, help="data written (before replication factor 2)")
    parser.add_argument("--topics", type=int, default=12)
    parser.add_argument("--budget", type=int, default=50, help="latency budget, ms above the p99 at rest")
    parser.add_argument("--grid", type=int, nargs="+", default=[5, 10, 20, 50, 100], help="stock tool throttles, MB/s")
    parser.add_argument("--busy-rate", type=int, default=3000, help="records/s (1 kB) of a busy stretch")
    parser.add_argument("--quiet-rate", type=int, default=300, help="records/s of a quiet stretch")
    parser.add_argument("--stretch-s", type=int, default=15)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--canary-rate", type=float, default=None,
                        help="steer kmigrate on an operator's `kmigrate canary --rate N --report FILE` started before "
                             "the stock moves (--canary-report) instead of its own canary (50 records/s)")
    ns = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    spec = dict(zookeeper_ids=(1,), broker_ids=OLD, spare_broker_ids=NEW,
                kafka_settings={"log.segment.bytes": str(256 * 1024 * 1024)})
    back = {n: o for o, n in MAPPING.items()}
    with running_sandbox(spec) as sb:
        bs = sb.bootstrap_servers()
        t0 = time.monotonic()
        layout = load_data(bs, ns.topics, ns.data_mb, ns.seed)
        parts = sum(len(v) for v in layout.values())
        print(f"data: {len(layout)} topics, {parts} partitions, {2 * ns.data_mb} MB of replicas to move "
              f"(written in {time.monotonic() - t0:.0f} s); load: {ns.busy_rate}/{ns.quiet_rate} records/s of 1 kB, "
              f"acks=all, {ns.stretch_s} s stretches", flush=True)
        load = Load(ensure_distribution(TOOL_VERSION), bs, ns.busy_rate, ns.quiet_rate, ns.stretch_s)
        for kind, rate in load.rates:  # the brokers' first writes to a new topic (not counted)
            load.one(kind, rate)
        load.stretches.clear()
        for kind, rate in load.rates * 2:
            load.one(kind, rate)
        rest = list(load.stretches)
        _p50, base, _mx = figures(rest)
        limit = base + ns.budget
        print("at rest: " + ", ".join(f"{s.kind} p99 {s.p99_ms:.0f} ms" for s in rest)
              + f"; baseline (worst stretch) {base:.0f} ms, limit {limit:.0f} ms", flush=True)

        canary = report = None
        if ns.canary_rate:  # the operator's canary: running long before kmigrate's move (its baseline: the last 15 s)
            report = str(Path(tempfile.mkdtemp()) / "canary.json")
            canary = subprocess.Popen([sys.executable, "-m", "migrate", "canary", "--bootstrap-server", bs, "--topic",
                                       "bench-canary", "--rate", str(ns.canary_rate), "--report", report],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        load.start()
        results: dict[str, tuple[float, float, bool]] = {}
        tuned: tuple[int, float] | None = None
        try:
            for mbps in sorted(ns.grid):
                r = measured(load, f"stock --throttle {mbps} MB/s", lambda: stock_move(sb, bs, layout, MAPPING,
                                                                                      mbps * 1_000_000), limit)
                results[f"stock {mbps}"] = r
                load.stop()
                stock_move(sb, bs, layout, back, None)  # back to the old brokers, unthrottled, no load
                load.start()
                if not r[2]:
                    break
                tuned = (mbps, r[0])
            free = measured(load, "stock, unthrottled", lambda: stock_move(sb, bs, layout, MAPPING, None), limit)
            load.stop()
            stock_move(sb, bs, layout, back, None)
            load.start()
            events: list[dict] = []

            def auto() -> float:
                seconds, evs = kmigrate_move(bs, ns.budget, report)
                events.extend(evs)
                return seconds

            k = measured(load, f"kmigrate --throttle auto --latency-budget {ns.budget}ms"
                               + (f" (canary {ns.canary_rate:g}/s)" if canary else ""), auto, limit)
        finally:
            load.stop()
            if canary is not None:
                canary.terminate()
                canary.wait(120)
        for failure in load.failures:
            print(f"load: {failure}")
        rates = [e["new_rate_bytes_per_s"] for e in events if e.get("event") == "throttle-auto"]
        falls = [e for e in events if e.get("event") == "throttle-auto"
                 and e["new_rate_bytes_per_s"] < e["old_rate_bytes_per_s"]]
        if rates:
            print(f"kmigrate's rates: from {rates[0] / 1e6:.1f} to at most {max(rates) / 1e6:.1f} MB/s per broker, "
                  f"{len(falls)} fall(s); {len(rates)} decisions")
        print(f"load average at end: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
        if tuned is None:
            print(f"no rate of the grid kept the stock tool's p99 within {limit:.0f} ms: no tuned rate to compare with")
        else:
            print(f"tuned stock rate: {tuned[0]} MB/s ({tuned[1]:.1f} s)")
            print(f"kmigrate auto / tuned stock: {k[0] / tuned[1]:.2f}x (target at most 0.7x), kmigrate p99 "
                  f"{'within' if k[2] else 'OVER'} the limit")
        print(f"kmigrate auto / unthrottled stock: {k[0] / free[0]:.2f}x (target at most 1.2x when the budget allows "
              f"it: the unthrottled move's p99 was {'within' if free[2] else 'over'} the limit)")


if __name__ == "__main__":
    main()
