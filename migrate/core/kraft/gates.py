"""The gates between the steps of a ZooKeeper-to-KRaft migration (KIP-866), judged on readings (pure).

On bare metal the operator restarts the nodes; ``kmigrate kraft status --wait-for GATE`` is the gate between two
steps. Each gate holds the checks of KRAFT.md B6 that can be read without JMX (``ZkMigrationState``,
``MigratingZkBrokerCount`` and ``ZkWriteBehindLag`` are JMX metrics only):

- ``controllers-ready`` (after the controllers start): DescribeQuorum answers, with a leader, and every voter
  caught up (its log end offset within :data:`CAUGHT_UP_RECORDS` of the leader's), held over several readings.
- ``dual-write`` (after roll 1): the quorum has a leader; ``/controller`` holds a ``kraftControllerEpoch`` (a KRaft
  controller took the controllership); ``/migration``'s metadata offset is ≥ 0 (the metadata was copied) and
  advances across the readings; every broker is registered with the quorum.
- ``brokers-kraft`` (after roll 2): ``/brokers/ids`` is empty; every broker (in an assignment, or known) is seen by
  the quorum; no offline partition.
- ``finalized`` (after the controller roll without the migration flag): every voter runs without the migration flag
  (DescribeConfigs asked of the controllers), and every broker is seen by the quorum again. It passes with ZooKeeper
  stopped (retired) as well; ``controllers-ready`` needs no ZooKeeper either; ``dual-write`` and ``brokers-kraft``
  wait while ZooKeeper is not read (unless the reading shows the cluster finalized: past them).

A gate is judged on one :class:`~migrate.core.kraft.phases.Observation` at a time by :class:`GateWatch`, which keeps
only what the readings of one wait showed (how many passed in a row, the first ``/migration`` offset of that run):
killed and run again, a wait starts from a fresh reading. A reading past the gate's phase (say ``dual-write`` asked
of a finalized cluster) passes on the checks that still apply there.

:func:`waiting_reasons` says, for each broker the controller waits for (``WAIT_FOR_BROKERS``), why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from migrate.core.kraft.phases import Observation, Phase, PhaseReading, phase_of

CAUGHT_UP_RECORDS = 10
"""A voter is caught up when its log end offset is within this many records of the leader's (DescribeQuorum;
the leader appends a no-op record every 500 ms, so a healthy follower reads 0 to a few records behind)."""
DEFAULT_CHECK_COUNT = 3
"""Readings in a row a gate must pass (as ``kmigrate health --wait``): one good reading can come between a restart
and its consequences."""


class Gate(str, Enum):
    CONTROLLERS_READY = "controllers-ready"
    DUAL_WRITE = "dual-write"
    BROKERS_KRAFT = "brokers-kraft"
    FINALIZED = "finalized"


_ORDER = (Phase.ZOOKEEPER, Phase.CONTROLLERS_READY, Phase.WAITING_FOR_BROKERS, Phase.DUAL_WRITE, Phase.BROKERS_KRAFT,
          Phase.FINALIZED)
_GATE_PHASE = {Gate.CONTROLLERS_READY: Phase.CONTROLLERS_READY, Gate.DUAL_WRITE: Phase.DUAL_WRITE,
               Gate.BROKERS_KRAFT: Phase.BROKERS_KRAFT, Gate.FINALIZED: Phase.FINALIZED}


def parse_gate(text: str) -> Gate | None:
    """The gate named ``text`` (``dual-write``, ``DUAL_WRITE``), or None."""
    name = text.strip().lower().replace("_", "-")
    return next((g for g in Gate if g.value == name), None)


def _ids(ids) -> str:
    ids = list(ids)
    return ", ".join(map(str, ids))


def _brokers(ids) -> str:
    ids = list(ids)
    return f"broker{'s' if len(ids) != 1 else ''} {_ids(ids)}"


# ------------------------------------------------------------------ why a broker is awaited
def waiting_reasons(obs: Observation) -> dict[int, str]:
    """For each broker of ``obs`` the quorum does not see (not registered with KRaft), why, as the operator fixes it:
    in ZooKeeper mode without the migration settings; named by an assignment but not live (before the metadata is
    copied: a dead id, KRAFT.md B4); else stopped or restarting.

    >>> from migrate.core.kraft.phases import QuorumView
    >>> q = QuorumView(3000, 1, 50, (3000,), (101,))
    >>> reasons = waiting_reasons(Observation("c", (101, 205), (101, 205, 7), None, 1, None, q))
    >>> reasons[205]
    'in ZooKeeper mode, not registered with KRaft: it lacks the migration settings or was not restarted with them (kmigrate kraft broker-config 205 --phase migration, then restart it)'
    >>> reasons[7].startswith("named by partition assignments but not a live broker (not in /brokers/ids): a dead id")
    True
    """
    return {b: _REASONS[kind].format(b=b) for b, kind in _reason_kinds(obs).items()}


_REASONS = {
    "zookeeper": ("in ZooKeeper mode, not registered with KRaft: it lacks the migration settings or was not restarted "
                  "with them (kmigrate kraft broker-config {b} --phase migration, then restart it)"),
    "dead": ("named by partition assignments but not a live broker (not in /brokers/ids): a dead id, the classic cause "
             "of WAIT_FOR_BROKERS, or a broker down; start broker {b}, or reassign the partitions that name it "
             "(kmigrate kraft precheck lists them)"),
    "down": ("neither in /brokers/ids nor seen by the quorum: stopped, or restarting (a KRaft broker needs node.id and "
             "controller.quorum.voters naming these controllers)"),
}
_SHORT = {  # the same, for several brokers at once (a gate's one line)
    "zookeeper": "in ZooKeeper mode without the migration settings (roll 1: kmigrate kraft broker-config ID --phase "
                 "migration, then restart)",
    "dead": "named by assignments but not live (a dead id: start it or reassign its partitions; kmigrate kraft precheck "
            "lists them)",
    "down": "not in /brokers/ids either (stopped, restarting, or not fetching yet from a restarted controller? a "
            "KRaft broker needs node.id and controller.quorum.voters naming these controllers)",
}


def _reason_kinds(obs: Observation) -> dict[int, str]:
    """Broker id -> ``zookeeper``, ``dead`` or ``down`` (the keys of :data:`_REASONS`) for each unseen broker."""
    registered = set(obs.registered_with_kraft)
    zk, assigned = set(obs.zk_broker_ids), set(obs.assigned_broker_ids)
    # once the metadata is copied, brokers leave /brokers/ids on purpose (roll 2): absent there is no sign of a dead id
    copied = (obs.migration_offset or -1) >= 0 and obs.kraft_controller_epoch is not None
    out: dict[int, str] = {}
    for b in obs.brokers:
        if b in registered:
            continue
        out[b] = "zookeeper" if b in zk else "dead" if b in assigned and not copied else "down"
    return out


# ------------------------------------------------------------------ one reading, judged
@dataclass(frozen=True)
class GateCheck:
    """One reading judged against a gate: ``ok`` when this reading meets every check; ``missing`` names, one item
    each, what the gate still waits for (empty when ``ok``)."""

    gate: Gate
    phase: PhaseReading
    ok: bool
    missing: tuple[str, ...] = ()
    past: bool = False  # the reading is past the gate's phase: only the checks that still apply were judged


def _quorum_missing(obs: Observation, controllers: tuple[str, ...]) -> list[str]:
    q = obs.quorum
    if q is None:
        asked = f" (asked: {', '.join(controllers)})" if controllers else ""
        return [f"no controller answers DescribeQuorum{asked}: start the controllers, or name their listeners with "
                "--bootstrap-controller (ZooKeeper-mode brokers do not forward it)"]
    if not q.has_leader:
        return [f"the quorum has no leader (voters {_ids(q.voters)}): a majority of the controllers must run and reach "
                "each other on the controller listener"]
    return []


def _lagging(obs: Observation) -> list[str]:
    q = obs.quorum
    if q is None or not q.has_leader:
        return []
    behind = {v: q.voter_lag.get(v) for v in q.voters if q.voter_lag.get(v) is None or q.voter_lag[v] > CAUGHT_UP_RECORDS}
    return [f"voter {v} not caught up ({'no fetch seen' if lag is None else f'{lag} records behind the leader'})"
            for v, lag in sorted(behind.items())]


def _unseen(obs: Observation, what: str = "not seen by the quorum", skip: tuple[int, ...] = ()) -> list[str]:
    """One item per kind of reason, naming its brokers."""
    kinds = {b: k for b, k in _reason_kinds(obs).items() if b not in skip}
    return [f"{_brokers(sorted(b for b, k in kinds.items() if k == kind))} {what}: {_SHORT[kind]}"
            for kind in _SHORT if kind in kinds.values()]


def judge_reading(gate: Gate, obs: Observation, controllers: tuple[str, ...] = (),
                  offline: tuple[str, ...] | None = None) -> GateCheck:
    """``obs`` against ``gate``, on this reading alone (:class:`GateWatch` adds what needs several).
    ``controllers``: the addresses asked (named when none answers); ``offline``: the offline partitions
    (``topic-partition``), None when they could not be read (the brokers-kraft gate then waits)."""
    reading = phase_of(obs)
    missing = _quorum_missing(obs, controllers)
    if reading.phase is Phase.UNKNOWN:  # ZooKeeper not read, not finalized: only the quorum's own gate can be judged
        if gate is Gate.CONTROLLERS_READY:
            missing += _lagging(obs)
            return GateCheck(gate, reading, not missing, tuple(missing))
        if obs.zookeeper_connect:  # ZooKeeper tried, not answering: what the wait is for, then why it matters
            return GateCheck(gate, reading, False, tuple(missing) + (f"ZooKeeper at {obs.zookeeper_connect} to "
                                                                      f"answer: {reading.detail}",))
        return GateCheck(gate, reading, False, tuple(missing) + (reading.detail,))
    rank, want = _ORDER.index(reading.phase), _ORDER.index(_GATE_PHASE[gate])
    if gate is Gate.CONTROLLERS_READY:
        missing += _lagging(obs)
        return GateCheck(gate, reading, not missing, tuple(missing), past=rank > want)
    past = rank > want
    if gate is Gate.DUAL_WRITE:
        if past:  # finalized: dual-write ended on purpose
            return GateCheck(gate, reading, not missing, tuple(missing), past=True)
        if obs.kraft_controller_epoch is None:
            holder = (obs.controller or {}).get("brokerid")
            missing.append("/controller has no kraftControllerEpoch: the KRaft controller has not taken the "
                           "controllership" + (f" (held by broker {holder})" if holder is not None else ""))
        offset = obs.migration_offset
        if offset is None or offset < 0:
            missing.append("/migration's metadata offset is " + ("absent" if offset is None else str(offset))
                           + ": the controller has not copied the metadata yet")
        if obs.quorum is not None and obs.quorum.has_leader:
            missing += _unseen(obs, "not registered with KRaft")
        return GateCheck(gate, reading, not missing, tuple(missing))
    # brokers-kraft and finalized: every broker a KRaft broker, seen by the quorum, no offline partition
    if obs.zk_broker_ids:
        registered = set(obs.registered_with_kraft)
        migrating = [b for b in obs.zk_broker_ids if b in registered]
        plain = [b for b in obs.zk_broker_ids if b not in registered]
        modes = ([f"{_brokers(plain)} in ZooKeeper mode"] if plain else []) + (
            [f"{_brokers(migrating)} in migration mode (roll 1's config)"] if migrating else [])
        n = len(obs.zk_broker_ids)
        missing.append(f"{' and '.join(modes)}, still in /brokers/ids: roll 2, restart {'it' if n == 1 else 'each'} "
                       "with kmigrate kraft broker-config ID --phase kraft")
    if obs.quorum is not None and obs.quorum.has_leader:
        missing += _unseen(obs, skip=obs.zk_broker_ids)  # those are named above
    if offline is None:
        missing.append("the partitions' leaders, unread: no broker answered (give --bootstrap-server, the brokers' "
                       "listeners; a broker restarting right now answers again soon)")
    elif offline:
        shown = ", ".join(offline[:5]) + (f" and {len(offline) - 5} more" if len(offline) > 5 else "")
        missing.append(f"{len(offline)} offline partition{'s' if len(offline) != 1 else ''} (no leader): {shown}")
    if gate is Gate.FINALIZED:
        q = obs.quorum
        voters = q.voters if q is not None else ()
        flags = obs.controller_migration
        still = sorted(c for c, on in flags.items() if on)
        unread = sorted(v for v in voters if v not in flags)
        if still:
            missing.append(f"controller{'s' if len(still) != 1 else ''} {_ids(still)} still run"
                           f"{'s' if len(still) == 1 else ''} with the migration flag: roll "
                           f"{'it' if len(still) == 1 else 'each'} with kmigrate kraft controller-config ID --finalize")
        if unread:
            missing.append(f"the migration flag of controller{'s' if len(unread) != 1 else ''} {_ids(unread)} could "
                           "not be read (DescribeConfigs on the controller listener; give --bootstrap-controller)")
    return GateCheck(gate, reading, not missing, tuple(missing), past=rank > want)


# ------------------------------------------------------------------ several readings
@dataclass
class GateWatch:
    """The readings of one wait for ``gate``: it passes after ``needed`` readings in a row that pass, and for
    ``dual-write`` once ``/migration``'s offset advanced within that run (the controller still mirrors to ZooKeeper).
    Nothing outside one wait is kept."""

    gate: Gate
    needed: int = DEFAULT_CHECK_COUNT
    controllers: tuple[str, ...] = ()
    consecutive: int = 0
    checks: int = 0
    first_offset: int | None = None
    last: GateCheck | None = None
    last_observation: Observation | None = None
    missing: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.needed < 1:
            raise ValueError("needed must be 1 or more")

    def observe(self, obs: Observation, offline: tuple[str, ...] | None = None) -> bool:
        """Judge one more reading; True when the gate has passed."""
        check = judge_reading(self.gate, obs, self.controllers, offline)
        self.checks += 1
        self.last, self.last_observation = check, obs
        missing = list(check.missing)
        if not check.ok:
            self.consecutive, self.first_offset = 0, None
        else:
            self.consecutive += 1
            if self.gate is Gate.DUAL_WRITE and not check.past:
                offset = obs.migration_offset
                if self.first_offset is None or offset is None or offset < self.first_offset:
                    self.first_offset = offset
                if offset is None or self.first_offset is None or offset <= self.first_offset:
                    missing.append(f"/migration's offset to advance past {offset} (the controller mirrors each metadata "
                                   "change to ZooKeeper during dual-write)")
        if check.ok and self.consecutive < self.needed:
            missing.append(f"{self.needed} passing readings in a row ({self.consecutive} so far)")
        self.missing = tuple(missing)
        return not self.missing

    @property
    def passed(self) -> bool:
        return self.last is not None and not self.missing

    def summary(self) -> str:
        """One line: where the reading stands and what the gate waits for."""
        if self.last is None:
            return f"{self.gate.value}: no reading yet"
        head = f"phase {self.last.phase.phase.value}"
        if self.passed:
            return f"{head}: gate {self.gate.value} passed" + (" (already past it)" if self.last.past else "")
        return f"{head}: waiting for " + "; ".join(self.missing)


# ------------------------------------------------------------------ finalize
def finalize_refusal(obs: Observation, offline: tuple[str, ...] | None, controllers: tuple[str, ...] = ()) -> str | None:
    """Why the controllers must not be finalized on this reading (one line), or None when every broker is a KRaft
    broker seen by the quorum and no partition is offline. Kafka itself lets the controllers finalize before every
    broker re-registered (KAFKA-20960), and there is no way back to ZooKeeper after it.

    >>> from migrate.core.kraft.phases import QuorumView
    >>> q = QuorumView(3000, 1, 900, (3000,), (1, 2))
    >>> finalize_refusal(Observation("c", (2,), (1, 2), {"kraftControllerEpoch": 1}, 1,
    ...                              {"kraft_metadata_offset": 880}, q), offline=()).split("): ")[1]
    "broker 2 in migration mode (roll 1's config), still in /brokers/ids: roll 2, restart it with kmigrate kraft broker-config ID --phase kraft; then kmigrate kraft status --wait-for brokers-kraft, and run this again"
    """
    check = judge_reading(Gate.BROKERS_KRAFT, obs, controllers, offline)
    if check.ok:
        return None
    return ("refusing to finalize, after which there is no way back to ZooKeeper (Kafka would let it happen: "
            "KAFKA-20960): " + "; ".join(check.missing) + "; then kmigrate kraft status --wait-for brokers-kraft, "
            "and run this again")
