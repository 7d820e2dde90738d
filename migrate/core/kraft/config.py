"""The server.properties of each step of a ZooKeeper-to-KRaft migration (KIP-866), pure.

Kafka's documented procedure (3.9), with what each step's config must hold:

1. **Controllers** (:func:`controller_config`), formatted with the cluster id read from ``/cluster/id``
   (:func:`format_command`): ``process.roles=controller``, ``node.id``, a *static* quorum
   (``controller.quorum.voters``: every upstream migration test uses it; a dynamic quorum during a
   migration is unproven), the controller listener and its protocol, the migration flag, the brokers'
   ``zookeeper.connect`` (with its chroot) and every other ``zookeeper.*`` setting of theirs
   (``zookeeper.set.acl``, ``zookeeper.ssl.*``, ``zookeeper.clientCnxnSocket``: a controller without them
   fails with NoAuthException or cannot connect), the brokers' inter-broker listener and its client
   security (the controller sends LeaderAndIsr/UpdateMetadata to ZooKeeper-mode brokers on it), its own
   ``log.dirs`` (the metadata log).
2. **Broker roll 1** (:func:`broker_migration_settings`): the migration flag, the quorum, the controller
   listener name and CONTROLLER in ``listener.security.protocol.map``, and the two follower fetch settings that
   shorten the rolls' produce stalls unless the broker sets them (:func:`fetch_settings`); everything else stays.
3. **Broker roll 2** (:func:`broker_kraft_config`): ``process.roles=broker``, ``node.id`` = the old
   ``broker.id``; no ``broker.id``, no ``zookeeper.*``, no migration flag, no
   ``inter.broker.protocol.version``, no ``control.plane.listener.name``; ``StandardAuthorizer`` in place of
   ``AclAuthorizer`` (``super.users`` and ``allow.everyone.if.no.acl.found`` kept: it reads both).
4. **Finalize** (:func:`controller_finalized_config`): the controllers without the flag and ZooKeeper.

Configs are ordered ``dict[str, str]`` (insertion order is the order printed); :func:`lines` renders them as
``server.properties`` lines. Settings kmigrate cannot render (a JAAS file given to the JVM with
``-Djava.security.auth.login.config``, a controller's own keystore) come back as notes
(:func:`controller_notes`). No I/O, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from migrate.core.plan.document import ROLL_FETCH_SETTINGS
from migrate.core.playbook import DEFAULT_METADATA_LOG_DIR
from migrate.errors import BadInput

CONTROLLER_LISTENER = "CONTROLLER"
MIGRATION_FLAG = "zookeeper.metadata.migration.enable"
SENSITIVE = "<sensitive: copy it from the broker's server.properties>"
"""What a broker setting hidden by DescribeConfigs (passwords, JAAS) reads in the configs kmigrate renders."""
QUORUM_VOTERS = "controller.quorum.voters"
LISTENER_NAMES = "controller.listener.names"
PROTOCOL_MAP = "listener.security.protocol.map"
ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
DEFAULT_PROTOCOL_MAP = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
"""Kafka's default ``listener.security.protocol.map``: what a broker without one uses."""
DEFAULT_METADATA_DIR = DEFAULT_METADATA_LOG_DIR  # one default everywhere: the playbook's kraft.metadata_log_dir
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

# Broker settings a KRaft broker must not carry (roll 2), besides every zookeeper.* key.
ZOOKEEPER_ONLY_BROKER_KEYS = (
    "broker.id", "broker.id.generation.enable", "reserved.broker.max.id", "inter.broker.protocol.version",
    "control.plane.listener.name", MIGRATION_FLAG,
)
# The client side of the inter-broker listener a migrating controller needs to reach ZooKeeper-mode brokers.
_INTER_BROKER_CLIENT_KEYS = (
    "security.inter.broker.protocol", "sasl.enabled.mechanisms", "sasl.mechanism.inter.broker.protocol",
    "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.type", "ssl.endpoint.identification.algorithm",
    "ssl.protocol", "ssl.enabled.protocols", "ssl.cipher.suites",
)
_KEYSTORE_KEYS = ("ssl.keystore.location", "ssl.keystore.password", "ssl.keystore.type", "ssl.key.password")


@dataclass(frozen=True)
class Controller:
    """One new KRaft controller: its ``node.id``, the host and port of its controller listener, its metadata log dir."""

    id: int
    host: str
    port: int
    log_dir: str = DEFAULT_METADATA_DIR

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host and not self.host.startswith("[") else self.host
        return f"{host}:{self.port}"

    @property
    def voter(self) -> str:
        """``id@host:port``, one entry of ``controller.quorum.voters``."""
        return f"{self.id}@{self.address}"


@dataclass(frozen=True)
class KraftInputs:
    """What was read from the cluster and given by the operator.

    ``brokers``: each broker's static ``server.properties`` by ``broker.id`` (as read: DescribeConfigs' static
    values or the files); ``controllers``: the new controllers; ``controller_protocol``: the security protocol
    of the controller listener (PLAINTEXT unless the operator secures it)."""

    cluster_id: str
    brokers: Mapping[int, Mapping[str, str]]
    controllers: tuple[Controller, ...]
    listener_name: str = CONTROLLER_LISTENER
    controller_protocol: str = "PLAINTEXT"
    extra_controller_settings: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.controllers:
            raise BadInput("no KRaft controller given: name at least one (id, host and port of its controller listener)")
        ids = [c.id for c in self.controllers]
        if len(set(ids)) != len(ids):
            raise BadInput(f"controller ids repeat in {ids}: give each controller its own node.id")
        clash = sorted(set(ids) & set(self.brokers))
        if clash:
            raise BadInput(f"controller id {clash[0]} is also a broker id: controllers need node.ids no broker uses")
        if self.controller_protocol not in PROTOCOLS:
            raise BadInput(f"controller listener protocol {self.controller_protocol!r}: choose one of {', '.join(PROTOCOLS)}")
        if not self.listener_name or "," in self.listener_name or ":" in self.listener_name:
            raise BadInput(f"controller listener name {self.listener_name!r} must be one name, like CONTROLLER")

    def broker(self, broker_id: int) -> Mapping[str, str]:
        if broker_id not in self.brokers:
            raise BadInput(f"broker {broker_id} is not a broker of this cluster ({sorted(self.brokers)})")
        return self.brokers[broker_id]

    def controller(self, controller_id: int) -> Controller:
        for c in self.controllers:
            if c.id == controller_id:
                return c
        raise BadInput(f"controller {controller_id} is not one of the controllers {[c.id for c in self.controllers]}")

    @property
    def reference_broker(self) -> Mapping[str, str]:
        """The broker whose ZooKeeper and inter-broker settings the controllers carry: the lowest id (every broker
        must agree on them; the pre-check says so when they do not)."""
        if not self.brokers:
            raise BadInput("no broker config was read: the controllers' ZooKeeper settings come from the brokers'")
        return self.brokers[min(self.brokers)]


# ------------------------------------------------------------------ pieces
def quorum_voters(controllers: tuple[Controller, ...]) -> str:
    """``controller.quorum.voters``, in the order given.

    >>> quorum_voters((Controller(3000, "c1", 9093), Controller(3001, "::1", 9094)))
    '3000@c1:9093,3001@[::1]:9094'
    """
    return ",".join(c.voter for c in controllers)


def parse_protocol_map(text: str) -> list[tuple[str, str]]:
    """``A:B,C:D`` -> ``[("A", "B"), ("C", "D")]``; BadInput on a malformed entry."""
    pairs = []
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        name, sep, proto = entry.partition(":")
        if not sep or not name.strip() or not proto.strip():
            raise BadInput(f"listener.security.protocol.map entry {entry!r} is not NAME:PROTOCOL")
        pairs.append((name.strip(), proto.strip()))
    return pairs


def protocol_map(props: Mapping[str, str], listener: str, protocol: str) -> str:
    """The broker's ``listener.security.protocol.map`` (Kafka's default when unset) with ``listener`` mapped to ``protocol``.

    >>> protocol_map({}, "CONTROLLER", "PLAINTEXT")
    'PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT'
    >>> protocol_map({"listener.security.protocol.map": "INTERNAL:SSL,CONTROLLER:SSL"}, "CONTROLLER", "PLAINTEXT")
    'INTERNAL:SSL,CONTROLLER:PLAINTEXT'
    """
    pairs = parse_protocol_map(props.get(PROTOCOL_MAP) or DEFAULT_PROTOCOL_MAP)
    if any(n.upper() == listener.upper() for n, _ in pairs):
        pairs = [(n, protocol if n.upper() == listener.upper() else p) for n, p in pairs]
    else:
        pairs.append((listener, protocol))
    return ",".join(f"{n}:{p}" for n, p in pairs)


def inter_broker_listener(props: Mapping[str, str]) -> str:
    """The name of the brokers' inter-broker listener: ``inter.broker.listener.name``, else the listener named
    after ``security.inter.broker.protocol``, else PLAINTEXT (Kafka's rule).

    >>> inter_broker_listener({"security.inter.broker.protocol": "SASL_SSL"})
    'SASL_SSL'
    """
    return props.get("inter.broker.listener.name") or props.get("security.inter.broker.protocol") or "PLAINTEXT"


def listener_protocol(props: Mapping[str, str], listener: str) -> str:
    """The security protocol of ``listener`` in the broker's map (the listener's own name when unmapped)."""
    for name, proto in parse_protocol_map(props.get(PROTOCOL_MAP) or DEFAULT_PROTOCOL_MAP):
        if name.upper() == listener.upper():
            return proto
    return listener.upper()


def zookeeper_settings(props: Mapping[str, str]) -> dict[str, str]:
    """Every ``zookeeper.*`` setting of a broker but the migration flag: ``zookeeper.connect`` (with its chroot)
    first, then the others by name (``zookeeper.set.acl``, ``zookeeper.ssl.*``, ``zookeeper.clientCnxnSocket``...).

    >>> zookeeper_settings({"zookeeper.set.acl": "true", "zookeeper.connect": "z1:2181/kafka", "broker.id": "1"})
    {'zookeeper.connect': 'z1:2181/kafka', 'zookeeper.set.acl': 'true'}
    """
    if not props.get("zookeeper.connect"):
        raise BadInput("the broker config read has no zookeeper.connect: read it from a ZooKeeper-mode broker")
    out = {"zookeeper.connect": props["zookeeper.connect"]}
    for key in sorted(props):
        if key.startswith("zookeeper.") and key not in out and key != MIGRATION_FLAG:
            out[key] = props[key]
    return out


def _quorum(inputs: KraftInputs) -> dict[str, str]:
    return {QUORUM_VOTERS: quorum_voters(inputs.controllers), LISTENER_NAMES: inputs.listener_name}


# ------------------------------------------------------------- controllers
def controller_config(inputs: KraftInputs, controller_id: int) -> dict[str, str]:
    """A migration controller's ``server.properties`` (phase 2).

    >>> ins = KraftInputs("q1Sh-9_ISia_zwGINzRvyQ", {1: {"zookeeper.connect": "z1:2181/kafka",
    ...     "listeners": "PLAINTEXT://b1:9092"}}, (Controller(3000, "c1", 9093, "/data/kraft"),))
    >>> for line in lines(controller_config(ins, 3000)): print(line)
    process.roles=controller
    node.id=3000
    controller.quorum.voters=3000@c1:9093
    controller.listener.names=CONTROLLER
    listeners=CONTROLLER://c1:9093
    listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
    inter.broker.listener.name=PLAINTEXT
    log.dirs=/data/kraft
    zookeeper.metadata.migration.enable=true
    zookeeper.connect=z1:2181/kafka
    """
    me = inputs.controller(controller_id)
    ref = inputs.reference_broker
    ibl = inter_broker_listener(ref)
    props = {"process.roles": "controller", "node.id": str(me.id), **_quorum(inputs),
             "listeners": f"{inputs.listener_name}://{me.address}",
             PROTOCOL_MAP: f"{inputs.listener_name}:{inputs.controller_protocol},{ibl}:{listener_protocol(ref, ibl)}",
             "inter.broker.listener.name": ibl}
    props.update(_inter_broker_client(ref, ibl))
    props["log.dirs"] = me.log_dir
    props[MIGRATION_FLAG] = "true"
    props.update(zookeeper_settings(ref))
    props.update(inputs.extra_controller_settings)
    return props


def _inter_broker_client(ref: Mapping[str, str], ibl: str) -> dict[str, str]:
    """The brokers' client-side settings of the inter-broker listener (SASL mechanism, JAAS of
    ``listener.name.<ibl>.*``, truststore): a controller in migration reaches the ZooKeeper-mode brokers with them."""
    out: dict[str, str] = {}
    proto = listener_protocol(ref, ibl)
    for key in _INTER_BROKER_CLIENT_KEYS:
        if key in ref and key != "security.inter.broker.protocol":
            if key.startswith("ssl.") and "SSL" not in proto:
                continue
            if key.startswith("sasl.") and "SASL" not in proto:
                continue
            out[key] = ref[key]
    prefix = f"listener.name.{ibl.lower()}."
    for key in sorted(ref):
        if key.startswith(prefix) and not any(key.endswith(k) for k in _KEYSTORE_KEYS):
            out[key] = ref[key]
    return out


def controller_notes(inputs: KraftInputs) -> list[str]:
    """What a controller needs that is not a property kmigrate can copy (printed with its config)."""
    ref = inputs.reference_broker
    ibl = inter_broker_listener(ref)
    proto = listener_protocol(ref, ibl)
    notes = []
    notes = ["if the brokers log in to ZooKeeper with SASL (a JAAS Client section), start each controller with the "
             "same JAAS file: KAFKA_OPTS=-Djava.security.auth.login.config=<the brokers' JAAS file>"
             + ("; with zookeeper.set.acl=true a controller under another identity fails with NoAuthException"
                if ref.get("zookeeper.set.acl", "").strip().lower() == "true" else "")]
    if "SSL" in proto:
        notes.append(f"the inter-broker listener {ibl} uses {proto}: give each controller its own ssl.keystore.* "
                     "(a certificate for its host) when the brokers require client certificates")
    if inputs.controller_protocol != "PLAINTEXT":
        notes.append(f"the controller listener uses {inputs.controller_protocol}: add its server settings "
                     f"(listener.name.{inputs.listener_name.lower()}.*) to the controllers and the client side "
                     "(sasl.mechanism.controller.protocol, TLS trust) to every broker")
    return notes


def controller_finalized_config(inputs: KraftInputs, controller_id: int) -> dict[str, str]:
    """A controller's config after finalize (phase 6): no migration flag, no ``zookeeper.*``, no inter-broker
    listener (no ZooKeeper-mode broker is left to reach). There is no way back to ZooKeeper after this roll."""
    me = inputs.controller(controller_id)
    props = {"process.roles": "controller", "node.id": str(me.id), **_quorum(inputs),
             "listeners": f"{inputs.listener_name}://{me.address}",
             PROTOCOL_MAP: f"{inputs.listener_name}:{inputs.controller_protocol}",
             "log.dirs": me.log_dir}
    props.update(inputs.extra_controller_settings)
    return props


def format_command(cluster_id: str, config_file: str, kafka_bin: str = "bin", *extra: str) -> list[str]:
    """The ``kafka-storage format`` command that prepares a node's metadata log dir with the cluster id (``extra``:
    the quorum options, e.g. ``--no-initial-controllers``): the one builder of it in kmigrate.

    The id is given as ``--cluster-id=<id>``: a cluster id is URL-safe base64 and one in 64 begins with ``-``
    (ZooKeeper-mode brokers generate them without Kafka's ``Uuid.randomUuid`` rule against it), and
    ``-t -Ab1...`` makes StorageTool read the id as an option ("argument --cluster-id/-t: expected one argument",
    seen on 3.9.2); the ``=`` form takes it whole (tried on 3.9.2 and 4.4.0).

    >>> " ".join(format_command("q1Sh-9_ISia_zwGINzRvyQ", "/etc/kafka/controller.properties"))
    'bin/kafka-storage.sh format --cluster-id=q1Sh-9_ISia_zwGINzRvyQ -c /etc/kafka/controller.properties'
    >>> format_command("-Ab1Sh9_ISia_zwGINzRvyQ", "s.properties", "bin", "--no-initial-controllers")[2:]
    ['--cluster-id=-Ab1Sh9_ISia_zwGINzRvyQ', '-c', 's.properties', '--no-initial-controllers']
    """
    if not cluster_id:
        raise BadInput("no cluster id: it is read from ZooKeeper's /cluster/id, which a ZooKeeper-mode cluster writes at its first start")
    return [f"{kafka_bin.rstrip('/')}/kafka-storage.sh", "format", f"--cluster-id={cluster_id}", "-c", config_file, *extra]


# ----------------------------------------------------------------- brokers
def broker_migration_settings(inputs: KraftInputs, broker_id: int) -> dict[str, str]:
    """The lines broker ``broker_id`` adds (or changes) for roll 1 (``--phase migration``); the rest stays.

    With them, the two follower fetch settings that shorten the produce stalls of this roll's and the next one's
    leader moves to about 0.2 s (:func:`fetch_settings`), unless the broker sets them already.

    >>> ins = KraftInputs("c", {4: {"zookeeper.connect": "z1:2181", "replica.fetch.wait.max.ms": "250"}},
    ...                   (Controller(3000, "c1", 9093),))
    >>> broker_migration_settings(ins, 4)  # doctest: +NORMALIZE_WHITESPACE
    {'zookeeper.metadata.migration.enable': 'true', 'controller.quorum.voters': '3000@c1:9093',
     'controller.listener.names': 'CONTROLLER',
     'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT',
     'replica.fetch.backoff.ms': '100'}
    """
    props = inputs.broker(broker_id)
    return {MIGRATION_FLAG: "true", **_quorum(inputs),
            PROTOCOL_MAP: protocol_map(props, inputs.listener_name, inputs.controller_protocol), **fetch_settings(props)}


def fetch_settings(props: Mapping[str, str]) -> dict[str, str]:
    """``replica.fetch.backoff.ms`` and ``replica.fetch.wait.max.ms`` at 100 ms, those the broker's config does not set:
    a follower that learns of a new leader before the leader does is refused once and waits out the backoff (1000 ms
    by default) and then a fetch wait (500 ms) while the new leader holds acks=all writes for it; at 100 ms each,
    a leader move stalls writes about 0.2 s (README: produce stalls in a rolling restart)."""
    return {k: v for k, v in ROLL_FETCH_SETTINGS.items() if k not in props}


def broker_migration_config(inputs: KraftInputs, broker_id: int) -> dict[str, str]:
    """Broker ``broker_id``'s whole config for roll 1: its own with :func:`broker_migration_settings` applied."""
    props = dict(inputs.broker(broker_id))
    props.update(broker_migration_settings(inputs, broker_id))
    return props


def removed_in_kraft(props: Mapping[str, str]) -> list[str]:
    """The keys of a ZooKeeper-mode broker config a KRaft broker drops, in the order they appear."""
    return [k for k in props if k.startswith("zookeeper.") or k in ZOOKEEPER_ONLY_BROKER_KEYS]


def broker_kraft_config(inputs: KraftInputs, broker_id: int) -> dict[str, str]:
    """Broker ``broker_id``'s whole KRaft config for roll 2 (``--phase kraft``).

    >>> ins = KraftInputs("c", {4: {"broker.id": "4", "zookeeper.connect": "z1:2181", "zookeeper.set.acl": "true",
    ...     "inter.broker.protocol.version": "3.9", "authorizer.class.name": ACL_AUTHORIZER,
    ...     "super.users": "User:admin", "log.dirs": "/data"}}, (Controller(3000, "c1", 9093),))
    >>> for line in lines(broker_kraft_config(ins, 4)): print(line)
    process.roles=broker
    node.id=4
    authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
    super.users=User:admin
    log.dirs=/data
    controller.quorum.voters=3000@c1:9093
    controller.listener.names=CONTROLLER
    listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT
    replica.fetch.backoff.ms=100
    replica.fetch.wait.max.ms=100
    """
    props = inputs.broker(broker_id)
    declared = props.get("broker.id")
    if declared is not None and declared.strip() != str(broker_id):
        raise BadInput(f"broker {broker_id}'s config says broker.id={declared}: read the config of broker {broker_id}")
    dropped = set(removed_in_kraft(props))
    out = {"process.roles": "broker", "node.id": str(broker_id)}
    for key, value in props.items():
        if key in dropped or key in out:
            continue
        if key == "authorizer.class.name" and value.strip() == ACL_AUTHORIZER:
            value = STANDARD_AUTHORIZER
        out[key] = value
    out.update(_quorum(inputs))
    out[PROTOCOL_MAP] = protocol_map(props, inputs.listener_name, inputs.controller_protocol)
    out.update(fetch_settings(props))  # roll 1 added them; kept where the broker's config was read without them
    return out


# ------------------------------------------------------------------ render
def _escape(text: str, key: bool) -> str:
    out = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    if key:
        for ch in "=: #!":
            out = out.replace(ch, "\\" + ch)
    elif out.startswith(" "):
        out = "\\" + out
    return out


def hidden(props: Mapping[str, str]) -> list[str]:
    """The keys of ``props`` whose value the brokers hid (:data:`SENSITIVE`): the operator copies them by hand."""
    return [k for k, v in props.items() if v == SENSITIVE]


def lines(props: Mapping[str, str]) -> list[str]:
    """``key=value`` lines of ``props`` in their order, escaped as ``java.util.Properties`` reads them.

    >>> lines({"a": "x=y", "b": "C:\\\\dir"})
    ['a=x=y', 'b=C:\\\\\\\\dir']
    """
    return [f"{_escape(k, True)}={_escape(v, False)}" for k, v in props.items()]
