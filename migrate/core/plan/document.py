"""The migration plan: pure, frozen data with a content-derived id.

``kmigrate plan`` writes a :class:`Plan` with :func:`plan_to_json`; the commands that carry it
out (``kmigrate zookeeper``, ``kmigrate partitions``, ...) read it back with
:func:`plan_from_json`. :func:`reassignment_json` exports the partition moves in the format of
``kafka-reassign-partitions.sh``.

``plan_id`` is the first 16 hex digits of the SHA-256 of the canonical JSON (sorted keys, no
spaces) of what decides the migration: the cluster id, the broker mapping, every moved
partition's target replicas (in order) and the ZooKeeper change (joiners' server lines and the
ids removed). Sizes, throttle, warnings and findings are not part of it: the same migration
keeps its id when the data grows or the throttle changes. Because partitions that have already
moved are no longer moves, re-planning in the middle of a migration gives another id: resume
with the ``plan.json`` you started with.

Nothing here does I/O.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, Sequence

from migrate.core.documents import Wording, parse_document
from migrate.errors import BadInput
from migrate.core.model import RawJSON, _ints_text, _num, pretty_json, zk_server_doc
from migrate.core.zookeeper.config import Server
from migrate.core.partitions.moves import PartitionMove  # the one move type; re-exported here for the plan's readers

PLAN_KIND = "kmigrate.plan"
PLAN_FORMAT_VERSION = 1
PLAN_ID_HEX_DIGITS = 16

SEVERITIES = ("error", "warning", "info")


_make_move = PartitionMove.from_row


class MoveList(Sequence[PartitionMove]):
    """An immutable sequence of :class:`PartitionMove`, stored as plain tuples.

    Building a million named tuples costs seconds; plain tuples a fraction of that. Items are
    turned into :class:`PartitionMove` when read (``plan.moves[0].target``); ``rows`` gives the
    plain ``(topic, partition, current, target, bytes_to_move)`` tuples.
    """

    __slots__ = ("_rows",)

    def __init__(self, rows: Iterable[Any] = ()):
        rows = rows if isinstance(rows, tuple) else tuple(rows)
        if rows and isinstance(rows[0], PartitionMove):  # moves given as values: stored as their rows
            rows = tuple(m.row if isinstance(m, PartitionMove) else m for m in rows)
        self._rows: tuple[tuple[Any, ...], ...] = rows

    @property
    def rows(self) -> tuple[tuple[Any, ...], ...]:
        return self._rows

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return MoveList(self._rows[index])
        return _make_move(self._rows[index])

    def __iter__(self) -> Iterator[PartitionMove]:
        return map(_make_move, self._rows)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MoveList):
            return self._rows == other._rows
        if isinstance(other, (tuple, list)):
            return self._rows == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._rows)

    def __repr__(self) -> str:
        return f"MoveList({len(self._rows)} moves)"


@dataclass(frozen=True)
class TopicTotal:
    """Per-topic summary: partitions in the topic, partitions moved, bytes to move and how many
    moved partitions have an unknown size."""

    topic: str
    partitions: int
    partitions_moved: int
    bytes_to_move: int
    unknown_sizes: int = 0


@dataclass(frozen=True)
class BrokerTotal:
    """Per-broker summary after the plan.

    ``bytes_in``: bytes the broker copies in (sum of the sizes of partitions it joins);
    ``bytes_out``: bytes it serves to new replicas (attributed to the partition's current leader,
    which is the replica new followers fetch from); replica and leader counts before/after;
    ``role``: ``old`` (retiring), ``new`` (a mapping target or listed under brokers.new), or
    ``kept``.
    """

    broker: int
    role: str
    bytes_in: int
    bytes_out: int
    replicas_before: int
    replicas_after: int
    leaders_after: int


@dataclass(frozen=True)
class ZkPlan:
    """The ZooKeeper change.

    * ``current``: servers of the committed configuration (from the snapshot).
    * ``joiners``: servers to add (final role participant).
    * ``remove``: ids to remove.
    * ``from_config``: committed config version (int) the reconfig is conditioned on, if known.
    * ``joiner_config``: dynamic-config lines each joiner starts with: the committed servers plus
      every joiner as an **observer** (never list joiners as participants in a first config).
    * ``reconfig_add``: ``server.N=...`` lines for the one reconfig.
    * ``reconfig_command``: the equivalent zkCli.sh command (``-v`` is hex).
    * ``connect_before`` / ``connect_during`` / ``connect_after``: broker ``zookeeper.connect``
      now, for the first rolling restart (old + new servers), and for the second (new only).
    * ``voters_before`` / ``voters_after``: participant ids.
    * ``already_done``: the committed configuration already has the joiners and not the leavers.
    """

    current: tuple[Server, ...]
    joiners: tuple[Server, ...]
    remove: tuple[int, ...]
    from_config: int | None
    joiner_config: tuple[str, ...]
    reconfig_add: tuple[str, ...]
    reconfig_command: str
    connect_before: str
    connect_during: str
    connect_after: str
    voters_before: tuple[int, ...]
    voters_after: tuple[int, ...]
    already_done: bool = False


@dataclass(frozen=True)
class Finding:
    """One audit result.

    ``severity``: ``error`` (stops the migration unless ``forceable`` and ``--force``),
    ``warning`` or ``info``; ``code``: a stable rule code such as ``durability.under_replicated``;
    ``subject``: what it is about (``topic orders``, ``broker 4``, ``zookeeper``);
    ``message``: one line saying what is wrong and what to do;
    ``blocks``: for errors, which command must not run while it stands: ``all``, ``zookeeper``
    (the ensemble change) or ``partitions`` (the data move); ``None`` for warnings and info.
    """

    severity: str
    code: str
    subject: str
    message: str
    forceable: bool = False
    blocks: str | None = None

    def blocking(self, step: str | None, force: bool = False) -> bool:
        """True when this finding stops ``step`` (``zookeeper`` or ``partitions``; ``None``: any step).
        The one rule of which findings block a step."""
        if self.severity != "error" or (force and self.forceable):
            return False
        return step is None or self.blocks in ("all", step, None)


ROLL_FETCH_SETTINGS = {"replica.fetch.backoff.ms": "100", "replica.fetch.wait.max.ms": "100"}
"""The two broker settings that shorten a roll's produce stalls (:data:`ROLL_STALL_HINT`); read at a broker's start."""
ROLL_STALL_HINT = ("Every leader move in a roll stalls acks=all writes, 1 s or more when a follower learns of the new "
                   "leader first (Kafka's replica.fetch.backoff.ms 1000 and replica.fetch.wait.max.ms 500): setting "
                   "both to 100 in this roll brings that to about 0.2 s (README: produce stalls in a rolling restart).")
"""Said in the first rolling restart of a runbook, the one every later leader move profits from."""


@dataclass(frozen=True)
class RunbookStep:
    """One step of the runbook: who does it, the command, what it does, and how kmigrate
    confirms it before going on."""

    number: int
    actor: str
    command: str
    description: str
    check: str


@dataclass(frozen=True)
class Plan:
    """A complete migration plan. See the module docstring for ``plan_id``.

    ``estimated_seconds`` = ``ceil(max over brokers of max(bytes_in, bytes_out) /
    throttle_bytes_per_s)``: the throttle caps each broker's inbound (follower) and outbound
    (leader) replication, so the busiest broker bounds the copy time from below; batching and
    catch-up of new writes make the real time longer.
    """

    plan_id: str
    cluster_id: str | None
    source: str
    mapping: Mapping[int, int]
    new_brokers: tuple[int, ...]
    retiring_brokers: tuple[int, ...]
    throttle_bytes_per_s: int
    bookkeeping_topic: str
    max_partition_moves_per_broker: int
    max_partition_moves_cluster: int | None
    moves: MoveList
    topic_totals: tuple[TopicTotal, ...]
    broker_totals: tuple[BrokerTotal, ...]
    total_bytes: int
    estimated_seconds: int
    zookeeper: ZkPlan | None
    warnings: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()
    runbook: tuple[RunbookStep, ...] = ()
    format_version: int = field(default=PLAN_FORMAT_VERSION)

    def __post_init__(self) -> None:
        if not isinstance(self.moves, MoveList):
            object.__setattr__(self, "moves", MoveList(self.moves))

    def errors(self, *, force: bool = False, step: str | None = None) -> tuple[Finding, ...]:
        """Errors that stop ``step`` (``zookeeper`` / ``partitions``; ``None``: any step)."""
        return tuple(f for f in self.findings if f.blocking(step, force))


# --------------------------------------------------------------------------- id


def compute_plan_id(
    cluster_id: str | None,
    mapping: Mapping[int, int],
    moves: Sequence[PartitionMove],
    zookeeper: ZkPlan | None,
    *,
    presorted: bool = False,
) -> str:
    """SHA-256 (first 16 hex digits) of the canonical JSON of what decides the migration.

    The canonical JSON is ``{"cluster_id":..,"format_version":1,"kind":"kmigrate.plan",
    "mapping":{"1":4,..},"moves":[["topic",[[0,[4,5,6]],[1,[5,6,4]],..]],..],
    "zookeeper":{"add":["server.4=..."],"remove":[1,2,3]}}`` with sorted keys, no spaces, topics
    and partitions in order. ``presorted`` skips sorting moves that are already in
    (topic, partition) order.
    """
    head = {
        "kind": PLAN_KIND,
        "format_version": PLAN_FORMAT_VERSION,
        "cluster_id": cluster_id,
        "mapping": {str(k): mapping[k] for k in sorted(mapping)},
        "moves": None,
        "zookeeper": None
        if zookeeper is None
        else {"add": [_id_line(j) for j in zookeeper.joiners], "remove": list(zookeeper.remove)},
    }
    text = json.dumps(head, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    before, after = text.split('"moves":null', 1)
    h = hashlib.sha256(before.encode())
    h.update(b'"moves":')
    rows: Iterable[tuple[Any, ...]] = moves.rows if isinstance(moves, MoveList) else [
        m.row if isinstance(m, PartitionMove) else m for m in moves]
    h.update(_canonical_moves(rows if presorted else sorted(rows, key=_row_key)).encode())
    h.update(after.encode())
    return h.hexdigest()[:PLAN_ID_HEX_DIGITS]


def _id_line(joiner: Server) -> str:
    """A joiner as the plan id hashes it. Frozen text (host as written, no IPv6 brackets, the host as
    client host when none is given): plans written by earlier versions keep their ids."""
    return (f"server.{joiner.id}={joiner.host}:{joiner.quorum_port}:{joiner.election_port}:participant;"
            f"{joiner.client_host or joiner.host}:{joiner.client_port}")


def _row_key(m: tuple[Any, ...]) -> tuple[str, int]:
    return m[0], m[1]


def _canonical_moves(moves: Iterable[tuple[Any, ...]]) -> str:
    encoded: dict[tuple[int, ...], str] = {}
    enc_get = encoded.get
    topics: list[str] = []
    parts: list[str] = []
    name: str | None = None
    for topic, partition, _cur, target, _bytes in moves:
        if topic != name:
            if name is not None:
                topics.append(f"[{json.dumps(name)},[{','.join(parts)}]]")
            name, parts = topic, []
        e = enc_get(target)
        if e is None:
            e = encoded[target] = json.dumps(list(target), separators=(",", ":"))
        parts.append(f"[{partition},{e}]")
    if name is not None:
        topics.append(f"[{json.dumps(name)},[{','.join(parts)}]]")
    return f"[{','.join(topics)}]"


# --------------------------------------------------------------------------- JSON



def _moves_json(moves: MoveList) -> list[RawJSON]:
    """Each move as one line of JSON: the text the compact encoder gives for
    ``{"bytes", "current", "partition", "target", "topic"}``, built ten times faster."""
    lists: dict[tuple[int, ...], str] = {}
    names: dict[str, str] = {}
    out: list[RawJSON] = []
    add = out.append
    for topic, partition, cur, tgt, moved in moves.rows:
        name = names.get(topic)
        if name is None:
            name = names[topic] = json.dumps(topic, ensure_ascii=False)
        add(RawJSON(
            f'{{"bytes": {_num(moved)}, "current": {_ints_text(cur, lists)}, "partition": {partition}, '
            f'"target": {_ints_text(tgt, lists)}, "topic": {name}}}'
        ))
    return out


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    """The JSON-ready form of a plan (plain dicts and lists, as in ``plan.json``)."""
    doc = _plan_doc(plan)
    doc["moves"] = [
        {"topic": topic, "partition": partition, "current": list(cur), "target": list(tgt), "bytes": moved}
        for topic, partition, cur, tgt, moved in plan.moves.rows
    ]
    return doc


def _plan_doc(plan: Plan) -> dict[str, Any]:
    zk = plan.zookeeper
    return {
        "kind": PLAN_KIND,
        "format_version": plan.format_version,
        "plan_id": plan.plan_id,
        "cluster_id": plan.cluster_id,
        "source": plan.source,
        "mapping": {str(k): plan.mapping[k] for k in sorted(plan.mapping)},
        "new_brokers": list(plan.new_brokers),
        "retiring_brokers": list(plan.retiring_brokers),
        "throttle_bytes_per_s": plan.throttle_bytes_per_s,
        "bookkeeping_topic": plan.bookkeeping_topic,
        "max_partition_moves_per_broker": plan.max_partition_moves_per_broker,
        "max_partition_moves_cluster": plan.max_partition_moves_cluster,
        "total_bytes": plan.total_bytes,
        "estimated_seconds": plan.estimated_seconds,
        "moves": _moves_json(plan.moves),
        "topic_totals": [
            {"topic": t.topic, "partitions": t.partitions, "partitions_moved": t.partitions_moved, "bytes_to_move": t.bytes_to_move, "unknown_sizes": t.unknown_sizes}
            for t in plan.topic_totals
        ],
        "broker_totals": [
            {"broker": b.broker, "role": b.role, "bytes_in": b.bytes_in, "bytes_out": b.bytes_out, "replicas_before": b.replicas_before, "replicas_after": b.replicas_after, "leaders_after": b.leaders_after}
            for b in plan.broker_totals
        ],
        "zookeeper": None
        if zk is None
        else {
            "current": [zk_server_doc(s) for s in zk.current],
            "joiners": [zk_server_doc(s) for s in zk.joiners],
            "remove": list(zk.remove),
            "from_config": zk.from_config,
            "joiner_config": list(zk.joiner_config),
            "reconfig_add": list(zk.reconfig_add),
            "reconfig_command": zk.reconfig_command,
            "connect_before": zk.connect_before,
            "connect_during": zk.connect_during,
            "connect_after": zk.connect_after,
            "voters_before": list(zk.voters_before),
            "voters_after": list(zk.voters_after),
            "already_done": zk.already_done,
        },
        "warnings": list(plan.warnings),
        "findings": [
            {"severity": f.severity, "code": f.code, "subject": f.subject, "message": f.message, "forceable": f.forceable, "blocks": f.blocks}
            for f in plan.findings
        ],
        "runbook": [
            {"number": s.number, "actor": s.actor, "command": s.command, "description": s.description, "check": s.check}
            for s in plan.runbook
        ],
    }


def plan_to_json(plan: Plan) -> str:
    """Deterministic JSON (sorted keys, one move per line): same plan, same bytes."""
    return pretty_json(_plan_doc(plan))


_WORDING = Wording(
    not_json="plan file {source} is not JSON ({exc}): give a file written by kmigrate plan",
    not_ours="plan file {source} is not a kmigrate plan: write one with kmigrate plan",
    other_version="plan file {source} has format_version {found}; this kmigrate reads {version}: re-run kmigrate plan")


def plan_from_json(text: str, source: str = "plan.json") -> Plan:
    """Read a plan written by :func:`plan_to_json`.

    Raises :class:`BadInput` for a file that is not a kmigrate plan, of another format version,
    malformed, or whose content no longer matches its ``plan_id`` (edited by hand).
    """
    doc = parse_document(text, source, ("kind", PLAN_KIND), PLAN_FORMAT_VERSION, _WORDING)
    try:
        plan = _plan_from_doc(doc)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise BadInput(f"plan file {source} is damaged ({exc.__class__.__name__}: {exc}): re-run kmigrate plan") from None
    expected = compute_plan_id(plan.cluster_id, plan.mapping, plan.moves, plan.zookeeper)
    if expected != plan.plan_id:
        raise BadInput(
            f"plan file {source} was changed after kmigrate plan wrote it (plan_id {plan.plan_id} does not "
            f"match its content {expected}): re-run kmigrate plan"
        )
    return plan


def _ints(v: Any) -> tuple[int, ...]:
    if not isinstance(v, list) or any(isinstance(x, bool) or not isinstance(x, int) for x in v):
        raise ValueError(f"expected a list of integers, got {v!r}")
    return tuple(v)


def _server(d: Mapping[str, Any]) -> Server:
    return Server(
        int(d["id"]), str(d["host"]), int(d["quorum_port"]), int(d["election_port"]),
        None if d["client_port"] is None else int(d["client_port"]), d["client_host"], str(d["role"]),
    )


def _plan_from_doc(doc: Mapping[str, Any]) -> Plan:
    zd = doc["zookeeper"]
    zk = None
    if zd is not None:
        zk = ZkPlan(
            current=tuple(_server(s) for s in zd["current"]),
            joiners=tuple(_server(s) for s in zd["joiners"]),
            remove=_ints(zd["remove"]),
            from_config=zd["from_config"],
            joiner_config=tuple(zd["joiner_config"]),
            reconfig_add=tuple(zd["reconfig_add"]),
            reconfig_command=zd["reconfig_command"],
            connect_before=zd["connect_before"],
            connect_during=zd["connect_during"],
            connect_after=zd["connect_after"],
            voters_before=_ints(zd["voters_before"]),
            voters_after=_ints(zd["voters_after"]),
            already_done=bool(zd["already_done"]),
        )
    moves = MoveList(
        (str(m["topic"]), int(m["partition"]), _ints(m["current"]), _ints(m["target"]), m["bytes"])
        for m in doc["moves"]
    )
    findings = []
    for f in doc["findings"]:
        if f["severity"] not in SEVERITIES:
            raise ValueError(f"unknown severity {f['severity']!r}")
        findings.append(Finding(f["severity"], f["code"], f["subject"], f["message"], bool(f["forceable"]), f["blocks"]))
    return Plan(
        plan_id=str(doc["plan_id"]),
        cluster_id=doc["cluster_id"],
        source=str(doc["source"]),
        mapping={int(k): int(v) for k, v in doc["mapping"].items()},
        new_brokers=_ints(doc["new_brokers"]),
        retiring_brokers=_ints(doc["retiring_brokers"]),
        throttle_bytes_per_s=int(doc["throttle_bytes_per_s"]),
        bookkeeping_topic=str(doc["bookkeeping_topic"]),
        max_partition_moves_per_broker=int(doc["max_partition_moves_per_broker"]),
        max_partition_moves_cluster=doc["max_partition_moves_cluster"],
        moves=moves,
        topic_totals=tuple(
            TopicTotal(t["topic"], int(t["partitions"]), int(t["partitions_moved"]), int(t["bytes_to_move"]), int(t["unknown_sizes"]))
            for t in doc["topic_totals"]
        ),
        broker_totals=tuple(
            BrokerTotal(int(b["broker"]), b["role"], int(b["bytes_in"]), int(b["bytes_out"]), int(b["replicas_before"]), int(b["replicas_after"]), int(b["leaders_after"]))
            for b in doc["broker_totals"]
        ),
        total_bytes=int(doc["total_bytes"]),
        estimated_seconds=int(doc["estimated_seconds"]),
        zookeeper=zk,
        warnings=tuple(str(w) for w in doc["warnings"]),
        findings=tuple(findings),
        runbook=tuple(
            RunbookStep(int(s["number"]), s["actor"], s["command"], s["description"], s["check"]) for s in doc["runbook"]
        ),
    )


def reassignment_json(plan: Plan) -> str:
    """The moves in the format of ``kafka-reassign-partitions.sh --reassignment-json-file``::

        {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[4,5,6],"log_dirs":["any","any","any"]}]}
    """
    doc = {
        "version": 1,
        "partitions": [
            {"topic": topic, "partition": partition, "replicas": list(tgt), "log_dirs": ["any"] * len(tgt)}
            for topic, partition, _cur, tgt, _bytes in plan.moves.rows
        ],
    }
    return json.dumps(doc, separators=(",", ":"))
