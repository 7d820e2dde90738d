"""Issues 7 and 16: the canary measures lost / duplicated records and stalls against a real cluster,
and runs unattended: in the background with stdout in a file, stopped by SIGTERM or a stop file.
Issue 31: its figures per phase (from kmigrate's bookkeeping records) and its HTML page, opened in chromium.

One small sandbox (1 ZooKeeper, 3 brokers); the canary writes 50-200 records/s.
"""

from __future__ import annotations

import json
import os
import pty
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

import migrate.runner.canary as runner_canary
from migrate.core.canary import CanaryLedger
from migrate.files import client_settings
from migrate.runner.canary import Canary
from migrate.waiting import wait_until
from browser_support import broken_copy, drawn, rendered_dom
from cluster_waits import wait_for
from migrate.adapters.kafka.bookkeeping import BookkeepingTopic
from migrate.adapters.kafka.client import admin_client
from migrate.core.ledger import make_record

pytestmark = pytest.mark.integration

SANDBOX = dict(zookeeper_ids=(1,), broker_ids=(1, 2, 3))
ROUNDING_S = 0.002  # the report rounds seconds to 3 decimals


def canary_command(cluster, topic: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "migrate", "canary", "--bootstrap-server", cluster.bootstrap_servers(),
            "--topic", topic, "--rate", "50", *args]


def run_in_background(command: list[str], log: Path, err: Path, while_running: Callable[[int], None],
                      timeout_s: float = 300) -> int:
    """Run ``command`` as a script's ``cmd > log 2> err &`` does (so SIGINT is ignored in it), call
    ``while_running(its pid)``, and return its exit code (the shell waits for it and prints it)."""
    script = f'{" ".join(map(_quote, command))} > {_quote(str(log))} 2> {_quote(str(err))} &\n' \
             'pid=$!\necho "$pid"\nwait "$pid"\necho "rc=$?"\n'
    shell = subprocess.Popen(["sh", "-c", script], stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    pid = int(shell.stdout.readline())
    try:
        while_running(pid)
        out, _ = shell.communicate(timeout=timeout_s)
    finally:
        if shell.poll() is None:
            os.kill(pid, signal.SIGKILL)
            shell.wait(30)
    return int(re.search(r"rc=(\d+)", out).group(1))


def _quote(word: str) -> str:
    return "'" + word.replace("'", "'\\''") + "'"


def running_lines(log: Path) -> list[str]:
    text = log.read_text() if log.exists() else ""  # the background job opens it a moment after it starts
    return [line for line in text.splitlines() if " canary running " in line]


def wait_for_lines(log: Path, count: int, pid: int, timeout_s: float = 240) -> list[str]:
    """Wait until the log holds ``count`` running lines, checking the canary is still running meanwhile."""
    def enough() -> list[str] | None:
        os.kill(pid, 0)  # ProcessLookupError: the canary is gone
        lines = running_lines(log)
        return lines if len(lines) >= count else None

    return wait_until(enough, timeout_s=timeout_s, interval_s=0.25, what=f"{count} canary lines in {log}")


def figures(line: str) -> dict[str, str]:
    return dict(word.split("=", 1) for word in line.split() if "=" in word)


def check_report_and_lines(log: Path, report: dict) -> list[dict[str, str]]:
    """What an operator reads in the file matches the final report: no line calls anything lost when the
    report says 0, the final line equals the report, and the "so far" figures only grow up to it."""
    text = log.read_text()
    lines = [figures(line) for line in running_lines(log)]
    final_lines = [line for line in text.splitlines() if " canary final " in line]
    assert len(final_lines) == 1, text
    final = figures(final_lines[0])
    assert int(final["lost"]) == report["lost"]
    assert int(final["produced"]) == report["sent"] and int(final["consumed"]) == report["consumed"]
    for line in lines:
        assert "lost" not in line and "not_yet_consumed" in line and "overdue" in line, line
        if report["lost"] == 0:
            assert int(line["overdue"]) == 0, line
        assert float(line["produce_stall_s"]) <= report["produce_stall_s"], (line, report)
        assert float(line["consume_stall_s"]) <= report["consume_stall_s"], (line, report)
    produced = [int(line["produced"]) for line in lines]
    assert produced == sorted(produced) and produced[-1] <= report["sent"], produced
    return lines


def check_stalls_against_latency(report: dict) -> None:
    """The produce stall ended with the acknowledgement of a record that waited through it: no record
    waited less than the produce stall lasted, and some waited at least that long."""
    assert 0 < report["produce_stall_s"] <= report["latency_max_ms"] / 1000 + ROUNDING_S, report
    assert report["produce_stall_partition"] in range(3), report
    assert 0 <= report["produce_stall_at_s"] <= report["duration_s"], report
    if report["consume_stall_s"] > 0:
        assert report["consume_stall_partition"] in range(3), report
        assert 0 <= report["consume_stall_at_s"] <= report["duration_s"], report


def bookkeeping_records(book: BookkeepingTopic, state: str) -> None:
    """What a ``kmigrate partitions`` run writes when it starts (its run, a throttle on broker 2) or ends."""
    rates = [make_record("plan-1", "throttle-broker" if state == "started" else "throttle-cleared", f"2/{cfg}",
                         time.time(), broker=2, config=cfg,
                         **({"value": "10000000", "prior": None} if state == "started" else {"scope": "broker"}))
             for cfg in ("leader.replication.throttled.rate", "follower.replication.throttled.rate")]
    run = [make_record("plan-1", "run", "run-1", time.time(), run_id="run-1", host="h", pid=1, state=state, started="")]
    book.append(run + rates if state == "started" else rates + run)


def test_in_the_background_lines_while_running_a_broker_restart_and_sigterm_gives_the_report(cluster, topic_name,
                                                                                             tmp_path):
    """... and, kmigrate's bookkeeping topic recording a run around the restart, its figures per phase, and an
    HTML page that chromium draws: 3 latency lines, throughput, stall, broker 2's throttle, each phase named."""
    log, err, report_file = tmp_path / "canary.log", tmp_path / "canary.err", tmp_path / "report.json"
    settings = client_settings(cluster.bootstrap_servers(), None)
    book = BookkeepingTopic(settings, f"{topic_name}-book")
    book.ensure(admin_client(settings), [1, 2, 3])
    command = canary_command(cluster, topic_name, "--report-interval", "1s", "--report", str(report_file),
                             "--bookkeeping-topic", book.topic)

    def while_running(pid: int) -> None:
        wait_for_lines(log, 2, pid)  # lines appear while it runs, stdout being a file
        bookkeeping_records(book, "started")
        cluster.restart("kafka-2")  # leadership of partition 1 moves away and back to a follower
        seen = len(running_lines(log))
        wait_for_lines(log, seen + 2, pid)
        bookkeeping_records(book, "ended")
        os.kill(pid, signal.SIGINT)  # ignored, by the shell's rule for `&`: the canary goes on
        wait_for_lines(log, seen + 4, pid)
        # while it runs, --report holds the figures so far and the live section, rewritten every second
        live = json.loads(report_file.read_text())
        assert live["final"] is False and live["live"]["version"] == 1 and live["live"]["buckets"], live.keys()
        assert time.time() - live["live"]["written_unix"] < 10, live["live"]["written_unix"]
        assert sum(b[0] for b in live["live"]["buckets"]) > 0  # acknowledgements in the recent buckets
        os.kill(pid, signal.SIGTERM)

    rc = run_in_background(command, log, err, while_running)
    book.close()
    text = log.read_text()
    assert rc == 0, (text, err.read_text())
    report = json.loads(report_file.read_text())
    assert report["final"] is True and report["ok"] is True and report["ended_by"] == "SIGTERM", report
    assert report["lost"] == 0 and report["consumed"] == report["acknowledged"] == report["sent"], report
    assert f"canary on {topic_name}: OK" in text
    assert "canary stopping (SIGTERM)" in text
    assert re.search(r"lost \(acknowledged, never consumed after the drain\)\s+│?\s*0", text), text
    lines = check_report_and_lines(log, report)
    assert len(lines) >= 6
    check_stalls_against_latency(report)
    check_phases_and_page(report, text, tmp_path)


def check_phases_and_page(report: dict, text: str, tmp_path: Path) -> None:
    """The phases the bookkeeping records mark, their figures against the report's, the page chromium draws."""
    impact = report["client_impact"]
    phases = impact["phases"]
    names = [p["name"] for p in phases]
    assert names == ["at rest", "kmigrate partitions (run run-1)", "after kmigrate partitions", "whole run"], names
    whole = phases[-1]
    assert whole["acks"] == report["acknowledged"], (whole, report)
    assert sum(p["acks"] for p in phases[:-1]) <= whole["acks"]
    assert abs(whole["longest_stall_s"] - report["produce_stall_s"]) <= 0.01, (whole, report)
    assert whole["latency_max_ms"] == report["latency_max_ms"], (whole, report)
    assert phases[0]["latency_p99_ms"] <= whole["latency_p99_ms"], phases
    (_, set_to), (_, cleared) = impact["throttle"]["2"]
    assert list(impact["throttle"]) == ["2"] and (set_to, cleared) == (10000000, None), impact["throttle"]
    page = tmp_path / "report.html"
    assert f"charts: {page} (HTML" in text, text
    traces, texts = drawn(rendered_dom(page))
    assert traces == 6, (traces, texts)  # latency p50, p99, max; throughput; stall; broker 2's throttle
    assert {"produce latency (ms)", "replication throttle per broker (MB/s)", *names[:-1]} <= set(texts), texts
    assert drawn(rendered_dom(broken_copy(page, tmp_path / "broken.html"))) == (0, [])  # the check can fail
    assert not list(tmp_path.glob("*.tmp"))  # the report was written whole, through a renamed file


def test_the_stop_file_ends_it_with_the_report(cluster, topic_name, tmp_path):
    log, err = tmp_path / "canary.log", tmp_path / "canary.err"
    stop, report_file = tmp_path / "stop-canary", tmp_path / "report.json"
    command = canary_command(cluster, topic_name, "--duration", "30m", "--report-interval", "1s",
                             "--stop-file", str(stop), "--report", str(report_file))

    def while_running(pid: int) -> None:
        wait_for_lines(log, 2, pid)
        stop.touch()

    rc = run_in_background(command, log, err, while_running)
    text = log.read_text()
    assert rc == 0, (text, err.read_text())
    report = json.loads(report_file.read_text())
    assert report["ended_by"] == f"stop file {stop}" and report["ok"] is True and report["lost"] == 0, report
    assert report["duration_s"] < 30 * 60
    assert f"canary on {topic_name}: OK" in text
    check_report_and_lines(log, report)
    assert not stop.exists()  # honoured and removed: the same command can run again


def test_canary_cli_reports_json_after_its_duration_with_lines_on_stderr(cluster, topic_name):
    proc = subprocess.run(
        canary_command(cluster, topic_name, "--duration", "5s", "--report-interval", "1s", "--output", "json"),
        capture_output=True, text=True, timeout=300, env=os.environ.copy(),
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["ok"] is True and report["lost"] == 0 and report["ended_by"] == "duration"
    assert 150 <= report["sent"] <= 300  # about 5 s at 50 records/s
    assert report["consumed"] == report["acknowledged"] == report["sent"]
    assert len([line for line in proc.stderr.splitlines() if " canary running " in line]) >= 3, proc.stderr


def test_on_a_terminal_the_view_is_live_and_calls_in_flight_records_not_yet_consumed(cluster, topic_name):
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(canary_command(cluster, topic_name, "--duration", "4s"), stdin=terminal, stdout=terminal,
                            stderr=terminal, env={**os.environ, "COLUMNS": "160"}, close_fds=True)
    os.close(terminal)
    shown = b""
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the terminal closed: the canary is gone
            break
        if not chunk:
            break
        shown += chunk
    os.close(controller)
    assert proc.wait(60) == 0
    text = shown.decode(errors="replace")
    assert "canary (Ctrl-C to stop)" in text and "not yet consumed (acknowledged, in flight)" in text, text
    assert "decided at the end, after the drain" in text
    assert f"canary on {topic_name}: OK" in text and " canary running " not in text


@dataclass
class _RecordingLedger(CanaryLedger):
    """The ledger, keeping what the clients saw: (kind, seq, partition, time)."""

    seen: list[tuple[str, int, int | None, float]] = field(default_factory=list)

    def on_send(self, seq, partition, now_s):
        self.seen.append(("send", seq, partition, now_s))
        super().on_send(seq, partition, now_s)

    def on_ack(self, seq, now_s):
        self.seen.append(("ack", seq, None, now_s))
        super().on_ack(seq, now_s)

    def on_consume(self, seq, partition, now_s):
        self.seen.append(("consume", seq, partition, now_s))
        super().on_consume(seq, partition, now_s)


def test_a_killed_broker_stall_is_what_the_clients_saw(cluster, topic_name, monkeypatch):
    monkeypatch.setattr(runner_canary, "CanaryLedger", _RecordingLedger)
    run = Canary(client_settings(cluster.bootstrap_servers()), topic=topic_name, rate_per_s=200).start()
    wait_for(lambda: run.report().acknowledged >= 600, what="the canary's first 600 records acknowledged",
             timeout_s=120, interval_s=0.2)
    cluster.kill("kafka-3")
    killed_at = time.monotonic()

    def stall_over() -> bool:
        """Every partition acknowledges records sent after the kill (kafka-3's partition has a new leader)."""
        seen = list(run.ledger.seen)
        sent_after = {seq: p for kind, seq, p, t in seen if kind == "send" and t > killed_at}
        acked = {sent_after[seq] for kind, seq, _, _ in seen if kind == "ack" and seq in sent_after}
        return acked == set(range(run.partitions)) and run.report().sent > 1000

    wait_for(stall_over, what="acknowledgements on every partition of records sent after kafka-3 was killed",
             timeout_s=120, interval_s=0.2)
    report = run.stop(drain_timeout_s=120)
    cluster.start("kafka-3")
    figures_ = report.to_dict()
    assert report.sent > 1000, figures_
    assert report.acknowledged == report.sent, figures_
    assert report.lost == 0 and report.duplicated == 0 and report.out_of_order == 0, figures_
    assert report.failed_sends == 0 and report.consumed == report.acknowledged, figures_
    assert report.latency_p99_ms is not None and report.latency_max_ms >= report.latency_p99_ms, figures_
    check_stalls_against_latency(figures_)
    print("canary across a killed broker:", {k: figures_[k] for k in (
        "latency_max_ms", "produce_stall_s", "produce_stall_partition", "consume_stall_s", "consume_stall_partition")})

    seen, start = run.ledger.seen, run.ledger.started_s
    sent = {seq: (t, p) for kind, seq, p, t in seen if kind == "send"}
    acked = {seq: t for kind, seq, _, t in seen if kind == "ack"}
    # The produce stall ended with an acknowledgement on its partition, of a record that waited through it.
    p, began = report.produce_stall_partition, start + report.produce_stall_at_s
    ended = began + report.produce_stall_s
    enders = [seq for seq, t in acked.items() if sent[seq][1] == p and abs(t - ended) <= ROUNDING_S]
    assert any(sent[seq][0] <= began + ROUNDING_S for seq in enders), (figures_, enders)
    # ... and nothing of that partition was acknowledged in between.
    assert not [seq for seq, t in acked.items() if sent[seq][1] == p and began + ROUNDING_S < t < ended - ROUNDING_S]
    if report.consume_stall_s > 0:
        # The consume stall: records of its partition acknowledged and waiting, none of that partition read meanwhile.
        p, began = report.consume_stall_partition, start + report.consume_stall_at_s
        ended = began + report.consume_stall_s
        reads = [t for kind, _, part, t in seen if kind == "consume" and part == p]
        assert not [t for t in reads if began + ROUNDING_S < t < ended - ROUNDING_S], figures_
        assert any(abs(t - ended) <= ROUNDING_S for t in reads), figures_
        waiting = [seq for seq, t in acked.items() if sent[seq][1] == p and t <= began + ROUNDING_S]
        consumed_at = {seq: t for kind, seq, _, t in seen if kind == "consume"}
        assert any(consumed_at[seq] >= ended - ROUNDING_S for seq in waiting), figures_


def test_canary_bad_duration_is_refused(cluster):
    proc = subprocess.run(
        [sys.executable, "-m", "migrate", "canary", "--bootstrap-server", cluster.bootstrap_servers(),
         "--duration", "soon"], capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 2
    assert "--duration 'soon'" in proc.stderr
