"""``kmigrate canary``: measure, while a migration runs, that no acknowledged record is lost."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Optional, TextIO

import typer
from rich.console import Console
from rich.live import Live
from rich.table import Table

from migrate.core.canary import OVERDUE_AFTER_S, CanaryReport
from migrate.core.ledger import DEFAULT_TOPIC as BOOKKEEPING_TOPIC
from migrate.core.report.impact import Impact, html_path
from migrate.core.report.phases import PhaseFigures
from migrate.files import check_writable, client_settings, write_whole
from migrate.core.units import parse_duration
from migrate.commands.common import OUTPUT_OPTION, OutputFormat, console, emit_json
from migrate.errors import EXIT_FAILURE, BadInput, KmigrateError
from migrate.runner.canary import DEFAULT_TOPIC, Canary, StopRequests, watch
from migrate.runner.report.canary import canary_impact
from migrate.runner.report.html import write_page

PRODUCE_STALL = "produce stall: longest wait for an acknowledgement on a partition (s)"
CONSUME_STALL = "consume stall: longest wait to read acknowledged records on a partition (s)"


def _stall(seconds: float, at_s: float | None, partition: int | None) -> str:
    if at_s is None:
        return f"{seconds}"
    return f"{seconds} (partition {partition}, from +{at_s} s)"


def report_table(report: CanaryReport, title: str = "canary") -> Table:
    table = Table("measure", "value", title=title)
    if report.final:
        fate = [("lost (acknowledged, never consumed after the drain)", report.lost)]
    else:
        fate = [("not yet consumed (acknowledged, in flight)", report.not_yet_consumed),
                (f"  of which overdue (acked > {OVERDUE_AFTER_S:g} s ago, later ones read)", report.overdue),
                ("lost", "decided at the end, after the drain")]
    rows = [
        ("records sent", report.sent), ("acknowledged", report.acknowledged), ("consumed", report.consumed),
        *fate, ("not acknowledged (yet)", report.unacknowledged), ("duplicated", report.duplicated),
        ("out of order", report.out_of_order), ("failed sends", report.failed_sends),
        ("produce latency p50 / p99 / max (ms)", f"{report.latency_p50_ms} / {report.latency_p99_ms} / {report.latency_max_ms}"),
        (PRODUCE_STALL, _stall(report.produce_stall_s, report.produce_stall_at_s, report.produce_stall_partition)),
        (CONSUME_STALL, _stall(report.consume_stall_s, report.consume_stall_at_s, report.consume_stall_partition)),
        ("client errors", "; ".join(report.errors) or "none"),
    ]
    if report.ended_by:
        rows.append(("ended by", report.ended_by))
    for name, value in rows:
        table.add_row(name, str(value))
    return table


def report_line(report: CanaryReport, when: datetime) -> str:
    """One plain, timestamped line of figures (``key=value``), for a log file or a job runner.

    Only a final report has ``lost=``; while running, acknowledged records not read back yet are
    ``not_yet_consumed=`` (``overdue=`` of them are late).
    """
    fate = (f"lost={report.lost}" if report.final
            else f"not_yet_consumed={report.not_yet_consumed} overdue={report.overdue}")
    return (f"{when.strftime('%Y-%m-%dT%H:%M:%SZ')} canary {'final' if report.final else 'running'}"
            f" +{report.duration_s:.0f}s produced={report.sent} acked={report.acknowledged}"
            f" consumed={report.consumed} {fate} unacked={report.unacknowledged}"
            f" duplicated={report.duplicated} out_of_order={report.out_of_order} failed={report.failed_sends}"
            f" p99_ms={report.latency_p99_ms} max_ms={report.latency_max_ms}"
            f" produce_stall_s={report.produce_stall_s} consume_stall_s={report.consume_stall_s}"
            + (f" ended_by={report.ended_by.replace(' ', '_')}" if report.ended_by else ""))


def _print_line(stream: TextIO) -> Callable[[CanaryReport], None]:
    def show(report: CanaryReport) -> None:
        stream.write(report_line(report, datetime.now(timezone.utc)) + "\n")
        stream.flush()
    return show


def _check_report_file(path: Path) -> None:
    check_writable(path, "--report", "canary-report.json")


def _write_live(run: Canary, path: Path) -> None:
    """While it runs: the figures so far and the live section (the last minutes of the timeline, with their
    histograms, on the wall clock) that ``partitions --throttle auto --canary-report`` steers on; replaced by
    the final report at the end. A write that fails is tried again at the next second."""
    doc = {**run.report().to_dict(), "live": run.live()}
    try:
        write_whole(path, json.dumps(doc, separators=(",", ":")) + "\n", "the canary report", "--report")
    except KmigrateError:
        pass


def _write_report(report: CanaryReport, impact: Impact, path: Path) -> Path:
    """The final report as JSON (with the phases and the timeline) and its charts as an HTML page next to it,
    each whole or not at all; returns where the page is."""
    doc = {**report.to_dict(), "client_impact": impact.to_dict()}
    write_whole(path, json.dumps(doc, indent=2, sort_keys=True) + "\n", "the canary report", "--report")
    page = Path(html_path(path))
    write_page(impact, page)
    return page


def phase_table(phases: list[PhaseFigures], title: str = "client impact per phase") -> Table:
    """Phase, its seconds, acknowledgements, latency p50/p99/max, the longest produce stall seen in it."""
    table = Table(title=title)
    for col in ("phase", "seconds", "acks", "p50 ms", "p99 ms", "max ms", "longest stall s"):
        table.add_column(col, overflow="fold")
    show = lambda v: "-" if v is None else f"{v:g}"  # noqa: E731
    for p in phases:
        f = p.figures
        table.add_row(p.mark.name, f"{p.mark.end_s - p.mark.start_s:.1f}", str(f.acks), show(f.p50_ms),
                      show(f.p99_ms), show(f.max_ms), f"{f.stall_s:.2f}")
    return table


def canary(
    bootstrap_server: str = typer.Option(..., "--bootstrap-server", envvar="KAFKA_BOOTSTRAP_SERVERS", help="Kafka bootstrap servers."),
    command_config: Optional[Path] = typer.Option(None, "--command-config", help="Kafka client properties (SASL/SSL)."),
    topic: str = typer.Option(DEFAULT_TOPIC, "--topic", help="Canary topic (created with a partition led by every broker)."),
    duration: Optional[str] = typer.Option(None, "--duration", help="How long to run (30s, 10m, 1h); default until stopped."),
    stop_file: Optional[Path] = typer.Option(None, "--stop-file", help="End cleanly, with the final report, when this file appears (it must not exist at the start; it is removed once honoured)."),
    report_file: Optional[Path] = typer.Option(None, "--report", help="Also write the final report as JSON to this file (atomically), however the run ends, and its charts as a self-contained HTML page next to it (.json replaced by .html). While it runs, the file holds the figures so far and the last minutes of latencies, rewritten every second: `kmigrate partitions --throttle auto --canary-report FILE` steers on them."),
    report_interval: str = typer.Option("10s", "--report-interval", help="When stdout is not a terminal: one timestamped line of figures this often."),
    drain_timeout: str = typer.Option("60s", "--drain-timeout", help="At the end, how long to wait for outstanding acknowledgements and for the consumer to read every acknowledged record."),
    rate: float = typer.Option(100.0, "--rate", help="Records per second."),
    bookkeeping_topic: str = typer.Option(BOOKKEEPING_TOPIC, "--bookkeeping-topic", help="Where kmigrate partitions records its runs and throttles: read once at the end, when it exists, to split the figures into phases (at rest, each run, after) and chart the throttle."),
    replication_factor: int = typer.Option(3, "--replication-factor", help="Replication factor of a new canary topic."),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Produce (acks=all, idempotent) and consume sequence-numbered records; report lost, duplicated, stalls, latency.

    It runs until --duration, SIGTERM, SIGINT (Ctrl-C; a script's `&` job ignores SIGINT: use SIGTERM
    or --stop-file), or the stop file appearing; each ends the same way: stop producing, drain for at
    most --drain-timeout, print the final report (and write --report FILE, its charts in FILE's .html). On a terminal the figures
    are live; otherwise one plain line per --report-interval (on stderr with --output json).
    While running, acknowledged records not read back yet are "not yet consumed" (overdue when acked
    over 10 s ago while later ones of their partition were read); only the final report says lost.
    Produce stall: the longest time records of a partition waited with none acknowledged. Consume stall:
    the longest time acknowledged records of a partition waited with none of that partition read.

    Exit code: 0 when every acknowledged record was read back and no send failed, 1 when records were
    lost or sends failed, 2 for bad input.
    """
    seconds = None if duration is None else parse_duration(duration, "--duration")
    interval_s = parse_duration(report_interval, "--report-interval")
    drain_s = parse_duration(drain_timeout, "--drain-timeout")
    if stop_file is not None and stop_file.exists():
        raise BadInput(f"--stop-file {stop_file} already exists: remove it first, or the canary would stop at once")
    if report_file is not None:
        _check_report_file(report_file)
    settings = client_settings(bootstrap_server, command_config)
    with StopRequests(stop_file) as stop_requested:
        run = Canary(settings, topic=topic, rate_per_s=rate, replication_factor=replication_factor).start()
        live_file = None if report_file is None else (lambda: _write_live(run, report_file))
        if output == OutputFormat.text and console.is_terminal:
            with Live(report_table(run.report()), console=console, refresh_per_second=2) as live:
                reason = watch(run, seconds, lambda r: live.update(report_table(r, title="canary (Ctrl-C to stop)")),
                               stop_requested=stop_requested, live=live_file)
        else:
            stream = sys.stdout if output == OutputFormat.text else sys.stderr
            reason = watch(run, seconds, _print_line(stream), interval_s=interval_s, stop_requested=stop_requested,
                           live=live_file)
            stream.write(f"{datetime.now(timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')} canary stopping"
                         f" ({reason}): draining for up to {drain_s:g} s\n")
            stream.flush()
        report = replace(run.stop(drain_s), ended_by=reason)
    if stop_file is not None and reason.startswith("stop file"):
        stop_file.unlink(missing_ok=True)
    impact = canary_impact(run.timeline(), run.started_unix, report.duration_s, settings, bookkeeping_topic,
                           title=f"kmigrate canary on {topic}")
    for note in impact.notes:
        sys.stderr.write(f"warning: {note}\n")
    page = _write_report(report, impact, report_file) if report_file is not None else None
    if output == OutputFormat.json:
        emit_json({**report.to_dict(), "client_impact": impact.to_dict(timeline=False),
                   "report_html": None if page is None else str(page)})
    else:
        if not console.is_terminal:
            _print_line(sys.stdout)(report)
        # In a log file, one row a line: wider than the 80 columns rich assumes without a terminal.
        out = console if console.is_terminal else Console(file=sys.stdout, width=120, highlight=False)
        out.print(report_table(report, title=f"canary on {topic}: {'OK' if report.ok else 'RECORDS LOST OR FAILED'}"))
        out.print(phase_table(impact.phases))
        if page is not None:
            out.print(f"report: {report_file} (JSON), charts: {page} (HTML, open it in a browser)", markup=False,
                      highlight=False, soft_wrap=True)
    if not report.ok:
        raise typer.Exit(EXIT_FAILURE)
