"""README.md's real-cluster block, run as written, in its order, on a sandbox standing in for production.

The commands come from the block between ``<!-- runbook:start -->`` and ``<!-- runbook:end -->``; the
sandbox's addresses replace the README's (``broker1:9092``, ``--add 4,5,6``), the playbook is the
sandbox's (``migrate.sandbox.demo.sandbox_playbook``) copied over the README's ``cp``. The operator's
steps (``# N. operator: ...``) are done with ``kmigrate sandbox`` commands: the joiners run from
``sandbox up``; each rolling restart is ``kmigrate sandbox restart-broker`` then the README's health
gate, per broker; the new brokers (stopped right after ``up``: they do not exist before step 6) start
with ``restart-broker``; the decommission stops the old nodes. Every command must exit 0, and the end
state must be the migration's: no replica on an old broker, the new servers the ZooKeeper voters.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from migrate.adapters.kafka.client import admin_client
from migrate.adapters.kafka.topics import NewTopicSpec, create_topics_and_wait
from migrate.adapters.kafka.local_cluster import produce_records
from migrate.core.zookeeper.config import parse_server_line
from migrate.files import client_settings
from migrate.sandbox.demo import sandbox_playbook
from cluster_waits import settled

pytestmark = [pytest.mark.integration, pytest.mark.timeout(2400)]

REPO = Path(__file__).resolve().parents[2]
# 2 brokers to 2 new ones (the runbook's steps are per broker: 2 make each of them run, at half the restarts of 3);
# the ZooKeeper swap at its usual size, 3 voters replaced
SANDBOX = dict(zookeeper_ids=(1, 2, 3), spare_zookeeper_ids=(4, 5), broker_ids=(1, 2), spare_broker_ids=(3, 4))
OLD, NEW = (1, 2), (3, 4)
TOPICS = (("orders", 6, 2, {"min.insync.replicas": "1"}), ("events", 3, 2, {}), ("single", 1, 1, {}))
RECORDS_PER_TOPIC = 300


def readme_lines() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text.split("<!-- runbook:start -->", 1)[1].split("<!-- runbook:end -->", 1)[0]
    return [ln.strip() for ln in block.splitlines() if ln.strip() and not ln.startswith("```")]


def command_words(line: str, cluster) -> list[str]:
    """A README command line (its comment dropped) with the sandbox's addresses, as argv."""
    text = line.split("  #", 1)[0].strip()
    text = text.replace("broker1:9092", cluster.bootstrap_servers())
    text = text.replace("--add 4,5,6", "--add " + ",".join(str(i) for i in SANDBOX["spare_zookeeper_ids"]))
    text = text.replace("--broker-list 1,2,3,4,5,6", "--broker-list " + ",".join(str(b) for b in OLD + NEW))
    text = text.replace("--duration 30m", "--duration 10s")
    text = text.replace("playbooks/", f"{REPO}/playbooks/")
    return shlex.split(text)


class Walk:
    """Runs the README's lines in a working directory, recording every command and its exit code."""

    def __init__(self, cluster, work: Path):
        self.cluster, self.work = cluster, work
        self.ran: list[tuple[str, int, str]] = []  # (command, exit code, last stderr line)
        self.outputs: dict[str, str] = {}
        self.seconds: list[float] = []  # each command's wall time, in the order of ran

    def run(self, argv: list[str], timeout_s: float = 1200) -> subprocess.CompletedProcess:
        if argv[0] == "kmigrate":
            argv = [sys.executable, "-m", "migrate", *argv[1:]]
        started = time.monotonic()
        proc = subprocess.run(argv, cwd=self.work, capture_output=True, text=True, timeout=timeout_s,
                              env={k: v for k, v in os.environ.items() if k != "KMIGRATE_CRASH_AT"})
        self.seconds.append(time.monotonic() - started)
        shown = " ".join(["kmigrate", *argv[3:]] if argv[0] == sys.executable else argv)
        self.ran.append((shown, proc.returncode, (proc.stderr.strip().splitlines() or [""])[-1]))
        self.outputs[shown] = proc.stdout
        return proc

    def sandbox(self, *args: str) -> None:
        self.run(["kmigrate", "sandbox", *args, "--dir", str(self.cluster.dir)])

    def plan_zookeeper(self) -> dict:
        return json.loads((self.work / "plan.json").read_text())["zookeeper"]

    def operator(self, number: int, text: str, gate: list[str] | None) -> None:
        if text.startswith("start ZooKeeper server"):
            return  # the sandbox started its joiners with the config joiner-config prints (checked below)
        if text.startswith("rolling restart"):
            connect = self.plan_zookeeper()["connect_during" if number == 3 else "connect_after"]
            for b in OLD:
                self.sandbox("restart-broker", str(b), "--zookeeper", connect, "--timeout", "5m")
                assert gate is not None, f"step {number}: no health gate after the rolling restart"
                self.run(gate)
            return
        if text.startswith("start the new broker"):
            for b in NEW:
                self.sandbox("restart-broker", str(b), "--zookeeper", self.plan_zookeeper()["connect_after"])
            return
        if text.startswith("decommission"):
            self.end_state = end_state(self.cluster)
            self.sandbox("status", "-O", "json")
            rows = json.loads(self.outputs[next(reversed(self.outputs))])["nodes"]
            self.end_state["zookeeper_roles"] = {r["id"]: r["role"] for r in rows if r["kind"] == "zookeeper"}
            for name in [f"kafka-{b}" for b in OLD] + [f"zookeeper-{z}" for z in SANDBOX["zookeeper_ids"]]:
                self.sandbox("stop", name)
            return
        raise AssertionError(f"README step {number}: an operator step this test does not know: {text}")

    def walk(self) -> None:
        lines = readme_lines()
        i = 0
        while i < len(lines):
            line = lines[i]
            m = re.match(r"# (\d+)\. operator: (.*)", line)
            if m:
                number, text = int(m.group(1)), m.group(2)
                gate = None
                if text.startswith("rolling restart") and i + 1 < len(lines) and "kmigrate health" in lines[i + 1]:
                    gate, i = command_words(lines[i + 1], self.cluster), i + 1  # run after each broker
                self.operator(number, text, gate)
            elif line.startswith("#"):
                pass
            else:
                self.run(command_words(line, self.cluster))
                if line.startswith("cp "):  # the operator's edit: the sandbox's hosts and ids
                    (self.work / "my-migration.yaml").write_text(sandbox_playbook(self.cluster.spec, "20MB/s"))
            i += 1


def end_state(cluster) -> dict:
    """Where the old brokers' replicas are and which servers vote, read from the cluster itself."""
    admin = admin_client(client_settings(cluster.bootstrap_servers()))
    md = None

    def replicas_on_old() -> list[str]:
        nonlocal md
        md = admin.list_topics(timeout=30)
        return sorted(f"{n}-{p.id}" for n, t in md.topics.items() for p in t.partitions.values() if set(p.replicas) & set(OLD))

    on_old = settled(replicas_on_old, [])  # read again while the brokers learn the last moves' metadata
    servers = [parse_server_line(ln) for ln in cluster.committed_zookeeper_config().splitlines() if ln.startswith("server.")]
    return {"on_old": on_old, "voters": sorted(s.id for s in servers if s.role == "participant"),
            "servers": sorted(s.id for s in servers), "topics": sorted(md.topics)}


@pytest.fixture(scope="module")
def walked(cluster, tmp_path_factory):
    for b in NEW:  # the new brokers do not exist before the runbook's step 6
        cluster.stop(f"kafka-{b}")
    bootstrap = cluster.bootstrap_servers(spare=False)
    specs = [NewTopicSpec(name, [[OLD[(p + r) % len(OLD)] for r in range(rf)] for p in range(parts)], configs)
             for name, parts, rf, configs in TOPICS]
    create_topics_and_wait(admin_client(client_settings(bootstrap)), specs, timeout_s=120)
    records = ((name, f"{name}-{i}".encode(), os.urandom(200)) for name, *_ in TOPICS for i in range(RECORDS_PER_TOPIC))
    assert produce_records(bootstrap, records, timeout_s=120) == 0
    joiner_dynamic = (Path(cluster.node("zookeeper-4").dir) / "zoo.cfg.dynamic").read_text()
    walk = Walk(cluster, tmp_path_factory.mktemp("readme"))
    walk.walk()
    return walk, joiner_dynamic


def test_every_readme_command_exits_0(walked):
    walk, _ = walked
    failed = [(cmd, rc, last) for cmd, rc, last in walk.ran if rc != 0]
    assert not failed, failed
    for (cmd, rc, _), seconds in zip(walk.ran, walk.seconds):
        print(f"exit {rc} after {seconds:5.1f} s: {cmd}")
    print("status says:", next(out for cmd, out in walk.outputs.items() if cmd.startswith("kmigrate status")))
    kinds = [cmd.split()[1] for cmd, _, _ in walk.ran if cmd.startswith("kmigrate ")]
    for kind in ("plan", "zookeeper", "health", "verify", "partitions", "status", "canary", "sandbox"):
        assert kind in kinds, f"no kmigrate {kind} ran: {kinds}"
    assert kinds.count("health") == 2 * len(OLD) + 1 and kinds.count("plan") == 2
    assert kinds.count("sandbox") == 2 * len(OLD) + len(NEW) + 1 + len(OLD) + len(SANDBOX["zookeeper_ids"])


def test_the_old_brokers_are_empty_and_the_new_servers_vote(walked):
    walk, _ = walked
    state = walk.end_state
    assert state["on_old"] == [], state
    assert state["voters"] == state["servers"] == list(SANDBOX["spare_zookeeper_ids"]), state
    assert {name for name, *_ in TOPICS} <= set(state["topics"])
    roles = state["zookeeper_roles"]  # kmigrate sandbox status, before the old servers stop
    assert [roles[z] for z in SANDBOX["zookeeper_ids"]] == ["removed"] * 3, roles
    assert sorted(roles[z] for z in SANDBOX["spare_zookeeper_ids"]) == ["follower", "leader"], roles


def test_joiner_config_prints_the_config_the_joiner_runs_with(walked):
    walk, joiner_dynamic = walked
    printed = next(out for cmd, out in walk.outputs.items() if cmd.startswith("kmigrate zookeeper joiner-config 4"))

    def members(text: str) -> dict[int, str]:
        return {s.id: s.role for s in (parse_server_line(ln) for ln in text.splitlines() if ln.startswith("server."))}

    assert members(printed) == members(joiner_dynamic) == {1: "participant", 2: "participant", 3: "participant",
                                                          4: "observer", 5: "observer"}
