"""The health judgement: under-replicated, offline, brokers expected vs registered, the controller."""

from migrate.core.health import ClusterReading, judge
from migrate.core.model import Partition, Topic


def reading(parts, brokers=(1, 2, 3), controller=1):
    return ClusterReading(controller_id=controller, brokers=frozenset(brokers),
                          topics=(Topic("orders", partitions=tuple(parts)),))


def test_a_fully_replicated_cluster_with_a_controller_is_healthy():
    h = judge(reading([Partition(0, (1, 2, 3), (3, 1, 2), 1), Partition(1, (2, 3), (2, 3), 3)]))
    assert h.healthy and h.problems() == [] and h.partitions == 2
    assert h.expected_brokers == (1, 2, 3) and h.summary().startswith("healthy: 0 under-replicated, 0 offline of 2")


def test_a_shrunk_isr_is_under_replicated_and_named():
    h = judge(reading([Partition(0, (1, 2, 3), (1, 2), 1), Partition(1, (1, 2, 3), (1, 2, 3), 2)]))
    assert not h.healthy
    assert h.under_replicated == (("orders", 0),)
    assert h.problems() == ["1 under-replicated partition(s): orders-0"]


def test_a_partition_without_leader_is_offline():
    h = judge(reading([Partition(0, (1, 2), (1, 2), None)]))
    assert h.offline == (("orders", 0),) and not h.healthy
    assert h.problems() == ["1 offline partition(s) (no leader): orders-0"]


def test_expected_brokers_default_to_the_replica_hosts_and_a_broker_list_overrides_them():
    parts = [Partition(0, (1, 2, 3), (1, 2, 3), 1)]
    down = judge(reading(parts, brokers=(1, 2)))
    assert down.missing_brokers == (3,) and not down.healthy
    assert "broker(s) 3 not registered (expected 1, 2, 3; registered 1, 2)" in down.problems()
    listed = judge(reading(parts, brokers=(1, 2, 3)), expected_brokers=(1, 2, 3, 4))
    assert listed.missing_brokers == (4,) and not listed.healthy
    spare = judge(reading(parts, brokers=(1, 2, 3, 4)))
    assert spare.healthy and spare.expected_brokers == (1, 2, 3)


def test_an_unknown_controller_or_an_unreachable_cluster_is_not_healthy():
    no_controller = judge(reading([Partition(0, (1,), (1,), 1)], controller=None))
    assert not no_controller.healthy and no_controller.problems() == ["no controller known"]
    gone = judge(ClusterReading.unreachable("timed out"))
    assert not gone.healthy and gone.problems() == ["the cluster did not answer: timed out"]
    assert gone.to_dict()["error"] == "timed out"


def test_a_long_list_of_partitions_is_cut_with_a_count_in_one_line():
    h = judge(reading([Partition(i, (1, 2), (1,), 1) for i in range(15)]))
    line = h.problems()[0]
    assert line.startswith("15 under-replicated partition(s): orders-0, orders-1") and line.endswith("and 5 more")
    assert len(h.to_dict()["under_replicated"]) == 15
