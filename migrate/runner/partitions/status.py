"""``kmigrate status``: where the migration stands, read from the cluster (changes nothing).

Read: the bookkeeping records, reassignments in flight (kmigrate's and others'), throttles present
(kmigrate's and others', and which of kmigrate's the moves in flight need), replicas still on old
brokers, and the ``partitions`` runs recorded. The state itself is decided by
:func:`migrate.core.partitions.phases.migration_state`.

The migration reported is the one the plan or playbook names, whichever it is: every plan id
recorded with the same broker mapping is the same migration (:meth:`Ledger.migration`); with
neither, the latest migration recorded.
"""

from __future__ import annotations

import socket
import time
from typing import Any, Mapping

from migrate.adapters.kafka.bookkeeping import BookkeepingTopic
from migrate.adapters.kafka.admin import ReassignmentAdmin
from migrate.core.permissions import status_needs
from migrate.runner.permissions import require
from migrate.core.clientconfig import ClientSettings
from migrate.core.ledger import Ledger
from migrate.core.model import Topic
from migrate.core.partitions.moves import leader_not_preferred
from migrate.core.partitions.phases import migration_state
from migrate.core.partitions.throttles import BROKER_THROTTLE_CONFIGS, TOPIC_THROTTLE_CONFIGS, needed_by, parse_entries
from migrate.adapters.processes import pid_alive


def migration_status(client: ClientSettings, bookkeeping_topic: str, plan_id: str | None = None,
                     mapping: Mapping[int, int] | None = None) -> dict[str, Any]:
    """Where the migration stands, read from the cluster: the bookkeeping records, reassignments
    in flight (kmigrate's and others'), throttles present (kmigrate's and others'), and replicas
    still on old brokers. ``plan_id``/``mapping`` default to the latest plan recorded."""
    admin = ReassignmentAdmin(client)
    book = BookkeepingTopic(client, bookkeeping_topic)
    try:
        exists = book.exists(admin.admin)
        require(admin.admin, client, status_needs(bookkeeping_topic))  # a missing right: named, not a traceback
        flights = admin.list_reassignments()
        ledger = book.read() if exists else Ledger([])  # after the moves: each one listed is recorded
        plans = ledger.plans()
        plan_id, mapping, warnings = _which_plan(ledger, plan_id, mapping)
        migration = ledger.migration(plan_id, mapping) if plan_id else ()
        old = set(mapping)
        topics = admin.describe(None)
        topics.pop(bookkeeping_topic, None)
        recorded = ledger.moved(migration) if plan_id else {}
        ours_flight = ledger.started_by_kmigrate(flights)
        on_old: dict[str, int] = {}
        not_preferred = 0
        for name, t in topics.items():
            n = sum(1 for p in t.partitions if any(b in old for b in p.replicas))
            if n:
                on_old[name] = n
            not_preferred += sum(1 for p in t.partitions if leader_not_preferred(p))
        throttles = _throttles(admin, ledger, topics, {k: flights[k] for k in ours_flight})
        remaining = sorted(t for t in topics if t not in recorded)
        state = migration_state(plan_id, len(remaining), len(ours_flight), sum(on_old.values()),
                                sum(1 for x in throttles if x["kmigrate"]))
        return {
            "state": state, "bookkeeping_topic": bookkeeping_topic, "bookkeeping_exists": exists,
            "plan_id": plan_id, "migration_plan_ids": list(migration), "mapping": {str(k): v for k, v in sorted(mapping.items())},
            "plans": sorted(plans), "topics_total": len(topics), "topics_recorded": len([t for t in topics if t in recorded]),
            "topics_remaining": remaining, "partitions_on_old_brokers": sum(on_old.values()),
            "topics_on_old_brokers": sorted(on_old), "reassignments_in_flight": len(flights),
            "reassignments_kmigrate": [f"{t}-{p}" for t, p in ours_flight],
            "leaders_not_preferred": not_preferred, "throttles": throttles,
            "foreign_plans": {k: len(v) for k, v in ledger.foreign_moved(migration).items()},
            "duplicates": sorted(t for t, n in ledger.moved_counts(migration).items() if n > 1),
            "runs": _runs(ledger),
            "auto_throttle": last_decisions(ledger.throttle_decisions(migration)) if migration else {},
            "warnings": warnings,
        }
    finally:
        book.close()
        admin.close()


def _which_plan(ledger: Ledger, plan_id: str | None, mapping: Mapping[int, int] | None
                ) -> tuple[str | None, dict[int, int], list[str]]:
    """The plan id and mapping to report on (given, else the latest recorded), with warnings."""
    plans = ledger.plans()
    warnings = []
    if plan_id is None and plans:
        plan_id = list(plans)[-1]
    elif plan_id is None and ledger.records:
        # records but no plan record (one lost in a crash before it was acknowledged): the
        # records name their plan; only the mapping is unknown
        plan_id = ledger.records[-1].plan_id
    if mapping is None and plan_id in plans:
        mapping = {int(k): int(v) for k, v in plans[plan_id]["mapping"].items()}
    if plan_id and mapping is None:
        warnings.append(f"no plan record for {plan_id}: replicas left on old brokers are not counted "
                        "(give --mapping or --plan)")
    return plan_id, dict(mapping or {}), warnings


def last_decisions(recorded: list[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """``--throttle auto``: broker -> its last recorded decision (rate in force, moves, why, p99 against
    the limit, when), from the ``throttle-auto`` records in order.

    >>> last_decisions([{"broker": 4, "new_rate": 1, "moves": 2, "reason": "a", "p99_s": 0.03, "limit_s": 0.07,
    ...                  "time": "t"}])["4"]["p99_ms"]
    30.0
    """
    out: dict[str, dict[str, Any]] = {}
    for v in recorded:
        p99, limit = v.get("p99_s"), v.get("limit_s")
        out[str(v["broker"])] = {
            "rate_bytes_per_s": v["new_rate"], "moves": v["moves"], "reason": v["reason"],
            "p99_ms": None if p99 is None else round(p99 * 1000, 1),
            "limit_ms": None if limit is None else round(limit * 1000, 1), "time": v.get("time")}
    return dict(sorted(out.items(), key=lambda kv: int(kv[0])))


def _runs(ledger: Ledger) -> dict[str, Any]:
    """The ``partitions`` runs alive (another may not start; ``--cancel`` stops them), the latest
    run recorded, and the latest ``--cancel``."""
    live = ledger.live_runs(time.time(), socket.gethostname(), pid_alive)
    runs = list(ledger.runs().values())
    cancels = ledger.cancel_requests()
    keep = ("run_id", "host", "pid", "started", "state", "time")
    return {
        "alive": [{k: r.get(k) for k in keep} for r in live],
        "latest": {k: runs[-1].get(k) for k in keep} if runs else None,
        "latest_cancel": {k: cancels[-1].value.get(k) for k in ("host", "pid", "time")} if cancels else None,
    }


def _throttles(admin: ReassignmentAdmin, ledger: Ledger, topics: Mapping[str, Topic],
               ours_flight: Mapping[tuple[str, int], Any]) -> list[dict[str, Any]]:
    """Every throttle config set in the cluster, each marked with whether kmigrate recorded it and
    whether kmigrate's moves in flight need it (``needed``: they keep it until they end)."""
    need_topics, need_brokers = needed_by(ours_flight)
    live = admin.live_brokers()
    broker_thr = admin.broker_dynamic_configs(sorted(live), BROKER_THROTTLE_CONFIGS)
    topic_thr = admin.topic_configs(sorted(topics), TOPIC_THROTTLE_CONFIGS, dynamic_only=True)
    kmigrate_broker = ledger.broker_throttles()
    kmigrate_topic = ledger.topic_throttles()
    throttles = []
    for b, cfgs in sorted(broker_thr.items()):
        for cfg, value in sorted(cfgs.items()):
            throttles.append({"scope": "broker", "broker": b, "config": cfg, "value": value,
                              "kmigrate": (b, cfg) in kmigrate_broker, "needed": b in need_brokers})
    for t, cfgs in sorted(topic_thr.items()):
        for cfg, value in sorted(cfgs.items()):
            if value:
                throttles.append({"scope": "topic", "topic": t, "config": cfg, "entries": len(parse_entries(value)),
                                  "kmigrate": (t, cfg) in kmigrate_topic, "needed": t in need_topics})
    return throttles
