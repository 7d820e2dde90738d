"""The mirror's proofs (``core/mirror/proof``): which records remain after a proof, the proof's fold from the
bookkeeping, and its growth pass after pass equal to one proof of everything."""

from __future__ import annotations

import doctest

from hypothesis import given, settings
from hypothesis import strategies as st

from migrate.core.mirror import proof as proof_module
from migrate.core.mirror.proof import Proof, Start, extend, fold_proofs, starts, tail_records, tp_key
from migrate.core.verify import records as records_module
from migrate.core.verify.records import Hashed, digest_sums, record_hashes


def test_doctests():
    for module in (proof_module, records_module):
        assert doctest.testmod(module).failed == 0, module.__name__


def _side(hashes: list[int], gaps: list[int]) -> list[Hashed]:
    """Records at increasing offsets (gaps: transaction markers between them), hash2 derived from hash1."""
    out, offset = [], 0
    for h, gap in zip(hashes, gaps):
        offset += gap
        out.append(Hashed(offset, h, h * 7 + 1))
        offset += 1
    return out


def _pass(proof, source, target, upto_target: int, tail: bool = False):
    """One pass as the runner makes it: the target read from the start (anchor or log start) to ``upto_target``
    records, the source for as many."""
    sb = (source[0].offset if source else 0, source[-1].offset + 1 if source else 0)
    tb = (target[0].offset if target else 0, target[-1].offset + 1 if target else 0)
    s = starts(proof, sb, tb)
    t_read = [r for r in target if r.offset >= s.target_from][:upto_target]
    s_read = [r for r in source if r.offset >= s.source_from]
    return extend(proof, s, s_read if tail else s_read[:len(t_read)], t_read, tail)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-2**63, 2**63 - 1), min_size=1, max_size=40), st.data())
def test_a_proof_grown_pass_after_pass_is_the_proof_of_everything(hashes, data):
    gaps_s = data.draw(st.lists(st.integers(0, 2), min_size=len(hashes), max_size=len(hashes)))
    gaps_t = data.draw(st.lists(st.integers(0, 2), min_size=len(hashes), max_size=len(hashes)))
    source, target = _side(hashes, gaps_s), _side(hashes, gaps_t)
    proof, copied = None, 0
    for step in data.draw(st.lists(st.integers(1, 10), max_size=8)) + [len(hashes)]:
        copied = min(len(hashes), copied + step)
        o = _pass(proof, source, target[:copied], copied + 1)
        assert o.problem is None and o.dropped is None
        proof = o.proof
    last = _pass(proof, source, target, len(target) + 1, tail=True)
    assert last.problem is None and last.proved == 0  # nothing left: the tail is empty
    n, s1, s2 = digest_sums(source)
    assert (proof.records, proof.hash1, proof.hash2) == (n, s1, s2)
    assert (proof.source_to, proof.target_to) == (source[-1].offset + 1, target[-1].offset + 1)


def test_a_record_written_straight_to_the_target_is_named_and_the_records_before_it_stay_proven():
    source = _side([1, 2, 3, 4], [0, 1, 1, 1])
    target = _side([1, 2, 99, 3, 4], [0, 1, 1, 1, 1])
    o = _pass(None, source, target, 10, tail=True)
    assert o.proof.records == 2 and o.problem == "record 3 differs: source offset 4, target offset 4"
    stray_at_end = _side([1, 2, 3, 4, 5], [0, 0, 0, 0, 0])
    o = _pass(None, source, stray_at_end, 10, tail=True)
    assert o.proof.records == 4 and "target holds 1 record(s) past the source's end" in o.problem


def test_a_recreated_topic_drops_the_proof_and_it_is_redone_from_the_start():
    source, target = _side([1, 2, 3], [0, 0, 0]), _side([1, 2, 3], [0, 1, 0])
    proof = _pass(None, source, target, 10).proof
    # recreated with other records: the anchor (source offset 2, target offset 3) holds another record
    again_s, again_t = _side([5, 6, 7, 8], [0, 0, 0, 0]), _side([5, 6, 7, 8], [0, 0, 0, 0])
    o = _pass(proof, again_s, again_t, 10)
    assert o.proof is None and "not there as proven" in o.dropped
    redone = _pass(o.proof, again_s, again_t, 10)
    assert redone.proof.records == 4 and redone.dropped is None
    # recreated and shorter than the proof: found from the ends alone
    assert "before the proof" in starts(proof, (0, 2), (0, 4)).dropped
    assert _pass(proof, _side([5], [0]), _side([5], [0]), 10).proof.records == 1


def test_what_remains_after_a_proof():
    p = Proof(0, 100, 0, 130, 100, 1, 2, 99, 129, 3)
    assert tail_records(p, (0, 150), (0, 190)) == 50 + 60
    assert tail_records(None, (20, 150), (0, 190)) == 130 + 190
    assert starts(p, (0, 150), (0, 190)) == Start(99, 129, anchored=True)
    assert "retention deleted the target's" in starts(p, (0, 150), (130, 190)).dropped


def test_the_fold_keeps_the_last_proof_of_each_partition():
    a, b = Proof(0, 5, 0, 6, 5, 1, 1, 4, 5, 9), Proof(0, 9, 0, 11, 9, 2, 2, 8, 10, 9)
    values = [{"kind": "mirror-proven", "partitions": {tp_key(("t", 0)): a.to_dict(), "t:1": a.to_dict()}},
              {"kind": "mirror-gate", "gate": "verified"},
              {"kind": "mirror-proven", "partitions": {"t:0": b.to_dict(), "t:1": None}}]
    assert fold_proofs(values) == {("t", 0): b}
    assert Proof.from_dict(b.to_dict()) == b


def test_record_hashes_tell_apart_what_spark_tells_apart():
    base = record_hashes(b"k", b"v", [("h", b"1")], 1_700_000_000_000)
    others = [record_hashes(None, b"v", [("h", b"1")], 1_700_000_000_000),
              record_hashes(b"k", None, [("h", b"1")], 1_700_000_000_000),
              record_hashes(b"k", b"v", [("h", None)], 1_700_000_000_000),
              record_hashes(b"k", b"v", [("h", b"")], 1_700_000_000_000),
              record_hashes(b"k", b"v", [], 1_700_000_000_000),
              record_hashes(b"k", b"v", [("h", b"1")], 1_700_000_000_001)]
    assert len({base, *others}) == 7
    assert all(-2**63 <= h < 2**63 for h in base)


def test_records_the_source_no_longer_holds_are_said_not_compared_and_a_missing_start_is_a_difference():
    target = _side([1, 2, 3, 4, 5], [0, 1, 0, 1, 0])
    after_retention = [r for r in _side([1, 2, 3, 4, 5], [0, 0, 0, 0, 0]) if r.offset >= 2]
    o = extend(None, Start(2, 0), after_retention, target, tail=True)
    assert o.problem is None and o.proof.records == 3 and o.proof.target_from == target[2].offset
    assert o.note.startswith("2 record(s) on the target before the copy of the source's first record")
    lost = extend(None, Start(0, 0), _side([1, 2, 3], [0, 0, 0]), _side([2, 3], [0, 0]), tail=True)
    assert lost.problem == "record 1 differs: source offset 0, target offset 0" and lost.proof is None
