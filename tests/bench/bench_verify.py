"""Benchmark: ``kmigrate verify`` against the stock ``kafka-console-consumer`` reading the same records.

    python tests/bench/bench_verify.py                         # 2,000,000 records of 1 KB in 12 partitions
    python tests/bench/bench_verify.py --records 200000 --json
    python tests/bench/bench_verify.py --scaling                # also local[1] vs local[2], 1 vs 2 standalone workers

Starts its own sandbox (1 ZooKeeper, 1 broker) on a free loopback prefix, writes the records with
the stock ``kafka-producer-perf-test`` (not timed), then times, one after the other on the same data:

* ``kafka-console-consumer --from-beginning --max-messages N > /dev/null`` (wall time of the tool,
  JVM start included), before each run of:
* ``kmigrate verify snapshot`` as a subprocess with ``--master local[*]`` (wall time of the command:
  Spark start, offset capture, the job, the file), once without the class-data-sharing archive, then
  ``--command-runs`` times: the first run on a machine records the archive, later runs map it. The
  ratio is of the median times (console consumer, whole command with the archive mapped);
* the Spark job alone (``take_snapshot`` in a session already started), which is what grows with data.

Records/s and MB/s are over the records and record bytes read (N and N x size). The target on this
2-core machine: verify at least as fast as the stock consumer. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from migrate.adapters.spark import (SparkSettings, driver_class_data_options, kafka_source_jars, spark_session,  # noqa: E402
                                    standalone_cluster)
from migrate.clientconfig import client_settings  # noqa: E402
from migrate.sandbox.testing import free_ip_prefix, running_sandbox  # noqa: E402
from migrate.verify.offsets import KafkaSide  # noqa: E402
from migrate.verify.run import Scope, take_snapshot  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def figures(name: str, seconds: float, records: int, size: int) -> dict:
    return {"name": name, "seconds": round(seconds, 2), "records_per_s": round(records / seconds),
            "mb_per_s": round(records * size / seconds / 1e6, 1)}


def show(f: dict) -> None:
    print(f"{f['name']:<48} {f['seconds']:>8.1f} s {f['records_per_s']:>10} rec/s {f['mb_per_s']:>7.1f} MB/s", flush=True)


def job_time(bs: str, topic: str, master: str, conf: dict[str, str] | None = None) -> tuple[float, int]:
    with spark_session(SparkSettings(master=master, conf=conf or {})) as spark:
        side = KafkaSide(client_settings(bs))
        t0 = time.monotonic()
        snap = take_snapshot(side, spark, Scope((topic,)), "bench")
        seconds = time.monotonic() - t0
    return seconds, snap.records


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--partitions", type=int, default=12)
    ap.add_argument("--scaling", action="store_true", help="also time the job on 1 and 2 cores, and 1 and 2 standalone workers")
    ap.add_argument("--command-runs", type=int, default=3, help="times the whole command is run (default 3)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    n, size = args.records, args.size
    results = []
    spec = dict(zookeeper_ids=(1,), broker_ids=(1,), kafka_heap_mb=1024,
                kafka_settings={"log.segment.bytes": str(512 * 1024 * 1024)})
    with running_sandbox(spec) as sandbox, tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        bs = sandbox.bootstrap_servers()
        topic = "bench-verify"
        admin = AdminClient({"bootstrap.servers": bs})  # kept alive until its future completes
        admin.create_topics([NewTopic(topic, args.partitions, 1)])[topic].result(60)
        t0 = time.monotonic()
        subprocess.run(sandbox.dist.tool_command("kafka-producer-perf-test", [
            "--topic", topic, "--num-records", str(n), "--record-size", str(size), "--throughput", "-1",
            "--producer-props", f"bootstrap.servers={bs}", "acks=1", "linger.ms=20", "batch.size=524288",
            "buffer.memory=134217728"], jvm_opts=["-Xmx1g", "-Dlog4j.configuration=file:/dev/null"]),
            check=True, stdout=subprocess.DEVNULL, timeout=3600)
        print(f"# wrote {n} records of {size} bytes in {args.partitions} partitions in {time.monotonic() - t0:.0f} s "
              f"(kafka-producer-perf-test, not part of the comparison)", flush=True)

        def console_consumer() -> dict:
            t0 = time.monotonic()
            with open(os.devnull, "wb") as devnull:
                r = subprocess.run(sandbox.dist.tool_command("kafka-console-consumer", [
                    "--bootstrap-server", bs, "--topic", topic, "--from-beginning", "--max-messages", str(n),
                    "--timeout-ms", "120000"], jvm_opts=["-Xmx1g", "-Dlog4j.configuration=file:/dev/null"]),
                    stdout=devnull, stderr=subprocess.PIPE, timeout=3600)
            assert r.returncode == 0, r.stderr[-500:]
            return figures("kafka-console-consumer > /dev/null", time.monotonic() - t0, n, size)

        # The first run on a machine records the driver's class-data-sharing archive (about 30 s more,
        # once); later runs map it. Each run is timed and named by what it did. The console consumer
        # runs before each, so both see the same moments of a machine whose speed drifts (seen here:
        # the same console run took 10 s and 18 s); the ratio is of the medians.
        consumers, mapped = [], []
        for i in range(args.command_runs + 1):
            consumers.append(console_consumer())
            results.append(consumers[-1])
            show(consumers[-1])
            off = i == 0  # first, for comparison, a run without the archive (KMIGRATE_SPARK_CDS=0)
            # what the run will do: map an archive (one recorded earlier is adopted now) or record one
            opts = [] if off else driver_class_data_options(SparkSettings(master="local[*]"), kafka_source_jars())
            archived = bool(opts) and opts[0].startswith("-XX:SharedArchiveFile=")
            t0 = time.monotonic()
            r = subprocess.run([sys.executable, "-m", "migrate", "verify", "snapshot", "--bootstrap-server", bs,
                                "--topic", topic, "-o", os.path.join(tmp, "snap.json"), "--master", "local[*]",
                                "--output", "json"], capture_output=True, text=True, cwd=REPO, timeout=3600,
                               env={**os.environ, "KMIGRATE_SPARK_CDS": "0" if off else "1"})
            assert r.returncode == 0, r.stderr[-1000:]
            seconds = time.monotonic() - t0
            summary = json.loads(r.stdout)
            assert summary["records"] == n, summary
            how = "no class archive" if off else "class archive mapped" if archived else "class archive recorded"
            command = figures(f"kmigrate verify snapshot (whole command, {how})", seconds, n, size)
            results.append(command)
            show(command)
            if archived:
                mapped.append(command)
            time.sleep(6)  # a recording is adopted once untouched for 5 s
        consumer = figures("kafka-console-consumer > /dev/null (median)", statistics.median(c["seconds"] for c in consumers), n, size)
        command = figures("kmigrate verify snapshot (whole command, archive mapped, median)",
                          statistics.median(c["seconds"] for c in mapped or [command]), n, size)
        results += [consumer, command]
        show(consumer)
        show(command)

        seconds, records = job_time(bs, topic, "local[*]")
        assert records == n
        job = figures("verify Spark job alone (local[*])", seconds, n, size)
        results.append(job)
        show(job)
        ratio = {"verify_command_vs_console_consumer": round(consumer["seconds"] / command["seconds"], 2),
                 "verify_job_vs_console_consumer": round(consumer["seconds"] / job["seconds"], 2)}
        print(f"# speed ratio (console-consumer time / verify time): whole command {ratio['verify_command_vs_console_consumer']}x, "
              f"job alone {ratio['verify_job_vs_console_consumer']}x", flush=True)

        if args.scaling:
            for master in ("local[1]", "local[2]"):
                seconds, _ = job_time(bs, topic, master)
                results.append(figures(f"verify Spark job alone ({master})", seconds, n, size))
                show(results[-1])
            host = free_ip_prefix(1) + ".1"
            for workers in (1, 2):
                with standalone_cluster(host, Path(tmp) / f"spark-{workers}", workers=workers, cores=1, memory="1536m") as url:
                    conf = {"spark.driver.host": host, "spark.driver.bindAddress": host,
                            "spark.executor.memory": "1g", "spark.executor.cores": "1"}
                    seconds, _ = job_time(bs, topic, url, conf)
                results.append(figures(f"verify Spark job alone (standalone, {workers} worker x 1 core)", seconds, n, size))
                show(results[-1])
        load = os.getloadavg()
        print(f"# load average at the end: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} cores", flush=True)
        if args.json:
            print(json.dumps({"records": n, "size": size, "partitions": args.partitions, "results": results,
                              "ratio": ratio, "load_average": load}, indent=2))


if __name__ == "__main__":
    main()
