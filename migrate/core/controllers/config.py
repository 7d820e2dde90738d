"""What an operator writes for a controller move, pure: a new controller's ``server.properties`` and its format
command, and the brokers' ``controller.quorum.bootstrap.servers`` for the two rolls.

- **A new controller** (:func:`new_controller_config`, ``kmigrate controllers controller-config ID``):
  ``process.roles=controller``, its ``node.id``, ``controller.quorum.bootstrap.servers`` naming the current voters
  (never ``controller.quorum.voters``: that would make it a static voter of a quorum of its own), its controller
  listener in ``listeners`` *and* ``advertised.listeners`` (the leader reaches a new voter on the advertised
  endpoint: apache/kafka#17810), the listener's protocol, its metadata log dir, and the security settings an existing
  controller runs with (the controller listener's ``listener.name.<name>.*``, SASL and trust settings, the
  authorizer), without the keystore (a certificate is per host: a note says so). Formatted with the cluster id and
  ``--no-initial-controllers`` (:func:`format_command`): it starts as an observer, and only AddRaftVoter makes it a
  voter.
- **The brokers' bootstrap list** (:func:`broker_bootstrap_servers`): a broker reads
  ``controller.quorum.bootstrap.servers`` at start and retries only that list when it loses the leader, so it is
  rolled to the old and the new controllers before the voters change, and to the new ones only after.

Configs are ordered ``dict[str, str]`` (insertion order is the order printed), rendered as the other configs kmigrate
prints (``key=value`` lines escaped as ``java.util.Properties`` reads them). No I/O, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Mapping, Sequence

from migrate.core.controllers.plan import NewController
from migrate.core.kraft import config as kraft_config
from migrate.core.controllers.quorum import Endpoint, Quorum
from migrate.errors import BadInput

BOOTSTRAP_SERVERS = "controller.quorum.bootstrap.servers"
QUORUM_VOTERS = "controller.quorum.voters"
DEFAULT_METADATA_DIR = "/var/lib/kafka/kraft-metadata"
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SENSITIVE = "<sensitive: copy it from an existing controller's server.properties>"
"""What a setting hidden by DescribeConfigs (passwords, JAAS) reads in the config kmigrate renders."""
_KEYSTORE_SUFFIXES = ("ssl.keystore.location", "ssl.keystore.password", "ssl.keystore.type", "ssl.key.password",
                      "ssl.keystore.certificate.chain", "ssl.keystore.key")
_COPIED_KEYS = ("sasl.enabled.mechanisms", "sasl.mechanism.controller.protocol", "ssl.truststore.location",
                "ssl.truststore.password", "ssl.truststore.type", "ssl.client.auth",
                "ssl.endpoint.identification.algorithm", "ssl.protocol", "ssl.enabled.protocols", "ssl.cipher.suites",
                "authorizer.class.name", "super.users", "allow.everyone.if.no.acl.found")


@dataclass(frozen=True)
class ControllerInputs:
    """What the new controller's config is made of.

    ``voters``: the current voters' controller endpoints (DescribeQuorum's ``nodes``), in the order printed;
    ``template``: an existing controller's static settings (DescribeConfigs on its controller listener, or its file),
    from which the security settings are copied; ``protocol``: the controller listener's security protocol."""

    cluster_id: str
    voters: tuple[Endpoint, ...]
    listener_name: str = "CONTROLLER"
    protocol: str = "PLAINTEXT"
    metadata_log_dir: str = DEFAULT_METADATA_DIR
    template: Mapping[str, str] = field(default_factory=dict)
    extra: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.cluster_id:
            raise BadInput("no cluster id: read it from the cluster (kafka-cluster cluster-id) or a controller's "
                           "meta.properties")
        if not self.voters:
            raise BadInput("the quorum shows no voter endpoint (DescribeQuorum v2 nodes, Kafka 3.9+): a new controller "
                           "needs the current voters for controller.quorum.bootstrap.servers")
        if self.protocol not in PROTOCOLS:
            raise BadInput(f"controller listener protocol {self.protocol!r}: choose one of {', '.join(PROTOCOLS)}")
        if not self.listener_name or "," in self.listener_name or ":" in self.listener_name:
            raise BadInput(f"controller listener name {self.listener_name!r} must be one name, like CONTROLLER")


def voter_endpoints(quorum: Quorum, listener: str) -> tuple[Endpoint, ...]:
    """The current voters' ``listener`` endpoints, by voter id (BadInput when a voter shows none: a 3.9+ voter
    always reports its endpoints in DescribeQuorum v2).

    >>> from migrate.core.controllers.quorum import Replica
    >>> q = Quorum(2, 1, 0, (Replica(1), Replica(2)), (), {1: (Endpoint("CONTROLLER", "c1", 9093),),
    ...                                                      2: (Endpoint("CONTROLLER", "c2", 9093),)})
    >>> [e.address for e in voter_endpoints(q, "CONTROLLER")]
    ['c1:9093', 'c2:9093']
    """
    out = []
    for i in quorum.voter_ids:
        found = quorum.endpoints(i, listener)
        if not found:
            names = sorted({e.name for e in quorum.endpoints(i)})
            raise BadInput(f"voter {i} shows no {listener} endpoint in DescribeQuorum (it shows "
                           f"{', '.join(names) or 'none'}): give the controller listener's name (--controller-listener)")
        out.append(found[0])
    return tuple(out)


def bootstrap_servers(endpoints: Sequence[Endpoint]) -> str:
    """``controller.quorum.bootstrap.servers``: ``host:port`` of each, in order, each once.

    >>> bootstrap_servers((Endpoint("C", "c1", 9093), Endpoint("C", "c1", 9093), Endpoint("C", "::1", 9094)))
    'c1:9093,[::1]:9094'
    """
    seen: list[str] = []
    for e in endpoints:
        if e.address not in seen:
            seen.append(e.address)
    return ",".join(seen)


def _security(inputs: ControllerInputs) -> dict[str, str]:
    """The security settings copied from the template: the known client/server keys and the controller listener's
    ``listener.name.<name>.*``, without the keystore."""
    t = inputs.template
    out: dict[str, str] = {}
    for key in _COPIED_KEYS:
        if key in t and t[key] is not None:
            out[key] = t[key]
    prefix = f"listener.name.{inputs.listener_name.lower()}."
    for key in sorted(t):
        if key.startswith(prefix) and not key.endswith(_KEYSTORE_SUFFIXES) and t[key] is not None:
            out[key] = t[key]
    return out


def new_controller_config(inputs: ControllerInputs, new: NewController) -> dict[str, str]:
    """The ``server.properties`` of new controller ``new``.

    >>> ins = ControllerInputs("q1Sh-9_ISia_zwGINzRvyQ", (Endpoint("CONTROLLER", "c1", 9093),
    ...                        Endpoint("CONTROLLER", "c2", 9093)), metadata_log_dir="/data/kraft")
    >>> for key, value in new_controller_config(ins, NewController(7, "c7", 9093)).items(): print(f"{key}={value}")
    process.roles=controller
    node.id=7
    controller.quorum.bootstrap.servers=c1:9093,c2:9093
    controller.listener.names=CONTROLLER
    listeners=CONTROLLER://c7:9093
    advertised.listeners=CONTROLLER://c7:9093
    listener.security.protocol.map=CONTROLLER:PLAINTEXT
    log.dirs=/data/kraft
    """
    if new.listener.upper() != inputs.listener_name.upper():
        raise BadInput(f"controller {new.id}'s listener {new.listener} is not the quorum's controller listener "
                       f"{inputs.listener_name}")
    me = f"{inputs.listener_name}://{new.address}"
    props = {"process.roles": "controller", "node.id": str(new.id), BOOTSTRAP_SERVERS: bootstrap_servers(inputs.voters),
             "controller.listener.names": inputs.listener_name, "listeners": me, "advertised.listeners": me,
             "listener.security.protocol.map": f"{inputs.listener_name}:{inputs.protocol}",
             "log.dirs": inputs.metadata_log_dir}
    props.update(_security(inputs))
    props.update(inputs.extra)
    return props


def new_controller_notes(inputs: ControllerInputs, new: NewController) -> list[str]:
    """What the new controller needs that kmigrate cannot render (printed with its config)."""
    notes = [f"format it with the cluster id and --no-initial-controllers (it starts as an observer; kmigrate "
             f"controllers adds it to the voters once it has caught up), then start it: controller {new.id} must reach "
             f"{bootstrap_servers(inputs.voters)}, and the voters must reach {new.address}"]
    if "SSL" in inputs.protocol:
        notes.append(f"the controller listener uses {inputs.protocol}: give controller {new.id} its own "
                     f"listener.name.{inputs.listener_name.lower()}.ssl.keystore.* (a certificate for {new.host})")
    if "SASL" in inputs.protocol:
        notes.append("the controller listener uses SASL: copy the JAAS settings (listener.name."
                     f"{inputs.listener_name.lower()}.<mechanism>.sasl.jaas.config) if the template hid them")
    hidden = [k for k, v in new_controller_config(inputs, new).items() if v == SENSITIVE]
    if hidden:
        notes.append(f"copy {', '.join(hidden)} from an existing controller's server.properties (Kafka hides them)")
    return notes


def format_command(cluster_id: str, config_file: str = "server.properties", kafka_bin: str = "bin") -> list[str]:
    """The ``kafka-storage format`` command of a new controller: the cluster id and ``--no-initial-controllers``.

    >>> " ".join(format_command("q1Sh-9_ISia_zwGINzRvyQ"))
    'bin/kafka-storage.sh format --cluster-id=q1Sh-9_ISia_zwGINzRvyQ -c server.properties --no-initial-controllers'
    """
    if not cluster_id:
        raise BadInput("no cluster id: read it from the cluster (kafka-cluster cluster-id) or a controller's "
                       "meta.properties")
    return kraft_config.format_command(cluster_id, config_file, kafka_bin, "--no-initial-controllers")


class BrokerRoll(str, Enum):
    BEFORE = "before"  # roll 1, before the first voter change: the old and the new controllers
    AFTER = "after"  # roll 2, after the last voter change: the new controllers only


def broker_bootstrap_servers(old: Sequence[Endpoint], new: Sequence[Endpoint], roll: BrokerRoll) -> str:
    """The brokers' ``controller.quorum.bootstrap.servers`` for ``roll``.

    >>> old, new = (Endpoint("C", "c1", 9093),), (Endpoint("C", "c7", 9093),)
    >>> broker_bootstrap_servers(old, new, BrokerRoll.BEFORE), broker_bootstrap_servers(old, new, BrokerRoll.AFTER)
    ('c1:9093,c7:9093', 'c7:9093')
    """
    if not new:
        raise BadInput("no new controller endpoint: the brokers' bootstrap list needs the new controllers' host:port")
    return bootstrap_servers((*old, *new) if roll is BrokerRoll.BEFORE else tuple(new))


def broker_bootstrap_problem(configured: str | None, wanted: str) -> str | None:
    """Why a broker's ``controller.quorum.bootstrap.servers`` (as DescribeConfigs reports it) is not ``wanted``, or
    None (the same addresses, in any order).

    >>> broker_bootstrap_problem("c7:9093, c1:9093", "c1:9093,c7:9093") is None
    True
    >>> broker_bootstrap_problem(None, "c1:9093")
    'it runs without controller.quorum.bootstrap.servers (with controller.quorum.voters: a static quorum?), not c1:9093'
    """
    if not configured:
        return (f"it runs without {BOOTSTRAP_SERVERS} (with {QUORUM_VOTERS}: a static quorum?), not {wanted}")
    have = {a.strip() for a in configured.split(",") if a.strip()}
    want = {a.strip() for a in wanted.split(",") if a.strip()}
    if have != want:
        return f"it runs with {BOOTSTRAP_SERVERS}={configured}, not {wanted}: restart it with the new value"
    return None
