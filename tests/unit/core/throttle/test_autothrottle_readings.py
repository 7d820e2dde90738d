"""From what a partitions run reads to the controller's inputs (core/throttle/readings.py)."""

from migrate.core.throttle.readings import copy_rates
from migrate.core.throttle.readings import broker_limits, health_from_partitions, window_from_acks


def test_window_counts_acks_for_their_leaders_and_a_wait_going_on_as_a_stall():
    acks = [(9.0, 0, 0.010), (9.1, 0, 0.012), (9.2, 1, 0.300), (9.3, 7, 0.050)]  # partition 7: leader unknown
    w = window_from_acks(10.0, acks, {0: 1, 1: 2}, {0: 9.9, 1: 8.0}, min_broker_samples=1)
    assert w.samples == 4 and w.p99_s == 0.3
    assert dict(w.p99_by_broker) == {1: 0.012, 2: 0.3}
    assert dict(w.stall_by_broker) == {1: 0.1, 2: 2.0}
    assert w.worst_for(2) == (2.0, "stall on broker 2's partitions")


def test_a_broker_with_few_acks_is_held_to_the_cluster_p99_and_its_stalls_not_to_its_own_p99():
    # 150 quick acks on broker 1's partition, 20 on broker 2's, one of them slow (0.4 s): broker 2's
    # own p99 of 20 acks would be that one ack; the cluster's p99 of 170 is not
    acks = [(9.0, 0, 0.010)] * 150 + [(9.0, 1, 0.012)] * 19 + [(9.5, 1, 0.400)]
    w = window_from_acks(10.0, acks, {0: 1, 1: 2}, {1: 9.0})
    assert dict(w.p99_by_broker) == {1: 0.01}
    assert w.p99_s < 0.4
    assert w.worst_for(2) == (1.0, "stall on broker 2's partitions")  # its stall still counts
    assert window_from_acks(10.0, acks, {0: 1, 1: 2}).worst_for(2)[0] < 0.4


def test_window_without_acks_is_no_signal():
    w = window_from_acks(10.0, [], {0: 1})
    assert not w.has_signal


def test_health_skips_partitions_being_moved_and_caps_min_isr_at_the_replicas():
    parts = [("a", 0, (1, 2, 3), (1,)),        # under min ISR 2
             ("a", 1, (1, 2, 3), (1, 2)),      # lagging
             ("a", 2, (1, 2, 3), (1,)),        # moving: not counted
             ("b", 0, (1,), (1,)),             # min ISR 2 on one replica: counts as 1
             ("b", 1, (), ())]
    h = health_from_partitions(parts, {"a": 2, "b": 2}, {("a", 2)})
    assert h.under_min_isr == ("a-0",) and h.lagging == ("a-1",)


def test_broker_limits_within_the_operators_cap():
    assert broker_limits({4: 1, 5: 12, 6: 0}, 5) == ((4, 1), (5, 5), (6, 1))


# ------------------------------------------------------------------ copy_rates
def test_copy_rates_sum_each_brokers_added_replicas_and_the_inflow_of_what_it_copies():
    before = {("a", 0, 1): 10_000, ("a", 0, 2): 9_000, ("a", 0, 4): 0,
              ("b", 3, 2): 5_000, ("b", 3, 4): 1_000, ("b", 3, 5): 0}
    after = {("a", 0, 1): 12_000, ("a", 0, 2): 11_500, ("a", 0, 4): 4_000,
             ("b", 3, 2): 6_000, ("b", 3, 4): 3_000, ("b", 3, 5): 2_000}
    moves = [("a", 0, (1, 2), (4,)), ("b", 3, (2,), (4, 5))]
    inflow, copied = copy_rates(before, after, 4.0, moves)
    # a-0 grew 2,500 on its fastest current replica, b-3 1,000: over 4 s
    assert inflow == {4: round((2_500 + 1_000) / 4), 5: 250}
    assert copied == {4: round((4_000 + 2_000) / 4), 5: 500}


def test_copy_rates_leave_out_what_one_look_missed_and_count_a_shrink_as_nothing():
    before = {("a", 0, 1): 10_000, ("a", 0, 4): 500}
    after = {("a", 0, 1): 8_000, ("a", 0, 4): 400, ("a", 1, 5): 700}  # retention; a-1 began between the looks
    inflow, copied = copy_rates(before, after, 2.0, [("a", 0, (1,), (4,)), ("a", 1, (2,), (5,))])
    assert inflow == {4: 0} and copied == {4: 0}
    assert copy_rates(before, after, -1.0, [("a", 0, (1,), (4,))]) == ({}, {})
