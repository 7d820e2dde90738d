"""What ``kmigrate partitions --throttle auto --latency-budget 50ms`` asks for, as one value (pure)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, replace

from migrate.core.throttle.law import Settings
from migrate.core.throttle.signals import Budget, parse_budget
from migrate.errors import BadInput

AUTO = "auto"
CANARY_TOPIC = "kmigrate-autothrottle-canary"
"""The in-process canary's topic: never moved by the run, deleted at its end."""


@dataclass(frozen=True)
class AutoThrottle:
    """The budget, the law's settings and how the runner measures: ``baseline_s`` of canary at rest
    before the first move (after ``warmup_s`` whose acks do not count: the first sends wait for the
    topic's creation and its leaders, and made a p99 at rest of 211 ms where the moves later showed
    80 ms), a latency window every ``window_s``, the canary writing ``canary_rate_per_s`` acks=all
    records to ``canary_topic``; or, with ``canary_report``, no canary of its own: the live report an
    operator's ``kmigrate canary --report FILE`` rewrites every second, its last ``baseline_s`` before the
    first move as the baseline."""

    budget: Budget
    settings: Settings = field(default_factory=Settings)
    baseline_s: float = 15.0
    warmup_s: float = 5.0
    window_s: float = 5.0
    canary_rate_per_s: float = 50.0
    canary_topic: str = CANARY_TOPIC
    canary_report: str | None = None  # --canary-report FILE: steer on the operator's running canary, start none


def whose_canary(canary_report: str | None) -> str:
    """Whose canary the auto throttle steers on, for its messages.

    >>> whose_canary(None), whose_canary("canary.json")
    ("the canary's", "your canary's (canary.json)")
    """
    return f"your canary's ({canary_report})" if canary_report else "the canary's"


def auto_throttle(throttle: str | None, latency_budget: str | None, playbook_throttle: str | None = None,
                  playbook_budget: str | None = None) -> AutoThrottle | None:
    """``--throttle`` / ``--latency-budget`` (else the playbook's ``migration.throttle`` and
    ``migration.latency_budget``) -> :class:`AutoThrottle`, or ``None`` for a fixed throttle.
    One-line BadInput: a budget without auto, auto without a budget, a bad budget.

    >>> auto_throttle("auto", "50ms").budget.seconds, auto_throttle("10MB/s", None)
    (0.05, None)
    """
    flag_auto = throttle is not None and str(throttle).strip().lower() == AUTO
    auto = flag_auto or (throttle is None and playbook_throttle is not None
                         and str(playbook_throttle).strip().lower() == AUTO)
    budget = latency_budget if latency_budget is not None else playbook_budget
    if not auto:
        if latency_budget is not None:
            raise BadInput("--latency-budget needs --throttle auto (a fixed --throttle does not steer on latency)")
        if throttle is None and playbook_budget is not None:
            raise BadInput("migration.latency_budget needs migration.throttle: auto (or --throttle auto)")
        return None
    if budget is None and not flag_auto:
        raise BadInput("migration.throttle: auto needs migration.latency_budget (e.g. 50ms) or --latency-budget: how far "
                       "the clients' p99 may rise above the p99 at rest")
    if budget is None:
        raise BadInput("--throttle auto needs --latency-budget (e.g. 50ms): how far the clients' p99 may rise "
                       "above the p99 at rest")
    return AutoThrottle(parse_budget(budget))


TUNING_ENV = "KMIGRATE_AUTO_THROTTLE"
"""Testing hook: a JSON object of :class:`AutoThrottle` fields (``baseline_s``, ``window_s``...) and
:class:`~migrate.core.throttle.law.Settings` fields (``start_rate``, ``interval_s``...), so a test
sees the law act within seconds on a few MB. Not an operator's setting."""


def tuned(auto: AutoThrottle, text: str | None) -> AutoThrottle:
    """``auto`` with the fields ``text`` (:data:`TUNING_ENV`'s JSON) sets; BadInput on a field it does not have.

    >>> tuned(AutoThrottle(Budget(0.05)), '{"window_s": 2, "start_rate": 2000000}').settings.start_rate
    2000000
    """
    if not text:
        return auto
    try:
        values = json.loads(text)
    except ValueError:
        raise BadInput(f"{TUNING_ENV} is not a JSON object") from None
    own = {f.name for f in fields(AutoThrottle)} - {"budget", "settings", "canary_report"}
    law = {f.name for f in fields(Settings)}
    unknown = sorted(set(values) - own - law)
    if unknown:
        raise BadInput(f"{TUNING_ENV}: unknown field {unknown[0]!r}")
    settings = replace(auto.settings, **{k: v for k, v in values.items() if k in law})
    return replace(auto, settings=settings, **{k: v for k, v in values.items() if k in own})
