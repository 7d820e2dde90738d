"""``kmigrate mirror translate --group G [--group H] [--window N] [--dry-run]``: consumer offsets
translated by kmigrate (by timestamp and content) and set on the target, for a mirror that keeps none
(MirrorMaker 1, ``mirror start --engine mirrormaker1``)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from migrate.commands.common import OUTPUT_OPTION, OutputFormat, console, emit_json
from migrate.commands.mirror.options import (SOURCE_AS_STARTED, SOURCE_CC, STATE_DIR, TARGET_AS_STARTED, TARGET_CC, side,
                                             state_dir as state_dir_of)


def translate(group: List[str] = typer.Option(..., "--group", help="A consumer group to move (repeat for several)."),
              state_dir: Optional[Path] = STATE_DIR,
              source_bootstrap: Optional[str] = SOURCE_AS_STARTED,
              target_bootstrap: Optional[str] = TARGET_AS_STARTED,
              source_command_config: Optional[Path] = SOURCE_CC, target_command_config: Optional[Path] = TARGET_CC,
              window: int = typer.Option(10000, "--window", help="Target records read to confirm a position by content."),
              dry_run: bool = typer.Option(False, "--dry-run", help="Compute and show; set nothing."),
              output: OutputFormat = OUTPUT_OPTION) -> None:
    """Translate consumer groups' source offsets onto the target by timestamp and content (MirrorMaker 1 keeps none) and set them there once the group is not active on the target. Never ahead: no record skipped; reports the records read twice."""
    from migrate.runner.mirror.translate import translate as run_translate

    src = side(source_bootstrap, source_command_config, "source")
    tgt = side(target_bootstrap, target_command_config, "target")
    result = run_translate(state_dir_of(state_dir), group, src, tgt, window=window, dry_run=dry_run)
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
