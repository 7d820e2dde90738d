"""What every ``kmigrate demo`` does around its run: run it (under the status line), write its report files (JSON
and the HTML charts), say how Ctrl-C left the sandbox, stop the sandbox unless ``--keep``, and clean a temporary
folder but for the report files."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Optional

from migrate.runner.report.demo import write_demo_report


def run_and_report(run: Any, work: Path, directory: Optional[Path], report_file: Optional[Path], status: Any,
                   keep: bool) -> tuple[Any, tuple[Path, Path] | None]:
    """``run.run()``'s report and the report files written (None when the run did not end)."""
    report_path = report_file or work / "demo-report.json"
    pages: tuple[Path, Path] | None = None
    try:
        if status is not None:
            with status:
                report = run.run()
        else:
            report = run.run()
        pages = write_demo_report(report, report_path)
    except KeyboardInterrupt as exc:  # said after the finally below has stopped the sandbox
        from migrate.runner.signals import interrupted

        where = (f"left running in {run.sandbox.dir} (kmigrate sandbox down --dir {run.sandbox.dir} stops it)" if keep
                 else "stopped, no process of it left")
        raise interrupted(exc, f"the demo's sandbox was {where}; run kmigrate demo again to start over") from None
    finally:
        if not keep:
            run.teardown()
            if directory is None:
                remove_all_but(work, pages or ())
    return report, pages


def remove_all_but(work: Path, keep) -> None:
    """The demo's temporary folder removed, but for the report files (``keep``)."""
    keep = {Path(p).resolve() for p in keep}
    for child in work.iterdir() if work.exists() else ():
        if child.resolve() in keep:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)
    if work.exists() and not any(work.iterdir()):
        work.rmdir()


def show_impact(report: Any, pages: tuple[Path, Path] | None) -> None:
    """The text output's end for every demo: the canary per phase (at rest first) and where the report files are."""
    from migrate.commands.canary import phase_table
    from migrate.commands.common import console
    from migrate.core.report.phases import AT_REST

    if report.impact is not None:
        rest = bool(report.impact.phases) and report.impact.phases[0].mark.name.startswith(AT_REST)
        console.print(phase_table(report.impact.phases, title="the canary per phase" + (" (at rest first)" if rest else "")))
    if pages:
        console.print(f"report: {pages[0]} (JSON), charts: {pages[1]} (HTML, open it in a browser)", markup=False,
                      highlight=False, soft_wrap=True)


def phases_table(title: str, phases: Any) -> Any:
    """The demos' phase table: each phase's time, the canary's p99 and longest stall there, and its result."""
    from rich.table import Table

    table = Table(title=title)
    for col in ("phase", "seconds", "canary p99 ms", "stall s", "result"):
        table.add_column(col, overflow="fold")
    for phase in phases:
        c = getattr(phase, "canary", None) or {}
        stall = ("" if not c else f"{c['longest_stall_s']:.2f} (longest so far)" if c.get("longest_stall_s") is not None
                 else f"< {c['stall_below_s']:.2f}")
        p99 = "" if c.get("latency_p99_ms") is None else f"{c['latency_p99_ms']:.0f}"
        table.add_row(phase.name, f"{phase.seconds:.1f}", p99, stall, phase.detail)
    return table
