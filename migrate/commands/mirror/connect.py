"""``kmigrate mirror start --connect-config [-o FILE]``: the three MirrorMaker 2 connector configs for an
existing Kafka Connect cluster instead of a dedicated MirrorMaker (the target's topics are created first,
as ``mirror start`` does). The JSON list goes to stdout (or FILE); what to do with it goes to stderr."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from migrate.commands.common import OutputFormat, console, emit_json, err_console
from migrate.commands.mirror import render


def emit_connect_configs(engine, req, tasks: int, out: Optional[Path], output: OutputFormat) -> None:
    """``engine``'s flow as connector configs (an engine that has none says so: BadInput)."""
    result = engine.connect_configs(req, tasks, None if out is None else out.expanduser().resolve())
    if output == OutputFormat.json:
        emit_json(result.to_dict())
        return
    if out is None:
        console.out(result.text(), end="", highlight=False)
    say = err_console.print
    made = result.topics.created
    say(f"created {len(made)} topic(s) on the target{': ' + ', '.join(made) if made else ''}; "
        f"{len(result.topics.existing)} already there", markup=False)
    render.differences(result.topics.differences, err_console)
    if out is not None:
        say(f"wrote {len(result.connectors)} connector configs to {result.out}", markup=False)
    say("Run them on a Kafka Connect cluster whose workers have (in their worker properties): "
        + ", ".join(f"{k}={v}" for k, v in result.worker.items())
        + " (source connectors write to their worker's cluster: it must be the target)", markup=False)
    if result.hidden:
        say(f"Fill the [hidden] values ({', '.join(result.hidden)}) with the secrets of your command configs, or "
            "with config provider references such as ${file:/etc/kafka/mirror.properties:KEY}", markup=False)
    say("Create each with POST /connectors, e.g.: jq -c '.[]' connectors.json | while read -r c; do curl -sf -X POST "
        "-H 'Content-Type: application/json' --data \"$c\" http://CONNECT:8083/connectors; done", markup=False)
    say("kmigrate mirror status reads a dedicated MirrorMaker's offsets (mm2-offsets.source.internal): with a "
        "Connect cluster, watch the connectors' lag with Connect's GET /connectors/NAME/offsets", markup=False)
