"""``kmigrate mirror lint FILE...``: the traps of a MirrorMaker 2 configuration (an mm2.properties or
Kafka Connect connector JSONs), each with what MirrorMaker would do wrong and how to fix it.

Exit 0 when clean, 1 with findings, 2 for a missing or malformed file.
"""

from __future__ import annotations

from pathlib import Path

import typer

from migrate.commands.common import OUTPUT_OPTION, OutputFormat, console, emit_json
from migrate.errors import EXIT_FAILURE


def lint(files: list[Path] = typer.Argument(..., metavar="FILE...", help="An mm2.properties (dedicated MirrorMaker 2) "
                                            "or connector JSON files (one connector config, or a list; several files "
                                            "are read as one Connect deployment)."),
         output: OutputFormat = OUTPUT_OPTION) -> None:
    """Check a MirrorMaker 2 configuration for the traps: replication policy, separator, offset-syncs location or topic filter that differ between the connectors, IdentityReplicationPolicy on the source connector only, converters other than ByteArrayConverter, flows that write into the source. Exit 1 with findings."""
    from migrate.core.mirror.lint import lint_documents
    from migrate.files import read_mirror_configs

    found = lint_documents(*read_mirror_configs(files))
    if output == OutputFormat.json:
        emit_json({"files": [str(f) for f in files], "clean": not found, "findings": [f.to_dict() for f in found]})
    elif not found:
        console.print(f"clean: no MirrorMaker 2 trap found in {', '.join(str(f) for f in files)}", markup=False)
    else:
        for f in found:
            console.print(f"[{f.trap}] {f.where}: {', '.join(f.connectors)} (keys: {', '.join(f.keys)})", markup=False,
                          style="red")
            console.print(f"  problem: {f.problem}", markup=False)
            console.print(f"  fix: {f.fix}", markup=False)
        console.print(f"{len(found)} finding(s)", markup=False)
    if found:
        raise typer.Exit(EXIT_FAILURE)
