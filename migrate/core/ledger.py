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
  run            ``run_id``, ``host``, ``pid``, ``state`` (``started``/``alive``/``ended``),
                 ``started``: a ``partitions`` run says it is running (a heartbeat) or ended
  cancel-requested ``host``, ``pid``: ``partitions --cancel`` asks every running run to stop
  mirror-step    ``step`` (``topics-created``, ``mirrormaker-started``, ``mirrormaker-stopped``) and its
                 fields (``topics``, ``pid``...): what ``kmigrate mirror`` did (topic :data:`MIRROR_TOPIC`)
  mirror-gate    ``gate`` (``producers-stopped``, ``replicated``, ``verified``, ``done``), ``ends``
                 (``topic:partition`` -> source end when it passed): a cut-over gate passed
  mirror-offsets ``group``, ``offsets`` (``topic:partition`` -> offset): written *before* kmigrate
                 commits them on the target, so a re-run never moves them backwards
  mirror-proven  ``partitions`` (``topic:partition`` -> the proof now, ``migrate.core.mirror.proof.Proof``, or
                 ``null``: dropped): what ``mirror verify`` proved equal on both clusters (topic :data:`MIRROR_TOPIC`)
  throttle-auto  a decision of ``--throttle auto`` (``migrate.core.throttle.decisions.Decision``:
                 ``broker``, ``old_rate``, ``new_rate``, ``moves``, ``reason``, ``mode``,
                 ``ssthresh``, ``p99_s``, ``limit_s``, ``baseline_s``, ``at_s``), keyed by broker:
                 written *before* the broker's rate changes, so ``--resume`` goes on at the last rate
  ============== ===========================================================================

The ``mirror-*`` records use the plan id ``mirror-<source cluster id>-<target cluster id>``.

Versions before ``run``, ``cancel-requested``, ``throttle-auto`` and ``mirror-proven`` refuse a topic that holds
them (a record they did not write, reported as written by a newer kmigrate): a migration is finished or cancelled with the version that started it.

Writing the throttle records first means a crash at any line leaves no throttle kmigrate cannot
find; recording only the entries it added means it never removes a throttle someone else set.

:class:`Ledger` folds the records; ``migrate.adapters.kafka.bookkeeping.BookkeepingTopic`` reads and writes them.
The format is fixed: a topic written by an earlier version must read the same (``tests/unit/core/test_ledger.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, Mapping

DEFAULT_TOPIC = "__kmigrate_migration"
"""The bookkeeping topic's name unless the playbook or ``--bookkeeping-topic`` says otherwise."""

SCHEMA = "kmigrate.bookkeeping/1"
KINDS = ("plan", "topic-moved", "submitted", "throttle-broker", "throttle-topic", "throttle-cleared", "cancelled",
         "run", "cancel-requested", "mirror-step", "mirror-gate", "mirror-offsets", "throttle-auto",
         "mirror-proven")

MIRROR_TOPIC = "__kmigrate_mirror"
"""The bookkeeping topic of ``kmigrate mirror`` on the target (its own: a mirror's records never mix with
a ``partitions`` migration's, and versions that do not know the ``mirror-*`` kinds never meet them)."""

RUN_HEARTBEAT_S = 10.0
"""How often a running ``partitions`` writes its ``run`` record (state ``alive``)."""

RUN_STALE_S = 60.0
"""A run whose last ``run`` record is older than this (and not ``ended``) crashed or was killed."""

def mirror_plan_id(source_cluster_id: str, target_cluster_id: str) -> str:
    """The plan id of the ``mirror-*`` records of one mirror (one source cluster onto one target).

    >>> mirror_plan_id("abc", "xyz")
    'mirror-abc-xyz'
    """
    return f"mirror-{source_cluster_id}-{target_cluster_id}"


def _ids(plan_ids) -> frozenset[str]:
    return frozenset([plan_ids]) if isinstance(plan_ids, str) else frozenset(plan_ids)


def record_time_s(value: Mapping[str, Any]) -> float:
    """A record's ``time`` as Unix seconds."""
    return datetime.fromisoformat(value["time"]).timestamp()



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


def newer_kind(value: bytes | None) -> str | None:
    """The kind of a record in kmigrate's schema that this version does not know (a newer kmigrate
    wrote it), else ``None``.

    >>> newer_kind(b'{"schema": "kmigrate.bookkeeping/1", "kind": "throttle-later", "plan_id": "p"}')
    'throttle-later'
    >>> newer_kind(b'{"schema": "kmigrate.bookkeeping/1", "kind": "plan"}'), newer_kind(b'not json')
    (None, None)
    """
    try:
        v = json.loads(value or b"")
    except (UnicodeDecodeError, ValueError):
        return None
    if isinstance(v, dict) and v.get("schema") == SCHEMA and isinstance(v.get("kind"), str) and v["kind"] not in KINDS:
        return v["kind"]
    return None


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

    def moved(self, plan_id: str | Iterable[str]) -> dict[str, Record]:
        """Topics recorded as moved by ``plan_id`` (or any of several ids: one migration; first record of each)."""
        out: dict[str, Record] = {}
        ids = _ids(plan_id)
        for r in self.records:
            if r.kind == "topic-moved" and r.plan_id in ids:
                out.setdefault(r.value["topic"], r)
        return out

    def moved_counts(self, plan_id: str | Iterable[str]) -> dict[str, int]:
        """How many times each topic was recorded as moved by ``plan_id`` (or several ids; should be 1)."""
        out: dict[str, int] = {}
        ids = _ids(plan_id)
        for r in self.records:
            if r.kind == "topic-moved" and r.plan_id in ids:
                out[r.value["topic"]] = out.get(r.value["topic"], 0) + 1
        return out

    def foreign_moved(self, plan_id: str | Iterable[str]) -> dict[str, list[str]]:
        """Other plan ids (not ``plan_id``, nor any of several) -> the topics they recorded (reported, not trusted)."""
        out: dict[str, list[str]] = {}
        ids = _ids(plan_id)
        for r in self.records:
            if r.kind == "topic-moved" and r.plan_id not in ids:
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

    def submitted(self, plan_id: str | Iterable[str] | None = None) -> dict[tuple[str, int], tuple[int, ...]]:
        """(topic, partition) -> the target kmigrate last submitted (one plan id, several, or any)."""
        out: dict[tuple[str, int], tuple[int, ...]] = {}
        ids = None if plan_id is None else _ids(plan_id)
        for r in self.records:
            if r.kind == "submitted" and (ids is None or r.plan_id in ids):
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
        """(broker, config) -> {"value", "prior", "values"} for broker throttles set and not cleared.

        When kmigrate set the same config twice before clearing it (``--throttle auto`` changes a
        rate during the run), the first ``prior`` stands (the later ones read kmigrate's own value)
        and ``values`` lists every value kmigrate recorded since: a config holding any of them is
        kmigrate's (a run killed between a record and its config change leaves the previous one)."""
        out: dict[tuple[int, str], dict[str, Any]] = {}
        for r in self.records:
            v = r.value
            if r.kind == "throttle-broker":
                key = (int(v["broker"]), v["config"])
                prior = out[key]["prior"] if key in out else v.get("prior")
                values = [*out[key]["values"], v["value"]] if key in out else [v["value"]]
                out[key] = {"value": v["value"], "prior": prior, "values": values}
            elif r.kind == "throttle-cleared" and v.get("scope") == "broker":
                out.pop((int(v["broker"]), v["config"]), None)
        return out

    def throttle_decisions(self, plan_id: str | Iterable[str]) -> list[Mapping[str, Any]]:
        """The ``throttle-auto`` records of ``plan_id`` (or any of several ids: one migration), in order:
        what ``Controller.resume`` takes up (the last one per broker counts). Other plans' are ignored,
        and so is a broker's decision made before kmigrate last cleared that broker's rates: the run
        that made it ended and removed its throttle, so a new run of the plan starts that broker afresh
        (seen by hand: a run of a plan moved back and forth resumed the rates of a run finished before)."""
        ids = _ids(plan_id)
        out: list[Mapping[str, Any]] = []
        for r in self.records:
            if r.kind == "throttle-auto" and r.plan_id in ids:
                out.append(r.value)
            elif r.kind == "throttle-cleared" and r.value.get("scope") == "broker":
                gone = int(r.value["broker"])
                out = [d for d in out if int(d["broker"]) != gone]
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

    # ------------------------------------------------------------ one migration
    def migration(self, plan_id: str | None, mapping: Mapping[int, int] | None = None) -> tuple[str, ...]:
        """The plan ids that name the same migration as ``plan_id``: itself and every plan recorded
        with the same broker mapping (``mapping``, else the one recorded for ``plan_id``).

        A migration is its intent, the old -> new mapping: the plan file (``kmigrate plan``, its
        id a digest of its moves), the playbook alone (``mapping-1.4-...``) and a plan made again
        later from the same playbook are one migration, whichever one a run or ``status`` is given.
        Without ``plan_id``: the latest plan recorded (``()`` when none is)."""
        plans = self.plans()
        if plan_id is None:
            if not plans:
                return ()
            plan_id = list(plans)[-1]
        if mapping is None and plan_id in plans:
            mapping = {int(k): int(v) for k, v in plans[plan_id]["mapping"].items()}
        want = {str(k): int(v) for k, v in (mapping or {}).items()}
        same = [p for p, v in plans.items() if p != plan_id and want
                and {str(k): int(b) for k, b in v.get("mapping", {}).items()} == want]
        return (plan_id, *same)

    # ----------------------------------------------------------- in flight
    def started_by_kmigrate(self, flights: Mapping[tuple[str, int], Any]) -> list[tuple[str, int]]:
        """The reassignments in flight (key -> anything with a ``target``) that kmigrate started:
        the partition's last ``submitted`` record, of any plan and any run, names the target now
        in flight. The one definition ``status``, ``--cancel`` and every exit of a run use.

        List the reassignments *before* reading the ledger: a run records a submission before it
        sends it, so every move listed then has its record in the ledger read after."""
        submitted = self.submitted(None)
        return sorted(k for k, f in flights.items() if k in submitted and tuple(f.target) == submitted[k])

    # -------------------------------------------------------------- runs
    def runs(self) -> dict[str, Mapping[str, Any]]:
        """run id -> the latest ``run`` record value of each ``partitions`` run."""
        out: dict[str, Mapping[str, Any]] = {}
        for r in self.records:
            if r.kind == "run":
                out[r.value["run_id"]] = r.value
        return out

    def live_runs(self, now_s: float, host: str, pid_alive: Callable[[int], bool],
                  stale_s: float = RUN_STALE_S, but: str | None = None) -> list[Mapping[str, Any]]:
        """Runs (other than run id ``but``) that have not ended and are alive: on ``host`` (this
        machine) its pid is alive (``pid_alive``); elsewhere its last heartbeat is younger than
        ``stale_s``. A run killed or crashed is not live: a rerun adopts its work."""
        out = []
        for run_id, v in self.runs().items():
            if run_id == but or v.get("state") == "ended":
                continue
            if v.get("host") == host:
                if pid_alive(int(v.get("pid", -1))):
                    out.append(v)
            elif now_s - record_time_s(v) < stale_s:
                out.append(v)
        return out

    def cancel_requests(self) -> list[Record]:
        """Every ``cancel-requested`` record, in order."""
        return [r for r in self.records if r.kind == "cancel-requested"]
