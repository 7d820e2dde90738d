"""The cluster snapshot: what kmigrate knows about a live cluster, as pure, frozen data.

An inspect adapter fills a :class:`ClusterSnapshot` from ZooKeeper and Kafka;
``kmigrate inspect -o cluster.json`` saves it with :func:`snapshot_to_json` and
``kmigrate plan --cluster-file cluster.json`` loads it with :func:`snapshot_from_json`.
The planner (``migrate.core.plan.planner``) and the audit (``migrate.core.plan.audit``) only read it.

Nothing here does I/O or reads a clock. Dataclasses are frozen; their ``dict`` fields are
never mutated by kmigrate (treat them as read-only mappings).

Conventions (the adapter must follow them):

* Broker ids, ZooKeeper server ids and partition numbers are ``int``.
* Replica lists are tuples in Kafka's order: the first replica is the preferred leader.
* A leader of ``None`` or ``-1`` means the partition is offline.
* ``size_bytes`` is the size of the largest replica of the partition (``describe_log_dirs``),
  ``None`` when unknown.
* A broker's ``rack`` is the raw ``broker.rack`` string, e.g. ``"AD-1/FD-1"``; see :func:`parse_rack`.

Example::

    >>> parse_rack("AD-1/FD-2")
    ('AD-1', 'FD-2')
    >>> from migrate.core.units import parse_connect
    >>> parse_connect("h1:2181,h2/kafka")
    ((('h1', 2181), ('h2', 2181)), '/kafka')
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Iterable, Mapping

from migrate.core.zookeeper.config import ROLES as ZK_ROLES, Server
from migrate.errors import BadInput

FORMAT_VERSION = 1
"""Version of the cluster-file format written by :func:`snapshot_to_json`."""

SNAPSHOT_KIND = "kmigrate.cluster-snapshot"
"""Marker stored in every cluster file so that a foreign JSON file is recognised."""

DEFAULT_RACK_SEPARATOR = "/"



@dataclass(frozen=True, slots=True, kw_only=True)
class ZkEnsemble:
    """The ZooKeeper ensemble as seen by kmigrate.

    * ``connect``: the connect string in use, may carry a chroot (``h1:2181,h2:2181/kafka``).
    * ``config_version``: the committed dynamic-config version as an ``int``
      (``/zookeeper/config`` shows it in hex: ``version=100000000`` is ``0x100000000``);
      ``None`` when unknown.
    * ``servers``: the servers of the committed configuration, sorted by id.
    * ``reconfig_enabled``: ``reconfigEnabled`` of the servers (``None``: unknown).
    * ``server_versions``: server id -> ZooKeeper version, e.g. ``{1: "3.8.6"}``.
    * ``server_modes``: server id -> ``leader|follower|observer|standalone|unreachable``.
    """

    connect: str
    config_version: int | None = None
    servers: tuple[Server, ...] = ()
    reconfig_enabled: bool | None = None
    server_versions: Mapping[int, str] = field(default_factory=dict)
    server_modes: Mapping[int, str] = field(default_factory=dict)

    @property
    def participants(self) -> tuple[int, ...]:
        """Ids of the voting members, sorted."""
        return tuple(sorted(s.id for s in self.servers if s.role == "participant"))


@dataclass(frozen=True, slots=True)
class Broker:
    """A Kafka broker.

    ``rack`` is the raw ``broker.rack`` (``None`` if unset); ``version`` the Kafka release when
    known (``"2.4"``: major.minor, what the broker's ApiVersions answer tells, never the patch);
    ``protocol_version`` its ``inter.broker.protocol.version`` (``"2.4-IV1"``; lower than the release
    while a rolling upgrade is not finished); ``zookeeper_connect`` the broker's static ``zookeeper.connect``
    (``describe_configs``), ``None`` when unknown; ``alive`` is True when the broker is
    registered in ZooKeeper (``/brokers/ids/N``). An adapter may list brokers that host replicas
    but are not registered with ``alive=False``.
    """

    id: int
    host: str
    port: int
    rack: str | None = None
    version: str | None = None
    zookeeper_connect: str | None = None
    alive: bool = True
    protocol_version: str | None = None


@dataclass(frozen=True, slots=True)
class Partition:
    """One partition: ``replicas`` in order (first = preferred leader), ``isr``, ``leader``
    (``None`` or ``-1`` = offline) and ``size_bytes`` (largest replica; ``None`` = unknown)."""

    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int | None
    size_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class Topic:
    """A topic. ``configs`` holds topic configs as strings (at least ``min.insync.replicas``,
    ``unclean.leader.election.enable`` and ``cleanup.policy`` when known; effective values,
    defaults included, are best). ``partitions`` are sorted by partition number."""

    name: str
    internal: bool = False
    configs: Mapping[str, str] = field(default_factory=dict)
    partitions: tuple[Partition, ...] = ()

    @property
    def replication_factor(self) -> int:
        """The largest replica count of the topic's partitions (0 for no partitions)."""
        return max(map(len, map(_REPLICAS, self.partitions)), default=0)


_REPLICAS = attrgetter("replicas")

Reassignment = tuple[tuple[int, ...], tuple[int, ...]]
"""An ongoing reassignment: (adding replicas, removing replicas)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterSnapshot:
    """Everything the planner and the audit need to know about a cluster, at one moment.

    ``ongoing_reassignments`` maps ``(topic, partition)`` to ``(adding, removing)`` replica
    tuples (``ListPartitionReassignments``); empty when none is running.
    """

    format_version: int = FORMAT_VERSION
    cluster_id: str | None = None
    controller_id: int | None = None
    zookeeper: ZkEnsemble
    brokers: tuple[Broker, ...] = ()
    topics: tuple[Topic, ...] = ()
    ongoing_reassignments: Mapping[tuple[str, int], Reassignment] = field(default_factory=dict)

    def broker(self, broker_id: int) -> Broker | None:
        """The broker with this id, or ``None``."""
        for b in self.brokers:
            if b.id == broker_id:
                return b
        return None


# --------------------------------------------------------------------------- small parsers


def parse_rack(rack: str | None, separator: str = DEFAULT_RACK_SEPARATOR) -> tuple[str | None, str | None]:
    """Split a ``broker.rack`` into (availability domain, fault domain).

    >>> parse_rack("AD-1/FD-2")
    ('AD-1', 'FD-2')
    >>> parse_rack("us-east-1a")   # no separator: its own AD, no fault domain
    ('us-east-1a', None)
    >>> parse_rack(None)
    (None, None)

    Only the first separator splits: ``"a/b/c"`` is ``("a", "b/c")``. Blank parts count as absent.
    """
    if rack is None:
        return None, None
    rack = rack.strip()
    if not rack:
        return None, None
    if separator and separator in rack:
        ad, fd = rack.split(separator, 1)
        ad, fd = ad.strip(), fd.strip()
        return (ad or None), (fd or None)
    return rack, None


# --------------------------------------------------------------------------- JSON


class RawJSON(str):
    """Text that :func:`pretty_json` writes as it is (already-encoded, one-line JSON)."""

    __slots__ = ()


def _num(v: Any) -> str:
    return "null" if v is None else str(v)


def _ints_text(values: tuple[int, ...], cache: dict[tuple[int, ...], str]) -> str:
    text = cache.get(values)
    if text is None:
        text = cache[values] = "[" + ", ".join(map(str, values)) + "]"
    return text


def pretty_json(doc: Any) -> str:
    """Deterministic JSON: sorted keys, 1-space indent, and every container that holds only
    scalars or lists of scalars on one line (a partition, a broker, a move)."""
    out: list[str] = []
    _render(doc, 0, out)
    out.append("\n")
    return "".join(out)


_COMPACT = json.JSONEncoder(sort_keys=True, separators=(", ", ": "), ensure_ascii=False).encode


def _is_flat(value: Any) -> bool:
    if isinstance(value, RawJSON):
        return False
    if isinstance(value, dict):
        vals: Iterable[Any] = value.values()
    elif isinstance(value, (list, tuple)):
        vals = value
    else:
        return True
    for v in vals:
        if isinstance(v, (dict, RawJSON)):
            return False
        if isinstance(v, (list, tuple)) and any(isinstance(x, (dict, list, tuple)) for x in v):
            return False
    return True


def _render(value: Any, depth: int, out: list[str]) -> None:
    if type(value) is RawJSON:
        out.append(value)
        return
    if not isinstance(value, (dict, list, tuple)) or not value or _is_flat(value):
        out.append(_COMPACT(value))
        return
    pad = "\n" + " " * (depth + 1)
    if isinstance(value, dict):
        out.append("{")
        first = True
        for key in sorted(value):
            out.append(pad if first else "," + pad)
            first = False
            out.append(_COMPACT(str(key)))
            out.append(": ")
            _render(value[key], depth + 1, out)
        out.append("\n" + " " * depth + "}")
    else:
        out.append("[")
        first = True
        for item in value:
            out.append(pad if first else "," + pad)
            first = False
            _render(item, depth + 1, out)
        out.append("\n" + " " * depth + "]")


def snapshot_to_dict(snapshot: ClusterSnapshot) -> dict[str, Any]:
    """The JSON-ready form of a snapshot (brokers, servers, topics and partitions sorted)."""
    return json.loads(snapshot_to_json(snapshot))


def zk_server_doc(s: Server) -> dict[str, Any]:
    """The JSON form of one ZooKeeper server (cluster files and plan files alike)."""
    return {
        "id": s.id,
        "host": s.host,
        "quorum_port": s.quorum_port,
        "election_port": s.election_port,
        "client_port": s.client_port,
        "client_host": s.client_host,
        "role": s.role,
    }


def _snapshot_doc(snapshot: ClusterSnapshot) -> dict[str, Any]:
    zk = snapshot.zookeeper
    cache: dict[tuple[int, ...], str] = {}
    return {
        "kind": SNAPSHOT_KIND,
        "format_version": snapshot.format_version,
        "cluster_id": snapshot.cluster_id,
        "controller_id": snapshot.controller_id,
        "zookeeper": {
            "connect": zk.connect,
            "config_version": zk.config_version,
            "reconfig_enabled": zk.reconfig_enabled,
            "servers": [zk_server_doc(s) for s in sorted(zk.servers, key=lambda s: s.id)],
            "server_versions": {str(k): zk.server_versions[k] for k in sorted(zk.server_versions)},
            "server_modes": {str(k): zk.server_modes[k] for k in sorted(zk.server_modes)},
        },
        "brokers": [
            {
                "id": b.id,
                "host": b.host,
                "port": b.port,
                "rack": b.rack,
                "version": b.version,
                # written only when known: a cluster file of an earlier kmigrate reads and writes back unchanged
                **({"inter_broker_protocol_version": b.protocol_version} if b.protocol_version is not None else {}),
                "zookeeper_connect": b.zookeeper_connect,
                "alive": b.alive,
            }
            for b in sorted(snapshot.brokers, key=lambda b: b.id)
        ],
        "topics": [
            {
                "name": t.name,
                "internal": t.internal,
                "configs": dict(t.configs),
                "partitions": [
                    # same text as the compact encoder gives for the dict, ten times faster
                    RawJSON(
                        f'{{"isr": {_ints_text(p.isr, cache)}, "leader": {_num(p.leader)}, '
                        f'"partition": {p.partition}, "replicas": {_ints_text(p.replicas, cache)}, '
                        f'"size_bytes": {_num(p.size_bytes)}}}'
                    )
                    for p in sorted(t.partitions, key=lambda p: p.partition)
                ],
            }
            for t in sorted(snapshot.topics, key=lambda t: t.name)
        ],
        "ongoing_reassignments": [
            {"topic": tp[0], "partition": tp[1], "adding": list(r[0]), "removing": list(r[1])}
            for tp, r in sorted(snapshot.ongoing_reassignments.items())
        ],
    }


def snapshot_to_json(snapshot: ClusterSnapshot) -> str:
    """Serialise a snapshot: deterministic (sorted keys and items), one partition per line."""
    return pretty_json(_snapshot_doc(snapshot))


class _Reader:
    """Reads a decoded JSON document, raising one-line BadInput errors naming the path."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, path: str, expected: str, got: Any) -> BadInput:
        shown = repr(got)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        return BadInput(
            f"cluster file {self.source}: {path}: expected {expected}, got {shown}: "
            "re-run kmigrate inspect to write a fresh file"
        )

    def get(self, obj: Any, key: str, path: str, required: bool = True) -> Any:
        if not isinstance(obj, dict):
            raise self.fail(path or "top level", "an object", obj)
        if key not in obj:
            if required:
                raise BadInput(
                    f"cluster file {self.source}: {path + '.' if path else ''}{key} is missing: "
                    "re-run kmigrate inspect to write a fresh file"
                )
            return None
        return obj[key]

    def int_(self, v: Any, path: str, optional: bool = False) -> Any:
        if v is None and optional:
            return None
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(path, "an integer", v)
        return v

    def str_(self, v: Any, path: str, optional: bool = False) -> Any:
        if v is None and optional:
            return None
        if not isinstance(v, str):
            raise self.fail(path, "a string", v)
        return v

    def bool_(self, v: Any, path: str, optional: bool = False) -> Any:
        if v is None and optional:
            return None
        if not isinstance(v, bool):
            raise self.fail(path, "true or false", v)
        return v

    def ints(self, v: Any, path: str) -> tuple[int, ...]:
        if not isinstance(v, list) or any(isinstance(x, bool) or not isinstance(x, int) for x in v):
            raise self.fail(path, "a list of integer ids", v)
        return tuple(v)

    def list_(self, v: Any, path: str) -> list[Any]:
        if not isinstance(v, list):
            raise self.fail(path, "a list", v)
        return v


def snapshot_from_json(text: str, source: str = "cluster.json") -> ClusterSnapshot:
    """Load a snapshot written by :func:`snapshot_to_json`.

    Raises :class:`BadInput` (one line, naming ``source`` and the field) for text that is not
    JSON, a JSON file that is not a kmigrate cluster file, or another ``format_version``.
    """
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise BadInput(f"cluster file {source} is not JSON ({exc}): give a file written by kmigrate inspect -o") from None
    if not isinstance(doc, dict) or doc.get("kind") != SNAPSHOT_KIND:
        raise BadInput(f"cluster file {source} is not a kmigrate cluster file: write one with kmigrate inspect -o {source}")
    version = doc.get("format_version")
    if version != FORMAT_VERSION:
        raise BadInput(
            f"cluster file {source} has format_version {version}; this kmigrate reads {FORMAT_VERSION}: "
            "re-run kmigrate inspect"
        )
    r = _Reader(source)
    zk_doc = r.get(doc, "zookeeper", "")
    servers = []
    for i, s in enumerate(r.list_(r.get(zk_doc, "servers", "zookeeper"), "zookeeper.servers")):
        p = f"zookeeper.servers[{i}]"
        role = r.str_(r.get(s, "role", p), p + ".role")
        if role not in ZK_ROLES:
            raise r.fail(p + ".role", "participant or observer", role)
        servers.append(
            Server(
                id=r.int_(r.get(s, "id", p), p + ".id"),
                host=r.str_(r.get(s, "host", p), p + ".host"),
                quorum_port=r.int_(r.get(s, "quorum_port", p), p + ".quorum_port"),
                election_port=r.int_(r.get(s, "election_port", p), p + ".election_port"),
                client_port=r.int_(r.get(s, "client_port", p), p + ".client_port", True),
                client_host=r.str_(r.get(s, "client_host", p, False), p + ".client_host", True),
                role=role,
            )
        )
    versions = _int_keyed(r, r.get(zk_doc, "server_versions", "zookeeper", False) or {}, "zookeeper.server_versions")
    modes = _int_keyed(r, r.get(zk_doc, "server_modes", "zookeeper", False) or {}, "zookeeper.server_modes")
    zk = ZkEnsemble(
        connect=r.str_(r.get(zk_doc, "connect", "zookeeper"), "zookeeper.connect"),
        config_version=r.int_(r.get(zk_doc, "config_version", "zookeeper", False), "zookeeper.config_version", True),
        servers=tuple(sorted(servers, key=lambda s: s.id)),
        reconfig_enabled=r.bool_(r.get(zk_doc, "reconfig_enabled", "zookeeper", False), "zookeeper.reconfig_enabled", True),
        server_versions=versions,
        server_modes=modes,
    )
    brokers = []
    for i, b in enumerate(r.list_(r.get(doc, "brokers", ""), "brokers")):
        p = f"brokers[{i}]"
        brokers.append(
            Broker(
                id=r.int_(r.get(b, "id", p), p + ".id"),
                host=r.str_(r.get(b, "host", p), p + ".host"),
                port=r.int_(r.get(b, "port", p), p + ".port"),
                rack=r.str_(r.get(b, "rack", p, False), p + ".rack", True),
                version=r.str_(r.get(b, "version", p, False), p + ".version", True),
                zookeeper_connect=r.str_(r.get(b, "zookeeper_connect", p, False), p + ".zookeeper_connect", True),
                alive=bool(r.bool_(r.get(b, "alive", p, False), p + ".alive", True) is not False),
                protocol_version=r.str_(r.get(b, "inter_broker_protocol_version", p, False),
                                        p + ".inter_broker_protocol_version", True),
            )
        )
    topics = []
    for i, t in enumerate(r.list_(r.get(doc, "topics", ""), "topics")):
        p = f"topics[{i}]"
        name = r.str_(r.get(t, "name", p), p + ".name")
        configs = r.get(t, "configs", p, False) or {}
        if not isinstance(configs, dict) or any(not isinstance(v, str) for v in configs.values()):
            raise r.fail(p + ".configs", "an object of string values", configs)
        parts = []
        for j, q in enumerate(r.list_(r.get(t, "partitions", p), p + ".partitions")):
            pp = f"{p}.partitions[{j}]"
            if not isinstance(q, dict):
                raise r.fail(pp, "an object", q)
            try:
                parts.append(
                    Partition(
                        r.int_(q["partition"], pp + ".partition"),
                        r.ints(q["replicas"], pp + ".replicas"),
                        r.ints(q["isr"], pp + ".isr"),
                        r.int_(q.get("leader"), pp + ".leader", True),
                        r.int_(q.get("size_bytes"), pp + ".size_bytes", True),
                    )
                )
            except KeyError as exc:
                raise BadInput(
                    f"cluster file {source}: {pp}.{exc.args[0]} is missing: re-run kmigrate inspect to write a fresh file"
                ) from None
        parts.sort(key=lambda q: q.partition)
        topics.append(
            Topic(
                name=name,
                internal=bool(r.bool_(r.get(t, "internal", p, False), p + ".internal", True)),
                configs=dict(configs),
                partitions=tuple(parts),
            )
        )
    ongoing: dict[tuple[str, int], Reassignment] = {}
    for i, o in enumerate(r.list_(r.get(doc, "ongoing_reassignments", "", False) or [], "ongoing_reassignments")):
        p = f"ongoing_reassignments[{i}]"
        key = (r.str_(r.get(o, "topic", p), p + ".topic"), r.int_(r.get(o, "partition", p), p + ".partition"))
        ongoing[key] = (r.ints(r.get(o, "adding", p), p + ".adding"), r.ints(r.get(o, "removing", p), p + ".removing"))
    return ClusterSnapshot(
        format_version=FORMAT_VERSION,
        cluster_id=r.str_(r.get(doc, "cluster_id", "", False), "cluster_id", True),
        controller_id=r.int_(r.get(doc, "controller_id", "", False), "controller_id", True),
        zookeeper=zk,
        brokers=tuple(sorted(brokers, key=lambda b: b.id)),
        topics=tuple(sorted(topics, key=lambda t: t.name)),
        ongoing_reassignments=ongoing,
    )


def _int_keyed(r: _Reader, obj: Any, path: str) -> dict[int, str]:
    if not isinstance(obj, dict):
        raise r.fail(path, "an object", obj)
    out: dict[int, str] = {}
    for k, v in obj.items():
        try:
            key = int(k)
        except ValueError:
            raise r.fail(path, "server ids as keys", k) from None
        out[key] = r.str_(v, f"{path}.{k}")
    return out
