"""The client impact of a run: the canary's timeline, its phases with their figures, and the throttle (pure).

What ``kmigrate canary --report`` and ``kmigrate demo`` write as JSON and draw as an HTML page
(``migrate.runner.report.html``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from migrate.core.report.phases import AT_REST, Mark, PhaseFigures, phase_table
from migrate.core.report.timeline import Timeline


@dataclass(frozen=True)
class Impact:
    title: str
    timeline: Timeline
    phases: list[PhaseFigures]
    throttle: dict[int, list[tuple[float, int | None]]] = field(default_factory=dict)
    """Broker -> (offset s, replication throttle bytes/s or None) at each change (``phases.throttle_steps``)."""
    decisions: list[dict[str, Any]] = field(default_factory=list)
    started_at: str | None = None  # ISO 8601 (UTC) of the canary's start, when known
    notes: tuple[str, ...] = ()  # what could not be known (e.g. the bookkeeping topic unread), one line each

    @classmethod
    def of(cls, title: str, timeline: Timeline, marks: list[Mark], **kw: Any) -> "Impact":
        return cls(title, timeline, phase_table(timeline, marks), **kw)

    @property
    def at_rest(self) -> PhaseFigures | None:
        return next((p for p in self.phases if p.mark.name.startswith(AT_REST)), None)

    def to_dict(self, timeline: bool = True) -> dict:
        """The JSON value: phases (each with its figures), the throttle, notes; ``timeline``: its rows too."""
        d: dict[str, Any] = {
            "started_at": self.started_at,
            "phases": [p.to_dict() for p in self.phases],
            "throttle": {str(b): [[round(t, 3), r] for t, r in steps] for b, steps in self.throttle.items()},
            "throttle_decisions": self.decisions,
            "notes": list(self.notes),
        }
        if timeline:
            d["timeline"] = self.timeline.to_dict()
        return d


def html_path(report: PurePath) -> PurePath:
    """Where the HTML page of a JSON report goes: ``.json`` replaced by ``.html``, else ``.html`` added.

    >>> str(html_path(PurePath("out/canary.json"))), str(html_path(PurePath("canary"))), str(html_path(PurePath("c.html")))
    ('out/canary.html', 'canary.html', 'c.html.html')
    """
    return report.with_suffix(".html") if report.suffix == ".json" else report.with_name(report.name + ".html")
