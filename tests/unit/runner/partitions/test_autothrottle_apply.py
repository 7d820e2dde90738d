"""runner/throttle/auto: each decision is recorded (throttle-auto, then the broker's rate records) before
the broker's config changes, the broker's moves in flight are capped, and an event says it."""

from dataclasses import dataclass
from types import SimpleNamespace

from migrate.core.partitions.scheduler import Caps
from migrate.core.partitions.tasks import PartitionTasks
from migrate.core.throttle.controller import Controller
from migrate.core.throttle.law import Settings
from migrate.core.throttle.options import AutoThrottle
from migrate.core.throttle.signals import Baseline, Budget, Health, LatencyWindow
from migrate.core.partitions.moves import PartitionMove
from migrate.runner.partitions.state import CopyWatch
from migrate.runner.partitions.throttles import Throttles
from migrate.runner.throttle.auto import AutoRunner

from test_throttles_auto_rates import Cluster  # tests/unit/runner/partitions is on the path (rootdir conftest)


@dataclass(frozen=True)
class Request:  # the two fields of PartitionsRequest the apply step reads
    plan_id: str
    caps: Caps


def _runner():
    cluster = Cluster()
    seen = []
    throttles = Throttles(cluster, cluster, "p1", 10_000_000, seen.append, auto=True)
    run = SimpleNamespace(rq=Request("p1", Caps(per_broker=5)), throttles=throttles,
                          emit=seen.append, tasks=PartitionTasks(), watch=CopyWatch(),
                          clock=SimpleNamespace(now=lambda: 20.0))
    r = AutoRunner(run, AutoThrottle(Budget(0.05)))
    r.controller = Controller(Settings(), Baseline(0.02), Budget(0.05), now_s=0.0)
    return r, run, cluster, seen


def test_decisions_are_recorded_before_the_rates_change_and_cap_the_moves():
    r, run, cluster, seen = _runner()
    r._apply(r.controller.step(0.0, None, Health(), [4, 5]))
    run.throttles.sync({}, brokers=[4, 5], live=[4, 5])  # the first moves set the start rate
    assert cluster.configs[4]["follower.replication.throttled.rate"] == "10000000"
    assert run.rq.caps.broker_limits == ((4, 2), (5, 2))
    cluster.order.clear()
    r._apply(r.controller.step(10.0, LatencyWindow(10.0, 0.03, 50), Health(), [4, 5]))
    assert cluster.configs[4]["follower.replication.throttled.rate"] == "20000000"
    kinds = [rec.value["kind"] for rec in cluster.records[-6:]]
    assert kinds == ["throttle-auto", "throttle-auto"] + ["throttle-broker"] * 4
    assert cluster.order == [("record", 6), ("set", 4), ("set", 5)]
    auto_events = [e for e in seen if e.kind == "throttle-auto"]
    assert auto_events[-1].message.startswith("auto throttle: broker 5 10 MB/s -> 20 MB/s, 2 move(s) at once: slow-start")
    # over budget: halved, moves halved (at least one)
    r._apply(r.controller.step(20.0, LatencyWindow(20.0, 0.5, 50), Health(), [4, 5]))
    assert cluster.configs[5]["leader.replication.throttled.rate"] == "10000000"
    assert run.rq.caps.broker_limits == ((4, 1), (5, 1))


def test_a_broker_that_refuses_keeps_its_rate_and_the_next_step_tries_again():
    r, run, cluster, seen = _runner()
    r._apply(r.controller.step(0.0, None, Health(), [4]))
    run.throttles.sync({}, brokers=[4], live=[4])
    cluster.refuse = {4}
    r._apply(r.controller.step(10.0, LatencyWindow(10.0, 0.03, 50), Health(), [4]))
    assert cluster.configs[4]["follower.replication.throttled.rate"] == "10000000"
    assert seen[-1].message.endswith("(the broker refused the change: 10 MB/s stays; tried again at the next step)")
    assert r.controller.rates() == {4: 10_000_000}
    cluster.refuse = set()
    r._apply(r.controller.step(20.0, LatencyWindow(20.0, 0.03, 50), Health(), [4]))
    assert cluster.configs[4]["follower.replication.throttled.rate"] == "40000000"


def test_the_free_disk_of_the_brokers_taking_part_is_a_rail_of_each_step():
    """The rails the runner reads each window carry the free disk of the brokers taking part (DescribeLogDirs'
    totals); a target broker below the floor holds its rate and one move at a time."""
    r, run, _cluster, _seen = _runner()
    asked = []

    def free_disk(brokers):
        asked.append(list(brokers))
        return {4: 0.03, 5: 0.60}

    run.admin = SimpleNamespace(free_disk=free_disk)
    run.view = SimpleNamespace(min_isr={})
    r._brokers = lambda: [4, 5]
    health = r._health({})
    assert asked == [[4, 5]] and dict(health.free_disk_ratio) == {4: 0.03, 5: 0.60}
    r.controller.step(0.0, None, Health(), [4, 5])
    (d4,) = [d for d in r.controller.step(10.0, LatencyWindow(10.0, 0.03, 50), health, [4, 5]) if d.broker == 4]
    assert "free disk 3% on broker 4" in d4.reason and d4.moves == 1 and d4.new_rate <= d4.old_rate

    def refused(brokers):
        raise RuntimeError("CLUSTER_AUTHORIZATION_FAILED")

    run.admin = SimpleNamespace(free_disk=refused)
    assert dict(r._health({}).free_disk_ratio) == {}  # not known this time: no rail, no failure


def test_the_copy_and_inflow_rates_come_from_the_last_two_looks_at_the_sizes():
    """The law's bounds (copy rate, inflow) per broker taking a copy, from the run's last two looks at the replicas'
    sizes: the added replicas' growth and the current replicas' (the producers' data the copy must also take)."""
    r, run, _cluster, _seen = _runner()
    run.admin = SimpleNamespace(free_disk=lambda brokers: {})
    run.view = SimpleNamespace(min_isr={})
    move = PartitionMove("t", 0, (1, 2), (4, 2), 1000)
    run.tasks.plan(move)
    run.tasks.start_moving(move)
    assert dict(r._health({}).copied_bytes_per_s) == {}  # no two looks yet: no bound
    run.watch.looks = ((10.0, {("t", 0, 1): 5_000, ("t", 0, 2): 5_000, ("t", 0, 4): 0}),
                       (14.0, {("t", 0, 1): 9_000, ("t", 0, 2): 8_000, ("t", 0, 4): 12_000}))
    health = r._health({})
    assert dict(health.copied_bytes_per_s) == {4: 3_000} and dict(health.inflow_bytes_per_s) == {4: 1_000}
    run.clock = SimpleNamespace(now=lambda: 40.0)  # the last look is older than two windows: no fresh figure
    assert dict(r._health({}).copied_bytes_per_s) == {}
