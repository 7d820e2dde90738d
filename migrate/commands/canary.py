"""``kmigrate canary``: measure, while a migration runs, that no acknowledged record is lost."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.live import Live
from rich.table import Table

from migrate.core.canary import CanaryReport
from migrate.files import client_settings
from migrate.core.units import parse_duration
from migrate.commands.common import OUTPUT_OPTION, OutputFormat, console, emit_json
from migrate.errors import EXIT_FAILURE
from migrate.runner.canary import DEFAULT_TOPIC, Canary, watch


def report_table(report: CanaryReport, title: str = "canary") -> Table:
    table = Table("measure", "value", title=title)
    rows = [
        ("records sent", report.sent), ("acknowledged", report.acknowledged), ("consumed", report.consumed),
        ("lost (acked, never consumed)", report.lost), ("duplicated", report.duplicated),
        ("out of order", report.out_of_order), ("failed sends", report.failed_sends),
        ("produce latency p50 / p99 / max (ms)", f"{report.latency_p50_ms} / {report.latency_p99_ms} / {report.latency_max_ms}"),
        ("longest stall (s)", f"{report.longest_stall_s}" + (f" at +{report.longest_stall_at_s} s" if report.longest_stall_at_s is not None else "")),
        ("client errors", "; ".join(report.errors) or "none"),
    ]
    for name, value in rows:
        table.add_row(name, str(value))
    return table


def canary(
    bootstrap_server: str = typer.Option(..., "--bootstrap-server", envvar="KAFKA_BOOTSTRAP_SERVERS", help="Kafka bootstrap servers."),
    command_config: Optional[Path] = typer.Option(None, "--command-config", help="Kafka client properties (SASL/SSL)."),
    topic: str = typer.Option(DEFAULT_TOPIC, "--topic", help="Canary topic (created with a partition led by every broker)."),
    duration: Optional[str] = typer.Option(None, "--duration", help="How long to run (30s, 10m, 1h); default until Ctrl-C."),
    rate: float = typer.Option(100.0, "--rate", help="Records per second."),
    replication_factor: int = typer.Option(3, "--replication-factor", help="Replication factor of a new canary topic."),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Produce (acks=all, idempotent) and consume sequence-numbered records; report lost, duplicated, stalls, latency."""
    seconds = None if duration is None else parse_duration(duration, "--duration")
    settings = client_settings(bootstrap_server, command_config)
    run = Canary(settings, topic=topic, rate_per_s=rate, replication_factor=replication_factor).start()
    if output == OutputFormat.text:
        with Live(report_table(run.report()), console=console, refresh_per_second=2) as live:
            watch(run, seconds, lambda report: live.update(report_table(report, title="canary (Ctrl-C to stop)")))
    else:
        watch(run, seconds)
    report = run.stop()
    if output == OutputFormat.json:
        emit_json(report.to_dict())
    else:
        console.print(report_table(report, title=f"canary on {topic}: {'OK' if report.ok else 'RECORDS LOST OR FAILED'}"))
    if not report.ok:
        raise typer.Exit(EXIT_FAILURE)
