"""``kmigrate mirror``: migrate to a separate new cluster through a dedicated MirrorMaker 2.

    kmigrate mirror plan --source-bootstrap A --target-bootstrap B [--topics REGEX] [--groups REGEX]
    kmigrate mirror create-topics --source-bootstrap A --target-bootstrap B [--dry-run]
    kmigrate mirror start --source-bootstrap A --target-bootstrap B [--state-dir D]   # creates the topics first
    kmigrate mirror start ... --connect-config [-o FILE]   # the topics, then connector JSONs for a Connect cluster
    kmigrate mirror status [--state-dir D] [--wait]
    kmigrate mirror stop [--state-dir D]
    kmigrate mirror lint FILE... [-O json]   # an mm2.properties or connector JSONs: exit 1 with findings
    kmigrate mirror cutover --group G [--group G2] [--quiet-period 10s] [--dry-run]   # the gated switch

Exit 0 on success, 1 when a step failed (or status --wait timed out), 2 for bad input (nothing changed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from migrate.commands.mirror import connect as mirror_connect

from migrate.commands.mirror import lint as mirror_lint
from migrate.commands.common import OUTPUT_OPTION, OutputFormat, console, emit_json, err_console
from migrate.core.units import parse_duration
from migrate.errors import EXIT_FAILURE, BadInput

app = typer.Typer(help="Migrate to a separate new cluster through MirrorMaker 2: plan, create the topics, start, "
                       "watch the lag, stop.", no_args_is_help=True)

SOURCE = typer.Option(..., "--source-bootstrap", help="Bootstrap servers of the cluster to copy from, host:port[,...].")
TARGET = typer.Option(..., "--target-bootstrap", help="Bootstrap servers of the new cluster, host:port[,...].")
SOURCE_CC = typer.Option(None, "--source-command-config", help="Client properties (SASL/SSL) for the source, as for Kafka's tools.")
TARGET_CC = typer.Option(None, "--target-command-config", help="Client properties (SASL/SSL) for the target.")
TOPICS = typer.Option(None, "--topics", help="Regular expression of the topics to mirror (whole name). Default: every non-internal topic.")
GROUPS = typer.Option(None, "--groups", help="Regular expression of the consumer groups whose offsets are translated. Default: all.")
ENGINE = typer.Option("mirrormaker2", "--engine", help="mirrormaker2 (default) or mirrormaker1 (Kafka's legacy "
                     "kafka.tools.MirrorMaker, deprecated; kmigrate translates the consumer offsets).")
# the commands that follow a started mirror: its clusters unless given
SOURCE_AS_STARTED = typer.Option(None, "--source-bootstrap", help="Default: as given to mirror start.")
TARGET_AS_STARTED = typer.Option(None, "--target-bootstrap", help="Default: as given to mirror start.")
STATE_DIR = typer.Option(None, "--state-dir", help="Where MirrorMaker's mm2.properties, pid and log live "
                         "(default: $XDG_STATE_HOME/kmigrate/mirror or ~/.local/state/kmigrate/mirror).")


def _request(source_bootstrap, target_bootstrap, source_command_config, target_command_config, topics, groups):
    from migrate.runner.mirror.mm2 import Request, Side

    return Request(Side(source_bootstrap, _path(source_command_config)), Side(target_bootstrap, _path(target_command_config), "target"),
                   topics, groups)


def _path(p: Optional[Path]) -> Optional[str]:
    return None if p is None else str(p.expanduser().resolve())


def _state_dir(state_dir: Optional[Path]) -> Path:
    from migrate.runner.mirror.mm2 import default_state_dir

    return (state_dir or default_state_dir()).expanduser().resolve()


app.command("lint")(mirror_lint.lint)


@app.command("plan")
def plan(source_bootstrap: str = SOURCE, target_bootstrap: str = TARGET,
         topics: Optional[str] = TOPICS, groups: Optional[str] = GROUPS,
         source_command_config: Optional[Path] = SOURCE_CC, target_command_config: Optional[Path] = TARGET_CC,
         engine: str = ENGINE, output: OutputFormat = OUTPUT_OPTION) -> None:
    """What a mirror would move and create: topics (partitions, replication factor, configs on both sides), groups, ACLs MirrorMaker will not copy. Changes nothing."""
    from migrate.commands.mirror import mm1 as mirror1
    from migrate.runner.mirror.mm2 import read_plan

    if mirror1.check_engine(engine) == "mirrormaker1":
        mirror1.deprecation_notice(output)
    result = read_plan(_request(source_bootstrap, target_bootstrap, source_command_config, target_command_config, topics, groups))
    if output == OutputFormat.json:
        emit_json(result.to_dict())
        return
    _render_plan(result)


def _render_plan(p) -> None:
    console.print(f"source {p.source.bootstrap} (cluster {p.source.cluster_id}, {p.source.brokers} brokers) -> "
                  f"target {p.target.bootstrap} (cluster {p.target.cluster_id}, {p.target.brokers} brokers)", markup=False)
    table = Table(title=f"{len(p.topics)} topics to mirror", title_justify="left")
    for col in ("topic", "partitions", "rf source", "rf target", "action", "configs set on the target"):
        table.add_column(col, overflow="fold")
    for t in p.topics:
        rf_target = str(t.create_replication_factor) if t.to_create else str(t.target.replication_factor)
        part = str(t.source.partitions) if t.to_create else f"{t.source.partitions} ({t.target.partitions} on target)"
        configs = ", ".join(f"{k}={v}" for k, v in t.create_configs.items()) if t.to_create else (
            "differs: " + ", ".join(f"{k}={tv} (source {sv})" for k, (sv, tv) in t.config_differences.items())
            if t.config_differences else "same")
        table.add_row(t.name, part, str(t.source.replication_factor), rf_target,
                      "create" if t.to_create else "exists", configs or "-")
    console.print(table)
    never = [(t.name, k, s, v) for t in p.topics for k, (s, v) in t.never_synced.items()]
    if never:
        console.print("Configs MirrorMaker 2 never copies (kmigrate sets them when it creates a topic):", markup=False)
        for name, k, s, v in never:
            there = "to be set at creation" if next(t for t in p.topics if t.name == name).to_create else f"{v} on the target"
            console.print(f"  {name}: {k} = {s} on the source, {there}", markup=False)
    if p.topics_skipped:
        console.print(f"Internal topics not mirrored: {', '.join(p.topics_skipped)}", markup=False)
    console.print(f"Consumer groups ({len(p.groups)}): {', '.join(p.groups) or 'none'}", markup=False)
    if p.groups_excluded:
        console.print(f"Groups MirrorMaker 2 leaves out: {', '.join(p.groups_excluded)}", markup=False)
    if p.acls_not_copied is None:
        console.print("ACLs: the source cluster has no authorizer (no ACLs to copy)", markup=False)
    else:
        console.print(f"ACLs MirrorMaker will not copy ({len(p.acls_not_copied)}): create them on the target", markup=False)
        for n in p.acls_not_copied:
            a = n.acl
            console.print(f"  {a.permission} {a.principal} {a.operation} on {a.resource_type} {a.pattern_type} "
                          f"{a.name!r} from {a.host}: {n.reason}", markup=False)
    for w in p.warnings:
        err_console.print(f"warning: {w}", style="yellow", markup=False)


@app.command("create-topics")
def create_topics(source_bootstrap: str = SOURCE, target_bootstrap: str = TARGET,
                  topics: Optional[str] = TOPICS, groups: Optional[str] = GROUPS,
                  source_command_config: Optional[Path] = SOURCE_CC, target_command_config: Optional[Path] = TARGET_CC,
                  dry_run: bool = typer.Option(False, "--dry-run", help="Say what would be created; create nothing."),
                  output: OutputFormat = OUTPUT_OPTION) -> None:
    """Create the plan's topics on the target (same partitions, replication factor capped by its brokers, the source's effective configs). Idempotent; exit 1 when an existing topic's configs differ."""
    from migrate.runner.mirror.mm2 import create_topics as run_create, read_plan

    req = _request(source_bootstrap, target_bootstrap, source_command_config, target_command_config, topics, groups)
    result = run_create(req, read_plan(req), dry_run=dry_run)
    if output == OutputFormat.json:
        emit_json({**result.to_dict(), "dry_run": dry_run})
    else:
        _render_created(result, dry_run)
    if result.differences:
        raise typer.Exit(EXIT_FAILURE)


def _render_created(result, dry_run: bool) -> None:
    for w in result.warnings:
        err_console.print(f"warning: {w}", style="yellow", markup=False)
    verb = "would create" if dry_run else "created"
    made = result.would_create if dry_run else result.created
    console.print(f"{verb} {len(made)} topic(s){': ' + ', '.join(made) if made else ''}", markup=False)
    if result.existing:
        console.print(f"already on the target: {len(result.existing)} topic(s): {', '.join(result.existing)}", markup=False)
    for topic, diffs in result.differences.items():
        console.print(f"config differs on the target for {topic}: "
                      + ", ".join(f"{k}={t} (source {s})" for k, (s, t) in diffs.items()), style="red", markup=False)


@app.command("start")
def start(source_bootstrap: str = SOURCE, target_bootstrap: str = TARGET,
          topics: Optional[str] = TOPICS, groups: Optional[str] = GROUPS,
          source_command_config: Optional[Path] = SOURCE_CC, target_command_config: Optional[Path] = TARGET_CC,
          state_dir: Optional[Path] = STATE_DIR,
          heap_mb: int = typer.Option(1024, "--heap-mb", help="MirrorMaker's Java heap (-Xmx), in MB."),
          tasks: int = typer.Option(2, "--tasks", help="MirrorMaker's tasks.max."),
          engine: str = ENGINE,
          instances: int = typer.Option(1, "--instances", help="With --engine mirrormaker1: processes sharing its consumer group."),
          connect_config: bool = typer.Option(False, "--connect-config", help="Start no MirrorMaker: create the "
                                              "target's topics, then print the three connector JSONs for an existing "
                                              "Kafka Connect cluster (secrets replaced by placeholders)."),
          out: Optional[Path] = typer.Option(None, "--out", "-o", help="With --connect-config: write the JSONs to this file."),
          output: OutputFormat = OUTPUT_OPTION) -> None:
    """Create the target's topics, then start a dedicated MirrorMaker 2 in the background (once: a second start says it is running); --connect-config prints connector JSONs instead."""
    from migrate.commands.mirror import mm1 as mirror1
    from migrate.runner.mirror.mm2 import start as run_start

    req = _request(source_bootstrap, target_bootstrap, source_command_config, target_command_config, topics, groups)
    if connect_config or out is not None:
        if not connect_config:
            raise BadInput("--out is for --connect-config: add --connect-config (or leave --out out)")
        if mirror1.check_engine(engine) != "mirrormaker2":
            raise BadInput("--connect-config prints MirrorMaker 2 connectors: leave --engine mirrormaker1 out")
        return mirror_connect.emit_connect_configs(req, tasks, out, output)
    if mirror1.check_engine(engine) == "mirrormaker1":
        return mirror1.start(req, _state_dir(state_dir), heap_mb, instances, output)
    mirror1.refuse_other_engine(_state_dir(state_dir))
    result = run_start(req, _state_dir(state_dir), heap_mb=heap_mb, tasks=tasks)
    if output == OutputFormat.json:
        emit_json(result.to_dict())
        return
    if result.already_running:
        console.print(f"MirrorMaker 2 is already running (pid {result.pid}) with this configuration: nothing started",
                      markup=False)
        return
    if result.topics is not None:
        _render_created(result.topics, dry_run=False)
    console.print(f"MirrorMaker 2 started (pid {result.pid}); configuration {result.properties}, log {result.log}",
                  markup=False)


@app.command("stop")
def stop(state_dir: Optional[Path] = STATE_DIR,
         timeout: str = typer.Option("30s", "--timeout", help="How long to wait after SIGTERM before SIGKILL."),
         output: OutputFormat = OUTPUT_OPTION) -> None:
    """Stop the MirrorMaker 2 of --state-dir: SIGTERM, wait, then SIGKILL."""
    from migrate.commands.mirror import mm1 as mirror1
    from migrate.runner.mirror.mm2 import stop as run_stop

    if mirror1.engine_of(_state_dir(state_dir)) == "mirrormaker1":
        return mirror1.stop(_state_dir(state_dir), parse_duration(timeout, "--timeout"), output)
    result = run_stop(_state_dir(state_dir), parse_duration(timeout, "--timeout"))
    if output == OutputFormat.json:
        emit_json({"pid": result.pid, "how": result.how, "waited_s": round(result.waited_s, 1)})
    elif result.pid is None:
        console.print("MirrorMaker 2 is not running: nothing to stop", markup=False)
    elif result.how == "SIGTERM":
        console.print(f"MirrorMaker 2 (pid {result.pid}) stopped cleanly after SIGTERM in {result.waited_s:.1f} s", markup=False)
    else:
        console.print(f"MirrorMaker 2 (pid {result.pid}) did not stop after SIGTERM: killed (SIGKILL) after "
                      f"{result.waited_s:.1f} s", markup=False)


@app.command("status")
def status(state_dir: Optional[Path] = STATE_DIR,
           source_bootstrap: Optional[str] = SOURCE_AS_STARTED,
           target_bootstrap: Optional[str] = TARGET_AS_STARTED,
           source_command_config: Optional[Path] = SOURCE_CC, target_command_config: Optional[Path] = TARGET_CC,
           topics: Optional[str] = typer.Option(None, "--topics", help="Only these topics (regular expression)."),
           wait: bool = typer.Option(False, "--wait", help="Wait until every partition's lag is 0 (or --timeout)."),
           timeout: str = typer.Option("10m", "--timeout", help="With --wait: how long to wait."),
           output: OutputFormat = OUTPUT_OPTION) -> None:
    """Replication lag per partition (source end vs MirrorMaker's stored position), tasks, process; consumer groups' translated offsets. Exit 1 when --wait times out."""
    from migrate.runner.mirror.mm2 import Side, status as run_status, wait_caught_up

    src = None if source_bootstrap is None else Side(source_bootstrap, _path(source_command_config))
    tgt = None if target_bootstrap is None else Side(target_bootstrap, _path(target_command_config), "target")
    directory = _state_dir(state_dir)
    from migrate.commands.mirror import mm1 as mirror1

    mm1 = mirror1.engine_of(directory) == "mirrormaker1"
    if not wait:
        if mm1:
            return mirror1.render_status(_mm1_status(directory, src, tgt, topics), output)
        _render_status(run_status(directory, src, tgt, topics), output)
        return
    timeout_s = parse_duration(timeout, "--timeout")
    if timeout_s <= 0:
        raise BadInput(f"--timeout {timeout}: give a positive duration, like 10m")
    if mm1:
        caught_up, last = mirror1.wait(directory, src, tgt, topics, timeout_s, output)
        mirror1.render_status(last, output)
        if not caught_up:
            err_console.print(f"kmigrate: lag not 0 after {timeout}", markup=False)
            raise typer.Exit(EXIT_FAILURE)
        return
    if output == OutputFormat.text and console.is_terminal:
        with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("lag {task.fields[lag]} records"),
                      TimeElapsedColumn(), console=console, transient=True) as bar:
            task = bar.add_task("copying", total=None, lag="?")

            def show(s) -> None:  # the bar's total is the most records seen left to copy
                total = max(bar.tasks[0].total or 0, s.total_lag) or 1
                bar.update(task, total=total, completed=total - s.total_lag, lag=s.total_lag)

            caught_up, last = wait_caught_up(directory, src, tgt, topics, timeout_s, on_status=show)
    else:
        lines = err_console if output == OutputFormat.json else console
        caught_up, last = wait_caught_up(directory, src, tgt, topics, timeout_s, on_status=lambda s: lines.print(
            f"lag {s.total_lag} records in {sum(1 for p in s.partitions if p.lag)} partition(s)", markup=False))
    _render_status(last, output)
    if not caught_up:
        err_console.print(f"kmigrate: lag not 0 after {timeout}", markup=False)
        raise typer.Exit(EXIT_FAILURE)


def _render_status(s, output: OutputFormat) -> None:
    if output == OutputFormat.json:
        emit_json(s.to_dict())
        return
    proc = s.process
    console.print(f"MirrorMaker 2: {'running (pid ' + str(proc['pid']) + ')' if proc['running'] else 'not running'}; "
                  f"log {proc['log']}", markup=False)
    if s.tasks:
        console.print("tasks: " + ", ".join(f"{k} {v}" for k, v in sorted(s.tasks.items())), markup=False)
    if s.history:
        h = s.history
        console.print(f"bookkeeping: {h['stage']}"
                      + (f"; gates passed: {', '.join(h['gates'])}" if h["gates"] else "")
                      + (f"; offsets set for {', '.join(sorted(h['offsets_set']))}" if h["offsets_set"] else ""),
                      markup=False)
    if s.heartbeat_age_s is not None:
        console.print(f"newest heartbeat on the target: {s.heartbeat_age_s:.0f} s ago", markup=False)
    for topic, diffs in s.config_differences.items():
        console.print(f"config differs on the target for {topic}: "
                      + ", ".join(f"{k}={t} (source {v})" for k, (v, t) in diffs.items()), style="red", markup=False)
    table = Table(title=f"lag {s.total_lag} records", title_justify="left")
    for col in ("topic", "partition", "source end", "mirrored up to", "lag", "behind (s)"):
        table.add_column(col, overflow="fold")
    for p in s.partitions:
        table.add_row(p.topic, str(p.partition), str(p.source_end), "-" if p.mirrored is None else str(p.mirrored + 1),
                      str(p.lag), "?" if p.time_lag_ms is None else f"{p.time_lag_ms / 1000:.1f}",
                      style=None if p.lag == 0 else "yellow")
    console.print(table)
    if s.groups:
        groups = Table(title="consumer groups", title_justify="left")
        for col in ("group", "topic", "partition", "committed on source", "translated", "committed on target",
                    "duplicates if switched now"):
            groups.add_column(col, overflow="fold")
        for g in s.groups:
            groups.add_row(g.group, g.topic, str(g.partition), str(g.source_committed),
                           "-" if g.translated is None else str(g.translated),
                           "-" if g.target_committed is None else str(g.target_committed),
                           "- (copy not finished)" if g.duplicates is None else
                           str(g.duplicates) if g.duplicates >= 0 else f"{g.duplicates} (would skip records!)")
        console.print(groups)


def _mm1_status(directory, src, tgt, topics):
    from migrate.runner.mirror.mm1 import status as run_status1

    return run_status1(directory, src, tgt, topics)


def _register_engines() -> None:
    from migrate.commands.mirror import mm1 as mirror1

    mirror1.register(app)


_register_engines()


@app.command("cutover")
def cutover(group: list[str] = typer.Option(..., "--group", help="Consumer group to switch to the target (repeat)."),
            state_dir: Optional[Path] = STATE_DIR,
            source_bootstrap: Optional[str] = SOURCE_AS_STARTED,
            target_bootstrap: Optional[str] = TARGET_AS_STARTED,
            source_command_config: Optional[Path] = SOURCE_CC, target_command_config: Optional[Path] = TARGET_CC,
            topics: Optional[str] = typer.Option(None, "--topics", help="Only these mirrored topics (regular expression)."),
            quiet_period: str = typer.Option("10s", "--quiet-period", help="How long the source's ends must stay unchanged to call the producers stopped."),
            timeout: str = typer.Option("5m", "--timeout", help="How long each gate may wait (producers, the copy)."),
            dry_run: bool = typer.Option(False, "--dry-run", help="Check the gates and compute the offsets and duplicates; write nothing, skip the verify."),
            master: str = typer.Option("local[*]", "--master", help="Spark master of the verify."),
            spark_conf: Optional[list[str]] = typer.Option(None, "--spark-conf", help="Spark setting key=value (repeat)."),
            jars: Optional[str] = typer.Option(None, "--jars", help="Jars of Spark's Kafka source instead of fetching them with Maven."),
            output: OutputFormat = OUTPUT_OPTION) -> None:
    """The gated cut-over: producers stopped, copy complete, groups stopped, offsets translated and set on the target, cross-cluster verify, then what clients change. Exit 1 when a gate fails, 2 for bad input (nothing changed)."""
    from migrate.runner.mirror.cutover import CutoverRequest, cutover as run_cutover
    from migrate.runner.mirror.mm2 import Side

    req = CutoverRequest(
        tuple(dict.fromkeys(group)), _state_dir(state_dir),
        None if source_bootstrap is None else Side(source_bootstrap, _path(source_command_config)),
        None if target_bootstrap is None else Side(target_bootstrap, _path(target_command_config), "target"),
        topics, parse_duration(quiet_period, "--quiet-period"), parse_duration(timeout, "--timeout"), dry_run,
        master, tuple(spark_conf or ()), jars)
    lines = err_console if output == OutputFormat.json else console
    result = run_cutover(req, say=lambda m: lines.print(f"cutover: {m}", markup=False))
    if output == OutputFormat.json:
        emit_json(result.to_dict())
        return
    for g in result.gates:
        mark = {"checked": "passed", "bookkeeping": "passed (from the bookkeeping)", "skipped": "skipped"}[g.how]
        console.print(f"[{mark}] {g.name}: {g.detail}", markup=False)
    table = Table(title="offsets on the target", title_justify="left")
    for col in ("group", "topic", "partition", "source committed", "target offset", "how", "duplicates"):
        table.add_column(col, overflow="fold")
    for t in result.translations:
        table.add_row(t.group, t.topic, str(t.partition), str(t.source_committed), str(t.offset), t.how,
                      "-" if t.duplicates is None else str(t.duplicates))
    console.print(table)
    for w in result.writes:
        if w["note"]:
            console.print(f"{w['group']} {w['topic']}-{w['partition']}: {w['note']}", markup=False)
    if result.dry_run:
        console.print("dry run: nothing written; clients must not switch yet", markup=False)
        return
    console.print(f"clients may switch (gates passed in {result.seconds:.1f} s):", markup=False)
    for line in result.clients:
        console.print(f"  {line}", markup=False)
    console.print("then stop MirrorMaker: kmigrate mirror stop", markup=False)
