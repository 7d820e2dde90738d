"""Issue 20: the whole migration on the oldest Kafka and ZooKeeper kmigrate claims, and on a middle pair
whose cluster is in the middle of a rolling upgrade.

Two lean sandboxes, one after the other (1 ZooKeeper voter and 3 joiners, 2 old and 2 new brokers, three small
topics, a canary throughout):

- ``2.4.1/3.5.7``: every broker on Kafka 2.4.1, ZooKeeper 3.5.7 (the oldest releases claimed);
- ``2.8.2/3.6.4-upgrading``: ZooKeeper 3.6.4; old broker 1 still on Kafka 2.4.1, old broker 2 and the new
  brokers on 2.8.2, ``inter.broker.protocol.version`` pinned to 2.4 on all (a rolling upgrade half done).

Each runs the operator's flow with kmigrate's own commands: ``plan``, ``verify snapshot``, the rolling
restart onto the joiners, ``zookeeper`` (the swap), ``partitions`` killed with SIGKILL as soon as it
submitted a reassignment and run again to the end, ``verify compare`` and ``status``. Before the run, a
throttle someone else set is there (two entries of a topic's leader list, one of them an entry kmigrate
wants too, and a broker's leader rate): kmigrate must set its own throttles on these releases and remove
exactly them, leaving the foreign ones as they were. One SparkSession (local[1]) serves both verifies.
"""

from __future__ import annotations

import io
import json
import signal
from contextlib import redirect_stderr, redirect_stdout

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from kazoo.client import KazooClient

from migrate.adapters.spark.session import SparkSettings, spark_session
from migrate.cli import main
from migrate.core.zookeeper.config import parse_config
from migrate.sandbox.demo import Demo
from migrate.sandbox.testing import free_ip_prefix
from cluster_waits import settled
from partitions_support import (
    drain, events, kmigrate, kmigrate_background, replicas_on, throttles_left, under_replicated, wait_for_event,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1500)]

MASTER = "local[1]"
LEAN = {"zookeeper_ids": (1,), "spare_zookeeper_ids": (2, 3, 4), "broker_ids": (1, 2), "spare_broker_ids": (3, 4),
        "kafka_heap_mb": 256, "zookeeper_heap_mb": 64}
PAIRS = {
    "2.4.1/3.5.7": {"kafka_version": "2.4.1", "zookeeper_version": "3.5.7"},
    "2.8.2/3.6.4-upgrading": {
        "kafka_version": "2.8.2", "zookeeper_version": "3.6.4", "broker_kafka_versions": {"1": "2.4.1"},
        "kafka_settings": {"inter.broker.protocol.version": "2.4", "log.message.format.version": "2.4"},
    },
}
SHAPES = (
    ("orders", 4, 2, {"min.insync.replicas": "2"}, 4000),
    ("customers", 2, 2, {"cleanup.policy": "compact"}, 600),
    ("scratch", 1, 1, {}, 200),
)
LEADER_LIST = "leader.replication.throttled.replicas"
LEADER_RATE = "leader.replication.throttled.rate"
FOREIGN_ENTRIES = "0:1,9:9"  # 0:1 is an entry kmigrate wants too: set by someone else first, it stays theirs
FOREIGN_RATE = "7777777"  # broker 2's leader rate before the migration


def _kmigrate_here(*args: str) -> tuple[int, str, str]:
    """kmigrate in this process (its verify reuses the module's SparkSession): (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def _set_foreign_throttles(bootstrap: str) -> None:
    a = AdminClient({"bootstrap.servers": bootstrap})
    for res in (ConfigResource(ConfigResource.Type.TOPIC, "orders", incremental_configs=[
                    ConfigEntry(LEADER_LIST, FOREIGN_ENTRIES, incremental_operation=AlterConfigOpType.SET)]),
                ConfigResource(ConfigResource.Type.BROKER, "2", incremental_configs=[
                    ConfigEntry(LEADER_RATE, FOREIGN_RATE, incremental_operation=AlterConfigOpType.SET)])):
        a.incremental_alter_configs([res])[res].result(timeout=30)


def _rates_in_zookeeper(demo: Demo) -> list[str]:
    """Every broker's throttle rates as ZooKeeper holds them (``/config/brokers/<id>``): Kafka 2.4's
    DescribeConfigs does not list these per-broker dynamic configs, so the truth is read here."""
    hosts = ",".join(f"{z.host}:{z.client_port}" for z in demo.spec.zookeepers if z.joiner)
    zk = KazooClient(hosts=hosts, timeout=10)
    zk.start(timeout=30)
    try:
        out = []
        for b in demo.spec.brokers:
            raw = zk.exists(f"/config/brokers/{b.id}") and zk.get(f"/config/brokers/{b.id}")[0]
            config = json.loads(raw)["config"] if raw else {}
            out += [f"broker {b.id} {k}={v}" for k, v in sorted(config.items()) if k.endswith("replication.throttled.rate")]
        return out
    finally:
        zk.stop()
        zk.close()


def _migrate(demo: Demo) -> dict:
    """The operator's flow on ``demo``'s sandbox; what each step left, for the tests to judge."""
    got: dict = {}
    demo.start_sandbox()
    demo.create_topics()
    old_bootstrap = demo.spec.bootstrap_servers(spare=False)
    _set_foreign_throttles(old_bootstrap)
    demo.start_canary()
    demo.plan()
    got["plan_output"] = demo.plan_output
    before = demo.dir / "before.json"
    got["snapshot"] = _kmigrate_here("verify", "snapshot", "--bootstrap-server", old_bootstrap, "-o", str(before),
                                     "--master", MASTER, "--output", "json")
    demo.rolling_restart_old()
    got["zookeeper"] = demo.migrate_zookeeper()
    args = ("partitions", "--playbook", str(demo.playbook), "--bootstrap-server", demo.spec.bootstrap_servers(),
            "--poll-interval", "1s", "--output", "json")
    proc = kmigrate_background(*args)
    seen: list = []
    wait_for_event(proc, lambda e: e.get("event") == "submitted", timeout_s=300, seen=seen)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    proc.stderr.close()
    got["first_run_events"] = seen
    got["throttles_at_kill"] = throttles_left(demo.sandbox)
    got["rates_at_kill"] = _rates_in_zookeeper(demo)
    resumed = kmigrate(*args)
    got["resumed"] = (resumed.returncode, events(resumed.stdout), resumed.stderr)
    got["compare"] = _kmigrate_here("verify", "compare", str(before), "--bootstrap-server",
                                    demo.spec.bootstrap_servers(), "--master", MASTER, "--output", "json")
    status = kmigrate("status", "--playbook", str(demo.playbook), "--bootstrap-server", demo.spec.bootstrap_servers(),
                      "--output", "json")
    got["status"] = (status.returncode, status.stdout, status.stderr)
    got["throttles_after"] = throttles_left(demo.sandbox)
    got["rates_after"] = _rates_in_zookeeper(demo)
    # read again while the brokers learn the last moves' metadata
    got["left_on_old"] = settled(lambda: replicas_on(demo.sandbox, (1, 2)), [])
    got["under_replicated"] = settled(lambda: under_replicated(demo.sandbox), [])
    got["canary"] = demo.canary.stop().to_dict()
    demo.canary = None
    new = ",".join(f"{z.host}:{z.client_port}" for z in demo.spec.zookeepers if z.joiner)
    zk = KazooClient(hosts=new, timeout=10)
    zk.start(timeout=30)
    try:
        zk.sync("/zookeeper/config")
        got["zookeeper_config"] = parse_config(zk.get("/zookeeper/config")[0].decode())
    finally:
        zk.stop()
        zk.close()
    got["versions"] = {row["name"]: row for row in demo.sandbox.status()}
    return got


@pytest.fixture(scope="module")
def spark():
    # small reads (at most 160,000 records, test_verify's heap test): the driver compiles with C1 only (quick_jit)
    with spark_session(SparkSettings(master=MASTER), records=200_000) as session:
        yield session


@pytest.fixture(scope="module", params=sorted(PAIRS))
def migrated(request, spark, tmp_path_factory):
    demo = Demo(tmp_path_factory.mktemp("versions"), ip_prefix=free_ip_prefix(4), throttle="1MB/s", canary_rate=50,
                spec={**LEAN, **PAIRS[request.param]}, topic_shapes=SHAPES)
    try:
        yield request.param, demo, _migrate(demo)
    finally:
        if demo.canary is not None:
            demo.canary.stop()
        demo.teardown()


def test_the_sandbox_runs_the_releases_asked(migrated):
    pair, demo, _got = migrated
    spec = demo.spec
    logs = {b.id: (demo.sandbox.dir / f"kafka-{b.id}" / "server.log").read_text() for b in spec.brokers}
    for b in spec.brokers:
        assert f"Kafka version: {spec.kafka_version_of(b.id)}" in logs[b.id], (pair, b.id)
    zk_log = (demo.sandbox.dir / "zookeeper-2" / "zookeeper.log").read_text()
    assert f"Server environment:zookeeper.version={spec.zookeeper_version}" in zk_log, pair


def test_nothing_is_lost_and_verify_passes(migrated):
    pair, _demo, got = migrated
    code, out, err = got["snapshot"]
    assert code == 0, (pair, err)
    code, out, err = got["compare"]
    assert code == 0, (pair, err, out[-2000:])
    report = json.loads(out)
    assert report["ok"] is True and report["summary"]["verified_records"] > 0, (pair, report["summary"])
    canary = got["canary"]
    assert canary["lost"] == 0 and canary["acknowledged"] == canary["sent"] > 0, (pair, canary)


def test_partitions_killed_and_resumed_moves_everything(migrated):
    pair, _demo, got = migrated
    assert any(e.get("event") == "throttle-set" for e in got["first_run_events"]), pair
    code, evs, err = got["resumed"]
    assert code == 0, (pair, err[-2000:])
    kinds = {e.get("event") for e in evs}
    # the run after the kill re-read what the killed run left (its throttles, its reassignments) and took it on
    assert kinds & {"throttle-cleared", "throttle-adopted", "throttles-adopted", "adopted"}, (pair, sorted(kinds))
    assert got["left_on_old"] == [] and got["under_replicated"] == [], pair


def test_the_zookeeper_swap_makes_the_joiners_the_voters(migrated):
    pair, _demo, got = migrated
    servers = got["zookeeper_config"].servers
    assert sorted((s.id, s.role) for s in servers) == [(2, "participant"), (3, "participant"), (4, "participant")], pair


def test_throttles_are_set_then_exactly_kmigrates_removed(migrated):
    pair, _demo, got = migrated
    at_kill = got["throttles_at_kill"]
    # kmigrate's own, while its moves ran: its rate on brokers, its entries beside the foreign ones
    assert any(r.endswith("replication.throttled.rate=1000000") for r in got["rates_at_kill"]), (pair, got["rates_at_kill"])
    orders = [t for t in at_kill if t.startswith(f"topic orders {LEADER_LIST}=")]
    assert orders and set(FOREIGN_ENTRIES.split(",")) < set(orders[0].split("=", 1)[1].split(",")), (pair, at_kill)
    # afterwards: exactly what was there before kmigrate, and none of kmigrate's rates
    assert not [r for r in got["rates_after"] if r.endswith("=1000000")], (pair, got["rates_after"])
    assert [t for t in got["throttles_after"] if t.startswith("topic ")] == [f"topic orders {LEADER_LIST}={FOREIGN_ENTRIES}"], (
        pair, got["throttles_after"])


def test_a_broker_rate_someone_else_set_is_restored(migrated):
    # Kafka 2.4.1's DescribeConfigs does not list per-broker throttle rates (2.8.2 does): kmigrate reads
    # those brokers' rates from ZooKeeper (/config/brokers/<id>, the playbook's connect), records the
    # foreign one and restores it
    pair, _demo, got = migrated
    assert got["rates_after"] == [f"broker 2 {LEADER_RATE}={FOREIGN_RATE}"], (pair, got["rates_after"])


def test_status_says_the_migration_is_done(migrated):
    pair, _demo, got = migrated
    code, out, err = got["status"]
    assert code == 0, (pair, err)
    st = json.loads(out)
    assert st["partitions_on_old_brokers"] == 0 and st["reassignments_in_flight"] == 0, (pair, st)
    assert st["topics_recorded"] == st["topics_total"] > 0, (pair, st)
    assert not [t for t in st["throttles"] if t["kmigrate"]], (pair, st["throttles"])
    assert [t for t in st["throttles"] if t.get("topic") == "orders"], (pair, st["throttles"])  # the foreign list, left


def test_plan_names_each_brokers_release_and_a_half_done_upgrade(migrated):
    pair, _demo, got = migrated
    text = " ".join(got["plan_output"].split())  # rich wraps long lines
    expected = {"2.4.1/3.5.7": "releases: Kafka 2.4 (brokers 1, 2, 3, 4); inter.broker.protocol.version 2.4-IV1 "
                               "(brokers 1, 2, 3, 4); ZooKeeper 3.5.7 (server 1)",
                "2.8.2/3.6.4-upgrading": "releases: Kafka 2.4 (broker 1), 2.8 (brokers 2, 3, 4); "
                                         "inter.broker.protocol.version 2.4 (brokers 1, 2, 3, 4); ZooKeeper 3.6.4 "
                                         "(server 1)"}[pair]
    assert expected in text, (pair, text[:3000])
    assert ("kafka.mixed_versions" in text) == pair.endswith("upgrading"), (pair, text[:3000])
    assert "kafka.hidden_broker_rates" in text, (pair, text[:3000])  # broker 1 runs 2.4.1 in both


def test_partitions_without_zookeeper_is_refused_before_any_change_where_brokers_hide_their_rates(migrated):
    # kept last: a run that was not refused would change what the tests above judge
    pair, demo, got = migrated
    throttles, rates = throttles_left(demo.sandbox), _rates_in_zookeeper(demo)
    run = kmigrate("partitions", "--bootstrap-server", demo.spec.bootstrap_servers(), "--mapping", "1:3,2:4",
                   "--output", "json")
    assert run.returncode == 2, (pair, run.returncode, run.stdout[-2000:], run.stderr[-2000:])
    line = run.stderr.strip()
    assert "\n" not in line and "run Kafka before 2.8" in line, (pair, line)
    assert "--zookeeper" in line and "--ignore-hidden-broker-rates" in line, (pair, line)
    assert "broker(s) 1" in line, (pair, line)  # broker 1 runs 2.4.1 in both
    assert (throttles_left(demo.sandbox), _rates_in_zookeeper(demo)) == (throttles, rates), pair
