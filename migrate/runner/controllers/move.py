"""Sequencer of a KRaft controller move (``kmigrate controllers --add 7,8,9 --remove 1,2,3``, KIP-853).

Each pass reads the quorum from the leader (DescribeQuorum v2 and the finalized ``kraft.version``), looks at which
removed controllers still run (their controller listener answers or not), and asks the pure planner
(:func:`migrate.core.controllers.plan.next_step`) for the one next step; it performs it and reads again. Nothing is
trusted from memory: killed at any line and run again, the rerun finds the adds and removals already done in the
voter set and goes on from there. One voter change is in flight at a time (each add or removal is confirmed in the
voter set before the next read plans anything).

Steps, as the planner gives them:

- **wait-catch-up**: kmigrate's catch-up gate (:class:`~migrate.core.controllers.gate.CatchUpWatch`) over several
  polls; a timeout is a gate failure (exit 1), nothing changed;
- **add** / **remove**: AddRaftVoter / RemoveRaftVoter at the leader, then the voter set re-read until it shows the
  change; a lost answer is never assumed either way (the next read decides);
- **stop**: kmigrate does not log in to machines: it runs ``--stop-command`` (a template: ``{id}``, ``{host}``,
  ``{port}``) when given, else tells the operator which controller to stop, and in both cases waits until the
  controller's listener stops answering (before or after its removal: :func:`~migrate.core.controllers.plan.stop_order`);
- **wait-settle**: the last change has not settled (a voter lags, an election): read again, bounded;
- **blocked**: the next change would leave the quorum without a running majority: a gate failure, nothing changed.

Before the first change the brokers' ``controller.quorum.bootstrap.servers`` (DescribeConfigs, when
``--bootstrap-server`` is given) must name every new controller: a broker retries only that list when it loses the
leader (``migrate.core.controllers.config``), so the brokers are rolled to old+new first; after the move the result
names the new-only list for the second roll.

Testing hook: ``KMIGRATE_CRASH_AT=before-add|after-add|before-remove|after-remove[:n]`` SIGKILLs the process there.
"""

from __future__ import annotations

import logging
import shlex
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from migrate.adapters.kafka import voters as kv
from migrate.core.clientconfig import ClientSettings
from migrate.core.controllers.config import BOOTSTRAP_SERVERS, BrokerRoll, broker_bootstrap_servers
from migrate.core.controllers.gate import CatchUpWatch
from migrate.core.controllers.plan import (
    ControllerChange,
    NewController,
    Step,
    StepKind,
    check_request,
    preview,
    next_step,
    stop_order_reason,
    validate_change,
)
from migrate.core.controllers.quorum import Endpoint, Quorum, Reading, ids_text, stale_voters
from migrate.core.units import split_host_port
from migrate.errors import BadInput, StepFailed
from migrate.runner.events import crash_point

log = logging.getLogger("kmigrate.controllers")

Emit = Callable[[dict], None]
MAX_TRIES = 3
"""Times one voter change is sent when Kafka answers with a retriable error (a change still in flight, a leader that
moved, no answer) before kmigrate stops with the error."""


OBSERVER_GRACE_S = 5.0
"""How long a new controller missing from DescribeQuorum is looked for again before the request is refused: after an
election the new leader lists an observer only once it has fetched from it (well under a second when it runs)."""


class _Again(Exception):
    """A retriable refusal: plan again from a fresh reading (an add goes through the catch-up gate again)."""


@dataclass
class ControllerMoveRequest:
    """What ``kmigrate controllers`` was asked.

    ``controllers``: controller listener addresses to find the leader at (``--bootstrap-controller``); ``adds``: the
    new controllers, by id (their endpoint found among the registered controllers) or with their endpoint given;
    ``release``: the controllers' Kafka release (``--kafka-version``), None when not given (the safe stop order)."""

    controllers: tuple[str, ...]
    adds: tuple[int | NewController, ...]
    removes: tuple[int, ...]
    settings: ClientSettings | None = None
    broker_settings: ClientSettings | None = None
    release: tuple[int, int] | None = None
    auto_join_ids: frozenset[int] = frozenset()
    listener: str | None = None
    stop_command: str | None = None
    dry_run: bool = False
    catch_up_timeout_s: float = 300.0
    named_by: str = ""  # how the operator named the controllers (--playbook FILE): repeated in the commands it is given
    settle_timeout_s: float = 120.0
    stop_timeout_s: float = 1800.0
    interval_s: float = 1.0


@dataclass
class ControllerMoveResult:
    voters_before: tuple[int, ...] = ()
    voters_after: tuple[int, ...] = ()
    leader_after: int | None = None
    steps: list[dict] = field(default_factory=list)
    planned: list[str] = field(default_factory=list)
    dry_run: bool = False
    already_done: bool = False
    stop_order: str = ""
    broker_bootstrap_after: str = ""
    next_steps: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return {"voters_before": list(self.voters_before), "voters_after": list(self.voters_after),
                "leader_after": self.leader_after, "steps": self.steps, "planned": self.planned,
                "dry_run": self.dry_run, "already_done": self.already_done, "stop_order": self.stop_order,
                "broker_bootstrap_after": self.broker_bootstrap_after, "next_steps": self.next_steps,
                "seconds": round(self.seconds, 1)}


def _answers(address: str, settings: ClientSettings | None) -> bool:
    """Whether a controller listener at ``address`` answers ApiVersions (a running controller)."""
    return kv.controller_features(address, settings, timeout_s=3.0) is not None


def _not_answering(addresses: dict[int, str], settings: ClientSettings | None) -> set[int]:
    """The ids whose controller listener does not answer, all asked at once: a stopped controller whose host drops
    packets costs the probe's whole timeout, and asked one after the other, three of them made every read 9 s."""
    if not addresses:
        return set()
    with ThreadPoolExecutor(max_workers=len(addresses), thread_name_prefix="kmigrate-probe") as pool:
        answers = dict(zip(addresses, pool.map(lambda a: _answers(a, settings), addresses.values())))
    return {i for i, answered in answers.items() if not answered}


class ControllerMove:
    def __init__(self, request: ControllerMoveRequest, emit: Emit | None = None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep):
        self.req = request
        self.emit = emit or (lambda _e: None)
        self.clock, self.sleep = clock, sleep
        self.addresses: dict[int, str] = {}  # controller id -> controller listener host:port, as seen this run
        self.listener = request.listener
        self.cluster_id: str | None = None
        self.change: ControllerChange | None = None
        self.refused: dict[str, int] = {}
        self._admin = None  # the brokers' admin client, made once when --bootstrap-server is given
        self._brokers: list[int] | None = None
        self._wanted = {a.id if isinstance(a, NewController) else a for a in request.adds} | set(request.removes)
        self._earlier: Quorum | None = None  # the reading the next one is compared with (stale_voters)
        self._stale: frozenset[int] | None = None  # None: not known yet (no reading far enough back)
        self._leader: str | None = None  # the leader's address at the last reading: asked first at the next

    # ------------------------------------------------------------------ reads
    def _known_addresses(self) -> list[str]:
        """Where to ask for the quorum: the last leader first (a stopped controller listed first in
        --bootstrap-controller would cost its timeout on every read), then --bootstrap-controller, then the rest seen."""
        seen = [self._leader] if self._leader is not None else []
        seen += [a for a in self.req.controllers if a not in seen]
        seen += [a for a in self.addresses.values() if a not in seen]
        return seen

    def _learn(self, view: kv.ControllerView) -> None:
        """Remember every controller's address this run sees: the voters' endpoints (DescribeQuorum ``nodes``) and the
        registered controllers (DescribeCluster), so a removed controller can still be looked at."""
        q = view.quorum
        if self.listener is None:
            names = {e.name for i in q.voter_ids for e in q.endpoints(i)}
            self.listener = sorted(names)[0] if len(names) == 1 else None
        for i in q.voter_ids:
            for e in q.endpoints(i, self.listener):
                self.addresses.setdefault(i, e.address)
        if self.cluster_id is not None and self._wanted <= set(self.addresses):
            return  # every controller of the move has an address: no DescribeCluster on each poll
        cluster = kv.describe_cluster_controllers(view.leader, self.req.settings)
        if cluster is not None:
            self.cluster_id = cluster["cluster_id"] or self.cluster_id
            for i, address in cluster["controllers"].items():
                self.addresses.setdefault(i, address)

    def read(self, timeout_s: float | None = None) -> tuple[kv.ControllerView, Reading]:
        """The quorum now (retried through an election, bounded), with which removed controllers are stopped."""
        deadline = self.clock() + (timeout_s if timeout_s is not None else self.req.settle_timeout_s)
        while True:
            try:
                view = kv.read_controllers(self._known_addresses(), self.req.settings)
                break
            except StepFailed:
                if self.clock() >= deadline:
                    raise
                self.sleep(self.req.interval_s)
        self._leader = view.leader
        self._learn(view)
        q = view.quorum
        stopped = _not_answering({i: self.addresses[i] for i in self.req.removes if i in self.addresses},
                                 self.req.settings)
        for i in self.req.removes:
            if i not in self.addresses and not q.is_voter(i) and q.observer(i) is None:
                stopped.add(i)  # removed, unregistered and not fetching: gone
        brokers = frozenset(self._broker_ids())
        reading = Reading(view.quorum, view.kraft_version, self.req.release, self.req.auto_join_ids,
                          frozenset(stopped), brokers, self._staleness(q))
        return view, reading

    def _staleness(self, q: Quorum) -> frozenset[int]:
        """The voters whose last fetch stood still since a reading at least a second earlier (paused or hung); while
        no reading is that far back, the last answer (``self._stale`` None: not known yet)."""
        if q.leader_now_ms() is None:  # no leader clock in the answer: nothing to tell by, nothing held back
            self._stale, self._earlier = frozenset(), None
            return self._stale
        stale = stale_voters(self._earlier, q) if self._earlier is not None else None
        if stale is not None:
            self._stale, self._earlier = stale, q
        elif self._earlier is None or self._earlier.leader_id != q.leader_id:
            self._stale, self._earlier = None, q  # a new leader: start again
        return self._stale or frozenset()

    def _admin_client(self):
        if self._admin is None:
            from migrate.adapters.kafka.client import admin_client

            self._admin = admin_client(self.req.broker_settings)
        return self._admin

    def _broker_ids(self) -> list[int]:
        """The brokers' ids (read once per run), [] without --bootstrap-server."""
        if self.req.broker_settings is None:
            return []
        if self._brokers is None:
            from migrate.adapters.kafka.client import live_broker_ids

            self._brokers = live_broker_ids(self._admin_client())
        return self._brokers

    def _resolve(self, reading: Reading) -> ControllerChange:
        """The --add controllers with their endpoints: given inline, else the registered controller's address (port 0
        when unknown: :meth:`_unresolved` refuses it once the request's other refusals have had their say)."""
        out = []
        for a in self.req.adds:
            if isinstance(a, NewController):
                out.append(a)
                continue
            address = self.addresses.get(a)
            if address is None and reading.quorum.is_voter(a):  # already added: its endpoint is among the voters'
                address = next((e.address for e in reading.quorum.endpoints(a)), None)
            host, port = split_host_port(address) if address else ("", 0)
            out.append(NewController(a, host, port, self.listener or "CONTROLLER"))
        return ControllerChange(tuple(out), self.req.removes)

    def _checked(self, reading: Reading) -> tuple[Reading, ControllerChange]:
        """The request checked (:func:`check_request`: BadInput, nothing changed) on ``reading``, read again for up to
        :data:`OBSERVER_GRACE_S` while a new controller is neither voter nor observer: a leader elected a moment ago
        lists an observer only once that observer has fetched from it."""
        deadline = self.clock() + OBSERVER_GRACE_S
        while True:
            change = self.change = self._resolve(reading)
            q = reading.quorum
            missing = [i for i in change.add_ids if not q.is_voter(i) and q.observer(i) is None]
            if not missing or self.clock() >= deadline:
                named = self.req.named_by or f"--bootstrap-controller {','.join(self.req.controllers)}"
                check_request(reading, change, named)
                return reading, change
            log.debug("controller(s) %s not in the quorum yet; reading it again", ids_text(missing))
            self.sleep(self.req.interval_s)
            _view, reading = self.read(timeout_s=min(30.0, self.req.settle_timeout_s))

    def _unresolved(self, change: ControllerChange) -> None:
        for c in change.add:
            if not c.port:
                raise BadInput(f"controller {c.id}'s address is unknown: it is not registered with the quorum "
                               f"(DescribeCluster shows {ids_text(sorted(self.addresses)) or 'none'}): give its "
                               f"endpoint: --add {c.id}=host:port")

    # ------------------------------------------------------------------ the brokers' bootstrap list
    def _check_brokers(self, change: ControllerChange) -> None:
        """Every broker's controller.quorum.bootstrap.servers names every new controller (BadInput otherwise)."""
        if self.req.broker_settings is None:
            return
        from migrate.adapters.kafka.client import broker_static_configs

        ids = self._broker_ids()
        configs = broker_static_configs(self._admin_client(), ids, (BOOTSTRAP_SERVERS,))
        wanted = {c.address for c in change.add}
        old = [Endpoint(self.listener or "CONTROLLER", *split_host_port(self.addresses[i])) for i in change.remove
               if i in self.addresses]
        value = broker_bootstrap_servers(old, [c.endpoint for c in change.add], BrokerRoll.BEFORE)
        for broker in ids:
            have = (configs.get(broker) or {}).get(BOOTSTRAP_SERVERS) or ""
            listed = {a.strip() for a in have.split(",") if a.strip()}
            missing = sorted(wanted - listed)
            if missing:
                raise BadInput(f"broker {broker}'s {BOOTSTRAP_SERVERS} is {have or 'not set'}: it lacks "
                               f"{','.join(missing)}; roll the brokers with {BOOTSTRAP_SERVERS}={value} first (a broker "
                               "retries only that list when it loses the leader), then run this again")

    # ------------------------------------------------------------------ the run
    def run(self) -> ControllerMoveResult:
        start = self.clock()
        result = ControllerMoveResult(dry_run=self.req.dry_run)
        if len(self.req.adds) >= len(set(self.req.removes)):  # more removals: the voter count decides the message
            validate_change(ControllerChange(tuple(a if isinstance(a, NewController) else NewController(a, "?", 1)
                                                   for a in self.req.adds), self.req.removes))  # before any read
        view, reading = self.read(timeout_s=min(30.0, self.req.settle_timeout_s))
        reading, change = self._checked(reading)
        self._unresolved(change)
        result.voters_before = reading.quorum.voter_ids
        result.stop_order = stop_order_reason(reading.release, bool(self.req.auto_join_ids))
        self.emit({"event": "quorum", "leader": reading.quorum.leader_id, "voters": list(reading.quorum.voter_ids),
                   "observers": list(reading.quorum.observer_ids), "kraft_version": reading.kraft_version,
                   "stop_order": result.stop_order})
        first = next_step(reading, change, {c.id for c in change.add})
        if first.kind is StepKind.DONE and not [i for i in change.remove if i not in reading.stopped_ids]:
            result.already_done = True
        if self.req.dry_run:
            result.planned = [s.describe() for s in preview(reading, change)]
            return self._finish(result, reading, start)
        if not result.already_done and not any(reading.quorum.is_voter(i) for i in change.add_ids):
            self._check_brokers(change)
        caught: set[int] = set()
        settle_since: float | None = None
        for _ in range(10_000):
            step = next_step(reading, change, caught)
            if step.kind is not StepKind.WAIT_SETTLE:
                settle_since = None
            if step.kind is StepKind.DONE:
                break
            if step.kind is StepKind.BLOCKED:
                raise StepFailed(f"{step.reason}; nothing was changed in this step: run the same command again once "
                                 "the voters run")
            if step.kind is StepKind.WAIT_SETTLE:
                settle_since = settle_since if settle_since is not None else self.clock()
                if self.clock() - settle_since > self.req.settle_timeout_s:
                    raise StepFailed(f"the quorum did not settle within {self.req.settle_timeout_s:g} s: {step.reason}; "
                                     "run the same command again once it has")
                self.sleep(self.req.interval_s)
            elif self._stale is None and (step.kind is StepKind.REMOVE
                                          or (step.kind is StepKind.STOP and step.before_removal)):
                # a step that leaves fewer voters running: only once the voters were seen fetching over a second
                # (a voter paused a moment ago still shows a recent fetch)
                self.sleep(self.req.interval_s)
            else:
                self.emit({"event": "step", "step": step.kind.value, "controller": step.node_id,
                           "message": step.describe()})
                began = self.clock()
                try:
                    self._perform(step, caught)
                except _Again:
                    caught.discard(step.node_id)
                    view, reading = self.read()
                    continue
                result.steps.append({"step": step.kind.value, "controller": step.node_id,
                                     "seconds": round(self.clock() - began, 1)})
            view, reading = self.read()
        return self._finish(result, reading, start)

    def _finish(self, result: ControllerMoveResult, reading: Reading, start: float) -> ControllerMoveResult:
        change = self.change
        result.voters_after = reading.quorum.voter_ids
        result.leader_after = reading.quorum.leader_id
        new = [c.endpoint for c in change.add] if change else []
        if new:
            result.broker_bootstrap_after = broker_bootstrap_servers((), new, BrokerRoll.AFTER)
        if not result.dry_run:
            result.next_steps = [
                f"roll the brokers with {BOOTSTRAP_SERVERS}={result.broker_bootstrap_after} (the new controllers only), "
                "one at a time, each gated by kmigrate health --wait",
                f"set {BOOTSTRAP_SERVERS}={result.broker_bootstrap_after} on the new controllers too (read at their "
                "next start)",
                "retire the old controllers' machines; a removed controller stays registered (seen on 4.4.0; "
                "KAFKA-20295): it can block the next metadata.version upgrade; kmigrate brokers unregister reports it",
            ]
        result.seconds = self.clock() - start
        return result

    def _perform(self, step: Step, caught: set[int]) -> None:
        q_addresses = self._known_addresses()
        settings = self.req.settings
        if step.kind is StepKind.WAIT_CATCH_UP:
            watch = CatchUpWatch(step.node_id, step.directory_id)
            deadline = self.clock() + self.req.catch_up_timeout_s
            while True:
                view, _ = self.read()
                if watch.observe(view.quorum):
                    caught.add(step.node_id)
                    return
                if self.clock() >= deadline:
                    raise StepFailed(watch.failure(self.req.catch_up_timeout_s))
                self.emit({"event": "waiting", "controller": step.node_id, "message": watch.problem})
                self.sleep(self.req.interval_s)
        if step.kind is StepKind.ADD:
            crash_point("before-add")
            self._change(lambda leader: kv.add_voter(q_addresses, step.node_id, step.directory_id, step.endpoint,
                                                     settings=settings, cluster_id=self.cluster_id, leader=leader),
                         lambda r: r.quorum.is_voter(step.node_id), f"controller {step.node_id} a voter")
            crash_point("after-add")
            return
        if step.kind is StepKind.REMOVE:
            crash_point("before-remove")
            self._change(lambda leader: kv.remove_voter(q_addresses, step.node_id, step.directory_id,
                                                        settings=settings, cluster_id=self.cluster_id, leader=leader),
                         lambda r: not r.quorum.is_voter(step.node_id), f"controller {step.node_id} out of the voters")
            crash_point("after-remove")
            return
        if step.kind is StepKind.STOP:
            self._stop(step)
            return
        raise StepFailed(f"unexpected step {step.kind.value}")  # pragma: no cover

    def _change(self, send: Callable[[str | None], None], done: Callable[[Reading], bool], what: str) -> None:
        """Send one voter change to the leader, then read until the voter set shows it. A refused or lost answer is
        re-read first: the change may have happened (DUPLICATE_VOTER / VOTER_NOT_FOUND then mean done)."""
        view, reading = self.read()
        if done(reading):
            return
        try:
            send(view.leader)
        except kv.VoterChangeError as exc:
            log.info("%s", exc)
            _, reading = self.read()
            if done(reading):
                return
            self.refused[what] = self.refused.get(what, 0) + 1
            if not exc.retriable or self.refused[what] >= MAX_TRIES:
                raise StepFailed(f"{exc} (tried {self.refused[what]} time(s)); nothing else was changed: run the same "
                                 "command again once it is fixed") from None
            self.emit({"event": "retry", "controller": None, "message": f"{exc}: reading the quorum again"})
            raise _Again() from None
        deadline = self.clock() + self.req.settle_timeout_s
        while True:
            _, reading = self.read()
            if done(reading):
                return
            if self.clock() >= deadline:
                raise StepFailed(f"the leader accepted the change but the voter set does not show {what} after "
                                 f"{self.req.settle_timeout_s:g} s: run the same command again")
            self.sleep(self.req.interval_s)

    def _stop(self, step: Step) -> None:
        node = step.node_id
        address = self.addresses.get(node)
        if address is None:
            raise StepFailed(f"controller {node}'s address is unknown to this run (not a voter, not registered): "
                             f"stop it by hand, then give --bootstrap-controller with its host:port so kmigrate can "
                             "confirm it stopped")
        host, port = split_host_port(address)
        when = "before its removal" if step.before_removal else "after its removal"
        if self.req.stop_command:
            command = self.req.stop_command.format(id=node, host=host, port=port)
            self.emit({"event": "stop", "controller": node, "message": f"stopping controller {node} ({when}): {command}"})
            done = subprocess.run(shlex.split(command), capture_output=True, text=True, timeout=self.req.stop_timeout_s)
            if done.returncode != 0:
                raise StepFailed(f"--stop-command for controller {node} exited {done.returncode}: "
                                 f"{(done.stderr or done.stdout).strip()[-300:]}")
        else:
            self.emit({"event": "stop", "controller": node,
                       "message": f"stop controller {node} at {address} now ({when}); kmigrate waits until it stops"})
        deadline = self.clock() + self.req.stop_timeout_s
        while _answers(address, self.req.settings):
            if self.clock() >= deadline:
                raise StepFailed(f"controller {node} at {address} still answers after {self.req.stop_timeout_s:g} s: "
                                 "stop it, then run the same command again")
            self.sleep(self.req.interval_s)


def run_controller_move(request: ControllerMoveRequest, emit: Emit | None = None) -> ControllerMoveResult:
    return ControllerMove(request, emit).run()
