"""The bookkeeping topic (``__kmigrate_migration`` by default): what kmigrate did, kept in the cluster.

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

:class:`Ledger` folds the records (pure); :class:`BookkeepingTopic` reads and writes them.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping

from migrate.adapters.kafka import TRUSTED_PRODUCER
from migrate.core.clientconfig import ClientSettings
from migrate.errors import BadInput, StepFailed

SCHEMA = "kmigrate.bookkeeping/1"
KINDS = ("plan", "topic-moved", "submitted", "throttle-broker", "throttle-topic", "throttle-cleared", "cancelled")

log = logging.getLogger("kmigrate.bookkeeping")
_LIBRDKAFKA_LOG = logging.getLogger("kmigrate.librdkafka")


# --------------------------------------------------------------------------- records (pure)


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


# --------------------------------------------------------------------------- the topic (I/O)


def _led(t) -> bool:
    """True when a topic's metadata (``None``: not listed) shows no error and a leader for every partition."""
    return t is not None and t.error is None and bool(t.partitions) and all(p.leader >= 0 for p in t.partitions.values())


class BookkeepingTopic:
    """Read and append the bookkeeping records of one cluster."""

    def __init__(self, settings: ClientSettings, topic: str, timeout_s: float = 30.0):
        self.settings = settings
        self.topic = topic
        self.timeout_s = timeout_s
        self._producer = None
        self._unacked = 0  # records sent and not yet checked by a flush
        self._errors: list[str] = []

    # ------------------------------------------------------------------ create
    def exists(self, admin) -> bool:
        # all topics, never one by name: a metadata request naming a topic can auto-create it
        from confluent_kafka import KafkaError

        md = admin.list_topics(timeout=self.timeout_s)
        t = md.topics.get(self.topic)
        # a topic listed with an error (its leader moving) exists: :meth:`read` waits for it
        return t is not None and (t.error is None or t.error.code() != KafkaError.UNKNOWN_TOPIC_OR_PART)

    def ensure(self, admin, new_brokers: Iterable[int]) -> bool:
        """Create the topic if missing, replicas assigned by hand on new brokers only (up to 3).

        Returns True when it was created. Waits until its partition has a leader."""
        from confluent_kafka.admin import NewTopic

        if self.exists(admin):
            return False
        brokers = sorted(set(new_brokers))[:3]
        if not brokers:
            raise BadInput("no new broker to hold the bookkeeping topic: give the mapping's new brokers")
        configs = {
            "cleanup.policy": "delete",
            "retention.ms": "-1",
            "retention.bytes": "-1",
            "min.insync.replicas": str(min(2, len(brokers))),
            "unclean.leader.election.enable": "false",
        }
        futures = admin.create_topics(
            [NewTopic(self.topic, num_partitions=1, replica_assignment=[brokers], config=configs)],
            request_timeout=self.timeout_s,
        )
        try:
            futures[self.topic].result(timeout=self.timeout_s)
        except Exception as exc:  # TOPIC_ALREADY_EXISTS from a concurrent run is fine
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise StepFailed(f"cannot create the bookkeeping topic {self.topic} on brokers {brokers}: {exc}") from None
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            md = admin.list_topics(timeout=self.timeout_s)
            t = md.topics.get(self.topic)
            if _led(t):
                return True
            time.sleep(0.2)
        raise StepFailed(f"the bookkeeping topic {self.topic} was created but has no leader after {self.timeout_s:.0f} s")

    # -------------------------------------------------------------------- read
    def read(self) -> Ledger:
        """Every record from the beginning to the current end. A record kmigrate did not write
        is a :class:`BadInput` naming where it is (nothing is changed)."""
        from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

        consumer = Consumer(self.settings.confluent(**{
            "group.id": "kmigrate-bookkeeping-reader",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            "auto.offset.reset": "earliest",
            "logger": _LIBRDKAFKA_LOG,
        }))
        try:
            bounds = self._bounds(consumer)
            if bounds is None:
                return Ledger([])
            ends = {p: hi for p, (lo, hi) in bounds.items() if hi > lo}
            starts = {p: lo for p, (lo, hi) in bounds.items() if hi > lo}
            if not ends:
                return Ledger([])
            consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in ends])
            by_partition: dict[int, list[Record]] = {p: [] for p in ends}
            positions = dict(starts)
            deadline = time.monotonic() + max(self.timeout_s, 60.0)
            while any(positions[p] < ends[p] for p in ends):
                if time.monotonic() > deadline:
                    raise StepFailed(f"reading the bookkeeping topic {self.topic} timed out: check the new brokers")
                # consume() returns when it has num_messages or at the timeout: ask for what is left
                left = sum(ends[q] - positions[q] for q in ends if positions[q] < ends[q])
                for msg in consumer.consume(num_messages=max(1, min(1000, left)), timeout=1.0):
                    if msg.error():
                        raise StepFailed(f"reading the bookkeeping topic {self.topic}: {msg.error()}")
                    p, off = msg.partition(), msg.offset()
                    positions[p] = off + 1
                    if off >= ends[p]:
                        continue
                    rec = decode(msg.key(), msg.value(), p, off)
                    if rec is None:
                        raise BadInput(
                            f"the bookkeeping topic {self.topic} holds a record kmigrate did not write "
                            f"(partition {p}, offset {off}): choose another topic with --bookkeeping-topic"
                        )
                    by_partition[p].append(rec)
                for tp in consumer.position([TopicPartition(self.topic, q) for q in ends]):
                    if tp.offset >= 0:
                        positions[tp.partition] = max(positions[tp.partition], tp.offset)
        except KafkaException as exc:
            raise StepFailed(f"reading the bookkeeping topic {self.topic}: {exc}") from None
        finally:
            consumer.close()
        records = [r for p in sorted(by_partition) for r in by_partition[p]]
        return Ledger(records)

    def _bounds(self, consumer) -> dict[int, tuple[int, int]] | None:
        """Each partition's (low, high) watermarks; ``None`` when the topic does not exist.

        A topic the metadata shows with an error or a partition without a leader (a leader
        moving, a broker's metadata a moment behind) is asked again until the timeout, never
        read as empty: an empty ledger would make a run forget what it recorded."""
        from confluent_kafka import KafkaException, TopicPartition

        deadline = time.monotonic() + max(self.timeout_s, 30.0)
        while True:
            t = consumer.list_topics(timeout=self.timeout_s).topics.get(self.topic)
            if t is None:
                return None
            why = str(t.error) if t.error is not None else None
            if why is None and not t.partitions:
                why = "no partitions in the metadata"
            if why is None:
                bad = [p for p, pm in t.partitions.items() if pm.leader < 0]
                why = f"partition {bad[0]} has no leader" if bad else None
            if why is None:
                try:
                    out = {p: consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=self.timeout_s)
                           for p in t.partitions}
                except KafkaException as exc:  # a leader not ready yet (NOT_LEADER_FOR_PARTITION), a timeout
                    out, why = {}, str(exc)
                bad = [p for p, (lo, hi) in out.items() if lo < 0 or hi < 0]
                if why is None and not bad:
                    return out
                why = why or f"partition {bad[0]} has no offsets yet"
            if time.monotonic() > deadline:
                raise StepFailed(f"cannot read the bookkeeping topic {self.topic}: {why}; check its brokers, then run again")
            time.sleep(0.5)

    # ------------------------------------------------------------------- write
    def append(self, records: Iterable[Record], wait: bool = True) -> None:
        """Write records with ``acks=all`` and wait until every record sent so far is acknowledged
        (StepFailed otherwise).

        ``wait=False`` sends them and leaves the check to the next append that waits, or to
        :meth:`flush`: for records of what is already done (a topic moved, a throttle removed),
        whose loss in a crash only makes a later run find the same thing done again. Records that
        must land before an action (write-ahead) always wait."""
        records = list(records)
        if not records and not (wait and self._unacked):
            return
        self._ensure_producer()
        for r in records:
            key, value = encode(r)
            self._producer.produce(self.topic, value=value, key=key, partition=0, on_delivery=self._delivered)
        self._unacked += len(records)
        if wait:
            self.flush()
        else:
            self._producer.poll(0)

    def _delivered(self, err, _msg) -> None:
        if err is not None:
            self._errors.append(str(err))

    def start_writer(self) -> None:
        """Start the writer ahead of the first write: it connects and fetches its producer id in
        the background (the topic need not exist yet)."""
        self._ensure_producer().poll(0)

    def producer_settings(self) -> dict:
        """The writer's librdkafka settings: acknowledged means written (see ``TRUSTED_PRODUCER``)."""
        return self.settings.confluent(**{
            **TRUSTED_PRODUCER,
            "linger.ms": 0,
            # a new broker may die: acks=all then waits until the ISR drops it (replica.lag.time.max.ms)
            "message.timeout.ms": int(max(self.timeout_s, 120.0) * 1000),
            "logger": _LIBRDKAFKA_LOG,
        })

    def _ensure_producer(self):
        from confluent_kafka import Producer

        if self._producer is None:
            self._producer = Producer(self.producer_settings())
        return self._producer

    def warm(self) -> None:
        """Give the writer the topic's leader now (waiting for it up to 10 s), so the first write
        does not wait: a producer that writes to a topic it has no metadata for (a topic just
        created) waits for its next metadata refresh, about a second."""
        producer = self._ensure_producer()
        deadline = time.monotonic() + min(self.timeout_s, 10.0)
        while time.monotonic() < deadline:
            try:
                t = producer.list_topics(self.topic, timeout=min(self.timeout_s, 5.0)).topics.get(self.topic)
            except Exception:  # the first write will find out, with its own error
                return
            if _led(t):
                return
            time.sleep(0.05)

    def flush(self) -> None:
        """Wait until every record sent is acknowledged (StepFailed if one was not)."""
        if self._producer is None:
            return
        left = self._producer.flush(max(self.timeout_s, 120.0) + 5)
        errors, self._errors = self._errors, []
        self._unacked = left
        if left or errors:
            raise StepFailed(
                f"writing to the bookkeeping topic {self.topic} failed ({errors[0] if errors else f'{left} not acknowledged'}): "
                "the step may or may not be recorded; run again with --resume"
            )

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(5)
            self._producer = None
