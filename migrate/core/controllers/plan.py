"""A KRaft controller move (KIP-853), pure: refuse it, and find its next step from what the cluster shows now.

``kmigrate controllers --add 7,8,9 --remove 1,2,3`` replaces controllers one pair at a time, one voter change in
flight at a time, the cluster being the only record of progress:

1. wait until the new controller is an observer with the expected directory id and caught up over several polls
   (:mod:`migrate.core.controllers.gate`);
2. add it (AddRaftVoter): the quorum has one voter more;
3. remove an old voter (RemoveRaftVoter): followers first, the leader last; on Kafka 3.9, and for a controller that
   runs with ``controller.quorum.auto.join.enable=true`` (4.2+), the old controller is *stopped before* its removal
   (3.9 has no pre-vote, KIP-996: a removed voter still running can disturb the elections; with auto-join it would
   join again at once); from 4.0 it is removed, then stopped (:func:`stop_order`);
4. again from 1 with the next pair, until every ``--add`` is a voter and every ``--remove`` is gone and stopped.

:func:`next_step` derives the one next step from a :class:`~migrate.core.controllers.quorum.Reading` each time,
so a rerun after a kill at any line converges: an add already done is skipped (the id is a voter), a removal
already done is skipped (the id is not a voter any more), a stop already done is skipped (the runner confirmed it).
It never plans a removal before its pair's add, never a change while the last one has not settled (a running voter
lagging: the change may still be uncommitted, and Kafka would answer REQUEST_TIMED_OUT), never a stop or a removal
that leaves fewer running voters than a majority of the voter set it leaves or enters.

:func:`check_request` gives the refusals (``migrate.errors.BadInput``: one line, nothing changed): ids that do not
pair, removing a majority at once, a static quorum, an id that is a broker's, an unknown id. No I/O, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Iterable

from migrate.core.controllers.gate import MAX_AGE_MS, MAX_LAG_RECORDS
from migrate.core.controllers.quorum import DYNAMIC, Endpoint, Quorum, Reading, ids_text
from migrate.errors import BadInput

DYNAMIC_FROM = (3, 9)
"""KIP-853 (AddRaftVoter, RemoveRaftVoter, dynamic quorums) came with Kafka 3.9."""
PREVOTE_FROM = (4, 0)
"""KIP-996 pre-vote shipped in 4.0: from then a controller is removed first, then stopped (KAFKA-19900)."""
STATIC_CONVERSION_FROM = (4, 1)
"""A static quorum can become dynamic from 4.1 (``kraft.version=1``, KAFKA-16538); 3.9 and 4.0 cannot convert."""
AUTO_JOIN_FROM = (4, 2)
"""``controller.quorum.auto.join.enable`` (default false) exists from 4.2 (KAFKA-19078)."""


def quorum_size(voters: int) -> int:
    """Votes a voter set of ``voters`` needs to commit (a strict majority)."""
    return voters // 2 + 1


def release_text(release: tuple[int, int] | None) -> str:
    return "an unknown release" if release is None else f"{release[0]}.{release[1]}"


# ------------------------------------------------------------------ the request
@dataclass(frozen=True)
class NewController:
    """A controller that joins: its ``node.id`` and the endpoint of its controller listener (``name`` is the listener's
    name, what AddRaftVoter sends and what its ``listeners`` declare)."""

    id: int
    host: str
    port: int
    listener: str = "CONTROLLER"

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(self.listener, self.host, self.port)

    @property
    def address(self) -> str:
        return self.endpoint.address


@dataclass(frozen=True)
class ControllerChange:
    """What the operator asked: controllers to add (with their endpoints), ids to remove, as many of each."""

    add: tuple[NewController, ...]
    remove: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "add", tuple(sorted(self.add, key=lambda c: c.id)))
        object.__setattr__(self, "remove", tuple(sorted(set(self.remove))))

    @property
    def add_ids(self) -> tuple[int, ...]:
        return tuple(c.id for c in self.add)

    def new(self, node_id: int) -> NewController:
        return next(c for c in self.add if c.id == node_id)


def validate_change(change: ControllerChange) -> None:
    """Errors in the request itself, before any cluster is read (BadInput).

    >>> validate_change(ControllerChange((NewController(7, "c7", 9093),), (1, 2)))
    Traceback (most recent call last):
    ...
    migrate.errors.BadInput: --add names 1 controller (7) and --remove 2 (1 and 2): give as many of each: kmigrate controllers replaces controllers in pairs (each new controller joins before an old one leaves)
    """
    if not change.add and not change.remove:
        raise BadInput("nothing to do: give --add (new controllers, started as observers) and --remove (old voters), "
                       "as many of each")
    ids = change.add_ids
    if len(set(ids)) != len(ids):
        raise BadInput(f"--add lists a controller id twice ({', '.join(map(str, ids))}): give each new controller once")
    for i in (*ids, *change.remove):
        if i < 0:
            raise BadInput(f"controller id {i}: a node.id is 0 or more")
    both = sorted(set(ids) & set(change.remove))
    if both:
        raise BadInput(f"controller {both[0]} is both added and removed: give each id to one of --add/--remove")
    if len(ids) != len(change.remove):
        raise BadInput(f"--add names {len(ids)} controller{'s' if len(ids) != 1 else ''} ({ids_text(ids)}) and "
                       f"--remove {len(change.remove)} ({ids_text(change.remove)}): give as many of each: kmigrate "
                       "controllers replaces controllers in pairs (each new controller joins before an old one leaves)")


def static_quorum_refusal(kraft_version: int | None, release: tuple[int, int] | None,
                          controllers: str = "--bootstrap-controller C") -> str | None:
    """Why voters cannot be changed because the quorum is static (``kraft.version`` 0 or absent), with the way out;
    None for a dynamic quorum. ``controllers``: how the operator named the controllers (``--playbook FILE``, or
    ``--bootstrap-controller host:port``), repeated in the upgrade command it gives.

    >>> print(static_quorum_refusal(0, (4, 0)))
    the controller quorum is static (kraft.version 0: controller.quorum.voters), and Kafka 4.0 cannot make it dynamic (KAFKA-16538, fixed in 4.1): upgrade the cluster to Kafka 4.1 or later first, or move to a new KRaft cluster with kmigrate mirror
    """
    if kraft_version is not None and kraft_version >= DYNAMIC:
        return None
    head = "the controller quorum is static (kraft.version 0: controller.quorum.voters)"
    steps = (f"make it dynamic first: kmigrate controllers upgrade-kraft-version {controllers} (sends "
             "kraft.version=1 and names the nodes to roll), then roll the brokers with controller.quorum.bootstrap.servers "
             "(the old and the new controllers' host:port) in place of controller.quorum.voters; then run this again")
    if release is None:
        return (f"{head}: on Kafka 4.1 or later, {steps}; on 3.9 or 4.0 it cannot become dynamic: upgrade to 4.1+ first, "
                "or move to a new KRaft cluster with kmigrate mirror")
    if release < STATIC_CONVERSION_FROM:
        return (f"{head}, and Kafka {release_text(release)} cannot make it dynamic (KAFKA-16538, fixed in 4.1): upgrade "
                "the cluster to Kafka 4.1 or later first, or move to a new KRaft cluster with kmigrate mirror")
    return f"{head}: {steps}"


def check_request(reading: Reading, change: ControllerChange, controllers: str = "--bootstrap-controller C") -> None:
    """Refuse (BadInput, one line, nothing changed) a change this cluster cannot take, judged on ``reading``.

    Call before the first step of every run (a rerun too): a finished or half-done change is not refused, its done
    parts are recognised (an ``--add`` id already a voter, a ``--remove`` id already gone once the move has begun).
    """
    q = reading.quorum
    net = len(change.remove) - len(change.add)
    voters = len(q.voter_ids)
    if net > 0 and voters - net < quorum_size(voters):
        raise BadInput(f"--remove {','.join(map(str, change.remove))} takes {len(change.remove)} of the {voters} voters "
                       f"and --add brings {len(change.add)}: that removes a majority at once ({voters} voters need "
                       f"{quorum_size(voters)}); give as many --add as --remove ids: each new controller joins before "
                       "an old one leaves")
    validate_change(change)
    if reading.release is not None and reading.release < DYNAMIC_FROM:
        raise BadInput(f"the controllers run Kafka {release_text(reading.release)}: voters can change from Kafka 3.9 "
                       "(KIP-853); upgrade the cluster to 4.1 or later (a 3.x quorum is static), or move to a new KRaft "
                       "cluster with kmigrate mirror")
    static = static_quorum_refusal(reading.kraft_version, reading.release, controllers)
    if static:
        raise BadInput(static)
    if q.leader_id is None:
        raise BadInput("the quorum has no leader (DescribeQuorum): a voter change needs one; bring the controllers "
                       "back up and run this again")
    brokers = sorted(set(change.add_ids) & reading.broker_ids)
    if brokers:
        raise BadInput(f"controller id {brokers[0]} is already a broker id: give new controllers node.ids no broker "
                       "uses (kafka-metadata-quorum describe --status lists voters; kafka-cluster list the brokers)")
    unknown = [i for i in change.add_ids if not q.is_voter(i) and q.observer(i) is None]
    if unknown:
        raise BadInput(f"controller {unknown[0]} is neither an observer nor a voter of the quorum: start it first, "
                       f"formatted with --no-initial-controllers (kmigrate controllers controller-config {unknown[0]}), "
                       "and run this again")
    added = [i for i in change.add_ids if q.is_voter(i)]
    gone = [i for i in change.remove if not q.is_voter(i)]
    if gone and not added:
        raise BadInput(f"controller {gone[0]} is not a voter (voters: {ids_text(q.voter_ids)}): name voters in --remove")
    if len(gone) > len(added):
        raise BadInput(f"controllers {ids_text(gone)} are no voters while only {len(added)} of the new ones "
                       f"({ids_text(added)}) were added: the quorum was changed outside this move; name in --remove "
                       f"the voters still to remove ({ids_text(q.voter_ids)} are voters)")


# ------------------------------------------------------------------ stop order
class StopOrder(str, Enum):
    BEFORE_REMOVAL = "before-removal"
    AFTER_REMOVAL = "after-removal"


def stop_order(release: tuple[int, int] | None, auto_join: bool) -> StopOrder:
    """When a removed controller is stopped: before its removal on 3.9 (no pre-vote) and wherever auto-join is on (it
    would join again), else after (4.0+: KIP-996 pre-vote keeps a removed voter from disturbing the quorum). An
    unknown release is treated as 3.9 (stopping first is safe on every release; it only lowers fault tolerance for
    the length of one change).

    >>> stop_order((3, 9), False).value, stop_order((4, 1), False).value, stop_order((4, 2), True).value
    ('before-removal', 'after-removal', 'before-removal')
    """
    if auto_join or release is None or release < PREVOTE_FROM:
        return StopOrder.BEFORE_REMOVAL
    return StopOrder.AFTER_REMOVAL


def stop_order_reason(release: tuple[int, int] | None, auto_join: bool) -> str:
    """One line saying which order applies, and why (what kmigrate tells the operator)."""
    if auto_join:
        return ("stop each old controller before its removal: it runs with controller.quorum.auto.join.enable=true and "
                "would join the voters again at once (KAFKA-19850)")
    if release is None:
        return "stop each old controller before its removal (the controllers' Kafka release is unknown: the safe order)"
    if release < PREVOTE_FROM:
        return (f"stop each old controller before its removal: Kafka {release_text(release)} has no pre-vote (KIP-996), "
                "and a removed voter left running can disturb the elections")
    return (f"remove each old controller, then stop it: Kafka {release_text(release)} has pre-vote (KIP-996), so the "
            "quorum keeps its full fault tolerance until the removal commits (KAFKA-19900)")


# ------------------------------------------------------------------ the next step
class StepKind(str, Enum):
    WAIT_CATCH_UP = "wait-catch-up"  # run the catch-up gate for node_id, then plan again
    ADD = "add"  # AddRaftVoter(node_id, directory_id, endpoint)
    STOP = "stop"  # stop node_id's process (before or after its removal: before_removal)
    REMOVE = "remove"  # RemoveRaftVoter(node_id, directory_id)
    WAIT_SETTLE = "wait-settle"  # the last change has not settled (a running voter lags, or no leader): read again
    BLOCKED = "blocked"  # the next change would cost the quorum its majority: a gate failure, reason says why
    DONE = "done"


@dataclass(frozen=True)
class Step:
    """The one next step, with the sentence an operator reads (``reason``)."""

    kind: StepKind
    node_id: int | None = None
    directory_id: str | None = None
    endpoint: Endpoint | None = None
    before_removal: bool | None = None
    reason: str = ""

    def describe(self) -> str:
        return self.reason or self.kind.value


def _running_voters(reading: Reading, max_lag: int, max_age_ms: int, now_ms: int | None) -> set[int]:
    """Voters that keep up: the leader, and voters neither stopped nor stale whose lag and last fetch are within the
    bounds (a voter paused a moment ago still shows a recent fetch: ``stale_ids`` names it)."""
    q = reading.quorum
    now = q.leader_now_ms(now_ms)
    out = set()
    for v in q.voters:
        if v.id in reading.stopped_ids or (v.id in reading.stale_ids and v.id != q.leader_id):
            continue
        if v.id == q.leader_id:
            out.add(v.id)
            continue
        lag = q.lag(v)
        fresh = v.last_fetch_ms is not None and (now is None or now - v.last_fetch_ms <= max_age_ms)
        if lag is not None and lag <= max_lag and fresh:
            out.add(v.id)
    return out


def _removal_order(q: Quorum, ids: Iterable[int]) -> list[int]:
    """Followers first (by id), the leader last."""
    return sorted(ids, key=lambda i: (i == q.leader_id, i))


def next_step(reading: Reading, change: ControllerChange, caught_up: Iterable[int] = (), *,
              max_lag: int = MAX_LAG_RECORDS, max_age_ms: int = MAX_AGE_MS, now_ms: int | None = None) -> Step:
    """The next step of ``change`` from what ``reading`` shows (call :func:`check_request` first, once per run).

    ``caught_up``: the new controllers whose catch-up gate passed in this run (:class:`~migrate.core.controllers.
    gate.CatchUpWatch`); without its id, an add is a :data:`StepKind.WAIT_CATCH_UP` step.

    >>> from migrate.core.controllers.quorum import Quorum, Reading, Replica
    >>> def voter(i, end=100): return Replica(i, f"d{i}", end, None if i == 1 else 9_990, 10_000)
    >>> q = Quorum(1, 4, 100, (voter(1), voter(2), voter(3)), (Replica(7, "d7", 100, 9_990, 9_990),))
    >>> ch = ControllerChange((NewController(7, "c7", 9093),), (1,))
    >>> next_step(Reading(q, 1, (4, 1)), ch).kind.value, next_step(Reading(q, 1, (4, 1)), ch, {7}).kind.value
    ('wait-catch-up', 'add')
    """
    q = reading.quorum
    caught = set(caught_up)
    if q.leader_id is None or q.leader is None:
        return Step(StepKind.WAIT_SETTLE, reason="the quorum has no leader: waiting for an election")
    voters = set(q.voter_ids)
    pending_adds = [c for c in change.add if c.id not in voters]
    pending_removes = [i for i in change.remove if i in voters]
    # a removed controller still running: stop it before the next change (after-removal order)
    for i in change.remove:
        if i not in voters and i not in reading.stopped_ids:
            return Step(StepKind.STOP, i, before_removal=False,
                        reason=f"stop controller {i}: it was removed from the voters and still runs as an observer")
    if not pending_adds and not pending_removes:
        return Step(StepKind.DONE, reason=f"done: the voters are {ids_text(q.voter_ids)}")
    running = _running_voters(reading, max_lag, max_age_ms, now_ms)
    lagging = sorted(voters - running - reading.stopped_ids)
    if lagging:
        return Step(StepKind.WAIT_SETTLE, reason=f"voter{'s' if len(lagging) > 1 else ''} {ids_text(lagging)} "
                    "lag behind the leader or do not fetch: the last change may not have committed yet")
    if pending_adds and len(pending_adds) >= len(pending_removes):
        new = pending_adds[0]
        me = q.observer(new.id)
        if new.id not in caught or me is None:
            return Step(StepKind.WAIT_CATCH_UP, new.id, me.directory_id if me else None, new.endpoint,
                        reason=f"wait until controller {new.id} has caught up with the leader")
        return Step(StepKind.ADD, new.id, me.directory_id, new.endpoint,
                    reason=f"add controller {new.id} ({new.address}, directory {me.directory_id}) to the voters "
                           f"{ids_text(q.voter_ids)}")
    old = _removal_order(q, pending_removes)[0]
    before = stop_order(reading.release, old in reading.auto_join_ids) is StopOrder.BEFORE_REMOVAL
    after = voters - {old}
    if before and old not in reading.stopped_ids:
        if len(running - {old}) < quorum_size(len(voters)):
            return Step(StepKind.BLOCKED, old, reason=(
                f"stopping controller {old} would leave {len(running - {old})} running voter(s) "
                f"({ids_text(running - {old})}) of {len(voters)}, fewer than a majority ({quorum_size(len(voters))}): "
                "bring the other voters back first"))
        leads = " (the leader: the other voters elect a new one)" if old == q.leader_id else ""
        return Step(StepKind.STOP, old, q.voter(old).directory_id, before_removal=True,  # type: ignore[union-attr]
                    reason=f"stop controller {old}{leads} before its removal "
                           f"({stop_order_reason(reading.release, old in reading.auto_join_ids)})")
    if len(running & after) < quorum_size(len(after)) or len(running) < quorum_size(len(voters)):
        return Step(StepKind.BLOCKED, old, reason=(
            f"removing controller {old} would leave {len(running & after)} running voter(s) "
            f"({ids_text(running & after)}) of {len(after)}, fewer than a majority ({quorum_size(len(after))}): "
            "bring the other voters back first"))
    # a voter stopped before its removal is neither: the leader it may have been resigned when it stopped
    role = "stopped" if old in reading.stopped_ids else "the leader" if old == q.leader_id else "a follower"
    return Step(StepKind.REMOVE, old, q.voter(old).directory_id, before_removal=before,  # type: ignore[union-attr]
                reason=f"remove controller {old} ({role}) from the voters {ids_text(q.voter_ids)}")


# ------------------------------------------------------------------ the whole move, as planned now
def _without(replicas: tuple, node_id: int) -> tuple:
    return tuple(r for r in replicas if r.id != node_id)


def apply_step(reading: Reading, step: Step) -> Reading:
    """The reading a step would lead to, if it goes as planned (pure; for a preview, never for a decision: the runner
    re-reads the cluster after every step). A stopped or removed leader hands over to the lowest running voter."""
    from dataclasses import replace

    q = reading.quorum
    stopped = set(reading.stopped_ids)
    voters, observers, nodes = q.voters, q.observers, dict(q.nodes)
    if step.kind is StepKind.ADD and step.node_id is not None:
        me = q.observer(step.node_id)
        if me is not None:
            voters, observers = (*voters, me), _without(observers, step.node_id)
            if step.endpoint is not None:
                nodes[step.node_id] = (step.endpoint,)
    elif step.kind is StepKind.STOP and step.node_id is not None:
        stopped.add(step.node_id)
        observers = _without(observers, step.node_id)
    elif step.kind is StepKind.REMOVE and step.node_id is not None:
        me = q.voter(step.node_id)
        voters = _without(voters, step.node_id)
        nodes.pop(step.node_id, None)
        if me is not None and step.node_id not in stopped:
            observers = (*observers, me)
    leader, epoch = q.leader_id, q.leader_epoch
    if leader not in {v.id for v in voters} or leader in stopped:
        live = sorted(v.id for v in voters if v.id not in stopped)
        leader, epoch = (live[0] if live else None), epoch + 1
        if leader is not None and q.leader is not None:  # the new leader takes the old one's view of time and log
            old = q.leader
            voters = tuple(replace(v, log_end_offset=old.log_end_offset, last_fetch_ms=None,
                                   last_caught_up_ms=old.last_caught_up_ms) if v.id == leader else v for v in voters)
    return replace(reading, quorum=replace(q, leader_id=leader, leader_epoch=epoch, voters=voters,
                                           observers=observers, nodes=nodes), stopped_ids=frozenset(stopped))


def preview(reading: Reading, change: ControllerChange, **limits) -> list[Step]:
    """Every step from ``reading`` to the end, as planned now (each new controller assumed to catch up, each stop
    to happen): what a dry run shows. Ends with DONE, or with the WAIT_SETTLE/BLOCKED step that holds it now.

    >>> from migrate.core.controllers.quorum import Quorum, Reading, Replica
    >>> def rep(i, leader=False): return Replica(i, f"d{i}", 100, None if leader else 9_990, 10_000 if leader else 9_990)
    >>> q = Quorum(1, 4, 100, (rep(1, True), rep(2), rep(3)), (rep(7), rep(8), rep(9)))
    >>> ch = ControllerChange(tuple(NewController(i, f"c{i}", 9093) for i in (7, 8, 9)), (1, 2, 3))
    >>> [f"{s.kind.value} {s.node_id}" for s in preview(Reading(q, 1, (4, 1)), ch) if s.kind is not StepKind.WAIT_CATCH_UP]
    ['add 7', 'remove 2', 'stop 2', 'add 8', 'remove 3', 'stop 3', 'add 9', 'remove 1', 'stop 1', 'done None']
    >>> [f"{s.kind.value} {s.node_id}" for s in preview(Reading(q, 1, (3, 9)), ch) if s.kind is not StepKind.WAIT_CATCH_UP]
    ['add 7', 'stop 2', 'remove 2', 'add 8', 'stop 3', 'remove 3', 'add 9', 'stop 1', 'remove 1', 'done None']
    """
    steps: list[Step] = []
    caught: set[int] = set()
    current = reading
    for _ in range(8 * (len(change.add) + len(change.remove)) + 4):
        step = next_step(current, change, caught, **limits)
        steps.append(step)
        if step.kind in (StepKind.DONE, StepKind.WAIT_SETTLE, StepKind.BLOCKED):
            return steps
        if step.kind is StepKind.WAIT_CATCH_UP and step.node_id is not None:
            if step.node_id in caught or current.quorum.observer(step.node_id) is None:
                return steps  # not started: the preview cannot go past it
            caught.add(step.node_id)
            continue
        current = apply_step(current, step)
    raise BadInput("the controller move does not converge (a bug: please report it)")  # pragma: no cover
