"""The migration playbook: a YAML file the operator writes (copy one from ``playbooks/``).

Parsing is validated with the JSON Schema in ``migrate/core/schemas/playbook.schema.json``
(Draft 2020-12, unknown fields refused). Every problem becomes one :class:`BadInput` line
that names the file and the field path, e.g.::

    playbook sandbox.yaml: brokers.mapping.1: expected an integer broker id, got 'four'

Broker ids used as YAML keys may be written as ints or strings; they are normalised to int.
Apart from :func:`load_playbook` (which reads the playbook and its ``command_config`` file),
nothing here does I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, Mapping

import jsonschema
import yaml

from migrate.errors import BadInput
from migrate.core.model import DEFAULT_RACK_SEPARATOR
from migrate.core.zookeeper.config import PARTICIPANT, Server
from migrate.core.units import parse_connect, parse_rate
from migrate.core.ledger import DEFAULT_TOPIC

DEFAULT_THROTTLE_BYTES_PER_S = 50_000_000
DEFAULT_MAX_PARTITION_MOVES_PER_BROKER = 5


# --------------------------------------------------------------------------- dataclasses


@dataclass(frozen=True)
class KafkaSettings:
    """How to reach Kafka.

    ``client`` holds Kafka client settings written in the playbook; ``command_config`` is the
    path of a Java properties file (as written; :func:`load_playbook` makes it absolute,
    relative to the playbook's folder) and ``command_config_properties`` its content, read by
    :func:`load_playbook`. :meth:`client_settings` merges both (``client`` wins).
    """

    bootstrap_servers: str
    client: Mapping[str, Any] = field(default_factory=dict)
    command_config: str | None = None
    command_config_properties: Mapping[str, str] = field(default_factory=dict)

    def client_settings(self) -> dict[str, Any]:
        """Properties file first, then ``client``, then ``bootstrap.servers``."""
        merged: dict[str, Any] = dict(self.command_config_properties)
        merged.update(self.client)
        merged["bootstrap.servers"] = self.bootstrap_servers
        return merged


@dataclass(frozen=True)
class ZooKeeperSettings:
    """``connect``: the current connect string (chroot allowed); ``add``: servers that join
    (their final role is participant; they start as observers); ``remove``: ids that leave."""

    connect: str
    add: tuple[Server, ...] = ()
    remove: tuple[int, ...] = ()

    @property
    def chroot(self) -> str:
        return parse_connect(self.connect)[1]

    @property
    def reading_connect(self) -> str:
        """``connect`` with the joining servers added: some of them answer before, during and after
        the ZooKeeper swap (for reads only; chroot kept)."""
        hosts, chroot = self.connect.strip(), ""
        if "/" in hosts:
            hosts, chroot = hosts.split("/", 1)
            chroot = "/" + chroot
        named = hosts.split(",")
        named += [a for a in (s.client_address for s in self.add) if a and a not in named]
        return ",".join(named) + chroot


@dataclass(frozen=True)
class NewBroker:
    """Where a new broker lives: its availability domain and fault domain."""

    availability_domain: str
    fault_domain: str | None = None

    def rack(self, separator: str = DEFAULT_RACK_SEPARATOR) -> str:
        """The ``broker.rack`` to configure, e.g. ``AD-1/FD-2``."""
        if self.fault_domain is None:
            return self.availability_domain
        return f"{self.availability_domain}{separator}{self.fault_domain}"


@dataclass(frozen=True)
class BrokerSettings:
    """``mapping``: old broker id -> new broker id; ``new``: new broker id -> where it lives;
    ``keep``: brokers that stay in the cluster (not retired, not mapped)."""

    mapping: Mapping[int, int] = field(default_factory=dict)
    new: Mapping[int, NewBroker] = field(default_factory=dict)
    keep: tuple[int, ...] = ()


@dataclass(frozen=True)
class MigrationSettings:
    """How the data moves. ``max_partition_moves_cluster`` ``None`` means no cluster-wide cap
    (only the per-broker one)."""

    throttle_bytes_per_s: int = DEFAULT_THROTTLE_BYTES_PER_S
    bookkeeping_topic: str = DEFAULT_TOPIC
    max_partition_moves_per_broker: int = DEFAULT_MAX_PARTITION_MOVES_PER_BROKER
    max_partition_moves_cluster: int | None = None
    rack_separator: str = DEFAULT_RACK_SEPARATOR
    throttle_auto: bool = False  # migration.throttle: auto (the adaptive throttle; needs latency_budget)
    latency_budget: str | None = None  # migration.latency_budget, e.g. "50ms" (checked with --throttle auto)


DEFAULT_CONTROLLER_LISTENER = "CONTROLLER"
DEFAULT_CONTROLLER_PORT = 9093
DEFAULT_METADATA_LOG_DIR = "/var/lib/kafka/kraft-metadata"
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True)
class KraftController:
    """One planned KRaft controller: its ``node.id``, the host it runs on and its controller listener's port."""

    id: int
    host: str
    port: int = DEFAULT_CONTROLLER_PORT

    @property
    def address(self) -> str:
        """``host:port`` (an IPv6 host in brackets)."""
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def voter(self) -> str:
        """This controller in ``controller.quorum.voters`` form: ``id@host:port``."""
        return f"{self.id}@{self.address}"


@dataclass(frozen=True)
class KraftSettings:
    """The ``kraft:`` section: where ZooKeeper mode goes to KRaft (KIP-866). ``controllers`` sorted by id,
    ids distinct; ``listener_name`` the controller listener (``controller.listener.names``), its
    ``security_protocol`` (``listener.security.protocol.map``) and ``metadata_log_dir`` (``metadata.log.dir``)."""

    controllers: tuple[KraftController, ...]
    listener_name: str = DEFAULT_CONTROLLER_LISTENER
    listener_port: int = DEFAULT_CONTROLLER_PORT
    security_protocol: str = "PLAINTEXT"
    metadata_log_dir: str = DEFAULT_METADATA_LOG_DIR

    @property
    def controller_ids(self) -> tuple[int, ...]:
        return tuple(c.id for c in self.controllers)

    @property
    def quorum_voters(self) -> str:
        """``controller.quorum.voters``: ``3001@c1:9093,3002@c2:9093,...``."""
        return ",".join(c.voter for c in self.controllers)

    def controller(self, node_id: int) -> KraftController | None:
        return next((c for c in self.controllers if c.id == node_id), None)


@dataclass(frozen=True)
class ControllerSettings:
    """The ``controllers:`` section: a KRaft cluster's controller quorum moving to new machines (KIP-853).
    ``voters``: the controllers that are voters now; ``add``: the new ones (they join as observers, then become
    voters); ``remove``: ids of ``voters`` that leave; ``listener_name``: the controller listener. Sorted by id."""

    voters: tuple[KraftController, ...]
    add: tuple[KraftController, ...] = ()
    remove: tuple[int, ...] = ()
    listener_name: str = DEFAULT_CONTROLLER_LISTENER

    @property
    def staying(self) -> tuple[KraftController, ...]:
        """The voters after the move: the current ones not removed, then the new ones."""
        return tuple(c for c in self.voters if c.id not in self.remove) + self.add

    @property
    def bootstrap_now(self) -> str:
        """``controller.quorum.bootstrap.servers`` (and ``--bootstrap-controller``) of the quorum now."""
        return ",".join(c.address for c in self.voters)

    @property
    def bootstrap_during(self) -> str:
        """``controller.quorum.bootstrap.servers`` while the voters change: the current and the new controllers."""
        return ",".join(c.address for c in self.voters + self.add)

    @property
    def bootstrap_after(self) -> str:
        """``controller.quorum.bootstrap.servers`` after the move: the voters that stay, the new ones."""
        return ",".join(c.address for c in self.staying)


@dataclass(frozen=True)
class Playbook:
    """A validated playbook. ``source`` is the name used in messages (the file name); ``kraft`` is
    ``None`` when the playbook has no ``kraft:`` section; ``zookeeper`` is ``None`` when it has no
    ``zookeeper:`` section (a KRaft cluster: no ZooKeeper to read or change); ``controllers`` is ``None`` when it has
    no ``controllers:`` section (a KRaft cluster's controller quorum moving to new machines)."""

    source: str
    kafka: KafkaSettings
    zookeeper: ZooKeeperSettings | None
    brokers: BrokerSettings = field(default_factory=BrokerSettings)
    migration: MigrationSettings = field(default_factory=MigrationSettings)
    kraft: KraftSettings | None = None
    controllers: ControllerSettings | None = None


# --------------------------------------------------------------------------- throttle

# --------------------------------------------------------------------------- YAML + schema


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys (PyYAML silently keeps the last one)."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    result: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "a key is not a plain value", key_node.start_mark
            ) from None
        norm = str(key)
        if any(str(k) == norm for k in result):
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} appears twice", key_node.start_mark
            )
        result[key] = loader.construct_object(value_node, deep=deep)
    return result


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


@lru_cache(maxsize=1)
def playbook_schema() -> dict[str, Any]:
    """The playbook JSON Schema (Draft 2020-12)."""
    text = resources.files("migrate.core").joinpath("schemas/playbook.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


@lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft202012Validator:
    schema = playbook_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _stringify_keys(value: Any) -> Any:
    """JSON-shaped copy: every mapping key becomes a string (YAML may give ints)."""
    if isinstance(value, dict):
        return {("null" if k is None else str(k).lower() if isinstance(k, bool) else str(k)): _stringify_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_stringify_keys(v) for v in value]
    return value


def _path(parts: Any) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + str(p)
    return out


def _shown(value: Any) -> str:
    if isinstance(value, (dict, list)):
        kind = "a mapping" if isinstance(value, dict) else "a list"
        return kind
    if value is None:
        return "nothing (null)"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _schema_error_message(error: jsonschema.ValidationError) -> str:
    path = _path(error.absolute_path)
    desc = error.schema.get("description", "a valid value") if isinstance(error.schema, dict) else "a valid value"
    v = error.validator
    if v == "additionalProperties" and error.schema.get("additionalProperties") is False:
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        where = f"{path}: " if path else ""
        return f"{where}unknown field {extra[0]!r} (allowed: {', '.join(allowed)})"
    if v == "required":
        missing = error.message.split("'")[1] if "'" in error.message else str(error.validator_value)
        return f"{path or 'top level'}: missing required field {missing!r}"
    if "propertyNames" in error.schema_path:
        return f"{path}: key {_shown(error.instance)} is not {desc}"
    if v in ("minimum", "maximum"):
        return f"{path}: expected {desc}, got {_shown(error.instance)}"
    return f"{path or 'top level'}: expected {desc}, got {_shown(error.instance)}"


def _best_error(errors: list[jsonschema.ValidationError]) -> jsonschema.ValidationError:
    # deepest path first, then document order: the most precise message
    return sorted(errors, key=lambda e: (-len(e.absolute_path), [str(p) for p in e.absolute_path]))[0]


# --------------------------------------------------------------------------- parse


def parse_playbook(text: str, source_name: str = "playbook") -> Playbook:
    """Parse and validate a playbook's YAML text.

    ``command_config`` is kept as written and not read here (see :func:`load_playbook`).
    Raises :class:`BadInput` with one line: ``playbook SOURCE: FIELD.PATH: what is wrong``.
    """
    where = f"playbook {source_name}"
    try:
        raw = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        pos = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = exc.problem or exc.context or "unreadable"
        raise BadInput(f"{where} is not valid YAML{pos}: {problem}: fix the file") from None
    except yaml.YAMLError as exc:
        raise BadInput(f"{where} is not valid YAML: {str(exc).splitlines()[0]}: fix the file") from None
    if raw is None:
        raise BadInput(f"{where} is empty: copy one from playbooks/ and edit it")
    if not isinstance(raw, dict):
        raise BadInput(f"{where} is not a YAML mapping (it is {_shown(raw)}): start it with 'kafka:'")
    doc = _stringify_keys(raw)
    errors = list(_validator().iter_errors(doc))
    if errors:
        raise BadInput(f"{where}: {_schema_error_message(_best_error(errors))}")
    return _build(doc, where)


def _fail(where: str, path: str, message: str) -> BadInput:
    return BadInput(f"{where}: {path}: {message}")


def _build(doc: dict[str, Any], where: str) -> Playbook:
    k = doc["kafka"]
    kafka = KafkaSettings(
        bootstrap_servers=",".join(s.strip() for s in k["bootstrap_servers"].split(",")),
        client=dict(k.get("client") or {}),
        command_config=k.get("command_config"),
    )

    zookeeper = _build_zookeeper(doc["zookeeper"], where) if doc.get("zookeeper") is not None else None
    if zookeeper is None and doc.get("kraft") is not None:
        raise _fail(where, "kraft", "a ZooKeeper-to-KRaft migration needs the zookeeper: section (connect: the ensemble "
                                    "the brokers use now, chroot included): add it")

    b = doc.get("brokers") or {}
    mapping: dict[int, int] = {}
    for key, value in (b.get("mapping") or {}).items():
        mapping[int(key)] = int(value)
    new: dict[int, NewBroker] = {}
    sep = (doc.get("migration") or {}).get("rack_separator", DEFAULT_RACK_SEPARATOR)
    for key, value in (b.get("new") or {}).items():
        ad = value["availability_domain"].strip()
        fd = value.get("fault_domain")
        fd = fd.strip() if isinstance(fd, str) else None
        for fname, dom in (("availability_domain", ad), ("fault_domain", fd)):
            if dom is not None and (not dom or sep in dom):
                raise _fail(where, f"brokers.new.{key}.{fname}", f"{dom!r} must be non-empty and must not contain the rack separator {sep!r}")
        new[int(key)] = NewBroker(ad, fd or None)
    keep: list[int] = []
    for i, bid in enumerate(b.get("keep") or []):
        bid = int(bid)
        if bid in keep:
            raise _fail(where, f"brokers.keep[{i}]", f"broker {bid} is listed twice")
        if bid in mapping:
            raise _fail(where, f"brokers.keep[{i}]", f"broker {bid} is also a key of brokers.mapping: a broker either stays or is replaced")
        keep.append(bid)
    for nid in new:
        if nid in mapping:
            raise _fail(where, f"brokers.new.{nid}", f"broker {nid} is also a key of brokers.mapping (an old broker): use a new id")

    m = doc.get("migration") or {}
    throttle_raw = m.get("throttle", DEFAULT_THROTTLE_BYTES_PER_S)
    throttle_auto = isinstance(throttle_raw, str) and throttle_raw.strip().lower() == "auto"
    try:
        throttle = DEFAULT_THROTTLE_BYTES_PER_S if throttle_auto else parse_rate(throttle_raw)
    except BadInput as exc:
        raise _fail(where, "migration.throttle", exc.message) from None
    budget_raw = m.get("latency_budget")
    migration = MigrationSettings(
        throttle_auto=throttle_auto,
        latency_budget=None if budget_raw is None else str(budget_raw),
        throttle_bytes_per_s=throttle,
        bookkeeping_topic=m.get("bookkeeping_topic", DEFAULT_TOPIC),
        max_partition_moves_per_broker=m.get("max_partition_moves_per_broker", DEFAULT_MAX_PARTITION_MOVES_PER_BROKER),
        max_partition_moves_cluster=m.get("max_partition_moves_cluster"),
        rack_separator=sep,
    )
    if migration.bookkeeping_topic in (".", ".."):
        raise _fail(where, "migration.bookkeeping_topic", "'.' and '..' are not topic names")
    kraft = _build_kraft(doc["kraft"], where) if doc.get("kraft") is not None else None
    controllers = _build_controllers(doc["controllers"], where) if doc.get("controllers") is not None else None
    if controllers is not None and (zookeeper is not None or kraft is not None):
        raise _fail(where, "controllers", "moves the controller quorum of a KRaft cluster; this playbook's "
                                          f"{'kraft' if kraft is not None else 'zookeeper'}: section says the cluster "
                                          "is in ZooKeeper mode: finish the move to KRaft first, then a playbook "
                                          "without it")
    controller_ids = {c.id for c in controllers.voters + controllers.add} if controllers is not None else set()
    for bid in sorted({*mapping, *mapping.values(), *new, *keep} & controller_ids):
        raise _fail(where, "controllers", f"id {bid} is both a controller and a broker: a KRaft node id is one or "
                                          "the other (dedicated controllers)")
    return Playbook(
        source=where[len("playbook ") :],
        kafka=kafka,
        zookeeper=zookeeper,
        brokers=BrokerSettings(mapping=mapping, new=new, keep=tuple(sorted(keep))),
        migration=migration,
        kraft=kraft,
        controllers=controllers,
    )


def _build_zookeeper(z: dict[str, Any], where: str) -> ZooKeeperSettings:
    """The ``zookeeper:`` section (already schema-checked): the connect string parses, each server once."""
    try:
        parse_connect(z["connect"])
    except BadInput as exc:
        raise _fail(where, "zookeeper.connect", exc.message) from None
    add: list[Server] = []
    seen: dict[int, int] = {}
    for i, s in enumerate(z.get("add") or []):
        sid = s["id"]
        if sid in seen:
            raise _fail(where, f"zookeeper.add[{i}].id", f"server id {sid} is listed twice (also zookeeper.add[{seen[sid]}])")
        seen[sid] = i
        add.append(
            Server(
                id=sid,
                host=s["host"].strip("[]"),
                quorum_port=s.get("quorum_port", 2888),
                election_port=s.get("election_port", 3888),
                client_port=s.get("client_port", 2181),
                client_host=(s["client_host"].strip("[]") if s.get("client_host") else None),
                role=PARTICIPANT,
            )
        )
    for i, s in enumerate(add):
        if s.quorum_port == s.election_port or s.client_port in (s.quorum_port, s.election_port):
            raise _fail(where, f"zookeeper.add[{i}]", f"server {s.id} uses one port twice: give distinct quorum_port, election_port and client_port")
    remove: list[int] = []
    for i, sid in enumerate(z.get("remove") or []):
        if sid in remove:
            raise _fail(where, f"zookeeper.remove[{i}]", f"server id {sid} is listed twice")
        if sid in seen:
            raise _fail(where, f"zookeeper.remove[{i}]", f"server id {sid} is also in zookeeper.add: a server cannot join and leave")
        remove.append(sid)
    return ZooKeeperSettings(connect=z["connect"].strip(), add=tuple(add), remove=tuple(sorted(remove)))


def _build_kraft(k: dict[str, Any], where: str) -> KraftSettings:
    """The ``kraft:`` section (already schema-checked): ids and addresses distinct, the listener port not
    reused as another controller's."""
    port = k.get("listener_port", DEFAULT_CONTROLLER_PORT)
    controllers: list[KraftController] = []
    ids: dict[int, int] = {}
    addresses: dict[str, int] = {}
    for i, c in enumerate(k["controllers"]):
        ctrl = KraftController(id=c["id"], host=c["host"].strip("[]"), port=c.get("port", port))
        if ctrl.id in ids:
            raise _fail(where, f"kraft.controllers[{i}].id",
                        f"controller id {ctrl.id} is listed twice (also kraft.controllers[{ids[ctrl.id]}]): give each controller its own node.id")
        if ctrl.address in addresses:
            raise _fail(where, f"kraft.controllers[{i}]",
                        f"{ctrl.address} is also kraft.controllers[{addresses[ctrl.address]}]: give each controller its own host or port")
        ids[ctrl.id] = i
        addresses[ctrl.address] = i
        controllers.append(ctrl)
    return KraftSettings(
        controllers=tuple(sorted(controllers, key=lambda c: c.id)),
        listener_name=k.get("listener_name", DEFAULT_CONTROLLER_LISTENER),
        listener_port=port,
        security_protocol=k.get("security_protocol", "PLAINTEXT"),
        metadata_log_dir=k.get("metadata_log_dir", DEFAULT_METADATA_LOG_DIR).rstrip("/") or "/",
    )


def _build_controllers(c: dict[str, Any], where: str) -> ControllerSettings:
    """The ``controllers:`` section (already schema-checked): each id and address once, ``add`` new ids,
    ``remove`` ids of ``voters``, at least one voter left."""
    ids: dict[int, str] = {}
    addresses: dict[str, str] = {}
    lists: dict[str, list[KraftController]] = {"voters": [], "add": []}
    for key in ("voters", "add"):
        for i, n in enumerate(c.get(key) or []):
            node = KraftController(id=n["id"], host=n["host"].strip("[]"), port=n.get("port", DEFAULT_CONTROLLER_PORT))
            here = f"controllers.{key}[{i}]"
            if node.id in ids:
                raise _fail(where, f"{here}.id", f"controller id {node.id} is listed twice (also {ids[node.id]}): "
                                                 "a new controller needs an id no controller has")
            if node.address in addresses:
                raise _fail(where, here, f"{node.address} is also {addresses[node.address]}: give each controller its "
                                         "own host or port")
            ids[node.id], addresses[node.address] = here, here
            lists[key].append(node)
    voters = {n.id for n in lists["voters"]}
    remove: list[int] = []
    for i, nid in enumerate(c.get("remove") or []):
        if nid in remove:
            raise _fail(where, f"controllers.remove[{i}]", f"controller id {nid} is listed twice")
        if nid not in voters:
            raise _fail(where, f"controllers.remove[{i}]", f"controller {nid} is not in controllers.voters: only a "
                                                          "voter can be removed")
        remove.append(nid)
    if voters and voters <= set(remove) and not lists["add"]:
        raise _fail(where, "controllers.remove", "removes every voter and adds none: the quorum needs a voter")
    return ControllerSettings(voters=tuple(sorted(lists["voters"], key=lambda n: n.id)),
                              add=tuple(sorted(lists["add"], key=lambda n: n.id)), remove=tuple(sorted(remove)),
                              listener_name=c.get("listener_name", DEFAULT_CONTROLLER_LISTENER))
