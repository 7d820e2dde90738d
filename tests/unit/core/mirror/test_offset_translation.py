"""kmigrate's own offset translation (MirrorMaker 1): never ahead of the true position, with many
records on one timestamp, timestamps going backwards, identical records, and a mirror restarted
(a stretch copied twice). The target is built the way MirrorMaker 1 writes it, and
``offsets_for_times`` is the broker's rule (earliest offset whose timestamp is at or after)."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from migrate.core.mirror.translation import PartitionFacts, Record, record_digest, translate


def src_records(items: list[tuple[bytes | None, bytes | None, int]]) -> list[Record]:
    return [Record(i, ts, record_digest(k, v, [("h", b"1")], ts)) for i, (k, v, ts) in enumerate(items)]


def mirror(source: list[Record], restarts: list[tuple[int, int]]) -> tuple[list[Record], list[int]]:
    """The target MirrorMaker 1 writes: the source in order, and at each (copied up to, resumed from)
    a restart that copies again from an earlier offset. Returns the records and, per target offset,
    the source offset it copies."""
    order: list[int] = []
    pos = 0
    for upto, resume in sorted(restarts):
        order += list(range(pos, upto))
        pos = min(resume, upto)
    order += list(range(pos, len(source)))
    target = [Record(i, source[s].timestamp, source[s].digest) for i, s in enumerate(order)]
    return target, order


def offsets_for_times(target: list[Record], ts: int) -> int | None:
    return next((r.offset for r in target if r.timestamp >= ts), None)


def facts(source: list[Record], target: list[Record], committed: int, window: int = 10_000,
          timestamps_kept: bool = True) -> PartitionFacts:
    nxt = source[committed] if committed < len(source) else None
    bound = offsets_for_times(target, nxt.timestamp) if nxt is not None and timestamps_kept else None
    start = bound if timestamps_kept else 0
    win = tuple(target[start:start + window]) if nxt is not None and start is not None else ()
    return PartitionFacts(committed, len(source), nxt, 0, len(target), bound, win, timestamps_kept)


def reads_everything_unread(target_order: list[int], offset: int, committed: int, n: int) -> bool:
    """From ``offset`` on the target, every source record at or after ``committed`` is read."""
    return set(range(committed, n)) <= set(target_order[offset:])


def check(source, target, order, committed, **kw):
    t = translate("g", "t", 0, facts(source, target, committed, **kw))
    assert reads_everything_unread(order, t.offset, committed, len(source)), (committed, t)
    assert t.rereads == len(target) - t.offset - (len(source) - committed)
    return t


def test_a_plain_copy_translates_exactly_with_no_reread():
    source = src_records([(str(i).encode(), f"v{i}".encode(), 1000 + i) for i in range(50)])
    target, order = mirror(source, [])
    for c in range(51):
        t = check(source, target, order, c)
        assert t.offset == c and t.rereads == 0 and t.confirmed


def test_many_records_on_one_timestamp_are_told_apart_by_content():
    source = src_records([(str(i).encode(), f"v{i}".encode(), 5000) for i in range(40)])
    target, order = mirror(source, [])
    for c in (0, 1, 17, 39):
        t = check(source, target, order, c)
        assert t.offset == c and t.how == "confirmed"


def test_identical_records_on_one_timestamp_never_skip():
    source = src_records([(b"k", b"same", 5000) for _ in range(30)])
    target, order = mirror(source, [])
    t = check(source, target, order, 20)
    assert t.offset == 0 and t.rereads == 20  # cannot tell them apart: reads them again, skips none


def test_timestamps_going_backwards_never_skip():
    stamps = [1000, 5000, 900, 800, 4000, 1200, 700, 6000, 3000, 650]
    source = src_records([(str(i).encode(), f"v{i}".encode(), ts) for i, ts in enumerate(stamps)])
    target, order = mirror(source, [])
    for c in range(len(stamps) + 1):
        t = check(source, target, order, c)
        assert t.offset == c  # the first content match after the timestamp bound is the record itself


def test_a_restart_copies_a_stretch_twice_and_the_rereads_count_it():
    source = src_records([(str(i).encode(), f"v{i}".encode(), 1000 + i) for i in range(100)])
    target, order = mirror(source, [(60, 40)])  # copied up to 60, killed, resumed from its commit at 40
    assert len(target) == 120
    t = check(source, target, order, 50)
    assert t.offset == 50 and t.rereads == 20  # 50..59 twice, 40..49 (already read) once more
    t = check(source, target, order, 80)
    assert t.offset == 100 and t.rereads == 0


def test_not_confirmed_in_the_window_falls_back_to_the_timestamp_bound():
    stamps = [9000] + [1000 + i for i in range(1, 50)]  # an early record with a late timestamp
    source = src_records([(str(i).encode(), f"v{i}".encode(), ts) for i, ts in enumerate(stamps)])
    target, order = mirror(source, [])
    t = check(source, target, order, 30, window=5)
    assert t.offset == 0 and t.how == "timestamp bound"  # offset 0 is at or after every timestamp


def test_a_record_not_copied_yet_goes_to_the_target_end_and_a_group_at_the_end_too():
    source = src_records([(str(i).encode(), f"v{i}".encode(), 1000 + i) for i in range(20)])
    target, order = mirror(source[:10], [])
    t = translate("g", "t", 0, facts(source, target, 15))
    assert t.offset == 10 and t.how == "not copied yet"
    t = translate("g", "t", 0, facts(source, mirror(source, [])[0], 20))
    assert t.offset == 20 and t.how == "at the end" and t.rereads == 0


def test_log_append_time_on_the_target_reads_from_the_log_start():
    source = src_records([(str(i).encode(), f"v{i}".encode(), 1000 + i) for i in range(20)])
    target, order = mirror(source, [])
    t = check(source, target, order, 7, timestamps_kept=False)
    assert t.offset == 7 and t.how == "confirmed"
    t = check(source, target, order, 7, timestamps_kept=False, window=3)
    assert t.offset == 0 and t.how == "log start"


def test_the_digest_covers_key_value_headers_and_timestamp():
    base = record_digest(b"k", b"v", [("h", b"1")], 1)
    assert len({base, record_digest(b"k", b"w", [("h", b"1")], 1), record_digest(None, b"v", [("h", b"1")], 1),
                record_digest(b"k", b"v", [("h", b"2")], 1), record_digest(b"k", b"v", [], 1),
                record_digest(b"k", b"v", [("h", b"1")], 2), record_digest(b"kv", b"", [("h", b"1")], 1)}) == 7


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 5)), min_size=1, max_size=40),
       st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), max_size=3), st.data())
def test_never_ahead_whatever_the_timestamps_contents_and_restarts(items, restarts, data):
    source = src_records([(str(k).encode(), str(v).encode(), ts) for k, v, ts in items])
    n = len(source)
    target, order = mirror(source, [(min(a, n), min(b, a, n)) for a, b in restarts])
    committed = data.draw(st.integers(0, n))
    window = data.draw(st.integers(1, 50))
    check(source, target, order, committed, window=window)


def test_a_partition_holding_fewer_records_than_copied_from_its_source_partition_is_refused():
    from migrate.core.mirror.translation import partitions_not_kept

    copied = {("t", 0): (0, 100), ("t", 1): (10, 60), ("u", 0): (0, 0)}
    target = {("t", 0): (0, 120), ("t", 1): (0, 40), ("u", 0): (0, 0)}
    assert partitions_not_kept(copied, target) == [("t", 1)]
    assert partitions_not_kept({("t", 0): (0, 5)}, {}) == [("t", 0)]
