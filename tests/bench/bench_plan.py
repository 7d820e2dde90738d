"""Benchmark: planning a migration of a large cluster.

    python tests/bench/bench_plan.py                      # 1,000,000 partitions, 1,000 brokers
    python tests/bench/bench_plan.py --partitions 100000 --brokers 100 --json

Builds a synthetic snapshot in memory (not timed): ``brokers`` brokers, half of them old
(ids 1..B/2, racks AD-1..AD-3 / FD-1 in id order) and half new (ids 100001.., same AD as the
old broker they replace, FD-2, registered), RF 3, topics of 100 partitions placed round robin
over the old brokers from a per-topic start. The playbook maps old broker i to new broker
100000 + i. Then it times ``build_plan`` (the planning, audit included) and optionally
``plan_to_json``.

Memory: ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` of this process, read after building the
snapshot and again after planning. The second figure is the peak of the whole process
(snapshot + plan + interpreter) and is the one to compare with the 1.5 GB target; the
difference is what planning added on top of the snapshot.

Targets (this 2-core machine): planning <= 5 s, peak <= 1.5 GB. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from migrate.core.model import Broker, ClusterSnapshot, Partition, Topic, ZkEnsemble  # noqa: E402
from migrate.core.zookeeper.config import Server  # noqa: E402
from migrate.core.plan.document import plan_to_json  # noqa: E402
from migrate.core.plan.planner import build_plan  # noqa: E402
from migrate.core.playbook import parse_playbook  # noqa: E402

PARTITIONS_PER_TOPIC = 100
NEW_ID_BASE = 100000


def maxrss_mb() -> float:
    """Peak RSS of this process in MB (ru_maxrss is KiB on Linux, bytes on macOS)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


def synthetic_snapshot(partitions: int, brokers: int) -> ClusterSnapshot:
    n_old = brokers // 2
    old = list(range(1, n_old + 1))
    racks = {}
    for i in old:
        racks[i] = f"AD-{(i - 1) % 3 + 1}/FD-1"
        racks[NEW_ID_BASE + i] = f"AD-{(i - 1) % 3 + 1}/FD-2"
    broker_objs = tuple(
        Broker(b, f"10.{b // 65536}.{(b // 256) % 256}.{b % 256}", 9092, racks[b], "3.9.0", "zk1:2181,zk2:2181,zk3:2181")
        for b in sorted(racks)
    )
    topics = []
    n_topics = max(1, partitions // PARTITIONS_PER_TOPIC)
    configs = {"min.insync.replicas": "2", "unclean.leader.election.enable": "false", "cleanup.policy": "delete"}
    made = 0
    for t in range(n_topics):
        count = PARTITIONS_PER_TOPIC if t < n_topics - 1 else partitions - made
        start = (t * 7919) % n_old
        parts = []
        for p in range(count):
            s = start + p
            reps = (old[s % n_old], old[(s + 1) % n_old], old[(s + 2) % n_old])
            size = ((t * 1_000_003 + p * 7_919) % 1000 + 1) * 1_000_000
            parts.append(Partition(p, reps, reps, reps[0], size))
        made += count
        topics.append(Topic(f"topic-{t:06d}", False, configs, tuple(parts)))
    zk = ZkEnsemble(
        connect="zk1:2181,zk2:2181,zk3:2181",
        config_version=0x100000000,
        servers=tuple(Server(i, f"zk{i}") for i in (1, 2, 3)),
        reconfig_enabled=True,
        server_versions={1: "3.8.6", 2: "3.8.6", 3: "3.8.6"},
        server_modes={1: "leader", 2: "follower", 3: "follower"},
    )
    return ClusterSnapshot(cluster_id="bench", controller_id=1, zookeeper=zk, brokers=broker_objs, topics=tuple(topics))


def synthetic_playbook(brokers: int):
    n_old = brokers // 2
    lines = [
        "kafka: {bootstrap_servers: 'b1:9092'}",
        "zookeeper:",
        "  connect: 'zk1:2181,zk2:2181,zk3:2181'",
        "  add: [{id: 4, host: zk4}, {id: 5, host: zk5}, {id: 6, host: zk6}]",
        "  remove: [1, 2, 3]",
        "brokers:",
        "  mapping:",
    ]
    lines += [f"    {i}: {NEW_ID_BASE + i}" for i in range(1, n_old + 1)]
    lines += ["migration: {throttle: 100MB/s}"]
    return parse_playbook("\n".join(lines) + "\n", "bench.yaml")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", type=int, default=1_000_000)
    ap.add_argument("--brokers", type=int, default=1_000)
    ap.add_argument("--json", action="store_true", help="also time plan_to_json")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    snapshot = synthetic_snapshot(args.partitions, args.brokers)
    playbook = synthetic_playbook(args.brokers)
    gen_s = time.perf_counter() - t0
    gc.collect()
    rss_before = maxrss_mb()
    print(f"generated {args.partitions:,} partitions over {args.brokers:,} brokers in {gen_s:.1f} s (not timed)")
    print(f"peak RSS after generating the snapshot: {rss_before:,.0f} MB")

    t0, c0 = time.perf_counter(), time.process_time()
    plan = build_plan(snapshot, playbook)
    plan_s, plan_cpu = time.perf_counter() - t0, time.process_time() - c0
    rss_after = maxrss_mb()
    print(f"planning: {plan_s:.2f} s wall, {plan_cpu:.2f} s CPU  ({len(plan.moves):,} moves, plan_id {plan.plan_id}, "
          f"{len(plan.warnings)} warnings, {len(plan.findings)} findings)")
    print(f"peak RSS of the whole process after planning: {rss_after:,.0f} MB "
          f"(planning added {rss_after - rss_before:,.0f} MB over the snapshot)")
    leaders = [b.leaders_after for b in plan.broker_totals if b.role == "new"]
    print(f"leaders per new broker: min {min(leaders)}, max {max(leaders)}")
    if args.json:
        t0 = time.perf_counter()
        text = plan_to_json(plan)
        print(f"plan_to_json: {time.perf_counter() - t0:.2f} s, {len(text) / 1e6:,.0f} MB of JSON")
    ok = plan_s <= 5.0 and rss_after <= 1536
    if plan_cpu <= 5.0 < plan_s:
        print(f"note: wall time exceeds CPU time by {plan_s - plan_cpu:.1f} s: the machine is busy (load {os.getloadavg()[0]:.1f})")
    print("within target (<= 5 s, <= 1.5 GB)" if ok else "OVER TARGET (<= 5 s, <= 1.5 GB)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
