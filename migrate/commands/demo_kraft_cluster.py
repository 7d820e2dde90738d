"""``kmigrate demo --kraft-cluster``: a whole KRaft cluster (controllers and brokers) moved to new machines under the
canary (``migrate.sandbox.demo_kraft_cluster``), run and shown."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Optional

import typer

from migrate.commands.canary import report_table
from migrate.commands.common import OutputFormat, console, emit_json
from migrate.commands.demo_run import phases_table
from migrate.errors import EXIT_FAILURE, BadInput


def check_options(security: str, no_move: bool, kraft: bool, cross_cluster: bool, controllers: int = 3,
                  brokers: int = 3) -> None:
    """The demo's refusals: one line, exit 2, nothing started.

    >>> check_options("plaintext", False, True, False)
    Traceback (most recent call last):
    migrate.errors.BadInput: --kraft-cluster and --kraft are two different demos: choose one
    """
    if kraft or cross_cluster:
        other = "--kraft" if kraft else "--cross-cluster"
        raise BadInput(f"--kraft-cluster and {other} are two different demos: choose one")
    if no_move:
        raise BadInput("--no-move is a variant of --kraft (ZooKeeper to KRaft), not of --kraft-cluster")
    if security.lower() != "plaintext":
        raise BadInput("--kraft-cluster runs on a plaintext sandbox only for now: leave out --security")
    if not 1 <= controllers <= 5:
        raise BadInput(f"--controllers {controllers}: give 1 to 5 (as many new controllers are started)")
    if not 2 <= brokers <= 5:
        raise BadInput(f"--brokers {brokers}: give 2 to 5 (as many new brokers are started; one broker cannot be "
                       "rolled without stopping the writes)")


def run_kraft_cluster(directory: Optional[Path], keep: bool, ip_prefix: str, throttle: str, scale: float,
                      kafka_version: str, output: OutputFormat, rest_s: float, report_file: Optional[Path],
                      brokers: int = 3, controllers: int = 3) -> None:
    """Run the demo, write its report files (JSON and the HTML charts, as every demo) and show it."""
    from migrate.commands.demo_run import run_and_report, show_impact
    from migrate.sandbox.demo_kraft_cluster import KraftClusterDemo, check_kafka_version

    check_kafka_version(kafka_version)
    work = directory or Path(tempfile.mkdtemp(prefix="kmigrate-demo-"))
    if output == OutputFormat.text:
        console.print(f"kmigrate demo in {work}: a KRaft cluster (Kafka {kafka_version}, {controllers} controllers, "
                      f"{brokers} brokers) moves to {controllers} new controllers and {brokers} new brokers, live")
    status = console.status("starting") if output == OutputFormat.text else None

    def progress(msg: str) -> None:
        if status is not None:
            status.update(msg)

    run = KraftClusterDemo(work, ip_prefix=ip_prefix, throttle=throttle, records_scale=scale, progress=progress,
                           kafka_version=kafka_version, controllers=controllers, brokers=brokers)
    run.rest_s = rest_s
    report, pages = run_and_report(run, work, directory, report_file, status, keep)
    if output == OutputFormat.json:
        emit_json({**report.to_dict(), "report_files": [str(p) for p in pages or ()]})
    else:
        show(report, keep)
        show_impact(report, pages)
    if not report.ok:
        raise typer.Exit(EXIT_FAILURE)


def show(report, keep: bool) -> None:
    """The human summary: each phase with its time and the canary's p99 and stall there, the quorum and the
    registrations after, verify, the state compared, the canary's whole report."""
    console.print(phases_table("kmigrate demo --kraft-cluster", report.phases))
    console.print(f"controllers: {report.controllers_before} -> voters {report.voters_after or '?'} (leader before: "
                  f"{report.leader_before}); brokers {report.brokers_old} -> {report.brokers_new}", markup=False)
    console.print("registered brokers after: " + (", ".join(map(str, report.registrations_after)) or "?")
                  + (" (no stale registration)" if report.registrations_clean else " (STALE REGISTRATION)"), markup=False)
    console.print("old nodes still running: " + (", ".join(report.old_nodes_running) or "none"), markup=False)
    console.print("verify (against the snapshot before the first change): "
                  + ("every partition matches" if report.verify.get("ok") else "DIFFERENCES FOUND" if report.verify else "not run"))
    if report.state_compared:
        console.print("group offsets, topic configs: " + ("the same after as before" if not report.state_differences
                                                          else "; ".join(report.state_differences)), markup=False)
    if report.canary is not None:
        console.print(report_table(report.canary, title="canary during the whole move"))
        stall = report.longest_stall_s
        console.print(f"canary: {report.canary.lost} lost; longest stall {stall:.2f} s (target <= "
                      f"{report.stall_target_s:.0f} s: {'met' if stall <= report.stall_target_s else 'NOT met'})")
    for f in report.failed:
        console.print(f"FAILED: {f}", markup=False)
    if keep:
        console.print(f"sandbox left running: kmigrate sandbox status --dir {report.sandbox_dir}")
