"""Options and rendering shared by every command."""

from __future__ import annotations

import enum
import json
import sys
from typing import Any

import typer
from rich.console import Console

from migrate.errors import BadInput


class OutputFormat(str, enum.Enum):
    text = "text"
    json = "json"


OUTPUT_OPTION = typer.Option(OutputFormat.text, "--output", "-O", help="text for people, json for automation.")

console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


def emit_json(data: Any) -> None:
    """Write ``data`` as one JSON document on stdout."""
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    sys.stdout.flush()


def parse_id_list(text: str | None, option: str) -> tuple[int, ...]:
    """Parse ``1,2,3`` (also ``1-3``) into a tuple of ints; BadInput naming the option otherwise."""
    if text is None or not text.strip():
        return ()
    ids: list[int] = []
    for part in text.split(","):
        part = part.strip()
        try:
            if "-" in part[1:]:
                lo, hi = part.split("-", 1)
                ids.extend(range(int(lo), int(hi) + 1))
            else:
                ids.append(int(part))
        except ValueError:
            raise BadInput(f"{option} {text!r}: expected ids separated by commas, like 1,2,3 or 4-6") from None
    return tuple(ids)
