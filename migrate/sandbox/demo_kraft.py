"""``kmigrate demo --kraft``: move the brokers to new nodes, then leave ZooKeeper (KIP-866), live, on a sandbox;
with ``move=False`` (``--no-move``) the brokers stay where they are: only ZooKeeper to KRaft.

As an operator would, each kmigrate step a process of its own (``--output json``), the operator's part (restarts,
decommissioning) done by the sandbox, the canary running from before the plan to after ZooKeeper is stopped:

1. a ZooKeeper-mode cluster (1 ZooKeeper server, chroot ``/kafka``, brokers 1-3, spares 4-6): topics with RF 3 and
   ``min.insync.replicas=2``, a compacted one, a transactional one (committed transactions and an aborted one),
   consumer groups with committed offsets; on a secured sandbox its ACLs. Their state is read (**before**).
2. ``kmigrate plan`` (the playbook's ``kraft:`` section), ``verify snapshot``, ``partitions`` (brokers 1-3 to 4-6,
   in ZooKeeper mode: ZooKeeper is retired, not moved), brokers 1-3 stopped. Without the move: no spares 4-6, no
   ``partitions``, no decommission; brokers 1-3 are the ones that go to KRaft (the playbook keeps them).
3. ``kraft precheck``; the controller; gate controllers-ready; roll 1; gate dual-write; roll 2; gate brokers-kraft.
   Before each restart the demo runs ``kraft controller-config`` / ``kraft broker-config --phase
   migration --full`` / ``--phase kraft`` (from the brokers' files, as an operator gives them) and checks that the
   sandbox restarts the node with exactly that config (a StepFailed naming the keys otherwise).
4. finalize (``controller-config --finalize``); gate finalized; ZooKeeper stopped; ``verify compare`` (the one
   compare: against the snapshot taken before the plan, it covers the whole migration, move included);
   ``kmigrate health``, ``status`` and ``kraft status`` with a bootstrap server only (each one's exit and last line
   reported: ``kraft status`` reads ZooKeeper); the state read again (**after**) and compared.

A gate is ``kraft status --wait-for GATE`` (:meth:`KraftDemo.gate`). Seeded SIGKILLs (``kill_seed``) hit
``partitions`` and each gate once, at a random moment, and the command is run again: it must converge.
Each phase records its time and, the canary running, its p99 latency and whether its longest stall was set there.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from migrate.core.canary import percentile
from migrate.core.report.phases import AT_REST
from migrate.errors import StepFailed
from migrate.sandbox.demo import Demo, DemoReport, Phase, Progress, kmigrate_command, run_json, run_with_kills
from migrate.sandbox.kraft import FIRST_CONTROLLER_ID, ZOOKEEPER_MODE_FILE, KraftSandbox
from migrate.sandbox.layout import CONTROLLER_PORT

# (name, partitions, replication factor, configs, records); "payments" is written in transactions instead.
KRAFT_SHAPES = (
    ("orders", 6, 3, {"min.insync.replicas": "2"}, 1200),
    ("customers", 3, 3, {"cleanup.policy": "compact", "min.insync.replicas": "2"}, 600),
    ("clicks", 3, 2, {"retention.ms": "86400000"}, 600),
    ("payments", 3, 3, {"min.insync.replicas": "2"}, 0),
)
TRANSACTIONAL_TOPIC = "payments"
TRANSACTIONS = (100, 100, 50, 100)  # records per transaction; the third one is aborted
ABORTED = 2
GROUPS = {"demo-billing": "orders", "demo-payments-audit": TRANSACTIONAL_TOPIC}

KRAFT_PLAYBOOK = """\
# Written by kmigrate demo --kraft for its sandbox: {what}, then KRaft.
kafka:
  bootstrap_servers: "{bootstrap}"{command_config}
zookeeper:
  connect: "{connect}"
{brokers}
migration:
  throttle: {throttle}
kraft:
  controllers:
{controllers}
  listener_name: CONTROLLER
  listener_port: {port}
  security_protocol: PLAINTEXT
  metadata_log_dir: "{metadata_log_dir}"
"""


def compare_state(before: dict, after: dict) -> list[str]:
    """The differences between two readings of :meth:`KraftDemo.read_state` (group offsets, topic configs, ACLs),
    one line each; ``[]`` when the same. Topics and groups present before only are compared.

    >>> s = {"offsets": {"g": {"t/0": 5}}, "configs": {"t": {"cleanup.policy": "compact"}}, "acls": ["a"]}
    >>> compare_state(s, s)
    []
    >>> compare_state(s, {"offsets": {"g": {"t/0": 4}}, "configs": {"t": {}}, "acls": []})
    ['group g t/0: committed offset 5 before, 4 after', 'topic t cleanup.policy: compact before, (not set) after', 'ACL a: gone after']
    """
    out = []
    for group, offsets in sorted(before["offsets"].items()):
        now = after["offsets"].get(group, {})
        for tp in sorted(set(offsets) | set(now)):
            if offsets.get(tp) != now.get(tp):
                out.append(f"group {group} {tp}: committed offset {offsets.get(tp)} before, {now.get(tp)} after")
    for topic, configs in sorted(before["configs"].items()):
        now = after["configs"].get(topic)
        if now is None:
            out.append(f"topic {topic}: gone after")
            continue
        for key in sorted(set(configs) | set(now)):
            if configs.get(key) != now.get(key):
                out.append(f"topic {topic} {key}: {configs.get(key, '(not set)')} before, {now.get(key, '(not set)')} after")
    if before["acls"] is not None or after["acls"] is not None:
        was, now = set(before["acls"] or ()), set(after["acls"] or ())
        out += [f"ACL {a}: gone after" for a in sorted(was - now)] + [f"ACL {a}: new after" for a in sorted(now - was)]
    return out


@dataclass
class KraftDemoReport(DemoReport):
    verify_after_zookeeper: dict = field(default_factory=dict)
    state_before: dict = field(default_factory=dict)
    state_differences: list[str] = field(default_factory=list)
    state_compared: bool = False
    kraft_status: dict = field(default_factory=dict)  # the last kraft status read (finalized)
    zookeeper_stopped: bool = False
    without_zookeeper: dict = field(default_factory=dict)  # what was tried after ZooKeeper stopped, and how it went
    failed: list[str] = field(default_factory=list)
    kill_seed: int | None = None  # the seed of the SIGKILL moments (None: no kill): the same seed, the same moments
    plan_partitions: int = 0  # partitions the plan moves (partitions_moved: its last run only, after a kill)
    stall_target_s: float = 1.0
    moved: bool = True  # the variant: brokers moved to new nodes first (True) or left where they are (--no-move)

    @property
    def every_broker_kraft(self) -> bool:
        modes = self.kraft_status.get("brokers") or {}
        return bool(modes) and set(modes.values()) == {"kraft"}

    @property
    def longest_stall_s(self) -> float | None:
        return None if self.canary is None else max(self.canary.produce_stall_s, self.canary.consume_stall_s)

    @property
    def ok(self) -> bool:
        return bool(self.canary and self.canary.ok and self.verify_after_zookeeper.get("ok")
                     and self.state_compared and not self.state_differences and self.zookeeper_stopped
                     and self.kraft_status.get("phase") == "finalized" and self.every_broker_kraft and not self.failed)

    def to_dict(self) -> dict:
        d = super().to_dict()
        d["phases"] = [{"name": p.name, "seconds": round(p.seconds, 1), "detail": p.detail,
                        **({"canary": p.canary} if getattr(p, "canary", None) else {})} for p in self.phases]
        stall = self.longest_stall_s
        return {**d, "ok": self.ok, "variant": "move then KRaft" if self.moved else "no move: only ZooKeeper to KRaft",
                "brokers_moved": self.moved, "verify_after_zookeeper": self.verify_after_zookeeper,
                "state": {"compared": self.state_compared, "same": self.state_compared and not self.state_differences,
                          "differences": self.state_differences, "before": self.state_before},
                "kraft_status": self.kraft_status, "every_broker_kraft": self.every_broker_kraft,
                "zookeeper_stopped": self.zookeeper_stopped, "without_zookeeper": self.without_zookeeper,
                "kill_seed": self.kill_seed, "plan_partitions": self.plan_partitions, "longest_stall_s": stall, "stall_target_s": self.stall_target_s,
                "stall_target_met": None if stall is None else stall <= self.stall_target_s, "failed": self.failed}


class _Stopped(Exception):
    """A phase failed (recorded in the report): the phases after it do not run."""


@dataclass
class KraftPhase(Phase):
    canary: dict = field(default_factory=dict)


class KraftDemo(Demo):
    """Brokers 1-3 to 4-6 in ZooKeeper mode (unless ``move`` is False), then ZooKeeper mode to KRaft with one
    controller, live."""

    TITLE = "kmigrate demo --kraft: the canary during the migration"

    def __init__(self, directory: Path, ip_prefix: str = "127.0.0", throttle: str = "20MB/s",
                 records_scale: float = 1.0, canary_rate: float = 50.0, progress: Progress = lambda msg: None,
                 security: str = "plaintext", kill_seed: int | None = 29, spec: dict | None = None,
                 controller_ids: tuple[int, ...] = (FIRST_CONTROLLER_ID,), move: bool = True):
        """``kill_seed``: the seed of the SIGKILL moments (None: no kill); ``move`` False: no spare brokers, no
        ``partitions``, no decommission: brokers 1-3 go to KRaft where they are."""
        super().__init__(directory, ip_prefix=ip_prefix, throttle=throttle, records_scale=records_scale,
                         canary_rate=canary_rate, progress=progress, security=security, topic_shapes=KRAFT_SHAPES,
                         spec={"zookeeper_ids": (1,), "spare_zookeeper_ids": (), "broker_ids": (1, 2, 3),
                               "spare_broker_ids": (4, 5, 6) if move else (), "chroot": "/kafka", "kafka_heap_mb": 256,
                               "zookeeper_heap_mb": 64, **(spec or {})})
        self.move = move
        self.report = KraftDemoReport(sandbox_dir=str(self.sandbox.dir), kill_seed=kill_seed, moved=move)
        self.kraft = KraftSandbox(self.sandbox)
        self.controller_ids = controller_ids
        self.rng = random.Random(kill_seed) if kill_seed is not None else None
        self.old = [b.id for b in self.spec.brokers if not b.spare]
        self.new = [b.id for b in self.spec.brokers if b.spare] if move else list(self.old)  # the brokers that go to KRaft

    # ------------------------------------------------------------ the run
    def phase_list(self) -> list[tuple[str, Callable[[], str | None]]]:
        """The phases in order: without the move, no ``partitions`` and no decommission. One ``verify compare``,
        after ZooKeeper is stopped, against the snapshot taken before the plan (a Spark run costs 30-60 s of CPU;
        the gates and the canary watch the steps in between)."""
        moving = [("kmigrate partitions (ZooKeeper mode, brokers to the new nodes)", self.migrate_partitions),
                  ("decommission the old brokers", self.decommission)] if self.move else []
        return [
            ("start the sandbox (ZooKeeper mode)", self.start_sandbox),
            ("create topics, transactions and consumer groups", self.create_topics),
            ("start the canary", self.start_canary),
            (f"{AT_REST} (the canary alone, every node up)", self.at_rest),
            ("read group offsets, topic configs and ACLs (before)", self.read_before),
            ("kmigrate plan", self.plan),
            ("kmigrate verify snapshot", self.verify_snapshot),
            *moving,
            ("kmigrate kraft precheck", self.precheck),
            ("KRaft controller (kraft controller-config), gate controllers-ready", self.controllers),
            ("roll 1 (kraft broker-config --phase migration), gate dual-write", self.roll_1),
            ("roll 2 (kraft broker-config --phase kraft), gate brokers-kraft", self.roll_2),
            ("finalize (controller-config --finalize), gate finalized", self.finalize),
            ("stop ZooKeeper", self.stop_zookeeper),
            ("kmigrate verify compare (no ZooKeeper, against the snapshot before the plan)", self.verify_without_zookeeper),
            ("kmigrate health, status, kraft status (no ZooKeeper)", self.without_zookeeper),
            ("read group offsets, topic configs and ACLs (after) and compare", self.compare_after),
        ]

    def run(self) -> KraftDemoReport:
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            for name, fn in self.phase_list():
                self._phase(name, fn)
        except _Stopped:  # a step failed: the report says which, with what the phases before it showed
            pass
        finally:
            self.stop_canary()
        return self.report

    def _phase(self, name: str, fn: Callable[[], str | None]) -> None:
        """A phase with its time and, the canary running, its p99 latency and longest stall (set in this phase)."""
        self.progress(name)
        started = time.monotonic()
        ledger = self.canary.ledger if self.canary is not None else None
        mark = len(ledger.latencies_ms) if ledger is not None else 0
        stall_before = self._stall_so_far()
        failed = None
        try:
            detail = fn() or ""
        except StepFailed as exc:
            failed, detail = str(exc), f"FAILED: {exc}"
        finally:
            self.marks.append((name, started, time.monotonic()))
        phase = KraftPhase(name, time.monotonic() - started, detail)
        if ledger is not None:
            window = sorted(ledger.latencies_ms[mark:])
            stall = self._stall_so_far()
            phase.canary = {"acknowledged": len(window), "latency_p99_ms": None if not window else round(percentile(window, 0.99), 1),
                            "longest_stall_s": stall if stall > stall_before else None,
                            "stall_below_s": stall_before if stall <= stall_before else None}
        self.report.phases.append(phase)
        if failed is not None:
            self._fail(f"{name}: {failed}")
            raise _Stopped

    def _stall_so_far(self) -> float:
        if self.canary is None or self.canary.ledger is None:
            return 0.0
        now = self.canary.report()
        return round(max(now.produce_stall_s, now.consume_stall_s), 3)

    def _fail(self, what: str) -> None:
        """A step whose outcome is wrong but does not stop the run (a difference found): named in the report."""
        self.report.failed.append(what)

    # ------------------------------------------------------------- helpers
    def _kill_after(self, low_s: float, high_s: float) -> list[float]:
        """One seeded SIGKILL moment in [low_s, high_s], or none without a seed."""
        return [round(self.rng.uniform(low_s, high_s), 2)] if self.rng is not None else []

    @property
    def bootstrap_new(self) -> str:
        """The brokers that go to KRaft: the spares (moved to), or brokers 1-3 without the move."""
        return self.spec.bootstrap_servers(spare=self.move)

    def _env(self) -> dict[str, str]:
        """As the ZooKeeper demo's, plus the brokers' ZooKeeper JAAS file on a secured sandbox
        (KMIGRATE_ZK_JAAS_FILE): the SASL identity the controllers log in to ZooKeeper with, which owns the znodes."""
        sec = self.sandbox.security
        return {} if sec is None else {**super()._env(), "KMIGRATE_ZK_JAAS_FILE": str(sec.broker_zookeeper_jaas)}

    def _broker_files(self) -> list[str]:
        """``--broker-properties`` of every broker's ZooKeeper-mode server.properties (the operator's files: with
        their secrets, which DescribeConfigs hides)."""
        out = []
        for b in self.spec.brokers:
            home = Path(self.sandbox.node(b.name).dir)
            kept = home / ZOOKEEPER_MODE_FILE
            out += ["--broker-properties", str(kept if kept.exists() else home / "server.properties")]
        return out

    def _controller_hosts(self) -> list[tuple[int, str]]:
        """Where ``KraftSandbox.add_controllers`` puts the controllers: the addresses after every node."""
        first = max(len(self.spec.zookeepers), len(self.spec.brokers)) + 1
        return [(cid, self.spec.host(first + i)) for i, cid in enumerate(self.controller_ids)]

    # -------------------------------------------------------------- phases
    def start_sandbox(self) -> str:
        if len(self.controller_ids) > 1:  # each controller its own metadata dir: the playbook names one for all
            raise StepFailed("the demo runs one controller (the playbook names one metadata_log_dir)")
        self.sandbox.up(self.spec, progress=self.progress)
        self.playbook = self.dir / "playbook.yaml"
        self.playbook.write_text(self.playbook_text())
        secured = f", {self.spec.security} with ACLs" if self.spec.security != "plaintext" else ""
        spares = f" and spares {self.new}" if self.move else " (no spares: they stay where they are)"
        return f"1 ZooKeeper server (chroot {self.spec.chroot}), brokers {self.old}{spares} on {self.spec.ip_prefix}.x{secured}"

    def playbook_text(self) -> str:
        """The sandbox's playbook: brokers old -> new (or kept, without the move), ZooKeeper kept (no add/remove),
        the ``kraft:`` controllers."""
        new = [b for b in self.spec.brokers if b.spare]
        brokers = ("brokers:\n  mapping: {" + ", ".join(f"{o}: {n}" for o, n in zip(self.old, self.new)) + "}\n  new:\n"
                   + "\n".join(f"    {b.id}: {{availability_domain: {b.rack.split('/')[0]}, fault_domain: {b.rack.split('/')[1]}}}"
                                for b in new)) if self.move else f"brokers:\n  keep: [{', '.join(map(str, self.old))}]"
        log_dir = self.sandbox.dir / f"controller-{self.controller_ids[0]}" / "metadata"
        command_config = self.command_config if self.spec.security != "plaintext" else None
        return KRAFT_PLAYBOOK.format(
            what=(f"brokers {','.join(map(str, self.old))} -> {','.join(map(str, self.new))} in ZooKeeper mode" if self.move
                  else f"brokers {','.join(map(str, self.old))} kept where they are"),
            bootstrap=self.spec.bootstrap_servers(spare=False), connect=self.spec.zookeeper_connect(),
            brokers=brokers,
            throttle=self.throttle, port=CONTROLLER_PORT, metadata_log_dir=log_dir,
            controllers="\n".join(f"    - {{id: {cid}, host: {host}}}" for cid, host in self._controller_hosts()),
            command_config=f'\n  command_config: "{command_config}"' if command_config else "")

    def create_topics(self) -> str:
        from migrate.adapters.kafka.local_cluster import commit_group_offsets, produce_transactions
        from migrate.adapters.kafka.mirror import MirrorCluster

        super().create_topics()
        bootstrap = self.spec.bootstrap_servers(spare=False)
        settings = self.sandbox.kafka_settings("admin")
        rng = random.Random(11)
        batches = [([(f"tx{t}-{i}".encode(), rng.randbytes(256)) for i in range(max(1, int(n * self.records_scale)))],
                    t != ABORTED) for t, n in enumerate(TRANSACTIONS)]
        committed, aborted = produce_transactions(bootstrap, TRANSACTIONAL_TOPIC, "demo-payments-writer", batches,
                                                  settings=settings)
        cluster = MirrorCluster(self.sandbox.client_settings(bootstrap, "admin"), "sandbox")
        parts = {name: p for name, p, *_ in self.topic_shapes}
        for group, topic in GROUPS.items():
            ends = cluster.end_offsets({topic: parts[topic]})
            # billing is half-way through orders; the audit has read every committed payment (past the markers)
            offsets = {tp: (end // 2 if topic == "orders" else end) for tp, (_start, end) in ends.items()}
            commit_group_offsets(bootstrap, group, offsets, settings=settings)
        records = sum(int(n * self.records_scale) for *_, n in self.topic_shapes)
        return (f"{len(self.topic_shapes)} topics, {records} records; {TRANSACTIONAL_TOPIC}: {committed} records in "
                f"{len(TRANSACTIONS) - 1} committed transactions, {aborted} in an aborted one; groups "
                f"{', '.join(GROUPS)} with committed offsets")

    def read_state(self) -> dict:
        """Group offsets (the demo's groups), non-default topic configs (the demo's topics) and every ACL binding,
        read through the new brokers as the admin (None for the ACLs when there is no authorizer)."""
        from migrate.adapters.kafka.mirror import MirrorCluster

        cluster = MirrorCluster(self.sandbox.client_settings(self.bootstrap_new, "admin"), "sandbox", timeout_s=30)
        names = [name for name, *_ in self.topic_shapes]
        configs = {t: {k: v for k, v in values.items() if k not in defaults}
                   for t, (values, defaults) in cluster.topic_configs(names).items()}
        parts = {name: p for name, p, *_ in self.topic_shapes}
        offsets = {g: {f"{t}/{p}": o for (t, p), o in cluster.committed_offsets(g, [(topic, i) for i in range(parts[topic])]).items()}
                   for g, topic in GROUPS.items()}
        acls = cluster.acls()
        return {"offsets": offsets, "configs": configs,
                "acls": None if acls is None else [f"{a.principal} {a.permission} {a.operation} {a.resource_type}:"
                                                   f"{a.pattern_type}:{a.name} from {a.host}" for a in acls]}

    def read_before(self) -> str:
        self.report.state_before = self.read_state()
        s = self.report.state_before
        return (f"{sum(len(o) for o in s['offsets'].values())} committed offsets, {len(s['configs'])} topics' configs, "
                + ("no authorizer" if s["acls"] is None else f"{len(s['acls'])} ACL bindings"))

    def decommission(self) -> str:
        for b in self.old:
            self.progress(f"stopping broker {b}")
            self.sandbox.stop(f"kafka-{b}")
        return f"brokers {self.old} stopped; ZooKeeper stays until the migration is finalized"

    def precheck(self) -> str:
        doc = run_json(["kraft", "precheck", "--playbook", str(self.playbook), "--bootstrap-server", self.bootstrap_new,
                        "--output", "json"], "kmigrate kraft precheck", env=self._env())
        return f"{sum(1 for c in doc.get('checks', []) if c.get('ok'))} of {len(doc.get('checks', []))} checks pass"

    def _printed_config(self, *args: str) -> dict:
        """A config ``kmigrate kraft controller-config|broker-config`` prints (as JSON), from the brokers' files."""
        doc = run_json(["kraft", *args, "--playbook", str(self.playbook), "--bootstrap-server", self.bootstrap_new,
                        *self._broker_files(), *self._client_flags(), "--output", "json"], f"kmigrate kraft {args[0]} {args[1]}", env=self._env())
        return doc.get("config") or {}

    def _same_config(self, printed: dict, runs: dict, what: str) -> None:
        if printed != runs:
            keys = sorted(k for k in set(printed) | set(runs) if printed.get(k) != runs.get(k))
            raise StepFailed(f"{what}: the config kmigrate printed is not the one the sandbox renders ({', '.join(keys)})")

    def controllers(self) -> str:
        from migrate.core.kraft import config as kc

        cid = self.controller_ids[0]
        printed = self._printed_config("controller-config", str(cid))
        self.kraft.add_controllers(self.controller_ids, progress=self.progress)
        self._same_config(printed, kc.controller_config(self.kraft.inputs(), cid), f"controller {cid}")
        doc = self.gate("controllers-ready")
        return f"controller {cid} leads (epoch {doc['quorum']['leader_epoch']}); waiting for brokers {doc['waiting_for']}"

    def roll_1(self) -> str:
        from migrate.core.kraft import config as kc

        for b in self.new:
            printed = self._printed_config("broker-config", str(b), "--phase", "migration", "--full")
            self._same_config(printed, kc.broker_migration_config(self.kraft.inputs(), b), f"broker {b}, roll 1")
            self.kraft.restart_broker(b, "migration", progress=self.progress)
        doc = self.gate("dual-write")
        return f"dual-write: /migration at offset {doc['zookeeper']['migration_offset']}, /controller held by {doc['zookeeper']['controller']['brokerid']}"

    def roll_2(self) -> str:
        from migrate.core.kraft import config as kc

        for b in self.new:
            printed = self._printed_config("broker-config", str(b), "--phase", "kraft")
            self._same_config(printed, kc.broker_kraft_config(self.kraft.inputs(), b), f"broker {b}, roll 2")
            self.kraft.restart_broker(b, "kraft", progress=self.progress)
        doc = self.gate("brokers-kraft", every_broker_kraft=True)
        return f"every broker KRaft ({', '.join(doc['brokers'])}); /brokers/ids {doc['zookeeper']['brokers_ids']}"

    def finalize(self) -> str:
        from migrate.core.kraft import config as kc

        for cid in self.controller_ids:
            printed = self._printed_config("controller-config", str(cid), "--finalize")
            self._same_config(printed, kc.controller_finalized_config(self.kraft.inputs(), cid), f"controller {cid}, finalize")
            self.progress(f"restarting controller {cid} without the migration flag and ZooKeeper (no way back)")
            self.kraft.restart_controller(cid, finalize=True)
        doc = self.gate("finalized", every_broker_kraft=True)
        self.report.kraft_status = doc
        return f"finalized: controllers' migration flag {doc['controllers_migration_flag']}"

    def stop_zookeeper(self) -> str:
        for z in self.spec.zookeepers:
            self.sandbox.stop(z.name)
        self.report.zookeeper_stopped = not any(self.sandbox.is_alive(z.name) for z in self.spec.zookeepers)
        return f"ZooKeeper server(s) {[z.id for z in self.spec.zookeepers]} stopped"

    def verify_without_zookeeper(self) -> str:
        doc = run_json(["verify", "compare", str(self.dir / "before.json"), "--bootstrap-server", self.bootstrap_new,
                        *self._client_flags(), "--output", "json"], "kmigrate verify compare", ok_codes=(0, 1))
        self.report.verify = self.report.verify_after_zookeeper = doc  # the demo's one compare
        return "all partitions match" if doc.get("ok") else "DIFFERENCES FOUND"

    def without_zookeeper(self) -> str:
        """``kmigrate health``, ``status`` and ``kraft status`` given a bootstrap server, ZooKeeper stopped: each one's
        exit code and last line go in the report (what works, what still needs ZooKeeper)."""
        import subprocess

        runs = {"health": ["health", "--bootstrap-server", self.bootstrap_new, *self._client_flags()],
                "status": ["status", "--bootstrap-server", self.bootstrap_new, "--plan", str(self.dir / "plan.json"),
                           *self._client_flags()],
                "kraft status": self._status_args()[:-2]}  # the runbook's last check: finalized, read without ZooKeeper
        out = []
        for what, args in runs.items():
            proc = subprocess.run(kmigrate_command(*args), capture_output=True, text=True, timeout=120,
                                  env={**os.environ, **self._env()})
            lines = [ln for ln in (proc.stdout + proc.stderr).strip().splitlines() if ln.strip()]
            self.report.without_zookeeper[what] = {"exit": proc.returncode, "last_line": lines[-1].strip() if lines else ""}
            out.append(f"{what} exit {proc.returncode}")
        return ", ".join(out) + " (last lines in the report)"

    def compare_after(self) -> str:
        after = self.read_state()
        self.report.state_differences = compare_state(self.report.state_before, after)
        self.report.state_compared = True
        if self.report.state_differences:
            self._fail(f"group offsets, topic configs or ACLs changed: {'; '.join(self.report.state_differences)}")
            return f"DIFFERENCES: {'; '.join(self.report.state_differences)}"
        s = self.report.state_before
        return (f"the same: {sum(len(o) for o in s['offsets'].values())} committed offsets, {len(s['configs'])} topics' "
                f"configs" + ("" if s["acls"] is None else f", {len(s['acls'])} ACL bindings"))

    # --------------------------------------------------------------- gate
    def _status_args(self) -> list[str]:
        return ["kraft", "status", "--playbook", str(self.playbook), "--bootstrap-server", self.bootstrap_new,
                "--broker-list", ",".join(map(str, self.new)), *self._client_flags(), "--output", "json"]

    def gate(self, gate: str, every_broker_kraft: bool = False, timeout_s: float = 180) -> dict:
        """``kmigrate kraft status --wait-for GATE`` (its checks held over 3 readings a second apart), SIGKILLed once
        at a seeded moment and run again; with ``every_broker_kraft`` the answer must also show every broker KRaft."""
        doc = run_with_kills([*self._status_args(), "--wait-for", gate, "--timeout", f"{timeout_s:.0f}s",
                              "--interval", "1s"], f"kraft status --wait-for {gate}", self._kill_after(0.3, 2.5),
                             self.report, self.progress, timeout_s=timeout_s + 60, env=self._env())
        modes = set((doc.get("brokers") or {}).values())
        if not (doc.get("gate") or {}).get("passed") or (every_broker_kraft and modes != {"kraft"}):
            raise StepFailed(f"gate {gate}: kraft status reads {doc.get('phase')} ({doc.get('detail')}), brokers "
                             f"{doc.get('brokers')}")
        return doc

    def plan(self) -> str:
        import json

        detail = super().plan()
        self.report.plan_partitions = len(json.loads((self.dir / "plan.json").read_text())["moves"])
        return detail

    def migrate_partitions(self) -> str:
        self.kills = {**self.kills, "partitions": self._kill_after(3.0, 10.0)}
        return super().migrate_partitions()
