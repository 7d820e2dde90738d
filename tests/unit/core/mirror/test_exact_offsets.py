"""The cut-over's exact offsets (``exact_offset``): MirrorMaker 2's safe offset made exact by content.

A model of an exactly-once MirrorMaker 2 copy: source records at offsets with gaps (transaction
markers, compaction), each copied once and in order onto target offsets with gaps of their own (the
copy's commit markers), with their timestamps (which may repeat or go backwards) and contents (which
may repeat). Offset-syncs are real (source, target) pairs, as MirrorMaker keeps a few of them."""

from __future__ import annotations

from hypothesis import given, strategies as st

from migrate.core.mirror.cutover import GroupRereads, Translation, choose_offset, exact_offset, group_rereads
from migrate.core.mirror.translation import PartitionFacts, PartitionTranslation, Record, translate

records = st.lists(st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(0, 4), st.integers(0, 30)),
                   min_size=1, max_size=60)


def copy(items: list[tuple[int, int, int, int]], contents: int | None):
    """(source records, target records, source offset -> target offset, source end, target end)."""
    source, target, at = [], [], {}
    up = down = 0
    ts = 1000
    for i, (gu, gd, dt, content) in enumerate(items):
        ts += dt - 1  # timestamps repeat (dt 1) and go backwards (dt 0)
        digest = f"d{content if contents is not None else i}"
        source.append(Record(up, ts, digest))
        target.append(Record(down, ts, digest))
        at[up] = down
        up, down = up + gu, down + gd
    return source, target, at, up, down


def facts(source, target, committed, source_end, target_end, window=10_000) -> PartitionFacts:
    """What the adapter reads: the broker's ``offsets_for_times`` rule, a window from there."""
    nxt = next((r for r in source if r.offset >= committed), None)
    bound = None if nxt is None else next((r.offset for r in target if r.timestamp >= nxt.timestamp), None)
    win = () if nxt is None or bound is None else tuple(r for r in target if r.offset >= bound)[:window]
    return PartitionFacts(committed, source_end, nxt, 0, target_end, bound, win)


def at_switch(items, contents, data, window=10_000):
    source, target, at, s_end, t_end = copy(items, contents)
    g = data.draw(st.integers(0, s_end))
    true = next((at[r.offset] for r in source if r.offset >= g), t_end)
    syncs = data.draw(st.lists(st.sampled_from(sorted(at.items())), max_size=4))
    mm = choose_offset("g", ("t", 0), g, None, syncs, s_end, True, t_end, target_start=0)
    content = translate("g", "t", 0, facts(source, target, g, s_end, t_end, window))
    return exact_offset(mm, content), true, mm


@given(records, st.data())
def test_unique_content_lands_exactly_on_the_copy_of_the_next_record(items, data):
    got, true, mm = at_switch(items, None, data)
    assert got.offset == true and got.how in ("content", "end")
    assert mm.offset <= true


@given(records, st.data(), st.integers(1, 5))
def test_repeated_content_and_small_windows_are_never_ahead_and_never_worse_than_mirrormaker(items, data, window):
    got, true, mm = at_switch(items, 3, data, window)
    assert got.offset is not None and got.offset <= true
    if got.how != "content":  # content decided nothing: the best safe offset, at least MirrorMaker's
        assert got.offset >= mm.offset


def test_a_mirrormaker_offset_past_the_first_copy_is_not_trusted_when_content_confirms():
    mm = Translation("g", "t", 0, 150, 160, "checkpoint", (150, 160))
    got = exact_offset(mm, PartitionTranslation("g", "t", 0, 150, 152, "confirmed", 0))
    assert (got.offset, got.how, got.mirrormaker) == (152, "content", (160, "checkpoint"))
    assert "not trusted" in got.reason
    assert got.to_dict()["content"] == {"target_offset": 152, "how": "confirmed"}
    assert got.to_dict()["mirrormaker"] == {"target_offset": 160, "how": "checkpoint"}


def test_content_undecided_keeps_the_larger_safe_offset_and_says_so():
    mm = Translation("g", "t", 0, 150, 99, "offset-sync")
    bound = exact_offset(mm, PartitionTranslation("g", "t", 0, 150, 120, "timestamp bound", 40))
    assert (bound.offset, bound.how) == (120, "timestamp-bound") and "not confirmed by content" in bound.reason
    kept = exact_offset(mm, PartitionTranslation("g", "t", 0, 150, 0, "log start", 160))
    assert (kept.offset, kept.how) == (99, "offset-sync") and kept.content == (0, "log start")
    refused = Translation("g", "t", 0, 150, None, "refused", reason="no checkpoint")
    assert exact_offset(refused, PartitionTranslation("g", "t", 0, 150, 7, "confirmed", 0)).how == "content"
    assert exact_offset(refused, PartitionTranslation("g", "t", 0, 150, 7, "not copied yet", None)).how == "refused"
    assert exact_offset(mm, None) is mm


def test_the_end_of_the_source_is_the_end_of_the_target():
    mm = Translation("g", "t", 0, 300, 280, "checkpoint")
    got = exact_offset(mm, PartitionTranslation("g", "t", 0, 300, 310, "at the end", 0))
    assert (got.offset, got.how) == (310, "end")


def test_rereads_are_summed_per_group_with_the_methods_that_decided():
    ts = [Translation("a", "t", 0, 5, 5, "content", duplicates=0), Translation("a", "t", 1, 9, 9, "end", duplicates=0),
          Translation("b", "t", 0, 5, 2, "checkpoint", duplicates=3), Translation("b", "u", 0, 5, 4, "content", duplicates=0)]
    assert group_rereads(ts) == [GroupRereads("a", 2, 0, {"content": 1, "end": 1}),
                                 GroupRereads("b", 2, 3, {"checkpoint": 1, "content": 1})]
    assert group_rereads(ts)[1].line() == ("group b: 3 record(s) read twice on the target "
                                           "(2 partition(s): checkpoint 1, content 1)")
    assert group_rereads([Translation("c", "t", 0, 5, None, "refused")])[0].rereads is None
