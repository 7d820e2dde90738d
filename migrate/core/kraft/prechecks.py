"""Phase 0 of a ZooKeeper-to-KRaft migration (KIP-866): what must hold before any controller starts. Pure.

Each check gives one :class:`Check`: passed, or one line naming the problem and the fix. In order:

1. ``versions``: every live broker runs Kafka 3.9 (ApiVersions tells major.minor) with
   ``inter.broker.protocol.version`` 3.9, as Kafka's migration docs require (no IBP/MV change during it).
   An older cluster is told to upgrade to 3.9 first (``kmigrate plan`` prints that upgrade). An IBP below 3.6-IV1
   is named with the metadata.version rule too: a ZooKeeper broker registers with the controller at its IBP as
   its metadata.version, and a 3.9 controller refuses to start a migration below 3.6-IV1 (KAFKA-17457).
2. ``broker_ids``: a fixed ``broker.id`` on every broker. A generated id is above ``reserved.broker.max.id``
   (1000 by default) while ``broker.id.generation.enable`` is on (Kafka refuses an explicit id there).
3. ``assigned_brokers``: no partition assignment (or reassignment target) names a broker that is not live:
   the controller waits for every such id to register (``WAIT_FOR_BROKERS``) and the migration never starts.
4. ``controller_ids``: the controllers' ``node.id`` values are distinct from every broker id: the brokers now,
   the ids in assignments and the playbook's new brokers (``brokers.mapping`` / ``brokers.new``).
5. ``reassignments``: no reassignment in flight.
6. ``zookeeper_security``: the brokers agree on their ZooKeeper security settings (``zookeeper.set.acl``,
   ``zookeeper.ssl.*``, ``zookeeper.clientCnxnSocket``) and every planned controller's config carries them;
   when the brokers' znodes belong to a SASL identity, kmigrate's own ZooKeeper login (``--zk-jaas-file``, the
   JAAS file the controllers start with) is that identity (else: NoAuthException on the controllers).
7. ``dedicated_controllers``: every planned controller runs ``process.roles=controller`` alone (a combined
   broker and controller cannot be migrated).

Inputs: the :class:`~migrate.core.model.ClusterSnapshot` ``kmigrate inspect`` reads, the brokers' static
configs (DescribeConfigs, by broker id: what ``migrate.core.kraft.config`` renders from), the playbook and
the controllers' configs as rendered. No I/O, no clock.

    >>> from migrate.core.model import Broker, ClusterSnapshot, ZkEnsemble
    >>> snap = ClusterSnapshot(zookeeper=ZkEnsemble(connect="z:2181"), brokers=(Broker(1, "b1", 9092, version="3.8",
    ...     protocol_version="3.8-IV0"),))
    >>> check_versions(snap).message
    'broker 1 runs Kafka 3.8: upgrade every broker to 3.9 first (a rolling restart onto 3.9.x with inter.broker.protocol.version=3.8, then one with inter.broker.protocol.version=3.9; kmigrate plan prints both)'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from migrate.core.model import ClusterSnapshot
from migrate.core.versions import kafka_release_of, release_tuple

KRAFT_RELEASE = (3, 9)
KRAFT_RELEASE_TEXT = "3.9"
MIGRATION_MV = (3, 6, 1)
MIGRATION_MV_TEXT = "3.6-IV1"
"""The lowest metadata.version a 3.9 controller starts a migration at (KAFKA-17457: metadata transactions)."""
DEFAULT_RESERVED_BROKER_MAX_ID = 1000
SHOWN = 5
"""Partitions named in one line at most (then "and N more")."""

CHECKS = ("versions", "broker_ids", "assigned_brokers", "controller_ids", "reassignments", "zookeeper_security",
          "dedicated_controllers")

ZOOKEEPER_SECURITY_PREFIXES = ("zookeeper.set.acl", "zookeeper.ssl.", "zookeeper.clientCnxnSocket")
"""The brokers' ``zookeeper.*`` settings a controller needs to reach ZooKeeper as they do."""


@dataclass(frozen=True)
class Check:
    """One pre-check: ``name`` (one of :data:`CHECKS`), ``ok``, and one line: what was seen when it passed,
    the problem and its fix when not."""

    name: str
    ok: bool
    message: str


@dataclass(frozen=True)
class ZooKeeperLogin:
    """What is known of the ZooKeeper SASL identities: ``owners`` are the ``sasl`` ids in the ACLs of the
    brokers' znodes (``/brokers/ids/N``), ``login`` the username kmigrate logged in with (``--zk-jaas-file``)."""

    owners: tuple[str, ...] = ()
    login: str | None = None


@dataclass(frozen=True)
class PrecheckInputs:
    """Everything the pre-check reads. ``broker_configs``: each live broker's static configs by id (values as
    DescribeConfigs gives them; ``None`` for a secret); ``controller_ids``: the planned ``node.id`` values;
    ``controller_configs``: each planned controller's rendered properties by id; ``future_broker_ids``: broker
    ids the playbook brings (``brokers.mapping`` targets, ``brokers.new``); ``controller_addresses``: each planned
    controller's ``(host, port)``. ``controller_configs`` is ``None`` when they could not be rendered
    (``not_rendered`` says why): the checks that read them then fail with that reason."""

    snapshot: ClusterSnapshot
    broker_configs: Mapping[int, Mapping[str, str | None]]
    controller_ids: tuple[int, ...]
    controller_configs: Mapping[int, Mapping[str, str]] | None
    future_broker_ids: tuple[int, ...] = ()
    zookeeper_login: ZooKeeperLogin = field(default_factory=ZooKeeperLogin)
    controller_addresses: Mapping[int, tuple[str, int]] = field(default_factory=dict)
    not_rendered: str = ""


def _ids(ids: Iterable[int]) -> str:
    return ", ".join(str(i) for i in sorted(set(ids)))


def _plural(n: int, word: str) -> str:
    return word if n == 1 else word + "s"


def _shown(items: Sequence[str]) -> str:
    head = ", ".join(items[:SHOWN])
    return head + (f" and {len(items) - SHOWN} more" if len(items) > SHOWN else "")


def _true(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"


# ------------------------------------------------------------------ 1. versions
def below_migration_mv(protocol_version: str | None) -> bool:
    """True when an ``inter.broker.protocol.version`` is below metadata.version 3.6-IV1 (metadata transactions,
    KIP-868): a ZooKeeper broker registers with the KRaft controller at its IBP as its metadata.version, and a 3.9
    controller with an empty log refuses to start a migration below 3.6-IV1 (KAFKA-17457). An unknown or
    unreadable value is not taken as below (the 3.9 rule names it anyway).

    >>> [below_migration_mv(v) for v in ("3.5-IV2", "3.6-IV0", "3.6-IV1", "3.6", "3.8-IV0", "2.8", None)]
    [True, True, False, False, False, True, False]
    """
    release = release_tuple(kafka_release_of(protocol_version or ""))
    if release is None:
        return False
    if release != MIGRATION_MV[:2]:
        return release < MIGRATION_MV[:2]
    iv = (protocol_version or "").strip().partition("-IV")[2]
    return iv.isdigit() and int(iv) < MIGRATION_MV[2]  # "3.6" alone is 3.6's last IV


def check_versions(snapshot: ClusterSnapshot) -> Check:
    """Every live broker on Kafka 3.9 with ``inter.broker.protocol.version`` 3.9."""
    live = [b for b in snapshot.brokers if b.alive]
    if not live:
        return Check("versions", False, "no live broker found: start the brokers (or point --bootstrap-server and "
                                        "--zookeeper at the cluster), then run the pre-check again")
    older = [b for b in live if b.version and (release_tuple(b.version) or (0, 0)) < KRAFT_RELEASE]
    if older:
        named = ", ".join(f"{b.id} ({b.version})" for b in older) if len(older) > 1 else f"{older[0].id}"
        runs = f"run Kafka {', '.join(sorted({b.version or '' for b in older}))}" if len(older) > 1 else f"runs Kafka {older[0].version}"
        ibp = min((b.version or "" for b in older), key=lambda v: release_tuple(v) or (0, 0))
        return Check("versions", False,
                     f"{_plural(len(older), 'broker')} {named} {runs}: upgrade every broker to {KRAFT_RELEASE_TEXT} first "
                     f"(a rolling restart onto {KRAFT_RELEASE_TEXT}.x with inter.broker.protocol.version={ibp}, then one with "
                     f"inter.broker.protocol.version={KRAFT_RELEASE_TEXT}; kmigrate plan prints both)")
    newer = [b for b in live if b.version and (release_tuple(b.version) or (0, 0)) > KRAFT_RELEASE]
    if newer:
        return Check("versions", False, f"{_plural(len(newer), 'broker')} {_ids(b.id for b in newer)} report Kafka "
                                        f"{newer[0].version}, after the last release with ZooKeeper: run {KRAFT_RELEASE_TEXT}.x on every broker")
    unknown = [b.id for b in live if not b.version]
    if unknown:
        return Check("versions", False, f"the Kafka release of {_plural(len(unknown), 'broker')} {_ids(unknown)} is unknown "
                                        f"(no ApiVersions answer): check they run {KRAFT_RELEASE_TEXT}.x and run the pre-check again")
    low = [b for b in live if not b.protocol_version
           or (release_tuple(kafka_release_of(b.protocol_version)) or (0, 0)) < KRAFT_RELEASE]
    if low:
        seen = ", ".join(f"{b.id} ({b.protocol_version or 'unknown'})" for b in low)
        under_mv = [b for b in low if below_migration_mv(b.protocol_version)]
        why = (f", below metadata.version {MIGRATION_MV_TEXT}, the lowest a {KRAFT_RELEASE_TEXT} controller starts a "
               "migration at (KAFKA-17457; a ZooKeeper broker registers its inter.broker.protocol.version as its "
               "metadata.version)") if under_mv else ""
        return Check("versions", False,
                     f"inter.broker.protocol.version is below {KRAFT_RELEASE_TEXT} on {_plural(len(low), 'broker')} {seen}{why}: "
                     f"set inter.broker.protocol.version={KRAFT_RELEASE_TEXT} on every broker and roll them (health gate after "
                     "each), then run the pre-check again; it must not change during the migration")
    return Check("versions", True, f"every broker ({_ids(b.id for b in live)}) runs Kafka {KRAFT_RELEASE_TEXT} with "
                                   f"inter.broker.protocol.version {KRAFT_RELEASE_TEXT}")


# ----------------------------------------------------------------- 2. broker ids
def generated_ids(snapshot: ClusterSnapshot, broker_configs: Mapping[int, Mapping[str, str | None]]) -> list[int]:
    """Brokers whose id was generated: above ``reserved.broker.max.id`` with ``broker.id.generation.enable`` on
    (both at their defaults, 1000 and true, when unknown).

    >>> from migrate.core.model import Broker, ClusterSnapshot, ZkEnsemble
    >>> snap = ClusterSnapshot(zookeeper=ZkEnsemble(connect="z"), brokers=(Broker(1, "h", 1), Broker(1001, "h", 2)))
    >>> generated_ids(snap, {}), generated_ids(snap, {1001: {"broker.id.generation.enable": "false"}})
    ([1001], [])
    """
    out = []
    for b in snapshot.brokers:
        conf = broker_configs.get(b.id, {})
        enabled = (conf.get("broker.id.generation.enable") or "true").strip().lower() != "false"
        try:
            reserved = int((conf.get("reserved.broker.max.id") or str(DEFAULT_RESERVED_BROKER_MAX_ID)).strip())
        except ValueError:
            reserved = DEFAULT_RESERVED_BROKER_MAX_ID
        if enabled and b.id > reserved:
            out.append(b.id)
    return out


def check_broker_ids(snapshot: ClusterSnapshot, broker_configs: Mapping[int, Mapping[str, str | None]]) -> Check:
    gen = generated_ids(snapshot, broker_configs)
    if gen:
        one = len(gen) == 1
        fix = (f"set broker.id={gen[0]} and broker.id.generation.enable=false in its server.properties and restart it "
               "(kmigrate health --wait after)") if one else (
               f"set each one's broker.id to the id it has now ({', '.join(f'broker.id={b}' for b in sorted(gen))}) and "
               "broker.id.generation.enable=false in their server.properties and roll them (health gate after each)")
        return Check("broker_ids", False,
                     f"{_plural(len(gen), 'broker')} {_ids(gen)} {'has a generated id' if one else 'have generated ids'} "
                     f"(above reserved.broker.max.id, with broker.id.generation.enable=true): {fix}, then run the "
                     "pre-check again; a KRaft node.id is fixed, and Kafka refuses the migration flag with a generated id")
    return Check("broker_ids", True, f"every broker has a fixed broker.id ({_ids(b.id for b in snapshot.brokers)})")


# ---------------------------------------------------------- 3. assigned brokers
def assigned_ids(snapshot: ClusterSnapshot) -> dict[int, list[str]]:
    """Broker id -> the topic-partitions that name it (replicas, and reassignments' adding replicas)."""
    out: dict[int, list[str]] = {}
    for t in snapshot.topics:
        for p in t.partitions:
            for b in p.replicas:
                out.setdefault(b, []).append(f"{t.name}-{p.partition}")
    for (topic, partition), (adding, _removing) in sorted(snapshot.ongoing_reassignments.items()):
        for b in adding:
            name = f"{topic}-{partition}"
            if name not in out.setdefault(b, []):
                out[b].append(name)
    return out


def check_assigned_brokers(snapshot: ClusterSnapshot) -> Check:
    live = {b.id for b in snapshot.brokers if b.alive}
    named = assigned_ids(snapshot)
    dead = sorted(b for b in named if b not in live)
    if dead:
        parts = sorted({tp for b in dead for tp in named[b]})
        return Check("assigned_brokers", False,
                     f"{_plural(len(parts), 'partition')} {_shown(parts)} {'names' if len(parts) == 1 else 'name'} "
                     f"{_plural(len(dead), 'broker')} {_ids(dead)}, not live: the KRaft controller would wait for "
                     f"{'it' if len(dead) == 1 else 'them'} forever (WAIT_FOR_BROKERS); start {_plural(len(dead), 'broker')} "
                     f"{_ids(dead)} or reassign those partitions to live brokers ({_ids(live)}), then run the pre-check again")
    return Check("assigned_brokers", True, f"every broker in a partition assignment is live ({_ids(named) or 'no partition'})")


# ---------------------------------------------------------------- 4. controller ids
def check_controller_ids(snapshot: ClusterSnapshot, controller_ids: Sequence[int], future_broker_ids: Sequence[int] = ()) -> Check:
    brokers = {b.id for b in snapshot.brokers} | set(assigned_ids(snapshot)) | set(future_broker_ids)
    if not controller_ids:
        return Check("controller_ids", False, "no KRaft controller is planned: list them under kraft.controllers in the playbook")
    clash = sorted(set(controller_ids) & brokers)
    if clash:
        top = max(brokers | set(controller_ids))
        return Check("controller_ids", False,
                     f"controller {_plural(len(clash), 'id')} {_ids(clash)} {'is' if len(clash) == 1 else 'are'} also "
                     f"{_plural(len(clash), 'a broker id') if len(clash) == 1 else 'broker ids'} (brokers {_ids(brokers)}): "
                     f"give kraft.controllers node.ids no broker uses, e.g. from {max(3000, top + 1)} up")
    return Check("controller_ids", True,
                 f"controller {_plural(len(set(controller_ids)), 'id')} {_ids(controller_ids)} "
                 f"{'is' if len(set(controller_ids)) == 1 else 'are'} distinct from every broker id ({_ids(brokers)})")


# ---------------------------------------------------------------- 5. reassignments
def check_reassignments(snapshot: ClusterSnapshot) -> Check:
    moving = sorted(f"{t}-{p}" for t, p in snapshot.ongoing_reassignments)
    if moving:
        return Check("reassignments", False,
                     f"a reassignment is in flight for {_shown(moving)}: let it finish or cancel it with the tool that "
                     "started it (kmigrate partitions --resume or --cancel; kafka-reassign-partitions.sh --verify or "
                     "--cancel; each clears its throttles once nothing is left moving), then run the pre-check again")
    return Check("reassignments", True, "no reassignment in flight")


# ----------------------------------------------------------- 6. ZooKeeper security
def zookeeper_security(conf: Mapping[str, str | None]) -> dict[str, str | None]:
    """The ZooKeeper security settings of one config (``zookeeper.set.acl``, ``zookeeper.ssl.*``,
    ``zookeeper.clientCnxnSocket``), those that are set; ``zookeeper.set.acl=false`` and
    ``zookeeper.ssl.client.enable=false`` count as unset (Kafka's defaults)."""
    out: dict[str, str | None] = {}
    for key, value in conf.items():
        if not key.startswith(ZOOKEEPER_SECURITY_PREFIXES):
            continue
        if key in ("zookeeper.set.acl", "zookeeper.ssl.client.enable") and not _true(value):
            continue
        if value is not None and not value.strip():
            continue
        out[key] = value
    return out


def check_zookeeper_security(broker_configs: Mapping[int, Mapping[str, str | None]],
                             controller_configs: Mapping[int, Mapping[str, str]], login: ZooKeeperLogin) -> Check:
    per_broker = {b: zookeeper_security(c) for b, c in sorted(broker_configs.items())}
    keys = sorted({k for s in per_broker.values() for k in s})
    for key in keys:
        secret = key.endswith("password")  # DescribeConfigs never shows a secret: only whether it is set
        shown = {b: ("unset" if key not in s else "set" if secret else str(s[key])) for b, s in per_broker.items()}
        if len(set(shown.values())) > 1:
            seen = ", ".join(f"{b}: {v}" for b, v in shown.items())
            return Check("zookeeper_security", False,
                         f"the brokers disagree on {key} ({seen}): make it the same on every broker and roll them first; "
                         "the controllers log in to ZooKeeper as the brokers do")
    wanted = per_broker[min(per_broker)] if per_broker else {}
    for cid in sorted(controller_configs):
        conf = controller_configs[cid]
        for key in (k for k in keys if not k.endswith("password")):
            have = conf.get(key)
            if have is None or not str(have).strip():
                return Check("zookeeper_security", False,
                             f"controller {cid}'s config lacks {key}, which the brokers set: add the brokers' ZooKeeper "
                             "security settings (zookeeper.set.acl, zookeeper.ssl.*) to every controller (a controller "
                             "without them fails with NoAuthException or cannot connect)")
            if str(have).strip() != str(wanted[key]).strip():
                return Check("zookeeper_security", False,
                             f"controller {cid}'s config has {key}={have}, the brokers {key}={wanted[key]}: give the "
                             "controllers the brokers' ZooKeeper security settings")
    sasl = ""
    if login.owners:
        owners = ", ".join(sorted(set(login.owners)))
        if login.login is None or login.login not in login.owners:
            who = f"kmigrate logged in as {login.login!r}" if login.login else "kmigrate was given no SASL login"
            return Check("zookeeper_security", False,
                         f"the brokers' znodes belong to the ZooKeeper SASL identity {owners} and {who}: give the JAAS file "
                         "the controllers will start with (section Client) with --zk-jaas-file, and start each controller "
                         "with KAFKA_OPTS=-Djava.security.auth.login.config=<that file> (another identity gets NoAuthException)")
        sasl = f"; SASL login {login.login!r} owns the brokers' znodes (start the controllers with that JAAS file)"
    if not keys:
        return Check("zookeeper_security", True, "the brokers use no ZooKeeper ACL or TLS settings" + sasl)
    secrets = [k for k in keys if k.endswith("password")]
    return Check("zookeeper_security", True,
                 f"every controller carries the brokers' ZooKeeper security settings ({', '.join(k for k in keys if k not in secrets)})"
                 + (f"; copy {', '.join(secrets)} yourself (no broker shows a secret)" if secrets else "") + sasl)


# --------------------------------------------------------- 7. dedicated controllers
def check_dedicated(controller_ids: Sequence[int], controller_configs: Mapping[int, Mapping[str, str]],
                    snapshot: ClusterSnapshot | None = None,
                    controller_addresses: Mapping[int, tuple[str, int]] | None = None) -> Check:
    """Every planned controller runs ``process.roles=controller`` alone, and none is planned on a broker's own
    listener (``host:port``): a node both broker and controller (combined mode) cannot be migrated."""
    brokers = {(b.host, b.port): b.id for b in snapshot.brokers} if snapshot is not None else {}
    for cid, address in sorted((controller_addresses or {}).items()):
        if address in brokers:
            return Check("dedicated_controllers", False,
                         f"controller {cid} is planned at {address[0]}:{address[1]}, the listener of broker "
                         f"{brokers[address]}: run each controller as its own process (process.roles=controller) on a "
                         "port of its own; combined mode is not supported by the migration")
    missing = sorted(set(controller_ids) - set(controller_configs))
    if missing:
        return Check("dedicated_controllers", False,
                     f"no config for controller {_ids(missing)}: list it under kraft.controllers in the playbook")
    for cid in sorted(controller_configs):
        roles = [r.strip() for r in (controller_configs[cid].get("process.roles") or "").split(",") if r.strip()]
        if roles != ["controller"]:
            return Check("dedicated_controllers", False,
                         f"controller {cid} has process.roles={','.join(roles) or '(unset)'}: a ZooKeeper migration needs "
                         "dedicated controllers (process.roles=controller); combined mode is not supported")
    return Check("dedicated_controllers", True,
                 f"{_plural(len(set(controller_ids)), 'controller')} {_ids(controller_ids)} "
                 f"{'is' if len(set(controller_ids)) == 1 else 'are'} dedicated (process.roles=controller)")


# ---------------------------------------------------------------------- all
def run_prechecks(inputs: PrecheckInputs) -> tuple[Check, ...]:
    """Every check, in the order of :data:`CHECKS`."""
    s = inputs.snapshot
    configs = inputs.controller_configs
    if configs is None:
        why = f"the controllers' config could not be rendered ({inputs.not_rendered or 'unknown reason'}): not checked"
        later = (Check("zookeeper_security", False, why), Check("dedicated_controllers", False, why))
    else:
        later = (check_zookeeper_security(inputs.broker_configs, configs, inputs.zookeeper_login),
                 check_dedicated(inputs.controller_ids, configs, s, inputs.controller_addresses))
    return (
        check_versions(s),
        check_broker_ids(s, inputs.broker_configs),
        check_assigned_brokers(s),
        check_controller_ids(s, inputs.controller_ids, inputs.future_broker_ids),
        check_reassignments(s),
        *later,
    )


def first_refusal(checks: Iterable[Check]) -> Check | None:
    """The first check that failed, or None when all passed."""
    return next((c for c in checks if not c.ok), None)
