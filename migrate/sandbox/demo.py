"""``kmigrate demo``: the whole migration on a local sandbox, with the canary running throughout.

The runner drives kmigrate's own commands as an operator would (``kmigrate plan``, ``zookeeper``,
``partitions``, ``verify``, each a separate process with ``--output json``), and does the
operator's part itself (rolling restarts, decommissioning). ``Step.kill_after_s`` lets the
end-to-end test SIGKILL a command at chosen moments and run it again, as after a crash.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from migrate.adapters.kafka.client import admin_client
from migrate.adapters.kafka.topics import NewTopicSpec, create_topics_and_wait
from migrate.adapters.kafka.local_cluster import produce_records
from migrate.core.canary import CanaryReport
from migrate.core.plan.document import ROLL_FETCH_SETTINGS
from migrate.core.report.impact import Impact
from migrate.core.report.phases import AT_REST, Mark
from migrate.files import client_settings
from migrate.errors import StepFailed
from migrate.runner.canary import Canary
from migrate.sandbox import Sandbox, SandboxSpec

Progress = Callable[[str], None]

REST_S = 10.0
"""How long the demo's canary runs alone before the first step (its figures at rest), after its warm-up."""

WARMUP_S = 5.0
"""How long the demo's canary runs before its figures at rest start (at most ``rest_s``)."""


def _iso(unix_s: float) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(unix_s, tz=timezone.utc).isoformat(timespec="seconds")

# (name, partitions, replication factor, configs, records): a dozen shapes.
TOPIC_SHAPES = (
    ("orders", 12, 3, {"min.insync.replicas": "2"}, 6000),
    ("payments", 6, 3, {"min.insync.replicas": "2"}, 4000),
    ("customers", 3, 3, {"cleanup.policy": "compact", "min.insync.replicas": "2"}, 3000),
    ("clicks", 8, 2, {}, 6000),
    ("audit-log", 1, 3, {"min.insync.replicas": "2"}, 2000),
    ("metrics", 4, 2, {}, 4000),
    ("inventory", 5, 3, {"min.insync.replicas": "2"}, 2500),
    ("sessions", 2, 3, {"cleanup.policy": "compact", "min.insync.replicas": "2"}, 2000),
    ("notifications", 3, 2, {}, 2000),
    ("scratch", 1, 1, {}, 500),
    ("shipments", 6, 3, {"min.insync.replicas": "2"}, 3000),
    ("empty-topic", 2, 3, {"min.insync.replicas": "2"}, 0),
)

PLAYBOOK = """\
# Written by kmigrate demo for its sandbox: brokers {old} -> {new}, ZooKeeper {zk_old} -> {zk_new}.
kafka:
  bootstrap_servers: "{bootstrap}"{command_config}
zookeeper:
  connect: "{connect}"
  add:
{add}
  remove: [{zk_remove}]
brokers:
  mapping: {{{mapping}}}
  new:
{new_racks}
migration:
  throttle: {throttle}
"""


def sandbox_playbook(spec: SandboxSpec, throttle: str, command_config: Path | None = None) -> str:
    """The playbook of a sandbox's migration: its brokers to its spare brokers (in id order), its ZooKeeper
    voters replaced by its joiners, at ``throttle``; ``command_config``: the Kafka client file of a secured one."""
    old = [b.id for b in spec.brokers if not b.spare]
    new = [b for b in spec.brokers if b.spare]
    voters = [z.id for z in spec.zookeepers if not z.joiner]
    joiners = [z for z in spec.zookeepers if z.joiner]
    return PLAYBOOK.format(
        old=",".join(map(str, old)), new=",".join(str(b.id) for b in new),
        zk_old=",".join(map(str, voters)), zk_new=",".join(str(z.id) for z in joiners),
        bootstrap=spec.bootstrap_servers(spare=False), connect=spec.zookeeper_connect(),
        add="\n".join(f"    - {{id: {z.id}, host: {z.host}}}" for z in joiners),
        zk_remove=", ".join(map(str, voters)), mapping=", ".join(f"{o}: {n.id}" for o, n in zip(old, new)),
        new_racks="\n".join(f"    {b.id}: {{availability_domain: {b.rack.split('/')[0]}, fault_domain: {b.rack.split('/')[1]}}}"
                            for b in new),
        throttle=throttle,
        command_config=f'\n  command_config: "{command_config}"' if command_config else "",
    )


@dataclass
class Phase:
    name: str
    seconds: float
    detail: str = ""


@dataclass
class DemoReport:
    phases: list[Phase] = field(default_factory=list)
    bytes_moved: int = 0
    partitions_moved: int = 0
    topics_moved: int = 0
    verify: dict = field(default_factory=dict)
    zookeeper: dict = field(default_factory=dict)
    canary: CanaryReport | None = None
    kills: list[dict] = field(default_factory=list)
    sandbox_dir: str = ""
    impact: Impact | None = None  # the canary's figures per phase and over time (set at the end)

    @property
    def ok(self) -> bool:
        return bool(self.canary and self.canary.ok and self.verify.get("ok"))

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "phases": [{"name": p.name, "seconds": round(p.seconds, 1), "detail": p.detail} for p in self.phases],
            "bytes_moved": self.bytes_moved, "partitions_moved": self.partitions_moved, "topics_moved": self.topics_moved,
            "verify": self.verify, "zookeeper": self.zookeeper,
            "canary": self.canary.to_dict() if self.canary else None,
            "kills": self.kills, "sandbox_dir": self.sandbox_dir,
            "client_impact": self.impact.to_dict(timeline=False) if self.impact else None,
        }


def kmigrate_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "migrate", *args]


def run_json(args: list[str], what: str, ok_codes: tuple[int, ...] = (0,), timeout_s: float = 1800,
             env: dict[str, str] | None = None) -> dict:
    """Run a kmigrate command with ``--output json``; return its last JSON document (or JSON line)."""
    proc = subprocess.run(kmigrate_command(*args), capture_output=True, text=True, timeout=timeout_s,
                          env={**os.environ, **(env or {})})
    if proc.returncode not in ok_codes:
        last = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise StepFailed(f"{what} failed (exit {proc.returncode}): {last}")
    return last_json(proc.stdout)


def last_json(text: str) -> dict:
    text = text.strip()
    if not text:
        return {}
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        for line in reversed(text.splitlines()):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    return {}


def run_with_kills(args: list[str], what: str, kill_after_s: list[float], report: DemoReport,
                   progress: Progress, timeout_s: float = 1800, env: dict[str, str] | None = None) -> dict:
    """Run a command, SIGKILL it after each delay in ``kill_after_s`` (a fresh run each time), then run it to the end."""
    for delay in kill_after_s:
        proc = subprocess.Popen(kmigrate_command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env={**os.environ, **(env or {})})
        try:
            proc.wait(timeout=delay)
            killed = False
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            killed = True
        out, err = proc.communicate()
        report.kills.append({"command": what, "after_s": round(delay, 2), "killed": killed,
                             "exit": proc.returncode})
        progress(f"{what}: {'killed with SIGKILL' if killed else f'finished (exit {proc.returncode})'} "
                 f"after {delay:.1f} s; running it again")
    return run_json(args, what, timeout_s=timeout_s, env=env)


class Demo:
    """The whole migration on a sandbox: old brokers and ZooKeeper servers replaced by new ones, live."""

    TITLE = "kmigrate demo: the canary during the migration"

    def __init__(self, directory: Path, ip_prefix: str = "127.0.0", throttle: str = "50MB/s",
                 records_scale: float = 1.0, canary_rate: float = 100.0,
                 kills: dict[str, list[float]] | None = None, progress: Progress = lambda msg: None,
                 security: str = "plaintext", spec: dict | None = None, topic_shapes: tuple = TOPIC_SHAPES,
                 rest_s: float = REST_S):
        """``spec``: SandboxSpec fields instead of the default 3+3 ZooKeeper servers and 3+3 brokers on the
        default releases (e.g. ``kafka_version``, fewer nodes); ``topic_shapes``: the topics, as
        :data:`TOPIC_SHAPES` (a replication factor at most the old brokers); ``rest_s``: how long the canary
        runs alone, every node up, before the first step (its figures "at rest", the baseline of the others)."""
        self.dir = Path(directory)
        self.sandbox = Sandbox(self.dir / "sandbox")
        self.spec = SandboxSpec(**{"zookeeper_ids": (1, 2, 3), "spare_zookeeper_ids": (4, 5, 6), "broker_ids": (1, 2, 3),
                                   "spare_broker_ids": (4, 5, 6), "ip_prefix": ip_prefix, "security": security,
                                   **(spec or {})})
        self.topic_shapes = topic_shapes
        self.throttle = throttle
        self.records_scale = records_scale
        self.canary_rate = canary_rate
        self.kills = kills or {}
        self.progress = progress
        self.report = DemoReport(sandbox_dir=str(self.sandbox.dir))
        self.canary: Canary | None = None
        self.rest_s = rest_s
        self.marks: list[tuple[str, float, float]] = []  # (phase, start, end) on time.monotonic()

    # ----------------------------------------------------------------- phases
    def _phase(self, name: str, fn: Callable[[], str | None]) -> None:
        self.progress(name)
        started = time.monotonic()
        try:
            detail = fn() or ""
        finally:
            self.marks.append((name, started, time.monotonic()))
        self.report.phases.append(Phase(name, time.monotonic() - started, detail))

    def at_rest(self) -> str:
        """The canary alone for ``rest_s``, every node up, before any step: its figures at rest."""
        time.sleep(self.rest_s)
        return f"the canary alone for {self.rest_s:g} s, every node up"

    def stop_canary(self) -> None:
        """The canary's final report and its figures per phase (the phases after the one that started it)."""
        if self.canary is None:
            return
        self.report.canary = self.canary.stop()
        marks = [Mark(name, self.canary.offset(a), self.canary.offset(b)) for name, a, b in self.marks
                 if self.canary.offset(a) >= 0]  # the phases from the canary's start on (not the one starting it)
        self.report.impact = Impact.of(self.TITLE, self.canary.timeline(), marks,
                                       started_at=_iso(self.canary.started_unix))

    def run(self) -> DemoReport:
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            self._phase("start the sandbox", self.start_sandbox)
            self._phase("create topics with data", self.create_topics)
            self._phase("start the canary", self.start_canary)
            self._phase(f"{AT_REST} (the canary alone, every node up)", self.at_rest)
            self._phase("kmigrate plan", self.plan)
            self._phase("kmigrate verify snapshot", self.verify_snapshot)
            self._phase("rolling restart: brokers join the new ZooKeeper servers", self.rolling_restart_old)
            self._phase("kmigrate zookeeper", self.migrate_zookeeper)
            self._phase("kmigrate partitions", self.migrate_partitions)
            self._phase("kmigrate verify compare", self.verify_compare)
            self._phase("decommission old brokers and ZooKeeper servers", self.decommission)
            self._phase("rolling restart: new brokers on the new ZooKeeper servers only", self.rolling_restart_new)
        finally:
            self.stop_canary()
        return self.report

    def start_sandbox(self) -> str:
        self.sandbox.up(self.spec, progress=self.progress)
        self.playbook = self.dir / "playbook.yaml"
        p = self.spec.ip_prefix
        self.playbook.write_text(sandbox_playbook(self.spec, self.throttle, self.command_config))
        secured = f", {self.spec.security} with ACLs" if self.spec.security != "plaintext" else ""
        return f"{len(self.spec.zookeepers)} ZooKeeper servers, {len(self.spec.brokers)} brokers on {p}.x{secured}"

    @property
    def command_config(self) -> Path | None:
        """kmigrate's own ``--command-config`` on a secured sandbox (its least-privileged Kafka user)."""
        sec = self.sandbox.security
        return sec.properties_file("kmigrate") if sec else None

    def _client_flags(self) -> list[str]:
        return ["--command-config", str(self.command_config)] if self.command_config else []

    def _env(self) -> dict[str, str]:
        """The environment of kmigrate's commands: on a secured sandbox, ZooKeeper's super user for the
        reconfig (KMIGRATE_ZK_AUTH: in the environment, never on a command line)."""
        sec = self.sandbox.security
        if sec is None:
            return {}
        return {"KMIGRATE_ZK_AUTH": sec.zookeeper_auth_file.read_text().strip()}

    def create_topics(self) -> str:
        bootstrap = self.spec.bootstrap_servers(spare=False)
        old = [b.id for b in self.spec.brokers if not b.spare]
        topics = []
        for i, (name, parts, rf, configs, _n) in enumerate(self.topic_shapes):
            # Explicit assignments on the old brokers: this is the cluster before the new nodes exist.
            assignment = [[old[(p + r + i) % len(old)] for r in range(rf)] for p in range(parts)]
            topics.append(NewTopicSpec(name, assignment, configs))
        create_topics_and_wait(admin_client(self.sandbox.client_settings(bootstrap, "admin")), topics, timeout_s=120)
        counts = [int(n * self.records_scale) for *_, n in self.topic_shapes]
        if produce_records(bootstrap, self._records(counts), timeout_s=180, settings=self.sandbox.kafka_settings("client")):
            raise StepFailed("records were not acknowledged within 180 s")
        return f"{len(self.topic_shapes)} topics, {sum(counts)} records of 512 bytes"

    def _records(self, counts: list[int]):
        """``(topic, key, value)`` of the demo's records: random 512-byte values, the same every run (seed 7);
        compacted topics get 200 keys, so compaction has something to do."""
        rng = random.Random(7)
        for (name, _parts, _rf, configs, _n), count in zip(self.topic_shapes, counts):
            keys = 200 if configs.get("cleanup.policy") == "compact" else 10**9
            for _ in range(count):
                key = str(rng.randrange(keys)).encode()
                yield name, key, rng.randbytes(512)

    def start_canary(self) -> str:
        settings = client_settings(self.spec.bootstrap_servers(), self.command_config)
        rf = min(3, len(self.spec.broker_ids))  # a lean sandbox of 2 old brokers: a canary topic they can hold
        self.canary = Canary(settings, rate_per_s=self.canary_rate, replication_factor=rf,
                             min_insync_replicas=min(2, rf)).start()
        # its first seconds are slower (seen: a p99 of 741 ms over the first 10 s, 21-34 ms from the 6th s on):
        # left to this phase, so that "at rest" measures the cluster, not the canary's start
        warmup_s = min(WARMUP_S, self.rest_s)
        time.sleep(warmup_s)
        return (f"{self.canary.partitions} partitions, {self.canary_rate:.0f} records/s, acks=all; "
                f"{warmup_s:g} s of warm-up")

    def plan(self) -> str:
        proc = subprocess.run(kmigrate_command("plan", "--playbook", str(self.playbook), "-o", str(self.dir / "plan.json")),
                              capture_output=True, text=True, timeout=600, env=os.environ.copy())
        self.plan_output = proc.stdout
        self.progress(proc.stdout)
        if proc.returncode != 0:
            raise StepFailed(f"kmigrate plan found blocking problems: {proc.stderr.strip()}")
        doc = json.loads((self.dir / "plan.json").read_text())
        return f"plan {doc['plan_id']}: {len(doc['moves'])} partitions to move"

    def verify_snapshot(self) -> str:
        doc = run_json(["verify", "snapshot", "-o", str(self.dir / "before.json"), "--bootstrap-server",
                        self.spec.bootstrap_servers(spare=False), *self._client_flags(), "--output", "json"],
                       "kmigrate verify snapshot")
        return f"{doc.get('records', '?')} records in {doc.get('partitions', '?')} partitions"

    def rolling_restart_old(self) -> str:
        connect = self.spec.zookeeper_connect(self.spec.zookeepers)
        old = [b.id for b in self.spec.brokers if not b.spare]
        # as the runbook's first roll says (ROLL_STALL_HINT): the fetch settings that shorten later leader moves' stalls
        self.sandbox.rolling_restart(old, connect, progress=self.progress, settings=dict(ROLL_FETCH_SETTINGS))
        return f"brokers {old} now use zookeeper.connect={connect}"

    def migrate_zookeeper(self) -> str:
        doc = run_with_kills(
            ["zookeeper", "--playbook", str(self.playbook), "--bootstrap-server", self.spec.bootstrap_servers(),
             "--output", "json"],
            "kmigrate zookeeper", self.kills.get("zookeeper", []), self.report, self.progress, env=self._env())
        self.report.zookeeper = doc
        stall, leaving = doc.get("write_stall_ms"), doc.get("leaving_write_stall_ms")
        return f"{doc.get('status')}: voters now {doc.get('voters_after')}" + (
            f"; longest ZooKeeper write stall {stall:.0f} ms" if stall is not None else "") + (
            f" ({leaving:.0f} ms for a client of a leaving server)" if leaving is not None else "")

    def migrate_partitions(self) -> str:
        doc = run_with_kills(
            ["partitions", "--playbook", str(self.playbook), "--bootstrap-server", self.spec.bootstrap_servers(),
             "--poll-interval", "1s", "--output", "json"],
            "kmigrate partitions", self.kills.get("partitions", []), self.report, self.progress)
        self.report.bytes_moved = int(doc.get("bytes_copied") or 0)
        self.report.partitions_moved = int(doc.get("partitions_moved") or 0)
        self.report.topics_moved = int(doc.get("topics_recorded_total") or 0)
        return f"{self.report.topics_moved} topics recorded, {self.report.bytes_moved} bytes copied (last run)"

    def verify_compare(self) -> str:
        doc = run_json(["verify", "compare", str(self.dir / "before.json"), "--bootstrap-server",
                        self.spec.bootstrap_servers(), *self._client_flags(), "--output", "json"], "kmigrate verify compare",
                       ok_codes=(0, 1))
        self.report.verify = doc
        return "all partitions match" if doc.get("ok") else "DIFFERENCES FOUND"

    def decommission(self) -> str:
        for b in (b for b in self.spec.brokers if not b.spare):
            self.progress(f"stopping broker {b.id}")
            self.sandbox.stop(b.name)
        for z in (z for z in self.spec.zookeepers if not z.joiner):
            self.progress(f"stopping ZooKeeper server {z.id}")
            self.sandbox.stop(z.name)
        return (f"brokers {', '.join(str(b.id) for b in self.spec.brokers if not b.spare)} and ZooKeeper servers "
                f"{', '.join(str(z.id) for z in self.spec.zookeepers if not z.joiner)} stopped")

    def rolling_restart_new(self) -> str:
        connect = self.spec.zookeeper_connect(tuple(z for z in self.spec.zookeepers if z.joiner))
        new = [b.id for b in self.spec.brokers if b.spare]
        self.sandbox.rolling_restart(new, connect, progress=self.progress)
        return f"brokers {new} now use zookeeper.connect={connect}"

    def teardown(self) -> None:
        self.sandbox.down()
