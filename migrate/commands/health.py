"""``kmigrate health``: is the cluster healthy (and with ``--wait``, wait until it is), e.g. between two
brokers of a rolling restart.

    kmigrate health --bootstrap-server kafka1:9092                  # report; exit 0 healthy, 1 not
    kmigrate health --bootstrap-server kafka1:9092 --wait --timeout 10m --broker-list 1,2,3
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Optional

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from migrate.commands.common import OUTPUT_OPTION, OutputFormat, console, emit_json, err_console, parse_id_list
from migrate.core.units import parse_duration
from migrate.errors import EXIT_FAILURE, BadInput

if TYPE_CHECKING:
    from migrate.runner.health import HealthCheck


def health(
    bootstrap_server: str = typer.Option(..., "--bootstrap-server", envvar="KAFKA_BOOTSTRAP_SERVERS",
                                         help="Kafka bootstrap servers, host:port[,host:port...]."),
    command_config: Optional[Path] = typer.Option(None, "--command-config", help="Kafka client properties (SASL/SSL), as for Kafka's tools."),
    wait: bool = typer.Option(False, "--wait", help="Wait until the cluster is healthy for --check-count checks in a row (or --timeout)."),
    timeout: str = typer.Option("10m", "--timeout", help="With --wait: how long to wait (30s, 10m, 1h)."),
    interval: str = typer.Option("2s", "--interval", help="With --wait: time between two checks (e.g. 2s, 500ms)."),
    check_count: int = typer.Option(3, "--check-count", help="With --wait: healthy checks in a row that count as healthy."),
    broker_list: Optional[str] = typer.Option(
        None, "--broker-list", help="Broker ids that must be registered, e.g. 1,2,3 (default: every broker hosting a replica)."),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Report under-replicated and offline partitions, unregistered brokers and the controller; exit 0 when healthy.

    Healthy: no under-replicated partition, no offline partition, every expected broker registered, the controller known. Run it with --wait between two broker restarts of a rolling restart.
    """
    from migrate.files import client_settings
    from migrate.runner.health import check_health, cluster_reader, wait_healthy

    timeout_s = parse_duration(timeout, "--timeout")
    interval_s = parse_duration(interval, "--interval")
    if check_count < 1:
        raise BadInput(f"--check-count {check_count}: give 1 or more healthy checks in a row")
    expected = parse_id_list(broker_list, "--broker-list") or None
    read = cluster_reader(client_settings(bootstrap_server, command_config))
    if not wait:
        result = check_health(read, expected)
        _report(result.to_dict(), result.healthy, result.summary(), result.problems(), output)
        return
    with _check_view(output, check_count) as on_check:
        waited = wait_healthy(read, expected_brokers=expected, timeout_s=timeout_s, interval_s=interval_s,
                              check_count=check_count, on_check=on_check)
    problems = [] if waited.healthy else [waited.failure()]
    _report(waited.to_dict(), waited.healthy, waited.last.summary(), problems, output)


@contextmanager
def _check_view(output: OutputFormat, check_count: int) -> Iterator[Callable[[HealthCheck], None]]:
    """How each check of a wait is shown: a progress bar on a terminal, else one plain line per check
    (on stderr with ``--output json``, which keeps stdout for the one JSON document)."""
    if output == OutputFormat.text and console.is_terminal:
        with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed:.0f}/{task.total:.0f} healthy in a row"),
                      TimeElapsedColumn(), console=console, transient=True) as bar:
            task = bar.add_task("checking", total=check_count)
            yield lambda c: bar.update(task, completed=c.consecutive, description=c.health.summary())
        return
    lines = console if output == OutputFormat.text else err_console
    yield lambda c: lines.print(f"check {c.number} ({c.elapsed_s:.0f} s): {c.health.summary()} "
                                f"[{c.consecutive}/{c.needed} healthy in a row]", markup=False)


def _report(doc: dict, healthy: bool, summary: str, problems: list[str], output: OutputFormat) -> None:
    if output == OutputFormat.json:
        emit_json(doc)
    else:
        console.print(summary, style="green" if healthy else "red", markup=False)
        for line in problems:
            console.print(f"  {line}", markup=False, soft_wrap=True)
    if not healthy:
        raise typer.Exit(EXIT_FAILURE)
