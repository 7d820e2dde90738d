"""kmigrate run in-process by integration modules (the verify modules reuse their SparkSession this way)."""

from __future__ import annotations

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
