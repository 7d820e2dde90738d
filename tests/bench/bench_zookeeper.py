"""Write stall of ``kmigrate zookeeper`` on real ensembles: figures, not pass/fail.

For each case a fresh ZooKeeper-only sandbox (tickTime as the sandbox sets it) is started, the
real CLI swaps the voters, and its write probe reports the longest time a write could not be
committed during the change. Run::

    python tests/bench/bench_zookeeper.py [--repeat N] [--case NAME ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from migrate.sandbox.testing import running_sandbox

CASES = {
    "card-3-to-2": dict(old=(1, 2, 3), new=(4, 5), step=False, via_removed=True),
    "3-to-3-new": dict(old=(1, 2, 3), new=(4, 5, 6), step=False, via_removed=False),
    "5-to-5-new": dict(old=(1, 2, 3, 4, 5), new=(6, 7, 8, 9, 10), step=False, via_removed=False),
    "3-to-3-step-by-step": dict(old=(1, 2, 3), new=(4, 5, 6), step=True, via_removed=False),
}


def run_case(name: str, old, new, step: bool, via_removed: bool) -> dict:
    with running_sandbox(dict(zookeeper_ids=old, spare_zookeeper_ids=new, broker_ids=())) as sb:
        by_id = {z.id: z for z in sb.spec.zookeepers}
        via = [by_id[old[0]]] if via_removed else [by_id[i] for i in old]
        args = [
            sys.executable, "-m", "migrate", "zookeeper", "--output", "json",
            "--zookeeper", ",".join(f"{z.host}:{z.client_port}" for z in via),
            "--add", ",".join(f"{i}={by_id[i].host}:2888:3888;{by_id[i].host}:2181" for i in new),
            "--remove", ",".join(map(str, old)),
        ] + (["--step-by-step"] if step else [])
        started = time.monotonic()
        proc = subprocess.run(args, capture_output=True, text=True, timeout=600)
        elapsed = time.monotonic() - started
        if proc.returncode != 0:
            raise SystemExit(f"{name}: kmigrate exited {proc.returncode}: {proc.stderr.strip()}")
        result = json.loads(proc.stdout)
        return {
            "case": name,
            "write_stall_ms": result["write_stall_ms"],
            "answers": [s["answer"] for s in result["steps"]],
            "reconfig_s": round(sum(s["seconds"] for s in result["steps"]), 2),
            "command_s": round(elapsed, 1),
            "writes_ok": result["write_probe"]["writes_ok"],
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--case", action="append", choices=sorted(CASES))
    ns = parser.parse_args()
    for name in ns.case or list(CASES):
        rows = [run_case(name, **CASES[name]) for _ in range(ns.repeat)]
        for r in rows:
            print(f"{r['case']:<22} write stall {r['write_stall_ms']:>8.1f} ms   answers {','.join(r['answers'])}   "
                  f"reconfig {r['reconfig_s']:.2f} s   command {r['command_s']:.1f} s   writes {r['writes_ok']}", flush=True)
        if len(rows) > 1:
            stalls = [r["write_stall_ms"] for r in rows]
            print(f"{name:<22} write stall median {statistics.median(stalls):.1f} ms, max {max(stalls):.1f} ms over {len(rows)} runs")


if __name__ == "__main__":
    main()
