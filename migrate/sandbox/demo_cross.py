"""``kmigrate demo --cross-cluster``: the whole cross-cluster migration (MirrorMaker 2) on two sandbox
clusters, with the canary producing and consuming in a consumer group throughout.

As an operator would: topics with data and a canary on the source, one more group part-way through a
topic; ``kmigrate mirror start``, ``mirror status --wait`` (lag 0); ``mirror verify`` (the copy proven
while the canary writes); the canary's producer and consumer stopped (drained, its group's offsets
committed); ``mirror cutover --group`` for both groups (gates, translated offsets, the verify of the
records written since the proofs); the canary goes on on the TARGET from its group's translated offsets
(same sequence numbers: a record the source acknowledged and the group never read is lost, one read
twice duplicated); ``mirror stop``. Each kmigrate step is its own process with ``--output json``.

The switch as the clients feel it: from the canary's producer stopping on the source to its first record
acknowledged on the target (the producers' window), of which the cut-over's own seconds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from migrate.adapters.kafka.canary_clients import CanaryConsumer
from migrate.files import client_settings
from migrate.runner.canary import Canary
from migrate.core.report.phases import AT_REST
from migrate.sandbox.demo import TOPIC_SHAPES, WARMUP_S, Demo, DemoReport, run_json
from migrate.sandbox.layout import target_spec
from migrate.waiting import poll

CANARY_TOPIC = "demo-canary"
CANARY_GROUP = "demo-canary-consumers"
READERS = "demo-readers"  # a second group, part-way through orders
# The demo's shapes on one broker: replication factor 1, no min.insync.replicas; the compacted ones kept.
CROSS_SHAPES = tuple((name, min(parts, 4), 1, {k: v for k, v in configs.items() if k != "min.insync.replicas"}, n)
                     for name, parts, _rf, configs, n in TOPIC_SHAPES[:8])


@dataclass
class CrossReport(DemoReport):
    cutover: dict = field(default_factory=dict)
    canary_group: str = CANARY_GROUP
    proofs: dict = field(default_factory=dict)  # mirror verify's pass before the switch
    switch_s: float | None = None  # the canary's producer stopped on the source -> its first ack on the target

    @property
    def cutover_duplicates(self) -> int:
        """The duplicates cutover reported for the canary's group (what the switch costs it)."""
        return sum(t.get("duplicates") or 0 for t in self.cutover.get("offsets", []) if t.get("group") == self.canary_group)

    @property
    def switch(self) -> dict:
        """The switch as clients feel it: ``clients_stopped_s`` (producer stopped on the source -> first
        record acknowledged on the target), of which ``cutover_s``; the records the cut-over verified
        before and at the switch."""
        verify = self.cutover.get("verify") or {}
        return {"clients_stopped_s": None if self.switch_s is None else round(self.switch_s, 1),
                "cutover_s": self.cutover.get("seconds"), "verified_how": verify.get("how"),
                "proven_before": verify.get("proven_before"), "verified_at_switch": verify.get("at_switch")}

    def switch_line(self) -> str:
        s = self.switch
        if s["clients_stopped_s"] is None:
            return "the switch: the canary did not reach the target"
        return (f"the switch: the canary's producer stopped {s['clients_stopped_s']:.1f} s (source stopped -> first "
                f"record acknowledged on the target), of which mirror cutover {s['cutover_s']} s; records verified: "
                f"{s['proven_before']} proven before the switch, {s['verified_at_switch']} at it ({s['verified_how']})")

    @property
    def ok(self) -> bool:
        return bool(self.canary and self.canary.ok and self.verify.get("ok") and self.cutover.get("ok"))

    def to_dict(self) -> dict:
        return {**super().to_dict(), "ok": self.ok, "cutover": self.cutover, "switch": self.switch,
                "duplicates": {"cutover_reported": self.cutover_duplicates,
                               "canary_saw": self.canary.duplicated if self.canary else None}}


class CrossClusterDemo(Demo):
    """Source (1 ZooKeeper, 1 broker) to a separate target cluster (same), with MirrorMaker 2."""

    TITLE = "kmigrate demo --cross-cluster: the canary on the source, then the target"

    def __init__(self, directory: Path, ip_prefix: str = "127.0.0", records_scale: float = 0.1,
                 canary_rate: float = 50.0, progress=lambda msg: None, canary_after_s: float = 5.0,
                 rest_s: float = 0.0):
        super().__init__(directory, ip_prefix=ip_prefix, records_scale=records_scale, canary_rate=canary_rate,
                         progress=progress, topic_shapes=CROSS_SHAPES,
                         spec=dict(zookeeper_ids=(1,), spare_zookeeper_ids=(), broker_ids=(1,), spare_broker_ids=(),
                                   zookeeper_heap_mb=64, kafka_heap_mb=256))
        self.report = CrossReport(sandbox_dir=str(self.sandbox.dir))
        self.target = target_spec(self.spec, 1)
        self.state_dir = self.dir / "mirror"
        self.canary_after_s = canary_after_s
        self.rest_s = rest_s  # the canary alone before the first step (0: no "at rest" phase)
        self.stopped_at = 0.0  # when the canary's producer stopped on the source (monotonic)

    def run(self) -> CrossReport:
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            self._phase("start the source and target clusters", self.start_clusters)
            self._phase("create topics with data", self.create_topics)
            self._phase("start the canary on the source (group " + CANARY_GROUP + ")", self.start_canary)
            if self.rest_s > 0:
                self._phase(f"{AT_REST} (the canary alone, every node up)", self.at_rest)
            self._phase(f"group {READERS} part-way through orders", self.readers_part_way)
            self._phase("kmigrate mirror start", self.mirror_start)
            self._phase("kmigrate mirror status --wait", self.mirror_wait)
            self._phase("kmigrate mirror verify (the copy proven, the canary writing)", self.mirror_verify)
            self._phase("stop the canary's producer and consumer on the source", self.stop_clients)
            self._phase("kmigrate mirror cutover", self.cutover)
            self._phase("the canary on the target, from its group's translated offsets", self.clients_on_target)
        finally:
            self.stop_canary()
            if self.state_dir.exists():
                self._phase("kmigrate mirror stop", self.mirror_stop)
        return self.report

    def start_clusters(self) -> str:
        self.sandbox.up(self.spec, progress=self.progress)
        self.sandbox.up_target(self.target, progress=self.progress)
        return f"source on {self.spec.ip_prefix}.x, target on {self.target.ip_prefix}.x (1 ZooKeeper, 1 broker each)"

    @property
    def source_bootstrap(self) -> str:
        return self.spec.bootstrap_servers()

    @property
    def target_bootstrap(self) -> str:
        return self.target.bootstrap_servers()

    def start_canary(self) -> str:
        self.canary = Canary(client_settings(self.source_bootstrap, None), topic=CANARY_TOPIC, rate_per_s=self.canary_rate,
                             replication_factor=1, min_insync_replicas=1, group=CANARY_GROUP).start()
        warmup_s = min(WARMUP_S, self.rest_s)  # its first seconds are slower: left out of "at rest"
        time.sleep(warmup_s)
        return (f"{CANARY_TOPIC}: {self.canary.partitions} partition(s), {self.canary_rate:.0f} records/s, acks=all; "
                f"{warmup_s:g} s of warm-up")

    def readers_part_way(self) -> str:
        consumer = CanaryConsumer(client_settings(self.source_bootstrap, None), READERS)
        parts = next(p for name, p, *_ in self.topic_shapes if name == "orders")
        positions = {p: consumer.end_offset("orders", p) // 2 for p in range(parts)}
        consumer.assign("orders", positions)
        consumer.commit()
        consumer.close()
        return f"committed half-way: {sum(positions.values())} of orders' records read"

    def mirror_start(self) -> str:
        run_json(["mirror", "start", "--source-bootstrap", self.source_bootstrap, "--target-bootstrap",
                        self.target_bootstrap, "--state-dir", str(self.state_dir), "--heap-mb", "256",
                        "--output", "json"], "kmigrate mirror start", timeout_s=600)
        return "MirrorMaker 2 running (topics created on the target first)"

    def mirror_wait(self) -> str:
        run_json(["mirror", "status", "--state-dir", str(self.state_dir), "--wait", "--timeout", "10m",
                  "--output", "json"], "kmigrate mirror status --wait", timeout_s=900)
        return "every record the source held when the wait began copied (the canary still writes)"

    def mirror_verify(self) -> str:
        doc = run_json(["mirror", "verify", "--state-dir", str(self.state_dir), "--output", "json"],
                       "kmigrate mirror verify", timeout_s=600)
        self.report.proofs = doc
        return f"{doc.get('proven')} records proven equal on both clusters, {doc.get('unproven_offsets')} offsets not yet"

    def stop_clients(self) -> str:
        time.sleep(self.canary_after_s)  # the canary's records go on being mirrored while it runs
        self.stopped_at = time.monotonic()
        so_far = self.canary.pause(drain_timeout_s=60)
        return (f"sent {so_far.sent}, acknowledged {so_far.acknowledged}, consumed {so_far.consumed}; "
                f"group {CANARY_GROUP}'s offsets committed")

    def cutover(self) -> str:
        doc = run_json(["mirror", "cutover", "--state-dir", str(self.state_dir), "--group", CANARY_GROUP,
                        "--group", READERS, "--quiet-period", "3s", "--timeout", "5m", "--master", "local[2]",
                        "--output", "json"], "kmigrate mirror cutover", ok_codes=(0, 1), timeout_s=1200)
        self.report.cutover = doc
        verify = next((g for g in doc.get("gates", []) if g.get("gate") == "verified"), None)
        self.report.verify = {"ok": bool(doc.get("ok") and verify and verify.get("passed")), "gate": verify}
        passed = sum(1 for g in doc.get("gates", []) if g.get("passed"))
        return (f"{passed} of {len(doc.get('gates', []))} gates passed; {len(doc.get('offsets', []))} offsets set; "
                f"duplicates reported: {doc.get('duplicates', '?')} ({self.report.cutover_duplicates} for {CANARY_GROUP})")

    def clients_on_target(self) -> str:
        acked = self.canary.report().acknowledged
        self.canary.resume(client_settings(self.target_bootstrap, None))
        if poll(lambda: self.canary.report().acknowledged > acked, timeout_s=60, interval_s=0.05):
            self.report.switch_s = time.monotonic() - self.stopped_at
        time.sleep(self.canary_after_s)
        now = self.canary.report()
        return f"on {self.target_bootstrap}: sent {now.sent}, consumed {now.consumed}, duplicated {now.duplicated} so far"

    def mirror_stop(self) -> str:
        run_json(["mirror", "stop", "--state-dir", str(self.state_dir), "--output", "json"], "kmigrate mirror stop")
        return "MirrorMaker stopped"

    def teardown(self) -> None:
        self.sandbox.down()
