"""``kmigrate mirror``: migrate to a separate new cluster through a dedicated MirrorMaker 2.

    kmigrate mirror plan --source-bootstrap A --target-bootstrap B [--topics REGEX] [--groups REGEX]
    kmigrate mirror create-topics --source-bootstrap A --target-bootstrap B [--dry-run]
    kmigrate mirror start --source-bootstrap A --target-bootstrap B [--state-dir D]   # creates the topics first
    kmigrate mirror start ... --connect-config [-o FILE]   # the topics, then connector JSONs for a Connect cluster
    kmigrate mirror status [--state-dir D] [--wait]
    kmigrate mirror stop [--state-dir D]
    kmigrate mirror lint FILE... [-O json]   # an mm2.properties or connector JSONs: exit 1 with findings
    kmigrate mirror verify [--state-dir D] [--follow]   # prove the copy while it runs: the cut-over verifies the tail
    kmigrate mirror cutover --group G [--group G2] [--quiet-period 10s] [--dry-run]   # the gated switch

Exit 0 on success, 1 when a step failed (or status --wait timed out), 2 for bad input (nothing changed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from migrate.commands.common import OUTPUT_OPTION, OutputFormat, console, emit_json, err_console
from migrate.commands.mirror import connect as mirror_connect
from migrate.commands.mirror import lint as mirror_lint
from migrate.commands.mirror import render
from migrate.commands.mirror import translate as mirror_translate
from migrate.commands.mirror.options import (ENGINE, GROUPS, SOURCE, SOURCE_AS_STARTED, SOURCE_CC, STATE_DIR, TARGET,
                                             TARGET_AS_STARTED, TARGET_CC, TOPICS, request, side, state_dir as _state_dir)
from migrate.core.units import parse_duration
from migrate.errors import EXIT_FAILURE, BadInput

app = typer.Typer(help="Migrate to a separate new cluster through MirrorMaker 2: plan, create the topics, start, "
                       "watch the lag, stop.", no_args_is_help=True)


app.command("lint")(mirror_lint.lint)


@app.command("plan")
def plan(source_bootstrap: str = SOURCE, target_bootstrap: str = TARGET,
         topics: Optional[str] = TOPICS, groups: Optional[str] = GROUPS,
         source_command_config: Optional[Path] = SOURCE_CC, target_command_config: Optional[Path] = TARGET_CC,
         engine: str = ENGINE, output: OutputFormat = OUTPUT_OPTION) -> None:
    """What a mirror would move and create: topics (partitions, replication factor, configs on both sides), groups, ACLs MirrorMaker will not copy. Changes nothing."""
    from migrate.runner.mirror.clusters import Clusters, read_plan
    from migrate.runner.mirror.engines import engine_named

    render.warnings(engine_named(engine).notices)
    req = request(source_bootstrap, target_bootstrap, source_command_config, target_command_config, topics, groups)
    result = read_plan(req, Clusters(req.source, req.target))
    if output == OutputFormat.json:
        emit_json(result.to_dict())
        return
    render.plan(result)


@app.command("create-topics")
def create_topics(source_bootstrap: str = SOURCE, target_bootstrap: str = TARGET,
                  topics: Optional[str] = TOPICS, groups: Optional[str] = GROUPS,
                  source_command_config: Optional[Path] = SOURCE_CC, target_command_config: Optional[Path] = TARGET_CC,
                  dry_run: bool = typer.Option(False, "--dry-run", help="Say what would be created; create nothing."),
                  output: OutputFormat = OUTPUT_OPTION) -> None:
    """Create the plan's topics on the target (same partitions, replication factor capped by its brokers, the source's effective configs). Idempotent; exit 1 when an existing topic's configs differ."""
    from migrate.runner.mirror.clusters import Clusters, read_plan
    from migrate.runner.mirror.topics import create_topics as run_create

    req = request(source_bootstrap, target_bootstrap, source_command_config, target_command_config, topics, groups)
    clusters = Clusters(req.source, req.target)
    result = run_create(clusters, read_plan(req, clusters), dry_run=dry_run)
    if output == OutputFormat.json:
        emit_json({**result.to_dict(), "dry_run": dry_run})
    else:
        render.created(result, dry_run)
    if result.differences:
        raise typer.Exit(EXIT_FAILURE)


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
    from migrate.runner.mirror import engines

    req = request(source_bootstrap, target_bootstrap, source_command_config, target_command_config, topics, groups)
    if connect_config or out is not None:
        if not connect_config:
            raise BadInput("--out is for --connect-config: add --connect-config (or leave --out out)")
        return mirror_connect.emit_connect_configs(engines.engine_named(engine), req, tasks, out, output)
    chosen = engines.engine_named(engine)
    render.warnings(chosen.notices)
    result = engines.start(chosen, req, _state_dir(state_dir), heap_mb=heap_mb, tasks=tasks, instances=instances)
    render.started(result, output)


@app.command("stop")
def stop(state_dir: Optional[Path] = STATE_DIR,
         timeout: str = typer.Option("30s", "--timeout", help="How long to wait after SIGTERM before SIGKILL."),
         output: OutputFormat = OUTPUT_OPTION) -> None:
    """Stop the MirrorMaker 2 of --state-dir: SIGTERM, wait, then SIGKILL."""
    from migrate.runner.mirror.engines import engine_of

    directory = _state_dir(state_dir)
    render.stopped(engine_of(directory).stop(directory, parse_duration(timeout, "--timeout")), output)


@app.command("status")
def status(state_dir: Optional[Path] = STATE_DIR,
           source_bootstrap: Optional[str] = SOURCE_AS_STARTED,
           target_bootstrap: Optional[str] = TARGET_AS_STARTED,
           source_command_config: Optional[Path] = SOURCE_CC, target_command_config: Optional[Path] = TARGET_CC,
           topics: Optional[str] = typer.Option(None, "--topics", help="Only these topics (regular expression)."),
           wait: bool = typer.Option(False, "--wait", help="Wait until every partition has copied what the source held when the wait began (lag 0 once producers stop), or --timeout."),
           timeout: str = typer.Option("10m", "--timeout", help="With --wait: how long to wait."),
           output: OutputFormat = OUTPUT_OPTION) -> None:
    """Replication lag per partition (source end vs MirrorMaker's stored position), tasks, process; consumer groups' translated offsets. Exit 1 when --wait times out."""
    from migrate.runner.mirror.engines import engine_of

    src = side(source_bootstrap, source_command_config, "source")
    tgt = side(target_bootstrap, target_command_config, "target")
    directory = _state_dir(state_dir)
    engine = engine_of(directory)
    if not wait:
        render.status(engine.status(directory, src, tgt, topics), output)
        return
    timeout_s = parse_duration(timeout, "--timeout")
    if timeout_s <= 0:
        raise BadInput(f"--timeout {timeout}: give a positive duration, like 10m")
    caught_up, last = render.waiting(lambda show: engine.wait_caught_up(directory, src, tgt, topics, timeout_s,
                                                                       on_status=show),
                                     engine.live_progress, output)
    render.status(last, output)
    if caught_up and last.total_lag and output != OutputFormat.json:
        console.print(f"Every record the source held when the wait began is copied; the {last.total_lag} records of the "
                      "lag above were written since (producers still write: stop them, then `mirror cutover`).",
                      markup=False)
    if not caught_up:
        err_console.print(f"kmigrate: after {timeout}, MirrorMaker had not copied every record the source held when "
                          "the wait began (the table above: lag per partition)", markup=False)
        raise typer.Exit(EXIT_FAILURE)


app.command("translate")(mirror_translate.translate)


@app.command("verify")
def verify(state_dir: Optional[Path] = STATE_DIR,
           source_bootstrap: Optional[str] = SOURCE_AS_STARTED,
           target_bootstrap: Optional[str] = TARGET_AS_STARTED,
           source_command_config: Optional[Path] = SOURCE_CC, target_command_config: Optional[Path] = TARGET_CC,
           topics: Optional[str] = typer.Option(None, "--topics", help="Only these mirrored topics (regular expression)."),
           follow: bool = typer.Option(False, "--follow", help="Go on proving every --interval, beside MirrorMaker, until --timeout (or Ctrl-C)."),
           interval: str = typer.Option("10s", "--interval", help="With --follow: the pause between passes."),
           timeout: Optional[str] = typer.Option(None, "--timeout", help="With --follow: stop after this long (default: until interrupted)."),
           max_records: int = typer.Option(500_000, "--max-records", help="Records read per partition and pass (the next pass goes on)."),
           output: OutputFormat = OUTPUT_OPTION) -> None:
    """Prove while MirrorMaker copies that each partition's copied records equal the source's, one by one, and record the proof on the target: the cut-over then verifies only the records since (the tail). Nothing proven is read again. Exit 1 when a partition differs."""
    from migrate.runner.mirror.proving import VerifyRequest, verify_mirror

    req = VerifyRequest(_state_dir(state_dir), side(source_bootstrap, source_command_config, "source"),
                        side(target_bootstrap, target_command_config, "target"), topics, follow,
                        parse_duration(interval, "--interval"),
                        None if timeout is None else parse_duration(timeout, "--timeout"), max_records)
    lines = err_console if output == OutputFormat.json else console
    result = verify_mirror(req, say=lambda m: lines.print(f"verify: {m}", markup=False))
    if output == OutputFormat.json:
        emit_json(result.to_dict())
    else:
        render.proofs(result)
    if not result.ok:
        raise typer.Exit(EXIT_FAILURE)


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

    req = CutoverRequest(
        tuple(dict.fromkeys(group)), _state_dir(state_dir),
        side(source_bootstrap, source_command_config, "source"), side(target_bootstrap, target_command_config, "target"),
        topics, parse_duration(quiet_period, "--quiet-period"), parse_duration(timeout, "--timeout"), dry_run,
        master, tuple(spark_conf or ()), jars)
    lines = err_console if output == OutputFormat.json else console
    result = run_cutover(req, say=lambda m: lines.print(f"cutover: {m}", markup=False))
    if output == OutputFormat.json:
        emit_json(result.to_dict())
        return
    render.cutover(result)
