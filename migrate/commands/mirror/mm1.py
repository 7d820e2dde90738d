"""The MirrorMaker 1 engine of ``kmigrate mirror`` (``--engine mirrormaker1``): rendering of its
start, stop and status, and ``kmigrate mirror translate``. Registered by ``commands/mirror.py``.

    kmigrate mirror plan --engine mirrormaker1 ...        # says MirrorMaker 1 is deprecated
    kmigrate mirror start --engine mirrormaker1 [--instances N] ...
    kmigrate mirror status | stop                         # the engine start recorded
    kmigrate mirror translate --group G [--group H] [--window N] [--dry-run]
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from migrate.commands.common import OutputFormat, console, emit_json, err_console
from migrate.errors import BadInput

ENGINES = ("mirrormaker2", "mirrormaker1")


def check_engine(engine: str) -> str:
    if engine not in ENGINES:
        raise BadInput(f"--engine {engine}: choose mirrormaker2 (the default) or mirrormaker1")
    return engine


def deprecation_notice(output: OutputFormat) -> None:
    from migrate.core.mirror.mm1 import DEPRECATION, PARTITIONING

    for line in (DEPRECATION, PARTITIONING):
        err_console.print(f"warning: {line}", style="yellow", markup=False)


def engine_of(state_dir: Path) -> str:
    from migrate.runner.mirror.mm1 import engine_of as read

    return read(state_dir)


def refuse_other_engine(state_dir: Path) -> None:
    from migrate.runner.mirror.mm1 import refuse_if_running

    refuse_if_running(state_dir)


def start(req, state_dir: Path, heap_mb: int, instances: int, output: OutputFormat) -> None:
    from migrate.commands.mirror.app import _render_created
    from migrate.runner.mirror.mm1 import start as run_start

    deprecation_notice(output)
    result = run_start(req, state_dir, heap_mb=heap_mb, instances=instances)
    if output == OutputFormat.json:
        emit_json(result.to_dict())
        return
    if not result.started:
        console.print(f"MirrorMaker 1 is already running (pids {', '.join(map(str, result.pids))}) with this "
                      "configuration: nothing started", markup=False)
        return
    if result.topics is not None:
        _render_created(result.topics, dry_run=False)
    console.print(f"MirrorMaker 1 started: {len(result.pids)} instance(s), pids {', '.join(map(str, result.pids))}, "
                  f"consumer group {result.group} on the source, topics {result.include}; logs {', '.join(result.log)}",
                  markup=False)


def stop(state_dir: Path, timeout_s: float, output: OutputFormat) -> None:
    from migrate.runner.mirror.mm1 import stop as run_stop

    results = run_stop(state_dir, timeout_s)
    if output == OutputFormat.json:
        emit_json({"engine": "mirrormaker1", "instances": [
            {"pid": r.pid, "how": r.how, "waited_s": round(r.waited_s, 1)} for r in results]})
        return
    if not any(r.pid for r in results):
        console.print("MirrorMaker 1 is not running: nothing to stop", markup=False)
    for r in results:
        if r.pid is None:
            continue
        how = "stopped cleanly after SIGTERM" if r.how == "SIGTERM" else "did not stop after SIGTERM: killed (SIGKILL)"
        console.print(f"MirrorMaker 1 (pid {r.pid}) {how} in {r.waited_s:.1f} s", markup=False)


def render_status(s, output: OutputFormat) -> None:
    if output == OutputFormat.json:
        emit_json(s.to_dict())
        return
    for i in s.instances:
        state = f"running (pid {i['pid']})" if i["running"] else "not running"
        console.print(f"MirrorMaker 1 instance {i['index']}: {state}; log {i['log']}", markup=False)
    for note in s.notes:
        err_console.print(f"warning: {note}", style="yellow", markup=False)
    table = Table(title=f"consumer group {s.group} on the source: lag {s.total_lag} records", title_justify="left")
    for col in ("TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "TIME-LAG", "CONSUMER-ID", "CLIENT-ID"):
        table.add_column(col, overflow="fold")
    for p in s.partitions:
        table.add_row(p.topic, str(p.partition), "-" if p.current_offset is None else str(p.current_offset),
                      str(p.log_end_offset), str(p.lag), "-" if p.time_lag_ms is None else f"{p.time_lag_ms / 1000:.1f} s",
                      p.consumer_id or "-", p.client_id or "-", style=None if p.lag == 0 else "yellow")
    console.print(table)


def wait(directory: Path, src, tgt, topics, timeout_s: float, output: OutputFormat):
    from migrate.runner.mirror.mm1 import wait_caught_up

    lines = err_console if output == OutputFormat.json else console
    return wait_caught_up(directory, src, tgt, topics, timeout_s, on_status=lambda s: lines.print(
        f"lag {s.total_lag} records in {sum(1 for p in s.partitions if p.lag)} partition(s)", markup=False))


def translate_command(state_dir: Optional[Path], groups: List[str], source_bootstrap: Optional[str],
                      target_bootstrap: Optional[str], source_command_config: Optional[Path],
                      target_command_config: Optional[Path], window: int, dry_run: bool, output: OutputFormat) -> None:
    from migrate.commands.mirror.app import _path, _state_dir
    from migrate.runner.mirror.mm2 import Side
    from migrate.runner.mirror.mm1 import translate

    src = None if source_bootstrap is None else Side(source_bootstrap, _path(source_command_config))
    tgt = None if target_bootstrap is None else Side(target_bootstrap, _path(target_command_config), "target")
    result = translate(_state_dir(state_dir), groups, src, tgt, window=window, dry_run=dry_run)
    if output == OutputFormat.json:
        emit_json({**result.to_dict(), "dry_run": dry_run})
        return
    table = Table(title="offsets translated by kmigrate" + (" (dry run: nothing set)" if dry_run else " and set on the target"),
                  title_justify="left")
    for col in ("group", "topic", "partition", "committed on source", "target offset", "how", "re-reads"):
        table.add_column(col, overflow="fold")
    for p in result.partitions:
        table.add_row(p.group, p.topic, str(p.partition), str(p.source_committed), str(p.offset), p.how,
                      "-" if p.rereads is None else str(p.rereads), style=None if p.confirmed else "yellow")
    console.print(table)
    total = result.rereads
    console.print(f"a consumer restarted on the target reads {'?' if total is None else total} record(s) twice "
                  "(none skipped)", markup=False)


def register(app: typer.Typer) -> None:
    """Add ``mirror translate`` to the ``mirror`` app."""
    from migrate.commands.common import OUTPUT_OPTION
    from migrate.commands.mirror.app import SOURCE_AS_STARTED, SOURCE_CC, STATE_DIR, TARGET_AS_STARTED, TARGET_CC

    @app.command("translate")
    def translate_cmd(group: List[str] = typer.Option(..., "--group", help="A consumer group to move (repeat for several)."),
                      state_dir: Optional[Path] = STATE_DIR,
                      source_bootstrap: Optional[str] = SOURCE_AS_STARTED,
                      target_bootstrap: Optional[str] = TARGET_AS_STARTED,
                      source_command_config: Optional[Path] = SOURCE_CC, target_command_config: Optional[Path] = TARGET_CC,
                      window: int = typer.Option(10000, "--window", help="Target records read to confirm a position by content."),
                      dry_run: bool = typer.Option(False, "--dry-run", help="Compute and show; set nothing."),
                      output: OutputFormat = OUTPUT_OPTION) -> None:
        """Translate consumer groups' source offsets onto the target by timestamp and content (MirrorMaker 1 keeps none) and set them there once the group is not active on the target. Never ahead: no record skipped; reports the records read twice."""
        translate_command(state_dir, group, source_bootstrap, target_bootstrap, source_command_config,
                          target_command_config, window, dry_run, output)
