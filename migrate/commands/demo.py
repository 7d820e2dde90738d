"""``kmigrate demo``: see the whole zero-downtime migration on a local sandbox, with one command."""

from __future__ import annotations

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
from migrate.files import check_writable
from migrate.commands.demo_run import phases_table, run_and_report, show_impact


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
    kraft_cluster: bool = typer.Option(False, "--kraft-cluster", help="Instead: a KRaft cluster (no ZooKeeper) moved to "
                                       "new machines: 3 controllers to 3 new ones (kmigrate controllers, the leader "
                                       "among the removed), 3 brokers to 3 new ones (partitions, brokers unregister)."),
    kafka_version: str = typer.Option("4.4.0", "--kafka-version", help="With --kraft-cluster: the cluster's Kafka "
                                      "release (4.0.0 or later)."),
    controllers: int = typer.Option(3, "--controllers", help="With --kraft-cluster: the controllers moved (as many new "
                                    "ones), 1 to 5."),
    brokers: int = typer.Option(3, "--brokers", help="With --kraft-cluster: the brokers moved (as many new ones), 2 to 5 "
                                "(the topics' replication factor is at most this)."),
    kraft: bool = typer.Option(False, "--kraft", help="Instead: move the brokers to new nodes in ZooKeeper mode, then "
                               "leave ZooKeeper (KRaft, KIP-866: controller, two rolls, finalize, ZooKeeper stopped), "
                               "with seeded SIGKILLs of kmigrate in each phase."),
    no_move: bool = typer.Option(False, "--no-move", help="With --kraft: the brokers stay where they are: only "
                                 "ZooKeeper to KRaft (no spare brokers, no kmigrate partitions, no decommission)."),
    seed: int = typer.Option(29, "--seed", help="With --kraft: the seed of the moments kmigrate's commands are "
                             "SIGKILLed (and run again); -1: no kill."),
    report_file: Optional[Path] = typer.Option(None, "--report", help="Write the demo's report as JSON here, and its charts (the canary's latency, throughput and stalls over time, each phase marked) as a self-contained HTML page next to it (.json replaced by .html). Default: demo-report.json in --dir (or in the temporary folder, which then keeps these two files)."),
    rest: str = typer.Option("10s", "--rest", help="How long the canary runs alone, every node up, before the first step, after its first seconds (at most 5 s, left out): its figures at rest, the baseline of each phase's."),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Run the whole migration on a sandbox: plan, ZooKeeper swap, partitions, verify, decommission, under a canary."""
    from migrate.core.units import parse_duration

    rest_s = parse_duration(rest, "--rest")
    if report_file is not None:
        check_writable(report_file, "--report", "demo-report.json")
    if kraft_cluster:
        from migrate.commands.demo_kraft_cluster import check_options, run_kraft_cluster

        check_options(security, no_move, kraft, cross_cluster, controllers, brokers)
        return run_kraft_cluster(directory, keep, ip_prefix, throttle, scale, kafka_version, output, rest_s, report_file,
                                 brokers=brokers, controllers=controllers)
    if (controllers, brokers) != (3, 3):
        raise BadInput("--controllers and --brokers are for --kraft-cluster (the other demos' sandboxes have a fixed size)")
    if kafka_version != "4.4.0":
        raise BadInput("--kafka-version is for --kraft-cluster (the other demos run the sandbox's default releases)")
    if kraft and cross_cluster:
        raise BadInput("--kraft and --cross-cluster are two different demos: choose one")
    if no_move and not kraft:
        raise BadInput("--no-move is a variant of --kraft (the brokers stay, only ZooKeeper to KRaft): add --kraft or leave out --no-move")
    work = directory or Path(tempfile.mkdtemp(prefix="kmigrate-demo-"))
    if output == OutputFormat.text:
        console.print(f"kmigrate demo in {work}: " + (
            "a cluster copied to a separate one by MirrorMaker 2, its clients switched, live" if cross_cluster else
            "3 brokers leave ZooKeeper for KRaft where they are (no move), live" if kraft and no_move else
            "3 brokers move to 3 new ones in ZooKeeper mode, then the cluster leaves ZooKeeper for KRaft, live" if kraft else
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
        run.rest_s = rest_s
    elif kraft:
        from migrate.sandbox.demo_kraft import KraftDemo

        run = KraftDemo(work, ip_prefix=ip_prefix, throttle=throttle, records_scale=scale, progress=progress, security=security.lower(),
                        kill_seed=None if seed < 0 else seed, move=not no_move)
        run.rest_s = rest_s
    else:
        run = Demo(work, ip_prefix=ip_prefix, throttle=throttle, records_scale=scale, progress=progress,
                   security=security.lower(), rest_s=rest_s)
    report, pages = run_and_report(run, work, directory, report_file, status, keep)
    if output == OutputFormat.json:
        emit_json({**report.to_dict(), "report_files": [str(p) for p in pages or ()]})
    elif kraft:
        show_kraft_report(report, keep)
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
            console.print(report.switch_line())
        console.print("verify: " + ("every partition matches" if report.verify.get("ok") else "DIFFERENCES FOUND"))
        if keep:
            console.print(f"sandbox left running: kmigrate sandbox status --dir {run.sandbox.dir}")
    if output == OutputFormat.text:
        show_impact(report, pages)
    if not report.ok:
        raise typer.Exit(EXIT_FAILURE)


def show_kraft_report(report, keep: bool) -> None:
    """The human summary of ``demo --kraft``: each phase with its time and the canary's p99 and stall there,
    the kills, verify, the state compared, what ran without ZooKeeper, the canary's whole report."""
    title = "kmigrate demo --kraft" + ("" if getattr(report, "moved", True) else " --no-move")
    console.print(phases_table(title, report.phases))
    if report.kills:
        console.print(f"SIGKILLs at moments drawn from --seed {report.kill_seed} (the same seed, the same moments):")
    for k in report.kills:
        console.print(f"SIGKILL: {k['command']} after {k['after_s']:.2f} s: "
                      + ("killed, then run again to the end" if k["killed"] else f"had finished (exit {k['exit']}), run again"),
                      markup=False)
    if getattr(report, "moved", True):
        console.print(f"the plan moved {report.plan_partitions} partitions in ZooKeeper mode (its last run, after the kill: "
                      f"{report.partitions_moved} partitions of {report.topics_moved} topics)")
    else:
        console.print("no move (--no-move): the brokers stayed where they are, only ZooKeeper to KRaft")
    doc = report.verify_after_zookeeper
    console.print("verify (after finalize, ZooKeeper stopped; against the snapshot before the plan): "
                  + ("every partition matches" if doc.get("ok") else "DIFFERENCES FOUND" if doc else "not run"))
    if report.state_compared:
        console.print("group offsets, topic configs, ACLs: " + ("the same after as before" if not report.state_differences
                                                                 else "; ".join(report.state_differences)), markup=False)
    status = report.kraft_status
    console.print(f"KRaft: phase {status.get('phase', 'not reached')}, brokers "
                  f"{', '.join(f'{b} {m}' for b, m in (status.get('brokers') or {}).items()) or '?'}; "
                  f"ZooKeeper {'stopped' if report.zookeeper_stopped else 'NOT stopped'}", markup=False)
    for what, doc in report.without_zookeeper.items():
        console.print(f"without ZooKeeper, kmigrate {what}: exit {doc['exit']}: {doc['last_line']}", markup=False)
    if report.canary is not None:
        console.print(report_table(report.canary, title="canary during the whole migration"))
        stall = report.longest_stall_s
        console.print(f"longest stall {stall:.2f} s (target <= {report.stall_target_s:.0f} s: "
                      f"{'met' if stall <= report.stall_target_s else 'NOT met'})")
    for f in report.failed:
        console.print(f"FAILED: {f}", markup=False)
    if keep:
        console.print(f"sandbox left running: kmigrate sandbox status --dir {report.sandbox_dir}")
