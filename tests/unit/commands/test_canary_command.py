"""commands/canary: the plain line and the tables never call in-flight records lost; bad input is exit 2 before any client."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import datetime, timezone

import pytest
from rich.console import Console

from migrate.commands.canary import report_line, report_table
from migrate.core.canary import CanaryLedger

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def _ledger() -> CanaryLedger:
    ledger = CanaryLedger("c", started_s=0.0)
    for seq in range(10):
        ledger.on_send(seq, 0, 0.0)
        ledger.on_ack(seq, 0.5)
    ledger.on_consume(9, 0, 1.0)
    return ledger


def _text(table) -> str:
    console = Console(width=200, record=True)
    console.print(table)
    return console.export_text()


def test_a_running_line_shows_not_yet_consumed_and_never_lost():
    line = report_line(_ledger().report(20.0), WHEN)
    assert line.startswith("2026-01-02T03:04:05Z canary running +20s produced=10 acked=10 consumed=1 ")
    assert "not_yet_consumed=9 overdue=9" in line
    assert "lost" not in line
    assert re.search(r"produce_stall_s=0\.5 consume_stall_s=19\.0", line), line  # read on at 1 s, then nothing


def test_the_final_line_and_table_say_lost():
    report = _ledger().report(20.0, final=True)
    assert "lost=9" in report_line(report, WHEN) and "not_yet_consumed" not in report_line(report, WHEN)
    assert re.search(r"lost \(acknowledged, never consumed after the drain\)\s+│?\s*9", _text(report_table(report)))


def test_the_live_table_does_not_count_lost():
    text = _text(report_table(_ledger().report(20.0)))
    assert re.search(r"not yet consumed \(acknowledged, in flight\)\s+│?\s*9", text)
    assert "decided at the end" in text
    assert "produce stall" in text and "consume stall" in text


@pytest.mark.parametrize("args, message", [
    (["--report-interval", "0"], "--report-interval '0' must be more than zero"),
    (["--report", "/nonexistent-dir-kmigrate/r.json"], "does not exist"),
    (["--drain-timeout", "soon"], "--drain-timeout 'soon' is not a duration"),
])
def test_bad_input_is_exit_2_before_any_client(args, message):
    proc = subprocess.run([sys.executable, "-m", "migrate", "canary", "--bootstrap-server", "127.0.0.1:1", *args],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr


def test_an_existing_stop_file_is_refused(tmp_path):
    stop = tmp_path / "stop"
    stop.touch()
    proc = subprocess.run([sys.executable, "-m", "migrate", "canary", "--bootstrap-server", "127.0.0.1:1",
                           "--stop-file", str(stop)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "already exists: remove it first" in proc.stderr
    assert stop.exists()
