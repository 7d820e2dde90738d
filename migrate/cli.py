"""The ``kmigrate`` command line.

Thin by design: each command module in ``migrate/commands`` parses options, calls one core or
runner function and renders the result. Typed errors become one line on stderr and an exit code
(see ``migrate.errors``); nothing below this module calls ``sys.exit`` or ``print``.
"""

from __future__ import annotations

import importlib
import sys

import typer
from rich.console import Console

from migrate import __version__
from migrate.commands import canary as canary_cmd
from migrate.commands import demo as demo_cmd
from migrate.commands import partitions as partitions_cmd
from migrate.commands import plan as plan_cmd
from migrate.commands import sandbox as sandbox_cmd
from migrate.commands import verify as verify_cmd
from migrate.commands import zookeeper as zookeeper_cmd
from migrate.errors import EXIT_BAD_INPUT, KmigrateError

app = typer.Typer(
    name="kmigrate",
    help="Move a live Kafka cluster and its ZooKeeper ensemble to new nodes with zero downtime, "
    "resumably, and prove that no record was lost.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

# One line per command group; each module owns its own options.
app.add_typer(sandbox_cmd.app, name="sandbox")
app.command("inspect")(plan_cmd.inspect)
app.command("plan")(plan_cmd.plan)
app.add_typer(plan_cmd.topics_app, name="topics")
app.command("canary")(canary_cmd.canary)
app.command("demo")(demo_cmd.demo)
app.command("partitions")(partitions_cmd.partitions)
app.command("status")(partitions_cmd.status)
app.add_typer(zookeeper_cmd.app, name="zookeeper")
app.add_typer(verify_cmd.app, name="verify")


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
    try:
        rc = app(args=argv, standalone_mode=False)  # typer.Exit(code) comes back as the return value here
    except KmigrateError as exc:
        err.print(f"kmigrate: error: {exc.message}", markup=False)
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
        raise
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
