"""``kmigrate demo --kraft-cluster``: a whole native KRaft cluster (Kafka 4.x, no ZooKeeper) moved to new machines,
controllers and brokers, live, on a sandbox.

As an operator would, each kmigrate step a process of its own (``--output json``), the operator's part (restarting
and stopping nodes) done by the sandbox (``kmigrate sandbox restart-broker``, ``sandbox stop``), the canary running
from before the first change to the end:

1. ``sandbox up --kraft``: controllers 3000-3002 (the voters of a dynamic quorum) and 3003-3005 (spares, started as
   observers), brokers 1-3 and 4-6 (spares, empty); topics with RF 3 and ``min.insync.replicas=2``, a compacted one,
   a transactional one, consumer groups with committed offsets; the canary; ``verify snapshot``; the state read
   (group offsets, topic configs: **before**).
2. Every broker rolled to ``controller.quorum.bootstrap.servers`` = old + new controllers (``sandbox restart-broker N
   --controller-quorum-bootstrap-servers``); ``kmigrate controllers --add 3003,3004,3005 --remove 3000,3001,3002``
   (one change at a time, the leader removed last, ``--stop-command`` stopping each removed controller through the
   sandbox); the brokers that stay (4-6) rolled to the new controllers only. Brokers 1-3 are not rolled a second
   time: they keep old + new (the new ones reachable) until they retire, a roll of brokers about to go buys nothing.

   The new brokers run from the start (empty): stopped ones cannot wait for the controllers' move, as Kafka's
   rack-aware placement still puts new replicas on a fenced broker when its rack has no other (seen:
   ``__transaction_state`` created with replicas on the stopped brokers 4-6, then the transactions' coordinator
   unavailable).
3. ``kmigrate partitions --mapping 1:4,2:5,3:6``; brokers 1-3 stopped; ``kmigrate brokers unregister --broker-list
   1,2,3``; the registrations read back: only the new brokers.

The brokers run with ``replica.fetch.backoff.ms`` and ``replica.fetch.wait.max.ms`` at 100 ms, the settings
kmigrate's runbook gives for the first roll (a leader move otherwise stalls acks=all writes 1 s or more when a
follower learns of the new leader first: README, produce stalls in a rolling restart).
4. ``verify compare`` against the snapshot, the state read again (**after**) and compared; the canary's report.

Each phase records its time and, the canary running, its p99 latency and whether its longest stall was set there
(:meth:`KraftDemo._phase`).
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from migrate.core.plan.document import ROLL_FETCH_SETTINGS
from migrate.core.report.phases import AT_REST
from migrate.errors import BadInput, StepFailed
from migrate.sandbox.demo import DemoReport, Progress, kmigrate_command, run_json
from migrate.sandbox.demo_kraft import KraftDemo, KraftDemoReport
from migrate.sandbox.kraft_layout import FIRST_CONTROLLER_ID
from migrate.sandbox.layout import CONTROLLER_PORT

DEFAULT_KAFKA = "4.4.0"

# (name, partitions, replication factor, configs, records); "payments" is written in transactions instead
# (KraftDemo.create_topics). The replication factor is cut to the old brokers' count on a smaller sandbox.
CLUSTER_SHAPES = (
    ("orders", 6, 3, {"min.insync.replicas": "2"}, 1200),
    ("customers", 3, 3, {"cleanup.policy": "compact", "min.insync.replicas": "2"}, 600),
    ("clicks", 3, 3, {"retention.ms": "86400000", "min.insync.replicas": "2"}, 600),
    ("payments", 3, 3, {"min.insync.replicas": "2"}, 0),
)


def shapes_for(brokers: int) -> tuple:
    """:data:`CLUSTER_SHAPES` with the replication factor at most ``brokers``.

    >>> [(n, rf) for n, _p, rf, *_ in shapes_for(2)]
    [('orders', 2), ('customers', 2), ('clicks', 2), ('payments', 2)]
    """
    return tuple((name, parts, min(rf, brokers), configs, n) for name, parts, rf, configs, n in CLUSTER_SHAPES)


def check_kafka_version(version: str) -> str:
    """The demo's release: a Kafka 4.x (native KRaft, a dynamic quorum, UnregisterBroker listing fenced brokers).

    >>> check_kafka_version("4.1.1")
    '4.1.1'
    >>> check_kafka_version("3.9.2")
    Traceback (most recent call last):
    migrate.errors.BadInput: --kafka-version 3.9.2: demo --kraft-cluster runs Kafka 4.x (4.0.0 or later, default 4.4.0)
    """
    from migrate.core.versions import check_kraft_kafka_version

    check_kraft_kafka_version(version, "--kafka-version")
    if int(version.split(".")[0]) < 4:
        raise BadInput(f"--kafka-version {version}: demo --kraft-cluster runs Kafka 4.x (4.0.0 or later, default {DEFAULT_KAFKA})")
    return version


@dataclass
class KraftClusterReport(KraftDemoReport):
    kafka_version: str = DEFAULT_KAFKA
    controllers_before: list[int] = field(default_factory=list)
    controllers_new: list[int] = field(default_factory=list)
    leader_before: int | None = None
    controllers: dict = field(default_factory=dict)  # kmigrate controllers' "done" line
    voters_after: list[int] = field(default_factory=list)  # read back after the move and the roll
    brokers_old: list[int] = field(default_factory=list)
    brokers_new: list[int] = field(default_factory=list)
    rolls: list[dict] = field(default_factory=list)  # each broker restart: broker, list, seconds
    unregister: dict = field(default_factory=dict)  # kmigrate brokers unregister's report
    registrations_after: dict = field(default_factory=dict)  # broker id -> fenced, read back at the end
    old_nodes_running: list[str] = field(default_factory=list)  # old controllers and brokers still alive at the end

    @property
    def registrations_clean(self) -> bool:
        return bool(self.registrations_after) and sorted(map(int, self.registrations_after)) == sorted(self.brokers_new)

    @property
    def ok(self) -> bool:
        return bool(self.canary and self.canary.ok and self.verify.get("ok") and self.state_compared
                    and not self.state_differences and sorted(self.voters_after) == sorted(self.controllers_new)
                    and self.registrations_clean and not self.old_nodes_running and not self.failed)

    def to_dict(self) -> dict:
        d = DemoReport.to_dict(self)
        d["phases"] = [{"name": p.name, "seconds": round(p.seconds, 1), "detail": p.detail,
                        **({"canary": p.canary} if getattr(p, "canary", None) else {})} for p in self.phases]
        stall = self.longest_stall_s
        return {**d, "ok": self.ok, "variant": "a KRaft cluster to new machines: controllers, then brokers",
                "kafka_version": self.kafka_version,
                "controllers_before": self.controllers_before, "controllers_new": self.controllers_new,
                "leader_before": self.leader_before, "controllers": self.controllers, "voters_after": self.voters_after,
                "brokers_old": self.brokers_old, "brokers_new": self.brokers_new, "rolls": self.rolls,
                "unregister": self.unregister,
                "registrations_after": {str(k): v for k, v in self.registrations_after.items()},
                "no_stale_registration": self.registrations_clean, "old_nodes_running": self.old_nodes_running,
                "state": {"compared": self.state_compared, "same": self.state_compared and not self.state_differences,
                          "differences": self.state_differences, "before": self.state_before},
                "longest_stall_s": stall, "stall_target_s": self.stall_target_s,
                "stall_target_met": None if stall is None else stall <= self.stall_target_s, "failed": self.failed}


class KraftClusterDemo(KraftDemo):
    """Controllers and brokers of a native KRaft cluster to new machines, live (the phases of
    :class:`KraftDemo`'s machinery: per-phase time, p99 and stall, the state before and after)."""

    TITLE = "kmigrate demo --kraft-cluster: the canary during the move"

    def __init__(self, directory: Path, ip_prefix: str = "127.0.0", throttle: str = "20MB/s",
                 records_scale: float = 1.0, canary_rate: float = 50.0, progress: Progress = lambda msg: None,
                 kafka_version: str = DEFAULT_KAFKA, controllers: int = 3, brokers: int = 3,
                 kafka_heap_mb: int = 256, controller_heap_mb: int = 192):
        """``controllers`` voters and as many spares (ids 3000..), ``brokers`` and as many spares (ids 1..)."""
        check_kafka_version(kafka_version)
        if not 1 <= controllers <= 5 or not 1 <= brokers <= 5:
            raise BadInput(f"{controllers} controllers and {brokers} brokers: the demo takes 1 to 5 of each (and as many spares)")
        old_c = tuple(range(FIRST_CONTROLLER_ID, FIRST_CONTROLLER_ID + controllers))
        new_c = tuple(range(old_c[-1] + 1, old_c[-1] + 1 + controllers))
        old_b = tuple(range(1, brokers + 1))
        new_b = tuple(range(brokers + 1, 2 * brokers + 1))
        super().__init__(directory, ip_prefix=ip_prefix, throttle=throttle, records_scale=records_scale,
                         canary_rate=canary_rate, progress=progress, kill_seed=None, controller_ids=old_c, move=True,
                         spec={"zookeeper_ids": (), "spare_zookeeper_ids": (), "chroot": "", "controller_ids": old_c,
                               "spare_controller_ids": new_c, "broker_ids": old_b, "spare_broker_ids": new_b,
                               "kafka_version": kafka_version, "kafka_heap_mb": kafka_heap_mb,
                               "controller_heap_mb": controller_heap_mb, "kafka_settings": dict(ROLL_FETCH_SETTINGS)})
        self.topic_shapes = shapes_for(brokers)
        self.old_controllers, self.new_controllers = list(old_c), list(new_c)
        self.report = KraftClusterReport(sandbox_dir=str(self.sandbox.dir), kill_seed=None, kafka_version=kafka_version,
                                         controllers_before=list(old_c), controllers_new=list(new_c),
                                         brokers_old=list(old_b), brokers_new=list(new_b))

    # ------------------------------------------------------------ the run
    def phase_list(self) -> list[tuple[str, Callable[[], str | None]]]:
        return [
            ("start the sandbox (sandbox up --kraft)", self.start_sandbox),
            ("create topics, transactions and consumer groups", self.create_topics),
            ("start the canary", self.start_canary),
            (f"{AT_REST} (the canary alone, every node up)", self.at_rest),
            ("read group offsets and topic configs (before)", self.read_before),
            ("kmigrate verify snapshot", self.verify_snapshot),
            ("roll every broker to the old and new controllers", self.roll_to_both),
            ("kmigrate controllers (add the new, remove the old, stop each removed)", self.move_controllers),
            ("roll the brokers that stay to the new controllers only", self.roll_to_new),
            ("kmigrate partitions (brokers to the new ones)", self.migrate_partitions),
            ("stop the old brokers", self.decommission),
            ("kmigrate brokers unregister", self.unregister),
            ("kmigrate verify compare (against the snapshot before the first change)", self.verify_compare),
            ("read group offsets and topic configs (after) and compare", self.compare_after),
        ]

    def run(self) -> KraftClusterReport:
        try:
            super().run()
        finally:
            self._old_nodes_check()
        return self.report

    # ------------------------------------------------------------- helpers
    def _fresh(self):
        """The sandbox as its files say now (the sandbox commands run as processes restart nodes: new pids)."""
        from migrate.sandbox import Sandbox

        return Sandbox(self.sandbox.dir)

    @property
    def bootstrap_new(self) -> str:
        """Every broker (:meth:`KraftDemo.read_state` reads through it before and after the move)."""
        return self.spec.bootstrap_servers(spare=None)

    def _addresses(self, ids) -> list[str]:
        nodes = {c.id: c for c in self.spec.controllers}
        return [f"{nodes[i].host}:{CONTROLLER_PORT}" for i in ids]

    def _quorum(self, ids):
        from migrate.adapters.kafka import voters as kv

        return kv.read_quorum(self._addresses(ids))[1]

    def _sandbox_cmd(self, *args: str, timeout_s: float = 600) -> None:
        proc = subprocess.run(kmigrate_command("sandbox", *args, "--dir", str(self.sandbox.dir)), capture_output=True,
                              text=True, timeout=timeout_s)
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
            raise StepFailed(f"kmigrate sandbox {args[0]} {args[1] if len(args) > 1 else ''} failed (exit {proc.returncode}): {last}")

    def _roll(self, brokers: list[int], controllers: list[int]) -> str:
        import time

        value = ",".join(self._addresses(controllers))
        for b in brokers:
            self.progress(f"restarting broker {b} with controller.quorum.bootstrap.servers={value}")
            started = time.monotonic()
            self._sandbox_cmd("restart-broker", str(b), "--controller-quorum-bootstrap-servers", value)
            self.report.rolls.append({"broker": b, "controllers": list(controllers),
                                      "seconds": round(time.monotonic() - started, 1)})
        return f"brokers {brokers} restarted one at a time (healthy after each) with controllers {controllers}"

    # -------------------------------------------------------------- phases
    def start_sandbox(self) -> str:
        from migrate.sandbox.kraft_cluster import PLAYBOOK_FILE, KraftCluster

        self.sandbox.up(self.spec, progress=self.progress)
        (self.sandbox.dir / PLAYBOOK_FILE).write_text(KraftCluster(self.sandbox).playbook(self.throttle))
        return (f"Kafka {self.spec.kafka_version}, no ZooKeeper: controllers {self.old_controllers} (dynamic quorum), "
                f"spares {self.new_controllers} (observers); brokers {self.old}, spares {self.new} (empty) on "
                f"{self.spec.ip_prefix}.x")

    def read_before(self) -> str:
        detail = super().read_before()
        return detail.replace(", no authorizer", "")

    def roll_to_both(self) -> str:
        return self._roll(self.old + self.new, self.old_controllers + self.new_controllers)

    def move_controllers(self) -> str:
        before = self._quorum(self.old_controllers)
        self.report.leader_before = before.leader_id
        stop = (f"{shlex.quote(sys.executable)} -m migrate sandbox stop controller-{{id}} "
                f"--dir {shlex.quote(str(self.sandbox.dir))}")
        doc = run_json(["controllers", "--add", ",".join(map(str, self.new_controllers)),
                        "--remove", ",".join(map(str, self.old_controllers)),
                        "--bootstrap-controller", ",".join(self._addresses(self.old_controllers)),
                        "--bootstrap-server", self.spec.bootstrap_servers(spare=None),
                        "--kafka-version", self.spec.kafka_version, "--stop-command", stop, "--output", "json"],
                       "kmigrate controllers", timeout_s=1200)
        self.report.controllers = doc
        if doc.get("event") != "done" or sorted(doc.get("voters_after") or []) != sorted(self.new_controllers):
            raise StepFailed(f"kmigrate controllers ended with voters {doc.get('voters_after')} (expected "
                             f"{self.new_controllers})")
        return (f"voters {doc.get('voters_before')} -> {doc.get('voters_after')}, leader {before.leader_id} -> "
                f"{doc.get('leader_after')} ({doc.get('seconds', 0):.1f} s; the old leader removed last, each removed "
                "controller stopped by --stop-command)")

    def roll_to_new(self) -> str:
        detail = self._roll(self.new, self.new_controllers)
        q = self._quorum(self.new_controllers)
        self.report.voters_after = list(q.voter_ids)
        return f"{detail}; quorum: voters {list(q.voter_ids)}, leader {q.leader_id}"

    def migrate_partitions(self) -> str:
        doc = run_json(["partitions", "--bootstrap-server", self.spec.bootstrap_servers(spare=None),
                        "--mapping", ",".join(f"{o}:{n}" for o, n in zip(self.old, self.new)),
                        "--throttle", self.throttle, "--poll-interval", "1s", "--output", "json"],
                       "kmigrate partitions", timeout_s=1800)
        self.report.bytes_moved = int(doc.get("bytes_copied") or 0)
        self.report.partitions_moved = int(doc.get("partitions_moved") or 0)
        self.report.topics_moved = int(doc.get("topics_recorded_total") or 0)
        return (f"{self.report.partitions_moved} partitions of {self.report.topics_moved} topics moved, "
                f"{self.report.bytes_moved} bytes copied")

    def decommission(self) -> str:
        sandbox = self._fresh()
        for b in self.old:
            self.progress(f"stopping broker {b}")
            sandbox.stop(f"kafka-{b}")
        return f"brokers {self.old} stopped"

    def unregister(self) -> str:
        from migrate.adapters.kraft.registrations import broker_registrations

        bootstrap = self.spec.bootstrap_servers(spare=True)
        doc = run_json(["brokers", "unregister", "--broker-list", ",".join(map(str, self.old)),
                        "--bootstrap-server", bootstrap,
                        "--bootstrap-controller", ",".join(self._addresses(self.new_controllers)), "--output", "json"],
                       "kmigrate brokers unregister")
        self.report.unregister = doc
        regs, complete = broker_registrations(bootstrap.split(","))
        self.report.registrations_after = {b: r.fenced for b, r in sorted(regs.items())}
        stale = sorted(set(regs) - set(self.new))
        ghosts = doc.get("ghost_controllers") or []
        if stale or not complete:
            self._fail(f"registrations after unregister: {sorted(regs)} (complete listing: {complete})")
        return (f"unregistered {doc.get('unregistered')}, registered now {sorted(regs)}"
                + (f"; removed controllers Kafka keeps registered: {ghosts}" if ghosts else ""))

    def verify_compare(self) -> str:
        doc = run_json(["verify", "compare", str(self.dir / "before.json"), "--bootstrap-server",
                        self.spec.bootstrap_servers(spare=True),
                        "--output", "json"], "kmigrate verify compare", ok_codes=(0, 1))
        self.report.verify = doc
        if not doc.get("ok"):
            self._fail("verify compare found differences")
        return "all partitions match" if doc.get("ok") else "DIFFERENCES FOUND"

    def _old_nodes_check(self) -> None:
        sandbox = self._fresh()
        if not sandbox.exists:
            return
        names = [f"controller-{c}" for c in self.old_controllers] + [f"kafka-{b}" for b in self.old]
        self.report.old_nodes_running = [n for n in names if sandbox.is_alive(n)]
