"""``kmigrate health`` over a fake reader: exit codes, the plain line per check, the progress bar on a terminal."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

import migrate.commands.health as command
import migrate.runner.health as runner
from migrate.cli import main
from migrate.core.health import ClusterReading
from migrate.core.model import Partition, Topic

GOOD = ClusterReading(1, frozenset({1, 2}), (Topic("t", partitions=(Partition(0, (1, 2), (1, 2), 1),)),))
SHORT = ClusterReading(1, frozenset({1}), (Topic("t", partitions=(Partition(0, (1, 2), (1,), 1),)),))


def run(monkeypatch, readings, *args: str) -> int:
    seq = list(readings)
    monkeypatch.setattr(runner, "cluster_reader", lambda settings: lambda: seq.pop(0) if len(seq) > 1 else seq[0])
    with pytest.raises(SystemExit) as exit_:
        main(["health", "--bootstrap-server", "kafka1:9092", *args])
    return exit_.value.code


def test_a_healthy_cluster_exits_0_and_an_unhealthy_one_1_naming_what_is_wrong(monkeypatch, capsys):
    assert run(monkeypatch, [GOOD]) == 0
    assert capsys.readouterr().out.startswith("healthy: 0 under-replicated, 0 offline of 1 partition(s)")
    assert run(monkeypatch, [SHORT], "-O", "json") == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["healthy"] is False and doc["under_replicated"] == ["t-0"] and doc["missing_brokers"] == [2]


def test_wait_prints_a_line_per_check_when_not_on_a_terminal(monkeypatch, capsys):
    assert run(monkeypatch, [SHORT, GOOD], "--wait", "--interval", "10ms", "--check-count", "2") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("check 1 (0 s): not healthy: 1 under-replicated") and lines[0].endswith("[0/2 healthy in a row]")
    assert lines[1].endswith("[1/2 healthy in a row]") and lines[2].endswith("[2/2 healthy in a row]")
    assert lines[3].startswith("healthy:")


def test_wait_times_out_with_exit_1_naming_partitions_and_brokers(monkeypatch, capsys):
    assert run(monkeypatch, [SHORT], "--wait", "--interval", "10ms", "--timeout", "50ms") == 1
    out = capsys.readouterr().out
    assert "cluster not healthy after 0.05 s: 1 under-replicated partition(s): t-0; broker(s) 2 not registered" in out


def test_wait_shows_a_progress_bar_on_a_terminal(monkeypatch, capsys):
    monkeypatch.setattr(command, "console", Console(force_terminal=True, width=120))
    assert run(monkeypatch, [GOOD], "--wait", "--interval", "10ms", "--check-count", "2") == 0
    out = capsys.readouterr().out
    assert "healthy in a row" in out and "check 1" not in out


@pytest.mark.parametrize("args, message", [
    (("--broker-list", "1,x"), "--broker-list '1,x': expected ids"),
    (("--wait", "--timeout", "soon"), "--timeout 'soon' is not a duration"),
    (("--check-count", "0"), "--check-count 0"),
])
def test_bad_input_is_exit_2_before_any_read(monkeypatch, capsys, args, message):
    monkeypatch.setattr(runner, "cluster_reader", lambda settings: pytest.fail("read the cluster"))
    with pytest.raises(SystemExit) as exit_:
        main(["health", "--bootstrap-server", "kafka1:9092", *args])
    assert exit_.value.code == 2 and message in capsys.readouterr().err
