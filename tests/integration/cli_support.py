"""kmigrate run in-process by integration modules (the verify modules reuse their SparkSession this way)."""

from __future__ import annotations

import json

from migrate.cli import main


def run(capsys, *args: str) -> tuple[int, str, str]:
    """Run kmigrate in-process; return (exit code, stdout, stderr)."""
    capsys.readouterr()
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def run_json(capsys, *args: str) -> tuple[int, dict, str]:
    """Run kmigrate in-process with ``--output json``; return (exit code, its JSON document or {}, stderr)."""
    code, out, err = run(capsys, *args, "--output", "json")
    return code, (json.loads(out) if out.strip().startswith("{") else {}), err


def sides(clusters) -> tuple[str, ...]:
    """The mirror commands' flags for a (source, target) pair of bootstrap servers."""
    return "--source-bootstrap", clusters[0], "--target-bootstrap", clusters[1]
