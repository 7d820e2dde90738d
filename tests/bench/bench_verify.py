"""Benchmark: ``kmigrate verify`` against the stock ``kafka-console-consumer`` reading the same records.

    python tests/bench/bench_verify.py                         # 2,000,000 records of 1 KB in 12 partitions
    python tests/bench/bench_verify.py --records 200000 --json
    python tests/bench/bench_verify.py --scaling                # also local[1] vs local[2], 1 vs 2 standalone workers

Starts its own sandbox (1 ZooKeeper, 1 broker) on a free loopback prefix, writes N records and
N/10 records to two topics with the stock ``kafka-producer-perf-test`` and waits for them to be on
disk (``sync``; neither is timed), then times, in rounds, one after the other:

* ``kafka-console-consumer --from-beginning --max-messages N > /dev/null`` (wall time of the tool,
  JVM start included), on each topic;
* ``kmigrate verify snapshot --master local[*]`` as a subprocess (wall time of the command: Spark
  start, offset capture, the job, the file), on each topic. Round 0 runs it without the
  class-data-sharing archive, for comparison; the first run that may use the archive records it
  (once per machine); later runs map it, and only the rounds of those are counted (the console
  consumer's runs included);
* the Spark job alone (``take_snapshot``) on N records, in a fresh process whose Spark session is
  already started: verify's read on a JVM that has not read before.

The ratios are of median times (console consumer over verify) at N records: whole command, and job
alone. From the two sizes, each tool's time is split into a fixed cost and a time per record: the
ratio of the read rates is the throughput of each once started, and the bench prints the record
count above which the whole command takes less time than the console consumer.

Records/s and MB/s are over the records and record bytes read (N and N x size). The target on this
2-core machine: verify at least as fast as the stock consumer. Not collected by pytest.

``--chunks`` measures instead what the chunked snapshot (format 2: per-partition chunk digests in the
same Spark pass) costs against the release before it (format 1, ``PREVIOUS_RELEASE``'s Spark job, read
from git): in rounds, each job in a fresh process with Spark started (the rest of the command is the
same code in both), and the size of the snapshot file each writes. Target: within 1.1x of the
previous time, the file under 1 MB::

    python tests/bench/bench_verify.py --chunks                 # 2,000,000 records of 1 KB in 12 partitions
    python tests/bench/bench_verify.py --chunks --records 300000 --rounds 3
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

from migrate.adapters.spark.session import (SparkSettings, driver_class_data_options, kafka_source_jars, spark_session,  # noqa: E402
                                    standalone_cluster)
from migrate.files import client_settings  # noqa: E402
from migrate.sandbox.testing import free_ip_prefix, running_sandbox  # noqa: E402
from migrate.adapters.kafka.offsets import KafkaSide  # noqa: E402
from migrate.runner.verify import Scope, take_snapshot  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
PREVIOUS_RELEASE = "073ea6c"  # the last commit whose snapshots are format 1 (no chunks)


def figures(name: str, seconds: float, records: int, size: int) -> dict:
    return {"name": name, "seconds": round(seconds, 2), "records_per_s": round(records / seconds),
            "mb_per_s": round(records * size / seconds / 1e6, 1)}


def show(f: dict) -> None:
    print(f"{f['name']:<48} {f['seconds']:>8.1f} s {f['records_per_s']:>10} rec/s {f['mb_per_s']:>7.1f} MB/s", flush=True)


def _job_here(bs: str, topic: str, master: str, conf: dict[str, str]) -> dict:
    with spark_session(SparkSettings(master=master, conf=conf)) as spark:
        side = KafkaSide(client_settings(bs))
        t0 = time.monotonic()
        snap = take_snapshot(side, spark, Scope((topic,)), "bench")
        seconds = time.monotonic() - t0
    return {"seconds": seconds, "records": snap.records}


def job_time(bs: str, topic: str, master: str, conf: dict[str, str] | None = None) -> tuple[float, int]:
    """The Spark job alone, in a fresh process (a JVM that has not read before), Spark already started."""
    r = subprocess.run([sys.executable, __file__, "--job", json.dumps([bs, topic, master, conf or {}])],
                       capture_output=True, text=True, timeout=3600)
    assert r.returncode == 0, r.stderr[-1000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    return out["seconds"], out["records"]


def perf_test(sandbox, topic: str, count: int, size: int) -> None:
    """Write ``count`` records of ``size`` bytes with the stock ``kafka-producer-perf-test`` (not timed)."""
    subprocess.run(sandbox.dist.tool_command("kafka-producer-perf-test", [
        "--topic", topic, "--num-records", str(count), "--record-size", str(size), "--throughput", "-1",
        "--producer-props", f"bootstrap.servers={sandbox.bootstrap_servers()}", "acks=1", "linger.ms=20",
        "batch.size=524288", "buffer.memory=134217728"], jvm_opts=["-Xmx1g", "-Dlog4j.configuration=file:/dev/null"]),
        check=True, stdout=subprocess.DEVNULL, timeout=3600)


def _previous_job():
    """The Spark job module of ``PREVIOUS_RELEASE`` (format 1: one digest per partition), from git."""
    import importlib.util

    text = subprocess.run(["git", "show", f"{PREVIOUS_RELEASE}:migrate/adapters/spark_job.py"], cwd=REPO,
                          capture_output=True, text=True, check=True).stdout
    path = Path(tempfile.mkdtemp(prefix="bench-previous-")) / "previous_spark_job.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("previous_spark_job", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["previous_spark_job"] = module
    spec.loader.exec_module(module)
    return module


def _chunk_job_here(bs: str, topic: str, which: str) -> dict:
    """One snapshot job of ``which`` ("previous" or "chunked") in this fresh process: seconds, records, file bytes."""
    from migrate.core.verify.snapshot import PartitionSnapshot, Snapshot, plan_ranges

    with spark_session(SparkSettings(master="local[*]")) as spark:
        side = KafkaSide(client_settings(bs))
        if which == "chunked":
            t0 = time.monotonic()
            snap = take_snapshot(side, spark, Scope((topic,)), "2026-01-01T00:00:00+00:00")
            seconds = time.monotonic() - t0
        else:
            job = _previous_job()
            t0 = time.monotonic()
            parts = [(topic, p) for p in side.view().partitions[topic]]
            offsets = side.offsets(parts, "read_committed")
            compacted = side.compacted([topic])
            ranges = plan_ranges(parts, offsets, compacted)
            found = job.digest_ranges(spark, side.settings.spark_options(), ranges, True, "read_committed")
            snap = Snapshot("c", bs, "2026-01-01T00:00:00+00:00", True, "read_committed", tuple(
                PartitionSnapshot(r.topic, r.partition, r.compacted, *offsets[(r.topic, r.partition)], r.read_from,
                                  r.read_to, *found[(r.topic, r.partition)]) for r in ranges), format_version=1)
            seconds = time.monotonic() - t0
    return {"seconds": seconds, "records": snap.records, "bytes": len(snap.to_json().encode()),
            "chunks": sum(len(p.chunks or ()) for p in snap.partitions)}


def chunk_cost(args) -> None:
    """``--chunks``: format 2 (chunked) against format 1 (previous release) snapshot jobs, in rounds."""
    n, size = args.records, args.size
    spec = dict(zookeeper_ids=(1,), broker_ids=(1,), kafka_heap_mb=1024,
                kafka_settings={"log.segment.bytes": str(512 * 1024 * 1024)})
    with running_sandbox(spec) as sandbox:
        bs = sandbox.bootstrap_servers()
        topic = "bench-verify-chunks"
        admin = AdminClient({"bootstrap.servers": bs})
        for f in admin.create_topics([NewTopic(topic, args.partitions, 1)]).values():
            f.result(60)
        perf_test(sandbox, topic, n, size)
        os.sync()
        print(f"# wrote {n} records of {size} bytes in {args.partitions} partitions", flush=True)
        runs: dict[str, list[dict]] = {"previous": [], "chunked": []}
        for i in range(args.rounds + 1):  # round 0 warms the page cache and the class archive: not counted
            for which in (("previous", "chunked") if i % 2 else ("chunked", "previous")):
                r = subprocess.run([sys.executable, __file__, "--chunk-job", json.dumps([bs, topic, which])],
                                   capture_output=True, text=True, timeout=3600)
                assert r.returncode == 0, r.stderr[-1000:]
                out = json.loads(r.stdout.strip().splitlines()[-1])
                assert out["records"] == n, out
                print(f"round {i} {which:<9} {out['seconds']:7.1f} s  file {out['bytes']:>9} bytes  "
                      f"chunks {out['chunks']}", flush=True)
                if i:
                    runs[which].append(out)
        med = {k: statistics.median(r["seconds"] for r in v) for k, v in runs.items()}
        size_of = {k: v[-1]["bytes"] for k, v in runs.items()}
        ratio = med["chunked"] / med["previous"]
        low = {k: min(r["seconds"] for r in v) for k, v in runs.items()}  # the least disturbed run of each
        print(f"# median job time: previous (format 1) {med['previous']:.1f} s, chunked (format 2) "
              f"{med['chunked']:.1f} s: {ratio:.2f}x (target <= 1.1x); fastest runs {low['previous']:.1f} s and "
              f"{low['chunked']:.1f} s: {low['chunked'] / low['previous']:.2f}x; file {size_of['previous']} -> "
              f"{size_of['chunked']} bytes (target < 1,000,000)", flush=True)
        load = os.getloadavg()
        print(f"# load average at the end: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} cores", flush=True)
        if args.json:
            print(json.dumps({"records": n, "size": size, "partitions": args.partitions, "runs": runs,
                              "median_seconds": med, "fastest_seconds": low, "ratio": round(ratio, 3),
                              "file_bytes": size_of}))


def break_even(fixed_a: float, fixed_b: float, per_record_a: float, per_record_b: float) -> float | None:
    """Records above which a (fixed cost, time per record) takes less time than b; None if never."""
    if per_record_a >= per_record_b:
        return None
    return max(0.0, (fixed_a - fixed_b) / (per_record_b - per_record_a))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--partitions", type=int, default=12)
    ap.add_argument("--scaling", action="store_true", help="also time the job on 1 and 2 cores, and 1 and 2 standalone workers")
    ap.add_argument("--command-runs", type=int, default=3, help="times the whole command is run (default 3)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--chunks", action="store_true", help="the chunked snapshot (format 2) against the previous release's")
    ap.add_argument("--rounds", type=int, default=3, help="--chunks: counted rounds of both jobs (default 3)")
    ap.add_argument("--job", help=argparse.SUPPRESS)  # internal: one job_time run, in this fresh process
    ap.add_argument("--chunk-job", help=argparse.SUPPRESS)  # internal: one --chunks job, in this fresh process
    args = ap.parse_args()
    if args.job:
        print(json.dumps(_job_here(*json.loads(args.job))))
        return
    if args.chunk_job:
        print(json.dumps(_chunk_job_here(*json.loads(args.chunk_job))))
        return
    if args.chunks:
        chunk_cost(args)
        return
    n, size = args.records, args.size
    small = max(n // 10, args.partitions)
    results = []
    spec = dict(zookeeper_ids=(1,), broker_ids=(1,), kafka_heap_mb=1024,
                kafka_settings={"log.segment.bytes": str(512 * 1024 * 1024)})
    with running_sandbox(spec) as sandbox, tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        bs = sandbox.bootstrap_servers()
        topic, small_topic = "bench-verify", "bench-verify-small"
        admin = AdminClient({"bootstrap.servers": bs})  # kept alive until its futures complete
        for f in admin.create_topics([NewTopic(t, args.partitions, 1) for t in (topic, small_topic)]).values():
            f.result(60)
        for name, count in ((topic, n), (small_topic, small)):
            t0 = time.monotonic()
            perf_test(sandbox, name, count, size)
            print(f"# wrote {count} records of {size} bytes in {args.partitions} partitions of {name} in "
                  f"{time.monotonic() - t0:.0f} s (kafka-producer-perf-test, not part of the comparison)", flush=True)

        # No timed read competes with the kernel writing those gigabytes to disk: wait until they are written.
        t0 = time.monotonic()
        os.sync()
        print(f"# sync: {time.monotonic() - t0:.1f} s", flush=True)

        def console_consumer(name: str, count: int) -> dict:
            t0 = time.monotonic()
            with open(os.devnull, "wb") as devnull:
                r = subprocess.run(sandbox.dist.tool_command("kafka-console-consumer", [
                    "--bootstrap-server", bs, "--topic", name, "--from-beginning", "--max-messages", str(count),
                    "--timeout-ms", "120000"], jvm_opts=["-Xmx1g", "-Dlog4j.configuration=file:/dev/null"]),
                    stdout=devnull, stderr=subprocess.PIPE, timeout=3600)
            assert r.returncode == 0, r.stderr[-500:]
            row = figures(f"kafka-console-consumer > /dev/null, {count} records", time.monotonic() - t0, count, size)
            results.append(row)
            show(row)
            return row

        def command(name: str, count: int, archive: bool) -> tuple[dict, bool]:
            # what the run will do: map an archive (one recorded earlier is adopted now) or record one
            opts = driver_class_data_options(SparkSettings(master="local[*]"), kafka_source_jars()) if archive else []
            mapped = bool(opts) and opts[0].startswith("-XX:SharedArchiveFile=")
            t0 = time.monotonic()
            r = subprocess.run([sys.executable, "-m", "migrate", "verify", "snapshot", "--bootstrap-server", bs,
                                "--topic", name, "-o", os.path.join(tmp, "snap.json"), "--master", "local[*]",
                                "--output", "json"], capture_output=True, text=True, cwd=REPO, timeout=3600,
                               env={**os.environ, "KMIGRATE_SPARK_CDS": "1" if archive else "0"})
            assert r.returncode == 0, r.stderr[-1000:]
            seconds = time.monotonic() - t0
            assert json.loads(r.stdout)["records"] == count, r.stdout
            how = "class archive mapped" if mapped else "class archive recorded" if archive else "no class archive"
            row = figures(f"kmigrate verify snapshot, {count} records (whole command, {how})", seconds, count, size)
            results.append(row)
            show(row)
            time.sleep(6)  # a recording is adopted once untouched for 5 s
            return row, mapped

        # Rounds of every run one after the other, so that all see the same moments of a machine whose
        # speed drifts (seen here: the same console run took 10 s and 18 s). Round 0 runs the command
        # without the class archive, for comparison; the first run that may use it records it (about
        # 30 s more, once per machine); later runs map it, and only the rounds of those count.
        times: dict[str, list[float]] = {k: [] for k in ("console", "command", "console_small", "command_small", "job")}
        for i in range(args.command_runs + 1):
            console_s = console_consumer(topic, n)["seconds"]
            row, mapped = command(topic, n, archive=i > 0)
            if not mapped:
                continue
            times["console"].append(console_s)
            times["command"].append(row["seconds"])
            times["console_small"].append(console_consumer(small_topic, small)["seconds"])
            times["command_small"].append(command(small_topic, small, archive=True)[0]["seconds"])
            seconds, records = job_time(bs, topic, "local[*]")
            assert records == n
            times["job"].append(seconds)
            results.append(figures(f"verify Spark job alone, {n} records (fresh JVM, Spark started)", seconds, n, size))
            show(results[-1])
        assert times["command"], "no run mapped the class archive: run with --command-runs 2 or more"
        med = {k: statistics.median(v) for k, v in times.items()}

        # Each tool's time as a fixed cost plus a time per record, from the two sizes.
        def line(big: float, little: float) -> tuple[float, float]:
            per_record = (big - little) / (n - small)
            return big - per_record * n, per_record

        console_fixed, console_per = line(med["console"], med["console_small"])
        verify_fixed, verify_per = line(med["command"], med["command_small"])
        summary_rows = [
            figures(f"kafka-console-consumer, {n} records (median)", med["console"], n, size),
            figures(f"kmigrate verify snapshot, {n} records (whole command, median)", med["command"], n, size),
            figures(f"verify Spark job alone, {n} records (median)", med["job"], n, size),
        ]
        for per, name in ((console_per, "kafka-console-consumer"), (verify_per, "kmigrate verify snapshot")):
            if per > 0:
                summary_rows.append(figures(f"{name}, read rate ({small} to {n} records)", per * n, n, size))
        results += summary_rows
        print("# medians", flush=True)
        for row in summary_rows:
            show(row)
        ratio = {"verify_command_vs_console_consumer": round(med["console"] / med["command"], 2),
                 "verify_job_vs_console_consumer": round(med["console"] / med["job"], 2),
                 "verify_read_rate_vs_console_consumer": round(console_per / verify_per, 2) if verify_per > 0 else None}
        print(f"# speed ratio (console-consumer time / verify time) at {n} records: whole command "
              f"{ratio['verify_command_vs_console_consumer']}x, job alone {ratio['verify_job_vs_console_consumer']}x; "
              f"read rate from {small} to {n} records: {ratio['verify_read_rate_vs_console_consumer']}x", flush=True)
        if verify_per > 0 and console_per > 0:
            even = break_even(verify_fixed, console_fixed, verify_per, console_per)
            print(f"# fixed costs: verify {verify_fixed:.1f} s, console consumer {console_fixed:.1f} s; "
                  + (f"the whole command takes less time than the console consumer above about {even:,.0f} records"
                     if even is not None else "verify reads no faster than the console consumer: it does not catch up"),
                  flush=True)
        else:
            even = None
            print(f"# the time per record is lost in the machine's noise between {small} and {n} records: "
                  "run with more records (--records)", flush=True)
        ratio["break_even_records"] = None if even is None else round(even)

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
