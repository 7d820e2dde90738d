"""The canary's client impact at the end of a run: its timeline, phases from the bookkeeping topic, the page."""

from __future__ import annotations

from datetime import datetime, timezone

from migrate.core.clientconfig import ClientSettings
from migrate.core.report.impact import Impact
from migrate.core.report.phases import marks_from_bookkeeping, throttle_decisions, throttle_steps
from migrate.core.report.timeline import Timeline


def read_bookkeeping(settings: ClientSettings, topic: str, timeout_s: float = 15.0) -> list[dict] | None:
    """The values of every record of the bookkeeping topic, or ``None`` when it does not exist."""
    from migrate.adapters.kafka.bookkeeping import BookkeepingTopic
    from migrate.adapters.kafka.client import admin_client

    book = BookkeepingTopic(settings, topic, timeout_s=timeout_s)
    if not book.exists(admin_client(settings)):
        return None
    return [dict(r.value) for r in book.read().records]


def canary_impact(timeline: Timeline, started_unix: float, duration_s: float, settings: ClientSettings | None,
                  topic: str | None, title: str) -> Impact:
    """The impact of a canary run that started at ``started_unix`` and lasted ``duration_s``: phases and throttle from the bookkeeping
    ``topic`` when it exists (read once, now; a failure to read it is a note, not an error), else the whole run."""
    notes: list[str] = []
    values: list[dict] = []
    if settings is not None and topic:
        try:
            values = read_bookkeeping(settings, topic) or []
        except Exception as exc:  # noqa: BLE001 - any failure: the canary's own figures stand
            notes.append(f"the bookkeeping topic {topic} could not be read ({exc}): no phases from it")
    duration = duration_s
    started_at = datetime.fromtimestamp(started_unix, tz=timezone.utc).isoformat(timespec="seconds")
    return Impact.of(title, timeline, marks_from_bookkeeping(values, started_unix, duration),
                     throttle=throttle_steps(values, started_unix, duration),
                     decisions=throttle_decisions(values, started_unix, duration),
                     started_at=started_at, notes=tuple(notes))
