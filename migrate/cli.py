"""The ``kmigrate`` command line.

Thin by design: each command module in ``migrate/commands`` parses options, calls one core or
runner function and renders the result. Typed errors become one line on stderr and an exit code
(see ``migrate.errors``); nothing below this module calls ``sys.exit`` or ``print``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

import typer
from rich.console import Console

from migrate import __version__
from migrate.errors import EXIT_BAD_INPUT, EXIT_FAILURE, KmigrateError

app = typer.Typer(
    name="kmigrate",
    help="Move a live Kafka cluster and its ZooKeeper ensemble to new nodes with zero downtime, "
    "resumably, and prove that no record was lost.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

# Every command, in the order --help lists them: (name, its module in migrate.commands, how it is added).
# Each module owns its own options. A run imports only the module of the command it runs: importing
# them all (the playbook schema, YAML, the sandbox, ...) cost about 0.2 s of every start.
_COMMANDS: tuple[tuple[str, str, Callable], ...] = (
    ("sandbox", "sandbox", lambda m: app.add_typer(m.app, name="sandbox")),
    ("inspect", "plan", lambda m: app.command("inspect")(m.inspect)),
    ("plan", "plan", lambda m: app.command("plan")(m.plan)),
    ("topics", "plan", lambda m: app.add_typer(m.topics_app, name="topics")),
    ("canary", "canary", lambda m: app.command("canary")(m.canary)),
    ("demo", "demo", lambda m: app.command("demo")(m.demo)),
    ("partitions", "partitions", lambda m: app.command("partitions")(m.partitions)),
    ("status", "partitions", lambda m: app.command("status")(m.status)),
    ("brokers", "brokers.app", lambda m: app.add_typer(m.app, name="brokers")),
    ("health", "health", lambda m: app.command("health")(m.health)),
    ("zookeeper", "zookeeper", lambda m: app.add_typer(m.app, name="zookeeper")),
    ("verify", "verify", lambda m: app.add_typer(m.app, name="verify")),
    ("mirror", "mirror.app", lambda m: app.add_typer(m.app, name="mirror")),
    ("kraft", "kraft.app", lambda m: app.add_typer(m.app, name="kraft")),
    ("controllers", "controllers.app", lambda m: app.add_typer(m.app, name="controllers")),
)
_added: set[str] = set()


def _add_commands(args: list[str]) -> None:
    """Add the command ``args`` name (its first word that is not an option), or every command when it
    names none of them (``--help``, a mistyped name: click then lists them all)."""
    word = next((a for a in args if not a.startswith("-")), None)
    wanted = word if word in {name for name, _, _ in _COMMANDS} else None
    for name, module, add in _COMMANDS:
        if name not in _added and wanted in (None, name):
            add(importlib.import_module(f"migrate.commands.{module}"))
            _added.add(name)


def _version(value: bool) -> None:
    if value:
        Console().print(f"kmigrate {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Move a live Kafka cluster and its ZooKeeper ensemble to new nodes with zero downtime."""


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: run the app and map typed errors to exit codes."""
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        _add_commands(args)
        rc = app(args=args, standalone_mode=False)  # typer.Exit(code) comes back as the return value here
    except KmigrateError as exc:
        err.print(f"kmigrate: {exc.kind + ': ' if exc.kind else ''}{exc.message}", markup=False)
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        err.print("kmigrate: aborted", markup=False)
        sys.exit(130)
    except KeyboardInterrupt:
        err.print("kmigrate: interrupted", markup=False)
        sys.exit(130)
    except Exception as exc:  # click usage errors
        if isinstance(exc, _click_exceptions()):
            exc.show()
            sys.exit(exc.exit_code if exc.exit_code else EXIT_BAD_INPUT)
        from migrate.core.permissions import refusal_line

        line = refusal_line(f"{type(exc).__name__}: {exc}")
        if line is not None:  # a right revoked mid-run: one line, not a traceback
            err.print(f"kmigrate: error: {line}", markup=False)
            sys.exit(EXIT_FAILURE)
        raise
    if rc == 130:  # typer turns Ctrl-C (KeyboardInterrupt) into a silent return of 130; no command returns it
        err.print("kmigrate: interrupted (SIGINT); run the same command again to go on from where the "
                  "cluster stands", markup=False)
    sys.exit(rc if isinstance(rc, int) else 0)


def _click_exceptions() -> tuple[type, ...]:
    """Click's usage-error class: recent typer releases vendor click as ``typer._click`` and no
    longer install ``click``; older ones use ``click`` itself."""
    found: list[type] = []
    for module in ("typer._click.exceptions", "click.exceptions"):
        try:
            found.append(importlib.import_module(module).ClickException)
        except (ImportError, AttributeError):
            continue
    return tuple(found)
