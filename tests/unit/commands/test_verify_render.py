"""``kmigrate verify``'s text report: topic and partition names are never cut, whatever the terminal width."""

from __future__ import annotations

import pytest

from migrate.commands import common
from migrate.commands import verify as command
from migrate.commands.common import OutputFormat
from migrate.core.verify.compare import compare_same
from migrate.core.verify.snapshot import Chunk, Digest, PartitionSnapshot, Snapshot, Tail, TopicConfig

TOPIC = "kmigrate-canary-0123456789abcdef-with-a-long-name"
NOW = 1_800_000_000_000


def _part(p: int, read_from: int = 0, changed: bool = False) -> PartitionSnapshot:
    chunks = tuple(Chunk(a, a + 1, 1, a + (100 if changed and a == 7 else 0), a, NOW - 86_400_000 * 2)
                   for a in range(read_from, 10))
    return PartitionSnapshot(TOPIC, p, False, read_from, 10, read_from, 10,
                             Digest(len(chunks), sum(c.hash1 for c in chunks), sum(c.hash2 for c in chunks)),
                             Tail(), 0, 1, chunks)


def _report():
    before = Snapshot("c1", "b:9092", "2026-11-23T12:00:00+00:00", True, "read_committed",
                      (_part(0), _part(1), _part(2)))
    after = Snapshot("c1", "b:9092", "2026-11-23T13:00:00+00:00", True, "read_committed",
                     (_part(0, read_from=4), _part(1, changed=True), _part(2)),
                     topic_configs={TOPIC: TopicConfig("delete", 3_600_000, -1)})
    return compare_same(before, after, now_ms=NOW)


@pytest.mark.parametrize("width", [30, 60, 100, 250])
def test_names_are_never_cut(capsys, width):
    saved = common.console.width
    common.console.width = width
    try:
        command._render(_report(), OutputFormat.text)
    finally:
        common.console.width = saved
    out = capsys.readouterr().out
    assert "…" not in out
    lines = out.splitlines()
    assert any(TOPIC in line for line in lines), out  # the topic name whole, on one line
    assert any(f"{TOPIC}-1" in line for line in lines), out
    assert "offsets 7..7: content differs (1 records)" in out.replace("\n", " ").replace("│", " ") or width < 100
    assert "4 expired as configured" in out.replace("\n", " ")


def test_a_wide_terminal_gets_a_table_and_a_narrow_one_plain_lines(capsys):
    saved = common.console.width
    try:
        common.console.width = 250
        command._render(_report(), OutputFormat.text)
        wide = capsys.readouterr().out
        common.console.width = 40
        command._render(_report(), OutputFormat.text)
        narrow = capsys.readouterr().out
    finally:
        common.console.width = saved
    assert "┃ Topic" in wide and "Expired" in wide
    assert "┃" not in narrow and f"  {TOPIC}, Partitions: 3," in narrow and "Expired: 4" in narrow
