"""The bookkeeping ledger: the records kmigrate writes to its bookkeeping topic, and their folding (pure).

The topic (:data:`DEFAULT_TOPIC`, ``__kmigrate_migration``, by default) is what kmigrate did, kept in the cluster.

It is how a migration survives a crash of kmigrate: every run reads it from the beginning.

* The topic has one partition whose replicas are assigned by hand to new brokers only (it must
  not have to move itself), ``retention.ms=-1`` and ``cleanup.policy=delete``: nothing expires.
* Each record is keyed ``<plan id>/<topic>`` for a moved topic, ``<plan id>/~<kind>/<subject>``
  for the others (``~`` cannot appear in a topic name); its value is a JSON object with
  ``schema`` = :data:`SCHEMA`, ``kind``, ``plan_id``, ``time`` (ISO 8601, UTC) and the kind's fields:

  ============== ===========================================================================
  kind           fields
  ============== ===========================================================================
  plan           ``mapping`` (old -> new), ``throttle_bytes_per_s``
  topic-moved    ``topic``, ``target`` (partition -> replicas): the topic is done
  submitted      ``topic``, ``partitions`` (partition -> target): written before the request
  throttle-broker ``broker``, ``config``, ``value``, ``prior``: written *before* the broker
                 config is set (``prior``: the dynamic value before kmigrate, ``None`` if unset)
  throttle-topic ``topic``, ``config``, ``entries``: ``partition:broker`` entries kmigrate is
                 about to append (only those that were not already there)
  throttle-cleared ``scope`` (``broker``/``topic``), ``broker`` or ``topic``, ``config``
  cancelled      ``topic``, ``partitions``
  ============== ===========================================================================

Writing the throttle records first means a crash at any line leaves no throttle kmigrate cannot
find; recording only the entries it added means it never removes a throttle someone else set.

:class:`Ledger` folds the records; ``migrate.adapters.bookkeeping.BookkeepingTopic`` reads and writes them.
The format is fixed: a topic written by an earlier version must read the same (``tests/unit/core/test_ledger.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Mapping

DEFAULT_TOPIC = "__kmigrate_migration"
"""The bookkeeping topic's name unless the playbook or ``--bookkeeping-topic`` says otherwise."""

SCHEMA = "kmigrate.bookkeeping/1"
KINDS = ("plan", "topic-moved", "submitted", "throttle-broker", "throttle-topic", "throttle-cleared", "cancelled")



@dataclass(frozen=True)
class Record:
    """One bookkeeping record: its key, its decoded value, and where it was read (``-1`` before)."""

    key: str
    value: Mapping[str, Any]
    partition: int = -1
    offset: int = -1

    @property
    def kind(self) -> str:
        return self.value["kind"]

    @property
    def plan_id(self) -> str:
        return self.value["plan_id"]


def record_key(plan_id: str, kind: str, subject: str) -> str:
    """``plan/topic`` for ``topic-moved``, ``plan/~kind/subject`` otherwise."""
    return f"{plan_id}/{subject}" if kind == "topic-moved" else f"{plan_id}/~{kind}/{subject}"


def make_record(plan_id: str, kind: str, subject: str, now_s: float, **fields: Any) -> Record:
    """A record ready to write. ``now_s`` is a Unix time (the caller reads the clock).

    >>> make_record("p1", "topic-moved", "orders", 0, topic="orders", target={0: [4]}).key
    'p1/orders'
    """
    if kind not in KINDS:
        raise ValueError(f"unknown bookkeeping record kind {kind!r}")
    value: dict[str, Any] = {
        "schema": SCHEMA,
        "kind": kind,
        "plan_id": plan_id,
        "time": datetime.fromtimestamp(now_s, tz=timezone.utc).isoformat(timespec="milliseconds"),
    }
    value.update(fields)
    return Record(record_key(plan_id, kind, subject), json.loads(json.dumps(value)))


def encode(record: Record) -> tuple[bytes, bytes]:
    return record.key.encode(), json.dumps(record.value, sort_keys=True, separators=(",", ":")).encode()


def decode(key: bytes | None, value: bytes | None, partition: int = -1, offset: int = -1) -> Record | None:
    """The record, or ``None`` when kmigrate did not write it (wrong shape, wrong schema)."""
    if key is None or value is None:
        return None
    try:
        k = key.decode()
        v = json.loads(value)
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(v, dict) or v.get("schema") != SCHEMA or v.get("kind") not in KINDS:
        return None
    if not isinstance(v.get("plan_id"), str) or not k.startswith(v["plan_id"] + "/"):
        return None
    return Record(k, v, partition, offset)


@dataclass
class Ledger:
    """What the records say, folded in order. Throttle state is kmigrate's whatever the plan id
    (any run of kmigrate may clean what another set); moved topics count for one plan id only."""

    records: list[Record] = field(default_factory=list)

    def moved(self, plan_id: str) -> dict[str, Record]:
        """Topics recorded as moved by ``plan_id`` (first record of each)."""
        out: dict[str, Record] = {}
        for r in self.records:
            if r.kind == "topic-moved" and r.plan_id == plan_id:
                out.setdefault(r.value["topic"], r)
        return out

    def moved_counts(self, plan_id: str) -> dict[str, int]:
        """How many times each topic was recorded as moved by ``plan_id`` (should be 1)."""
        out: dict[str, int] = {}
        for r in self.records:
            if r.kind == "topic-moved" and r.plan_id == plan_id:
                out[r.value["topic"]] = out.get(r.value["topic"], 0) + 1
        return out

    def foreign_moved(self, plan_id: str) -> dict[str, list[str]]:
        """Other plan ids -> the topics they recorded (reported, not trusted)."""
        out: dict[str, list[str]] = {}
        for r in self.records:
            if r.kind == "topic-moved" and r.plan_id != plan_id:
                topics = out.setdefault(r.plan_id, [])
                if r.value["topic"] not in topics:
                    topics.append(r.value["topic"])
        return out

    def plans(self) -> dict[str, Mapping[str, Any]]:
        """plan id -> its latest ``plan`` record value (mapping, throttle)."""
        out: dict[str, Mapping[str, Any]] = {}
        for r in self.records:
            if r.kind == "plan":
                out[r.plan_id] = r.value
        return out

    def submitted(self, plan_id: str | None = None) -> dict[tuple[str, int], tuple[int, ...]]:
        """(topic, partition) -> the target kmigrate last submitted (one plan id, or any)."""
        out: dict[tuple[str, int], tuple[int, ...]] = {}
        for r in self.records:
            if r.kind == "submitted" and (plan_id is None or r.plan_id == plan_id):
                for p, target in r.value["partitions"].items():
                    out[(r.value["topic"], int(p))] = tuple(int(b) for b in target)
        return out

    def plan_of_submission(self, topic: str) -> str | None:
        """The plan id of the last ``submitted`` record of ``topic`` (``None``: never submitted)."""
        for r in reversed(self.records):
            if r.kind == "submitted" and r.value.get("topic") == topic:
                return r.plan_id
        return None

    def broker_throttles(self) -> dict[tuple[int, str], dict[str, Any]]:
        """(broker, config) -> {"value", "prior"} for broker throttles set and not cleared.

        When kmigrate set the same config twice before clearing it, the first ``prior`` stands
        (the second one read kmigrate's own value)."""
        out: dict[tuple[int, str], dict[str, Any]] = {}
        for r in self.records:
            v = r.value
            if r.kind == "throttle-broker":
                key = (int(v["broker"]), v["config"])
                prior = out[key]["prior"] if key in out else v.get("prior")
                out[key] = {"value": v["value"], "prior": prior}
            elif r.kind == "throttle-cleared" and v.get("scope") == "broker":
                out.pop((int(v["broker"]), v["config"]), None)
        return out

    def topic_throttles(self) -> dict[tuple[str, str], set[str]]:
        """(topic, config) -> entries kmigrate appended and has not cleared."""
        out: dict[tuple[str, str], set[str]] = {}
        for r in self.records:
            v = r.value
            if r.kind == "throttle-topic":
                out.setdefault((v["topic"], v["config"]), set()).update(v["entries"])
            elif r.kind == "throttle-cleared" and v.get("scope") == "topic":
                out.pop((v["topic"], v["config"]), None)
        return out
