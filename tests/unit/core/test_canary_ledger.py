import pytest

from migrate.core.canary import (
    OVERDUE_AFTER_S,
    CanaryLedger,
    StallClock,
    decode,
    encode,
    leader_spread_assignment,
    percentile,
)


def _sent_and_acked(ledger: CanaryLedger, seqs, partition=0, sent_s=0.0, acked_s=0.01) -> None:
    for seq in seqs:
        ledger.on_send(seq, partition, sent_s)
        ledger.on_ack(seq, acked_s)


def test_lost_duplicated_and_out_of_order_are_counted_in_the_final_report():
    ledger = CanaryLedger("c", started_s=0.0)
    for seq in range(5):
        ledger.on_send(seq, seq % 2, seq)
        ledger.on_ack(seq, seq + 0.01)
    for seq, part in ((0, 0), (2, 0), (1, 0), (2, 0), (3, 1)):
        ledger.on_consume(seq, part, 5.0)
    report = ledger.report(10.0, final=True)
    assert (report.sent, report.acknowledged, report.consumed) == (5, 5, 4)
    assert report.lost == 1 and report.lost_sample == (4,)
    assert report.not_yet_consumed == 0 and report.overdue == 0
    assert report.duplicated == 1
    assert report.out_of_order == 1  # 1 consumed after 2 on partition 0; the repeated 2 is a duplicate, not a reorder
    assert not report.ok


def test_in_flight_records_are_never_called_lost_while_running():
    ledger = CanaryLedger("c", started_s=0.0)
    _sent_and_acked(ledger, range(10))
    live = ledger.report(1.0)
    assert live.lost is None and not live.final and not live.ok
    assert live.not_yet_consumed == 10 and live.overdue == 0
    for seq in range(10):
        ledger.on_consume(seq, 0, 1.5)
    final = ledger.report(2.0, final=True)
    assert final.lost == 0 and final.not_yet_consumed == 0 and final.ok


def test_overdue_needs_both_the_age_and_a_later_record_of_the_same_partition_read():
    ledger = CanaryLedger("c", started_s=0.0)
    ledger.on_send(0, 0, 0.0), ledger.on_ack(0, 0.01)  # never read
    ledger.on_send(1, 1, 0.0), ledger.on_ack(1, 0.01)  # never read, but nothing later of partition 1 is read
    ledger.on_send(2, 0, 0.1), ledger.on_ack(2, 0.11)
    ledger.on_consume(2, 0, 0.2)  # the consumer went past record 0 on partition 0
    assert ledger.report(OVERDUE_AFTER_S - 0.5).overdue == 0  # too recent to say
    late = ledger.report(OVERDUE_AFTER_S + 1.0)
    assert (late.not_yet_consumed, late.overdue, late.lost) == (2, 1, None)
    assert ledger.report(OVERDUE_AFTER_S + 1.0, final=True).lost == 2


def test_a_record_read_before_its_acknowledgement_is_not_waiting_to_be_consumed():
    ledger = CanaryLedger("c", started_s=0.0)
    ledger.on_send(0, 0, 0.0)
    ledger.on_consume(0, 0, 0.01)
    ledger.on_ack(0, 0.02)
    report = ledger.report(30.0)
    assert report.not_yet_consumed == 0 and report.consume_stall_s == 0.0 and report.produce_stall_s == 0.02


def test_the_5_7_s_produce_is_a_5_7_s_produce_stall_although_other_partitions_went_on():
    ledger = CanaryLedger("c", started_s=100.0)
    ledger.on_send(0, 2, 100.5)  # its partition's leader is moving
    t, seq = 100.5, 1
    while t < 106.0:  # partitions 0 and 1 are acknowledged every 10 ms meanwhile
        ledger.on_send(seq, seq % 2, t)
        ledger.on_ack(seq, t + 0.01)
        t, seq = t + 0.01, seq + 1
    ledger.on_ack(0, 106.2)
    report = ledger.report(107.0)
    assert report.latency_max_ms == pytest.approx(5700.0)
    assert report.produce_stall_s == pytest.approx(5.7)
    assert report.produce_stall_partition == 2 and report.produce_stall_at_s == pytest.approx(0.5)


def test_produce_stall_starts_at_the_last_acknowledgement_when_records_were_already_waiting():
    ledger = CanaryLedger("c", started_s=0.0)
    ledger.on_send(0, 0, 0.0)
    ledger.on_send(1, 0, 0.5)
    ledger.on_ack(0, 1.0)  # record 1 keeps waiting: the stall runs from here
    ledger.on_send(2, 0, 2.0)
    ledger.on_ack(1, 4.0)
    ledger.on_ack(2, 4.1)
    report = ledger.report(10.0)
    assert report.produce_stall_s == pytest.approx(3.0) and report.produce_stall_at_s == pytest.approx(1.0)


def test_no_stall_while_nothing_waits():
    ledger = CanaryLedger("c", started_s=0.0)
    for seq, t in enumerate((0.0, 5.0, 20.0)):  # a quiet producer: long gaps, short waits
        ledger.on_send(seq, 0, t)
        ledger.on_ack(seq, t + 0.05)
        ledger.on_consume(seq, 0, t + 0.07)
    report = ledger.report(60.0)
    assert report.produce_stall_s == pytest.approx(0.05) and report.consume_stall_s == pytest.approx(0.02)


def test_a_stall_still_going_on_counts_up_to_the_report_and_only_grows():
    ledger = CanaryLedger("c", started_s=0.0)
    ledger.on_send(0, 1, 1.0)
    figures = [ledger.report(now).produce_stall_s for now in (2.0, 4.0, 6.0)]
    assert figures == [1.0, 3.0, 5.0]
    ledger.on_ack(0, 6.5)
    assert ledger.report(9.0).produce_stall_s == 5.5


def test_a_failed_send_ends_the_wait_it_stood_for():
    ledger = CanaryLedger("c", started_s=0.0)
    ledger.on_send(0, 0, 0.0)
    ledger.on_send_error(0, "Local: Message timed out", 3.0)
    report = ledger.report(50.0, final=True)
    assert report.produce_stall_s == 3.0 and report.failed_sends == 1 and report.unacknowledged == 0
    assert report.errors == ("Local: Message timed out",) and not report.ok


def test_consume_stall_is_the_longest_wait_to_read_acknowledged_records_of_a_partition():
    ledger = CanaryLedger("c", started_s=0.0)
    _sent_and_acked(ledger, [0, 1], partition=0, sent_s=1.0, acked_s=1.01)
    ledger.on_consume(0, 0, 1.02)
    ledger.on_send(2, 1, 1.0), ledger.on_ack(2, 1.01)
    ledger.on_consume(2, 1, 2.0)  # partition 1 reads on; partition 0's record 1 still waits
    ledger.on_consume(1, 0, 4.52)
    report = ledger.report(10.0)
    assert report.consume_stall_s == pytest.approx(3.5)
    assert report.consume_stall_partition == 0 and report.consume_stall_at_s == pytest.approx(1.02)
    assert report.produce_stall_s == pytest.approx(0.01)


def test_stall_clock_progress_without_waiting_records_changes_nothing():
    clock = StallClock()
    clock.progress(0, 5.0, done=1)
    clock.wait(0, 6.0)
    clock.progress(0, 6.25, done=1)
    assert clock.longest(100.0).seconds == 0.25


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


def test_report_json_names_both_stalls():
    ledger = CanaryLedger("c", started_s=0.0)
    d = ledger.report(1.0, final=True).to_dict()
    for key in ("produce_stall_s", "produce_stall_at_s", "produce_stall_partition", "consume_stall_s",
                "consume_stall_at_s", "consume_stall_partition", "not_yet_consumed", "overdue", "lost", "final"):
        assert key in d
    assert "longest_stall_s" not in d and d["ok"] is True


def test_tap_keeps_each_ack_with_its_partition_and_latency_until_taken():
    ledger = CanaryLedger("c", 0.0, tap=[])
    ledger.on_send(0, 1, 1.0)
    ledger.on_send(1, 2, 1.5)
    ledger.on_ack(0, 1.25)
    assert ledger.take_tap() == [(1.25, 1, 0.25)]
    assert ledger.take_tap() == []
    assert ledger.waiting_since() == {2: 1.5}  # seq 1 still waits: a stall of partition 2 going on
    untapped = CanaryLedger("c", 0.0)
    _sent_and_acked(untapped, [0])
    assert untapped.tap is None and untapped.take_tap() == []
