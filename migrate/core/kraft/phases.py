"""Where a ZooKeeper-to-KRaft migration stands, read from what the cluster shows (pure).

:class:`Observation` holds one reading, each fact tagged by where it came from:

- ZooKeeper (``runner/kraft/observe`` through kazoo), under the brokers' chroot:
  ``/cluster/id``; ``/brokers/ids`` (ZooKeeper-mode brokers, roll 1 included: a migrating broker still
  registers there; a KRaft broker does not); every broker id in ``/brokers/topics/*`` assignments;
  ``/controller`` (``{"brokerid": N, "kraftControllerEpoch": E}`` once a KRaft controller claimed it);
  ``/controller_epoch``; ``/migration`` (``kraft_metadata_offset`` ...: written when the metadata was
  copied, then after every metadata change the controller mirrors to ZooKeeper during dual-write).
- DescribeQuorum (asked of a controller on its controller listener, or through a broker that forwards it to the
  active controller): the leader, the voters and the observers (every broker that fetches the metadata log:
  roll-1 and KRaft brokers).
- DescribeConfigs asked of each controller (KIP-919): whether it runs with the migration flag (finalize
  removes it). Without an answer, a ``/migration`` offset far behind the metadata log stands for it.
- Once ZooKeeper is retired (not reachable, or not given: ``Observation.zookeeper_unread``), only the quorum, the
  controllers' flag and each broker's ``process.roles`` (DescribeConfigs through the brokers) are read: enough to
  tell ``finalized`` (every controller without the migration flag, every broker KRaft), not any phase before it
  (:data:`Phase.UNKNOWN`: the phases before finalize are read in ZooKeeper).

:func:`phase_of` maps a reading to a :class:`Phase` with the broker ids that matter at that phase. Kafka's
own migration state (``ZkMigrationState``) is a JMX metric only; kmigrate does not read it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum

FINALIZED_LAG = 100
"""Records the metadata log may be ahead of ``/migration``'s offset before the controllers count as no longer
writing to ZooKeeper (finalized). During dual-write the controller writes the offset of every metadata image it
mirrors, no-op records included (one every 500 ms by default), so the gap stays a few records."""


ZOOKEEPER_UNREACHABLE = "not reachable"
ZOOKEEPER_NOT_GIVEN = "not given"


class Phase(str, Enum):
    ZOOKEEPER = "zookeeper"  # no KRaft quorum answers
    CONTROLLERS_READY = "controllers-ready"  # a quorum with a leader; no broker registered with it yet
    WAITING_FOR_BROKERS = "waiting-for-brokers"  # roll 1 under way: some brokers registered, the controller waits for the rest
    DUAL_WRITE = "dual-write"  # metadata copied, every broker still in ZooKeeper mode (roll 1 done)
    BROKERS_KRAFT = "brokers-kraft"  # roll 2: some or all brokers out of /brokers/ids
    FINALIZED = "finalized"  # every broker KRaft, the controllers no longer write to ZooKeeper
    UNKNOWN = "unknown"  # ZooKeeper not read and the cluster not finalized: the phase cannot be known without it


@dataclass(frozen=True)
class QuorumView:
    """DescribeQuorum's answer for ``__cluster_metadata``: leader, epoch, high watermark, voter and observer ids."""

    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[int, ...]
    observers: tuple[int, ...]
    voter_lag: dict[int, int] = field(default_factory=dict)  # voter id -> leader's log end offset minus its own

    @property
    def has_leader(self) -> bool:
        return self.leader_id >= 0


@dataclass(frozen=True)
class Observation:
    """One reading of the cluster (see the module docstring for the source of each field); ``None``: not there
    (or, for ``quorum``, no controller answered)."""

    cluster_id: str | None
    zk_broker_ids: tuple[int, ...]
    assigned_broker_ids: tuple[int, ...]
    controller: dict | None  # /controller's JSON
    controller_epoch: int | None  # /controller_epoch
    migration: dict | None  # /migration's JSON
    quorum: QuorumView | None
    known_broker_ids: tuple[int, ...] = ()  # brokers expected (the operator's, or the ones seen before): KRaft ones leave /brokers/ids
    # controller id -> zookeeper.metadata.migration.enable as that controller runs it (DescribeConfigs asked of the
    # controller itself, KIP-919); empty when no controller was asked or none answered
    controller_migration: dict[int, bool] = field(default_factory=dict)
    # why ZooKeeper was not read (ZOOKEEPER_UNREACHABLE, ZOOKEEPER_NOT_GIVEN), None when it was; the zk_* fields,
    # controller, controller_epoch and migration are then empty, and broker_modes_read stands in for /brokers/ids
    zookeeper_unread: str | None = None
    zookeeper_connect: str | None = None  # the connect string tried (None: not given)
    # broker id -> "kraft", "migration" or "zookeeper" as the broker runs (process.roles and the migration flag,
    # DescribeConfigs through the brokers); read only when ZooKeeper is not, a broker that did not answer left out
    broker_modes_read: dict[int, str] = field(default_factory=dict)

    @property
    def zookeeper_why(self) -> str:
        """Why ZooKeeper was not read, for a line: ``not reachable at zk1:2181/kafka`` or ``not given``."""
        if self.zookeeper_unread is None:
            return ""
        return self.zookeeper_unread + (f" at {self.zookeeper_connect}" if self.zookeeper_connect else "")

    @property
    def kraft_controller_epoch(self) -> int | None:
        """``kraftControllerEpoch`` of ``/controller``: set once a KRaft controller holds the ZooKeeper controllership."""
        if not self.controller or "kraftControllerEpoch" not in self.controller:
            return None
        epoch = int(self.controller["kraftControllerEpoch"])
        return epoch if epoch >= 0 else None  # 3.9's ZooKeeper controller writes -1

    @property
    def migration_offset(self) -> int | None:
        """``kraft_metadata_offset`` of ``/migration`` (-1 before the metadata was copied)."""
        if not self.migration or "kraft_metadata_offset" not in self.migration:
            return None
        return int(self.migration["kraft_metadata_offset"])

    @property
    def brokers(self) -> tuple[int, ...]:
        """Every broker id the migration is about: in ``/brokers/ids``, in an assignment, or known before; without
        ZooKeeper, also every broker the quorum sees (its observers) or that answered DescribeConfigs."""
        ids = set(self.zk_broker_ids) | set(self.assigned_broker_ids) | set(self.known_broker_ids)
        if self.zookeeper_unread is not None:
            ids |= set(self.broker_modes_read)
            if self.quorum is not None:
                ids |= set(self.quorum.observers) - set(self.quorum.voters)
        return tuple(sorted(ids))

    @property
    def registered_with_kraft(self) -> tuple[int, ...]:
        """Brokers the KRaft quorum sees (DescribeQuorum observers that are broker ids)."""
        if self.quorum is None:
            return ()
        return tuple(sorted(set(self.quorum.observers) & set(self.brokers)))


@dataclass(frozen=True)
class PhaseReading:
    phase: Phase
    waiting_for: tuple[int, ...] = ()  # brokers the controller waits for (not registered with KRaft)
    zookeeper_brokers: tuple[int, ...] = ()  # brokers in ZooKeeper mode (in /brokers/ids)
    kraft_brokers: tuple[int, ...] = ()  # brokers out of /brokers/ids and seen by the quorum
    detail: str = ""

    def broker_modes(self, brokers: tuple[int, ...]) -> dict[int, str]:
        """Each broker's mode: ``zookeeper``, ``migration`` (ZooKeeper mode, registered with KRaft), ``kraft``, or
        ``unknown`` (neither in ``/brokers/ids`` nor seen by the quorum: stopped?)."""
        out = {}
        for b in brokers:
            if b in self.kraft_brokers:
                out[b] = "kraft"
            elif b in self.zookeeper_brokers:
                out[b] = "zookeeper" if b in self.waiting_for or self.phase in (Phase.ZOOKEEPER,) else "migration"
            else:
                out[b] = "unknown"
        return out


def phase_of(obs: Observation) -> PhaseReading:
    """The phase ``obs`` shows.

    >>> q = QuorumView(3000, 1, 50, (3000,), (1, 2))
    >>> phase_of(Observation("c", (1, 2, 3), (1, 2, 3), None, 1, None, q))
    PhaseReading(phase=<Phase.WAITING_FOR_BROKERS: 'waiting-for-brokers'>, waiting_for=(3,), zookeeper_brokers=(1, 2, 3), kraft_brokers=(), detail='the controller waits for broker 3 to register with KRaft')
    """
    if obs.zookeeper_unread is not None:
        return _phase_without_zookeeper(obs)
    zk = tuple(sorted(obs.zk_broker_ids))
    q = obs.quorum
    copied = obs.migration_offset is not None and obs.migration_offset >= 0 and obs.kraft_controller_epoch is not None
    if q is None or not q.has_leader:
        if copied:  # ZooKeeper alone says so: a KRaft controller holds /controller and copied the metadata
            gone = tuple(b for b in obs.brokers if b not in zk)
            return PhaseReading(Phase.BROKERS_KRAFT if gone else Phase.DUAL_WRITE, (), zk, (), detail=(
                f"read from ZooKeeper alone (no quorum answer: give --bootstrap-controller; ZooKeeper-mode brokers do "
                f"not forward DescribeQuorum): KRaft controller {obs.controller.get('brokerid') if obs.controller else '?'}"
                f" holds /controller, /migration offset {obs.migration_offset}"
                + (f"; broker{'s' if len(gone) != 1 else ''} {', '.join(map(str, gone))} out of /brokers/ids" if gone else "")))
        return PhaseReading(Phase.ZOOKEEPER, zookeeper_brokers=zk, detail=(
            "no KRaft controller quorum answers (ZooKeeper-mode brokers do not forward DescribeQuorum: give "
            "--bootstrap-controller to ask the controllers)"))
    registered = set(obs.registered_with_kraft)
    kraft = tuple(sorted(registered - set(zk)))
    if not copied:
        waiting = tuple(b for b in obs.brokers if b not in registered)
        names = ", ".join(str(b) for b in waiting)
        if not registered:
            return PhaseReading(Phase.CONTROLLERS_READY, waiting, zk, kraft, detail=(
                f"quorum leader {q.leader_id}; no broker registered with KRaft yet: roll 1 (--phase migration) "
                f"on broker{'s' if len(waiting) != 1 else ''} {names}"))
        if not waiting:
            return PhaseReading(Phase.WAITING_FOR_BROKERS, (), zk, kraft, detail=(
                "every broker registered with KRaft; the controller is copying the metadata"))
        return PhaseReading(Phase.WAITING_FOR_BROKERS, waiting, zk, kraft, detail=(
            f"the controller waits for broker{'s' if len(waiting) != 1 else ''} {names} to register with KRaft"))
    lag = q.high_watermark - (obs.migration_offset or 0)
    flags = obs.controller_migration
    if not zk:
        if flags and not any(flags.values()):
            return PhaseReading(Phase.FINALIZED, (), zk, kraft, detail=(
                f"every broker is KRaft; controller{'s' if len(flags) != 1 else ''} {', '.join(map(str, sorted(flags)))} "
                f"run{'s' if len(flags) == 1 else ''} without the migration flag: ZooKeeper can be retired"))
        if not flags and lag > FINALIZED_LAG:
            return PhaseReading(Phase.FINALIZED, (), zk, kraft, detail=(
                f"every broker is KRaft; /migration stopped {lag} records behind the metadata log: the controllers "
                "no longer write to ZooKeeper"))
        still = sorted(c for c, on in flags.items() if on)
        return PhaseReading(Phase.BROKERS_KRAFT, (), zk, kraft, detail=(
            "every broker is KRaft; the controllers still write to ZooKeeper (dual-write): finalize, or roll back"
            + (f" (controller{'s' if len(still) != 1 else ''} {', '.join(map(str, still))} still "
               "run with the migration flag)" if still and len(still) < len(flags) else "")))
    if kraft:
        return PhaseReading(Phase.BROKERS_KRAFT, (), zk, kraft, detail=(
            f"roll 2 under way: broker{'s' if len(zk) != 1 else ''} {', '.join(map(str, zk))} still in ZooKeeper mode"))
    return PhaseReading(Phase.DUAL_WRITE, (), zk, kraft, detail=(
        f"metadata copied; dual-write at offset {obs.migration_offset} (quorum high watermark {q.high_watermark})"))


def _phase_without_zookeeper(obs: Observation) -> PhaseReading:
    """``finalized`` when the quorum has a leader, every voter runs without the migration flag and every broker is
    KRaft (its ``process.roles`` says broker; one whose mode was not read counts when the quorum sees it); else
    :data:`Phase.UNKNOWN`, saying what was seen (the phases before finalize are read in ZooKeeper).

    >>> q = QuorumView(3000, 4, 900, (3000,), (1, 2))
    >>> r = phase_of(Observation(None, (), (), None, None, None, q, controller_migration={3000: False},
    ...                          zookeeper_unread=ZOOKEEPER_UNREACHABLE, zookeeper_connect="zk1:2181/kafka",
    ...                          broker_modes_read={1: "kraft", 2: "kraft"}))
    >>> r.phase.value, r.kraft_brokers
    ('finalized', (1, 2))
    """
    q, flags, why = obs.quorum, obs.controller_migration, obs.zookeeper_why
    unknown = f"the phase cannot be known without ZooKeeper ({why})"
    if q is None or not q.has_leader:
        return PhaseReading(Phase.UNKNOWN, detail=(
            f"{unknown}, and {'no KRaft controller quorum answers' if q is None else 'the quorum has no leader'} "
            "(give --bootstrap-controller, or a KRaft broker in --bootstrap-server: it forwards DescribeQuorum)"))
    seen = set(q.observers)
    modes = {b: obs.broker_modes_read.get(b) or ("kraft" if b in seen else None) for b in obs.brokers}
    kraft = tuple(b for b, m in modes.items() if m == "kraft")
    zk_mode = tuple(b for b, m in modes.items() if m in ("migration", "zookeeper"))
    still = sorted(v for v in q.voters if flags.get(v))
    unread = sorted(v for v in q.voters if v not in flags)
    off = sorted(v for v in q.voters if flags.get(v) is False)
    if not still and not unread and kraft and len(kraft) == len(modes):
        return PhaseReading(Phase.FINALIZED, (), (), kraft, detail=(
            f"every broker is KRaft ({_plural('broker', kraft)}); {_plural('controller', off)} "
            f"run{'s' if len(off) == 1 else ''} without the migration flag; ZooKeeper not read ({why}): nothing needs "
            "it any more"))
    why_not = []
    if still:
        why_not.append(f"{_plural('controller', still)} still run{'s' if len(still) == 1 else ''} with the migration "
                       "flag (not finalized: the controllers use ZooKeeper)")
    if unread:
        why_not.append(f"the migration flag of {_plural('controller', unread)} could not be read (DescribeConfigs on "
                       "the controller listener; give --bootstrap-controller)")
    if zk_mode:
        why_not.append(f"{_plural('broker', zk_mode)} in ZooKeeper or migration mode (process.roles unset)")
    missing = tuple(b for b, m in modes.items() if m is None)
    if missing:
        why_not.append(f"{_plural('broker', missing)} neither seen by the quorum nor answering")
    if not modes:
        why_not.append("no broker seen by the quorum")
    return PhaseReading(Phase.UNKNOWN, (), zk_mode, kraft, detail=f"{unknown}: " + "; ".join(why_not))


def broker_mode(process_roles: str | None, migration_flag: str | None) -> str:
    """A broker's mode from how it runs (DescribeConfigs): ``kraft`` when ``process.roles`` names ``broker``, else
    ``migration`` with ``zookeeper.metadata.migration.enable=true`` (roll 1), else ``zookeeper``.

    >>> broker_mode("broker", None), broker_mode("", "true"), broker_mode(None, "false")
    ('kraft', 'migration', 'zookeeper')
    """
    if "broker" in [r.strip() for r in (process_roles or "").split(",")]:
        return "kraft"
    return "migration" if str(migration_flag or "").strip().lower() == "true" else "zookeeper"


def _plural(what: str, ids) -> str:
    ids = list(ids)
    return f"{what}{'s' if len(ids) != 1 else ''} {', '.join(map(str, ids))}"


# --------------------------------------------------------------- parsing
def parse_json_znode(data: bytes | None) -> dict | None:
    """A znode's JSON object, or None when absent, empty or not JSON (a half-written or foreign node)."""
    if not data:
        return None
    try:
        value = json.loads(data.decode("utf-8", "replace"))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def parse_int_znode(data: bytes | None) -> int | None:
    """``/controller_epoch``'s integer, or None."""
    try:
        return int(data.decode().strip()) if data else None
    except ValueError:
        return None


def parse_quorum(answer: dict) -> QuorumView:
    """kafka-python's ``describe_metadata_quorum()`` answer (the DescribeQuorum response as a dict) as a view.

    >>> parse_quorum({"topics": [{"partitions": [{"leader_id": 3000, "leader_epoch": 2, "high_watermark": 90,
    ...     "current_voters": [{"replica_id": 3000, "log_end_offset": 90}],
    ...     "observers": [{"replica_id": 1, "log_end_offset": 88}]}]}]})
    QuorumView(leader_id=3000, leader_epoch=2, high_watermark=90, voters=(3000,), observers=(1,), voter_lag={3000: 0})
    """
    part = answer["topics"][0]["partitions"][0]
    voters = part.get("current_voters") or []
    end = max([v.get("log_end_offset", -1) for v in voters if v.get("replica_id") == part["leader_id"]] or [-1])
    return QuorumView(
        leader_id=int(part["leader_id"]), leader_epoch=int(part["leader_epoch"]),
        high_watermark=int(part["high_watermark"]),
        voters=tuple(int(v["replica_id"]) for v in voters),
        observers=tuple(sorted(int(o["replica_id"]) for o in part.get("observers") or [])),
        voter_lag={int(v["replica_id"]): max(0, end - int(v.get("log_end_offset", -1))) for v in voters} if end >= 0 else {},
    )


def assigned_broker_ids(assignments: dict[str, bytes | None]) -> tuple[int, ...]:
    """Every broker id in ``/brokers/topics/<topic>`` assignments (``{"partitions": {"0": [1, 2]}}``)."""
    ids: set[int] = set()
    for data in assignments.values():
        doc = parse_json_znode(data) or {}
        for replicas in (doc.get("partitions") or {}).values():
            ids.update(int(r) for r in replicas)
    return tuple(sorted(ids))
