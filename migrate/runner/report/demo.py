"""The demo's report files: its JSON report (with the canary's timeline) and the HTML page of its charts."""

from __future__ import annotations

import json
from pathlib import Path

from migrate.core.report.impact import html_path
from migrate.files import write_whole
from migrate.runner.report.html import write_page


def write_demo_report(report, path: Path) -> tuple[Path, Path] | None:
    """``report`` (a ``DemoReport``) as JSON at ``path`` and its charts next to it; ``None`` without a canary."""
    doc = report.to_dict()
    if report.impact is not None:
        doc["client_impact"] = report.impact.to_dict()
    write_whole(path, json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n", "the demo report", "--report")
    if report.impact is None:
        return None
    page = Path(html_path(path))
    write_page(report.impact, page)
    return path, page
