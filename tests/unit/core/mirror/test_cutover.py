"""The pure gates and offset translation of ``kmigrate mirror cutover`` (migrate.core.mirror.cutover)."""

from __future__ import annotations

import struct

from hypothesis import given, strategies as st

from migrate.core.mirror.cutover import (Translation, choose_offset, client_changes, ends_key, moving_partitions,
                                  offset_syncs, passed_gates, recorded_offsets, target_write, translate_with_syncs,
                                  with_duplicates)


def _sync(topic: str, partition: int, up: int, down: int) -> tuple[bytes, bytes]:
    name = topic.encode()
    return struct.pack(">h", len(name)) + name + struct.pack(">i", partition), struct.pack(">qq", up, down)


def test_offset_syncs_are_read_in_order_per_partition_and_junk_is_skipped():
    records = [_sync("a", 0, 0, 0), _sync("a", 1, 5, 3), (b"\x00", b"x"), (None, None), _sync("a", 0, 100, 97)]
    assert offset_syncs(records) == {("a", 0): [(0, 0), (100, 97)], ("a", 1): [(5, 3)]}


def test_translation_from_syncs_is_exact_on_a_sync_and_one_past_it_otherwise():
    syncs = [(0, 0), (100, 97), (250, 240)]
    assert translate_with_syncs(syncs, 100) == 97
    assert translate_with_syncs(syncs, 101) == 98
    assert translate_with_syncs(syncs, 249) == 98
    assert translate_with_syncs(syncs, 10_000) == 241
    assert translate_with_syncs([(50, 40)], 49) is None


# A model of a copy: source offsets with gaps (markers, compaction) mapped in order onto target
# offsets with gaps of their own (EOS commit markers). A sync is a real (source, target) pair.
copies = st.lists(st.tuples(st.integers(1, 3), st.integers(1, 3)), min_size=1, max_size=60)


@given(copies, st.data())
def test_translation_is_never_ahead_of_the_true_position(gaps, data):
    pairs, up, down = [], 0, 0
    for gu, gd in gaps:
        pairs.append((up, down))
        up, down = up + gu, down + gd
    syncs = data.draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=10))
    g = data.draw(st.integers(0, up))
    # true position: the target offset of the first copied record at or after g (the end if none)
    true = next((d for u, d in pairs if u >= g), down)
    got = translate_with_syncs(syncs, g)
    assert got is None or got <= true
    t = choose_offset("g", ("t", 0), g, None, syncs, up, True, down, target_start=0)
    assert t.offset is not None and t.offset <= true


def test_choose_offset_takes_the_largest_safe_candidate_and_ignores_a_checkpoint_ahead_of_the_group():
    t = choose_offset("g", ("t", 0), 50, (40, 38), [(0, 0), (45, 44)], 60, True, 61)
    assert (t.offset, t.how) == (45, "offset-sync")
    t = choose_offset("g", ("t", 0), 50, (50, 49), [(0, 0)], 60, True, 61)
    assert (t.offset, t.how) == (49, "checkpoint")
    t = choose_offset("g", ("t", 0), 60, (50, 49), [(0, 0)], 60, True, 62)
    assert (t.offset, t.how) == (62, "end")  # at the source's end of a finished copy: the target's end
    t = choose_offset("g", ("t", 0), 60, None, [], 60, False, 62)
    assert t.how == "refused" and "no checkpoint" in t.reason  # copy not complete: the end rule does not apply
    t = choose_offset("g", ("t", 0), 30, (40, 38), [], 60, True, 61)
    assert t.how == "refused" and "moved back" in t.reason
    # a group far behind with no checkpoint and no sync before it (MirrorMaker kept none that old)
    t = choose_offset("g", ("t", 0), 46, None, [(995, 995)], 1000, True, 1003, target_start=0)
    assert (t.offset, t.how) == (0, "log-start") and "log start" in t.reason


def test_duplicates_are_the_extra_records_on_the_target_and_a_skip_is_refused():
    t = Translation("g", "t", 0, 10, 1, "checkpoint")
    assert with_duplicates(t, 29, 20).duplicates == 9
    refused = with_duplicates(t, 19, 20)
    assert refused.offset is None and "would skip 1 record" in refused.reason


def test_an_offset_never_moves_backwards_unless_it_would_skip_records():
    assert target_write(10, None, None).offset == 10
    assert target_write(10, 7, None) .action == "set"  # forward
    assert target_write(10, 10, None).action == "already"
    kept = target_write(10, 12, 0, 12)
    assert (kept.offset, kept.action) == (None, "kept") and "by kmigrate" in kept.note
    back = target_write(10, 12, 2)
    assert (back.offset, back.action) == (10, "moved-back") and "not kmigrate" in back.note and "skip 2" in back.note


def test_moving_partitions_are_named_and_a_new_one_counts():
    assert moving_partitions({("a", 0): 1}, {("a", 0): 1, ("a", 1): 0}) == ["a-1"]
    assert moving_partitions({("a", 0): 1}, {("a", 0): 1}) == []


def test_bookkeeping_folds_to_the_last_offsets_and_gates():
    values = [{"kind": "mirror-offsets", "group": "g", "offsets": {"t.x:0": 5, "t.x:1": 2}},
              {"kind": "mirror-offsets", "group": "g", "offsets": {"t.x:0": 7}},
              {"kind": "mirror-gate", "gate": "producers-stopped", "ends": ends_key({("t.x", 0): 9})},
              {"kind": "mirror-step", "step": "topics-created"}]
    assert recorded_offsets(values) == {("g", "t.x", 0): 7, ("g", "t.x", 1): 2}
    assert passed_gates(values)["producers-stopped"]["ends"] == {"t.x:0": 9}


def test_client_changes_name_each_group_then_the_producers():
    lines = client_changes(["b", "a"], "old:9092", "new:9092")
    assert lines[0].startswith("consumers of group a: bootstrap.servers=old:9092 -> new:9092")
    assert lines[-1].startswith("producers:")


def test_mirror_history_tells_the_stage_from_the_records():
    from migrate.core.mirror.cutover import mirror_history

    assert mirror_history([])["stage"] == "not started"
    created = {"kind": "mirror-step", "step": "topics-created", "topics": {"a": {}, "b": {}}, "time": "t0"}
    assert mirror_history([created])["stage"] == "topics created"
    started = {"kind": "mirror-step", "step": "mirrormaker-started", "pid": 3, "time": "t1"}
    stopped = {"kind": "mirror-step", "step": "mirrormaker-stopped", "pid": 3, "time": "t2"}
    assert mirror_history([created, started])["stage"] == "mirroring"
    assert mirror_history([created, started, stopped])["stage"] == "mirrormaker stopped"
    done = {"kind": "mirror-gate", "gate": "done", "time": "t3"}
    h = mirror_history([created, created, started, done])
    assert h["stage"] == "cut over: clients may switch" and h["topics_created"] == ["a", "b"]
