"""``kmigrate demo``: see the whole zero-downtime migration on a local sandbox, with one command."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from migrate.commands.canary import report_table
from migrate.commands.common import OUTPUT_OPTION, OutputFormat, console, emit_json
from migrate.sandbox.demo import Demo
from migrate.sandbox.demo_cross import CrossClusterDemo
from migrate.errors import EXIT_FAILURE, BadInput
from migrate.core.units import format_bytes


def demo(
    directory: Optional[Path] = typer.Option(None, "--dir", help="Where the sandbox, playbook, plan and snapshots go (default: a new temporary folder)."),
    keep: bool = typer.Option(False, "--keep", help="Leave the sandbox running for exploring (kmigrate sandbox down --dir DIR/sandbox stops it)."),
    ip_prefix: str = typer.Option("127.0.0", "--ip-prefix", help="Node i listens on <prefix>.i."),
    throttle: str = typer.Option("50MB/s", "--throttle", help="Replication throttle of the move."),
    scale: float = typer.Option(1.0, "--scale", help="Multiply the demo's record counts (0.1 for a quick look)."),
    security: str = typer.Option("plaintext", "--security", help="The sandbox's security (kmigrate sandbox up --security): "
                                 "plaintext, sasl_ssl, mtls or sasl_plaintext; kmigrate runs as its least-privileged user."),
    cross_cluster: bool = typer.Option(False, "--cross-cluster", help="Instead: copy the source to a second, separate "
                                       "cluster with MirrorMaker 2 (mirror start, status --wait, cutover, stop) and switch "
                                       "the canary's producer and consumer group to it (--scale defaults to 0.1 there)."),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Run the whole migration on a sandbox: plan, ZooKeeper swap, partitions, verify, decommission, under a canary."""
    work = directory or Path(tempfile.mkdtemp(prefix="kmigrate-demo-"))
    if output == OutputFormat.text:
        console.print(f"kmigrate demo in {work}: " + (
            "a cluster copied to a separate one by MirrorMaker 2, its clients switched, live" if cross_cluster else
            "3 ZooKeeper servers and 3 brokers move to 3 new of each, live"))
    status = console.status("starting") if output == OutputFormat.text else None

    def progress(msg: str) -> None:
        if status is None:
            return
        if "\n" in msg:  # the plan, shown in full
            status.stop()
            console.print(msg, markup=False, highlight=False)
            status.start()
        else:
            status.update(msg)

    if cross_cluster:
        if security.lower() != "plaintext":
            raise BadInput("--cross-cluster runs on plaintext sandboxes only for now: leave out --security")
        run = CrossClusterDemo(work, ip_prefix=ip_prefix, records_scale=0.1 if scale == 1.0 else scale, progress=progress)
    else:
        run = Demo(work, ip_prefix=ip_prefix, throttle=throttle, records_scale=scale, progress=progress,
                   security=security.lower())
    try:
        if status is not None:
            with status:
                report = run.run()
        else:
            report = run.run()
    finally:
        if not keep:
            run.teardown()
            if directory is None:
                shutil.rmtree(work, ignore_errors=True)
    if output == OutputFormat.json:
        emit_json(report.to_dict())
    else:
        table = Table(title="kmigrate demo" + (" --cross-cluster" if cross_cluster else ""))
        for col in ("phase", "seconds", "result"):  # a connect string or an id is folded, never cut
            table.add_column(col, overflow="fold")
        for phase in report.phases:
            table.add_row(phase.name, f"{phase.seconds:.1f}", phase.detail)
        console.print(table)
        if cross_cluster:
            for gate in report.cutover.get("gates", []):
                console.print(f"cutover gate {gate['gate']}: {'passed' if gate['passed'] else 'NOT passed'} ({gate['how']})")
        else:
            console.print(f"moved {report.partitions_moved} partitions of {report.topics_moved} topics, "
                          f"{format_bytes(report.bytes_moved)} copied")
        if report.canary is not None:
            console.print(report_table(report.canary, title="canary during the whole migration"
                                       + (" (source, then target)" if cross_cluster else "")))
        if cross_cluster:
            console.print(f"duplicates the switch cost {report.canary_group}: cutover reported {report.cutover_duplicates}, "
                          f"the canary saw {report.canary.duplicated if report.canary else '?'}")
        console.print("verify: " + ("every partition matches" if report.verify.get("ok") else "DIFFERENCES FOUND"))
        if keep:
            console.print(f"sandbox left running: kmigrate sandbox status --dir {run.sandbox.dir}")
    if not report.ok:
        raise typer.Exit(EXIT_FAILURE)
