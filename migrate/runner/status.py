"""``kmigrate status``: where the migration stands, read from the cluster (changes nothing).

Read: the bookkeeping records, reassignments in flight (kmigrate's and others'), throttles present
(kmigrate's and others'), and replicas still on old brokers. The state itself is decided by
:func:`migrate.core.phases.migration_state`.
"""

from __future__ import annotations

from typing import Any, Mapping

from migrate.adapters.bookkeeping import BookkeepingTopic
from migrate.adapters.kafka import ReassignmentAdmin
from migrate.core.clientconfig import ClientSettings
from migrate.core.ledger import Ledger
from migrate.core.model import Topic
from migrate.core.moves import leader_not_preferred
from migrate.core.phases import migration_state
from migrate.core.throttles import BROKER_THROTTLE_CONFIGS, TOPIC_THROTTLE_CONFIGS, parse_entries


def migration_status(client: ClientSettings, bookkeeping_topic: str, plan_id: str | None = None,
                     mapping: Mapping[int, int] | None = None) -> dict[str, Any]:
    """Where the migration stands, read from the cluster: the bookkeeping records, reassignments
    in flight (kmigrate's and others'), throttles present (kmigrate's and others'), and replicas
    still on old brokers. ``plan_id``/``mapping`` default to the latest plan recorded."""
    admin = ReassignmentAdmin(client)
    book = BookkeepingTopic(client, bookkeeping_topic)
    try:
        exists = book.exists(admin.admin)
        ledger = book.read() if exists else Ledger([])
        plans = ledger.plans()
        plan_id, mapping, warnings = _which_plan(ledger, plan_id, mapping)
        old = set(mapping)
        topics = admin.describe(None)
        topics.pop(bookkeeping_topic, None)
        recorded = ledger.moved(plan_id) if plan_id else {}
        flights = admin.list_reassignments()
        submitted = ledger.submitted(None)
        ours_flight = sorted(k for k, f in flights.items() if k in submitted and tuple(f.target) == tuple(submitted[k]))
        on_old: dict[str, int] = {}
        not_preferred = 0
        for name, t in topics.items():
            n = sum(1 for p in t.partitions if any(b in old for b in p.replicas))
            if n:
                on_old[name] = n
            not_preferred += sum(1 for p in t.partitions if leader_not_preferred(p))
        throttles = _throttles(admin, ledger, topics)
        remaining = sorted(t for t in topics if t not in recorded)
        state = migration_state(plan_id, len(remaining), len(ours_flight), sum(on_old.values()),
                                sum(1 for x in throttles if x["kmigrate"]))
        return {
            "state": state, "bookkeeping_topic": bookkeeping_topic, "bookkeeping_exists": exists,
            "plan_id": plan_id, "mapping": {str(k): v for k, v in sorted(mapping.items())},
            "plans": sorted(plans), "topics_total": len(topics), "topics_recorded": len([t for t in topics if t in recorded]),
            "topics_remaining": remaining, "partitions_on_old_brokers": sum(on_old.values()),
            "topics_on_old_brokers": sorted(on_old), "reassignments_in_flight": len(flights),
            "reassignments_kmigrate": [f"{t}-{p}" for t, p in ours_flight],
            "leaders_not_preferred": not_preferred, "throttles": throttles,
            "foreign_plans": {k: len(v) for k, v in ledger.foreign_moved(plan_id or "").items()},
            "duplicates": sorted(t for t, n in ledger.moved_counts(plan_id or "").items() if n > 1),
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


def _throttles(admin: ReassignmentAdmin, ledger: Ledger, topics: Mapping[str, Topic]) -> list[dict[str, Any]]:
    """Every throttle config set in the cluster, each marked with whether kmigrate recorded it."""
    live = admin.live_brokers()
    broker_thr = admin.broker_dynamic_configs(sorted(live), BROKER_THROTTLE_CONFIGS)
    topic_thr = admin.topic_configs(sorted(topics), TOPIC_THROTTLE_CONFIGS, dynamic_only=True)
    kmigrate_broker = ledger.broker_throttles()
    kmigrate_topic = ledger.topic_throttles()
    throttles = []
    for b, cfgs in sorted(broker_thr.items()):
        for cfg, value in sorted(cfgs.items()):
            throttles.append({"scope": "broker", "broker": b, "config": cfg, "value": value,
                              "kmigrate": (b, cfg) in kmigrate_broker})
    for t, cfgs in sorted(topic_thr.items()):
        for cfg, value in sorted(cfgs.items()):
            if value:
                throttles.append({"scope": "topic", "topic": t, "config": cfg, "entries": len(parse_entries(value)),
                                  "kmigrate": (t, cfg) in kmigrate_topic})
    return throttles
