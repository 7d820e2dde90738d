"""Files written by the previous layout (commit 52be88c, before core/ existed) read, re-plan and
re-write identically: cluster files, plan files and verify snapshots.

``data/previous_cluster.json`` and ``data/previous_plan.json`` were written by that version's
``snapshot_to_json`` and ``plan_to_json(build_plan(...))`` from ``data/previous_playbook.yaml``
(an ensemble with an observer being removed, an internal and a compacted topic, a partition led
by a non-preferred replica). A migration planned before the restructuring resumes after it only
if its plan file loads with the same plan id and the same cluster gives the same plan, byte for byte;
a snapshot taken before it compares after it only if it reads back to the same digests.
``data/previous_snapshot.json`` was written by that version's ``Snapshot.to_json``.
"""

from dataclasses import replace
from pathlib import Path

from migrate.core.model import snapshot_from_json, snapshot_to_json
from migrate.core.plan.document import plan_from_json, plan_to_json
from migrate.core.plan.planner import build_plan
from migrate.core.verify.snapshot import snapshot_from_json as verify_snapshot_from_json
from migrate.core.playbook import parse_playbook

DATA = Path(__file__).with_name("data")
PREVIOUS_PLAN_ID = "9e250148976ff11b"  # as the previous version wrote it in previous_plan.json


def _read(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def test_a_cluster_file_of_the_previous_version_reads_and_writes_back_unchanged():
    text = _read("previous_cluster.json")
    assert snapshot_to_json(snapshot_from_json(text, "previous_cluster.json")) == text


def test_the_same_cluster_and_playbook_give_the_previous_plan_byte_for_byte():
    """Byte for byte but for the runbook, which since issue 16 names ``kmigrate health`` (steps 2, 3, 5 and 6)
    and makes the plan again once the new brokers are registered (a new step 7): the runbook is advice to the
    operator, not part of the plan id, and a plan file keeps the runbook it was written with (the next test).
    ``previous_plan.json`` stays as the previous version wrote it."""
    snapshot = snapshot_from_json(_read("previous_cluster.json"), "previous_cluster.json")
    playbook = parse_playbook(_read("previous_playbook.yaml"), "golden.yaml")
    plan = build_plan(snapshot, playbook)
    previous = plan_from_json(_read("previous_plan.json"), "previous_plan.json")
    assert plan.plan_id == PREVIOUS_PLAN_ID
    assert plan_to_json(replace(plan, runbook=previous.runbook)) == _read("previous_plan.json")
    again = plan.runbook[6]
    assert (again.actor, again.command) == ("kmigrate", plan.runbook[0].command)
    kept = plan.runbook[:6] + plan.runbook[7:]
    assert [s.number for s in kept] == [1, 2, 3, 4, 5, 6, 8, 9, 10, 11] and len(kept) == len(previous.runbook)
    changed = [old.number for new, old in zip(kept, previous.runbook) if new.description != old.description]
    assert changed == [2, 3, 5, 6]
    assert all("kmigrate health --bootstrap-server 127.0.0.1:9092 --wait" in plan.runbook[n - 1].description
               for n in (3, 5, 6))
    assert [(s.actor, s.command, s.check) for s in kept] == [(s.actor, s.command, s.check) for s in previous.runbook]


def test_a_plan_file_of_the_previous_version_loads_with_its_plan_id():
    text = _read("previous_plan.json")
    plan = plan_from_json(text, "previous_plan.json")
    assert plan.plan_id == PREVIOUS_PLAN_ID
    assert plan_to_json(plan) == text
    assert {m.topic for m in plan.moves} == {"orders", "__consumer_offsets", "compacted", "single"}


def test_a_verify_snapshot_of_the_previous_version_reads_and_writes_back_unchanged():
    text = _read("previous_snapshot.json")
    snapshot = verify_snapshot_from_json(text, "previous_snapshot.json")
    assert snapshot.to_json() == text
    digests = {p.key: (p.digest.records, p.digest.hash1, p.digest.hash2) for p in snapshot.partitions}
    assert digests[("orders", 0)] == (1000, 2**63 + 12345, 987654321)
    assert digests[("orders", 1)] == (1299, 1, 2**64 - 1)
    assert snapshot.partition_map()[("orders", 0)].tail.records == 3


# ``data/release_1_snapshot.json`` was written by ``Snapshot.to_json`` of commit 073ea6c, the last release
# of snapshot format 1 (no chunks): a snapshot taken before an upgrade compares after it, each partition
# as one piece on the grid the format 2 snapshot taken against it uses.
def _after_on_the_grid_of(before, changes=None):
    """The format 2 snapshot ``verify compare`` takes against ``before`` (plan_ranges gives it the one-piece
    grid), with every record unchanged unless ``changes`` says ``{key: (read_from, digest)}``."""
    from migrate.core.verify.snapshot import Chunk, PartitionSnapshot, Snapshot, Tail, plan_ranges

    offsets = {p.key: (p.log_start_offset, p.end_offset) for p in before.partitions}
    ranges = plan_ranges([p.key for p in before.partitions], offsets, set(), before)
    old = before.partition_map()
    parts = []
    for r in ranges:
        read_from, d = (changes or {}).get((r.topic, r.partition), (r.read_from, old[(r.topic, r.partition)].digest))
        grid = (None, None, None) if r.compacted else (r.chunk_base, r.chunk_size, (Chunk(
            read_from, r.read_to, d.records, d.hash1, d.hash2, 1_700_000_000_000),) if r.read_to > read_from else ())
        parts.append(PartitionSnapshot(r.topic, r.partition, r.compacted, read_from, r.end, read_from, r.read_to,
                                       d, Tail(), *grid))
    return Snapshot(before.cluster_id, before.bootstrap_servers, "2026-11-24T00:00:00+00:00", True,
                    before.isolation_level, tuple(parts), before.taken_at)


def test_a_snapshot_of_the_last_format_1_release_reads_back_and_compares_with_a_new_one():
    from migrate.core.verify.compare import compare_same
    from migrate.core.verify.snapshot import Digest, TopicConfig

    text = _read("release_1_snapshot.json")
    before = verify_snapshot_from_json(text, "release_1_snapshot.json")
    assert before.format_version == 1 and before.to_json() == text
    after = _after_on_the_grid_of(before)
    assert verify_snapshot_from_json(after.to_json()).format_version == 2
    report = compare_same(before, verify_snapshot_from_json(after.to_json()))
    assert report.ok and report.to_dict()["summary"]["verified_records"] == 160
    changed = _after_on_the_grid_of(before, {("orders", 1): (40, Digest(50, 2**64 + 8, 3, 40, 89, 50))})
    assert [p.name for p in compare_same(before, changed).differing] == ["orders-1"]
    # retention moved orders-0's log start into the one piece: its records are reported unverifiable
    moved = _after_on_the_grid_of(before, {("orders", 0): (60, Digest(40, 1, 1, 60, 99, 40))})
    moved = type(moved)(**{**moved.__dict__, "topic_configs": {"orders": TopicConfig("delete", 3600000, -1)}})
    report = compare_same(before, moved)
    assert report.ok and report.partitions[0].unverifiable == 100
