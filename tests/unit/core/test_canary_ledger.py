from migrate.core.canary import CanaryLedger, decode, encode, leader_spread_assignment, percentile


def test_lost_duplicated_and_out_of_order_are_counted():
    ledger = CanaryLedger("c", started_s=0.0)
    for seq in range(5):
        ledger.on_send(seq)
        ledger.on_ack(seq, sent_s=seq, now_s=seq + 0.01)
    for seq, part in ((0, 0), (2, 0), (1, 0), (2, 0), (3, 1)):
        ledger.on_consume(seq, part)
    report = ledger.report(ended_s=10.0, producing_ended_s=4.01)
    assert (report.sent, report.acknowledged, report.consumed) == (5, 5, 4)
    assert report.lost == 1 and report.lost_sample == (4,)
    assert report.duplicated == 1
    assert report.out_of_order == 1  # 1 consumed after 2 on partition 0; the repeated 2 is a duplicate, not a reorder
    assert not report.ok


def test_stall_is_the_longest_gap_between_acknowledgements():
    ledger = CanaryLedger("c", started_s=100.0)
    for now in (100.5, 101.0, 104.5, 105.0):
        ledger.on_ack(0, sent_s=now - 0.1, now_s=now)
    report = ledger.report(ended_s=106.0, producing_ended_s=105.2)
    assert report.longest_stall_s == 3.5
    assert report.longest_stall_at_s == 1.0
    # No acknowledgement for a long time at the end counts too.
    assert ledger.report(ended_s=120.0, producing_ended_s=110.0).longest_stall_s == 5.0


def test_percentiles_and_codec():
    assert percentile([], 0.5) is None
    assert percentile([float(i) for i in range(1, 101)], 0.99) == 99.0
    assert decode("r1", encode("r1", 1234)) == 1234
    assert decode("r2", encode("r1", 1234)) is None  # another run's record
    assert decode("r1", b"something else") is None


def test_every_broker_leads_one_partition():
    assignment = leader_spread_assignment([101, 5, 33], 3)
    assert [p[0] for p in assignment] == [5, 33, 101]
    assert all(len(set(p)) == 3 for p in assignment)
