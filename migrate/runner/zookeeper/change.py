"""Sequencer of a ZooKeeper voter swap by dynamic reconfiguration (``kmigrate zookeeper``).

Order of events (each step re-reads the ensemble; nothing is trusted from memory):

1. read ``/zookeeper/config`` and its version; if the target is already committed, say so (exit 0);
2. pre-checks, all before any change: versions >= 3.5.0, id rules, joiners' own configs, reconfig
   enabled and allowed (a probe guarded by ``from_config=0`` that cannot apply), brokers'
   ``zookeeper.connect``, then wait (bounded) for every joiner to follow the leader and catch up,
   and check the new config can form a quorum;
3. write a sentinel znode, start a write probe (the stall measurement);
4. one reconfig guarded by ``from_config`` (or one server per step with ``--step-by-step``,
   re-planned from the committed config before each step, so an interrupted run continues);
   when the answer is lost, reconnect to the surviving and new members and look;
5. post-checks: a leader among the new voters, every voter in sync, removed servers out of the
   config, the sentinel unchanged; then the connect string and the steps that must follow.

Testing hook: ``KMIGRATE_CRASH_AT=after-reconfig-sent`` (or ``after-reconfig-sent:N`` for the Nth
request of a step-by-step run) makes the process SIGKILL itself right after the reconfig request
has left the socket, before its answer, to test resuming; ``drop-connection-after-reconfig-sent``
drops the session's connection at that point instead (the lost answer, deterministically).
For tests only (``migrate.runner.events``).
"""

from __future__ import annotations

import os
import signal
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable

from migrate.adapters.zookeeper import client as zka
from migrate.errors import BadInput, StepFailed
from migrate.runner.events import CRASH_ENV, crash_wanted
from migrate.waiting import SYSTEM_CLOCK, Clock, FakeClock, poll, wait_until
from migrate.core.zookeeper.config import ConfigError, Dialing, DynamicConfig, Server, parse_config, split_connect
from migrate.core.zookeeper.change import (
    CONFLICTING_MEMBER,
    JOINER_ID_ORDER,
    NOT_IN_SYNC,
    NOT_TARGET,
    Change,
    Outcome,
    Reconfig,
    apply,
    check_change,
    is_reached,
    joiner_config,
    joiner_participant_problem,
    joiners_of,
    next_step,
    outcome_problems,
    quorum_problem,
    single_reconfig,
    step_by_step,
    target_config,
    validate_change,
    warnings_for,
)
from migrate.core.zookeeper.brokers import BrokerConnect, judge_brokers
from migrate.core.zookeeper.auth import parse_auth
from migrate.core.versions import version_problem

Progress = Callable[[str], None]
__all__ = ["CRASH_ENV", "ZooKeeperRequest", "ZooKeeperResult", "render_joiner_config", "run_zookeeper_change"]


@dataclass(frozen=True)
class ZooKeeperRequest:
    """What the operator asked for. ``add`` items are Servers or bare ids (resolved from ``known``)."""

    connect: str
    add: tuple[Server | int, ...] = ()
    remove: tuple[int, ...] = ()
    known: tuple[Server, ...] = ()  # servers described elsewhere (the playbook, the plan)
    step_by_step: bool = False
    dry_run: bool = False
    force: bool = False
    bootstrap_servers: str | None = None
    command_config: str | None = None
    kafka_client: dict[str, str] = field(default_factory=dict)
    zk_auth: str | None = None
    zk_sasl: Any = None  # core.zookeeper.auth.ZkSasl of --zk-jaas-file
    zk_tls: Any = None  # core.zookeeper.auth.ZkTls of --zk-client-config: every server dialled at its secureClientPort
    joiner_timeout_s: float = 120.0
    confirm_timeout_s: float = 60.0
    post_timeout_s: float = 90.0
    reconfig_timeout_s: float = 30.0


@dataclass
class StepRecord:
    description: str
    zkcli: str
    from_version: str | None
    to_version: str | None = None
    answer: str = ""  # received | lost-confirmed | already-committed
    seconds: float = 0.0


@dataclass
class ZooKeeperResult:
    status: str  # reconfigured | already-committed | dry-run
    committed_before: str
    committed_after: str | None
    version_before: str | None
    version_after: str | None
    voters_before: list[int]
    voters_after: list[int]
    removed: list[int]
    connect_string: str
    broker_zookeeper_connect: str | None
    steps: list[StepRecord] = field(default_factory=list)
    planned: list[str] = field(default_factory=list)  # zkCli commands (dry-run, or what ran)
    warnings: list[str] = field(default_factory=list)
    brokers: list[dict[str, Any]] = field(default_factory=list)
    registered_brokers: dict[str, list[int]] = field(default_factory=dict)  # chroot -> ids in /brokers/ids
    joiners: dict[str, str] = field(default_factory=dict)  # id -> ready | reason
    write_stall_ms: float | None = None
    write_probe: dict[str, Any] | None = None
    checks: dict[str, Any] = field(default_factory=dict)
    next_steps: list[str] = field(default_factory=list)
    decommission: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ------------------------------------------------------------------- helpers
def _resolve_adds(items: Iterable[Server | int], known: tuple[Server, ...], committed: DynamicConfig) -> tuple[Server, ...]:
    out = []
    by_id = {s.id: s for s in known}
    for item in items:
        if isinstance(item, Server):
            out.append(item)
        elif item in by_id:
            out.append(by_id[item])
        elif committed.get(item) is not None:
            out.append(committed.get(item))  # type: ignore[arg-type]
        else:
            raise BadInput(
                f"--add {item}: server {item} is described nowhere: give it inline as "
                f"{item}=host:quorumPort:electionPort;[clientHost:]clientPort, or use --playbook"
            )
    return tuple(out)


def _one_line(problems: list[str]) -> str:
    return problems[0] + (f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})" if len(problems) > 1 else "")


def _leader(states: dict[int, zka.ServerState]) -> int | None:
    leaders = [i for i, st in states.items() if st.mode == "leader"]
    return leaders[0] if len(leaders) == 1 else None


def prepare(connect: str, zk_auth: str | None, zk_sasl: Any = None) -> tuple[str, str, list]:
    hosts, chroot = split_connect(connect)
    return hosts, chroot, parse_auth(zk_auth, zk_sasl)


def render_joiner_config(connect: str, joiner_id: int, adds: tuple[Server | int, ...], known: tuple[Server, ...],
                         zk_auth: str | None = None, zk_sasl: Any = None,
                         zk_tls: Any = None) -> tuple[DynamicConfig, DynamicConfig, list[str]]:
    """The dynamic config file joiner ``joiner_id`` must start with, the committed config, and warnings.

    Refuses (BadInput) when the joiner is not described or breaks the id rule.
    """
    hosts, _, auth = prepare(connect, zk_auth, zk_sasl)
    auth += [zk_tls] if zk_tls is not None else []
    with zka.ZooKeeper.connect(hosts, auth) as zk:
        committed = zk.committed_config()
    items = tuple(adds) if adds else (joiner_id,)
    if joiner_id not in [i.id if isinstance(i, Server) else i for i in items]:
        items = items + (joiner_id,)
    servers = _resolve_adds(items, known, committed)
    change = Change(servers, ())
    warnings = []
    current = committed.get(joiner_id)
    if current is not None and current.is_voter:
        warnings.append(f"server {joiner_id} is already a voter of the committed config (version {committed.version_hex})")
    problems = [p for p in check_change(committed, change) if p.code in (JOINER_ID_ORDER, CONFLICTING_MEMBER)]
    if problems:
        raise BadInput(_one_line(problems))
    return joiner_config(committed, joiners_of(committed, change) or servers), committed, warnings


# ------------------------------------------------------------------- runner
class ZooKeeperChange:
    """One run of ``kmigrate zookeeper``. ``run()`` returns a result or raises BadInput/StepFailed."""

    def __init__(self, request: ZooKeeperRequest, progress: Progress | None = None,
                 clock: Clock | FakeClock = SYSTEM_CLOCK):
        self.req = request
        self.progress = progress or (lambda msg: None)
        self.clock = clock
        self.hosts, self.chroot, self.auth = prepare(request.connect, request.zk_auth, request.zk_sasl)
        self.tls = request.zk_tls
        self.auth += [self.tls] if self.tls is not None else []
        self.dial = Dialing.of(self.hosts, self.tls is not None)
        self.brokers_secure = False  # the brokers name the servers at their secureClientPort (judged from them)

    # ............................................................ dialling
    def _address(self, server: Server) -> str:
        return self.dial.address(server) or f"server {server.id} (no client port)"

    def _addresses(self, servers: Iterable[Server]) -> list[str]:
        return self.dial.addresses(servers)

    def _state(self, server: Server, membership: bool = False) -> zka.ServerState:
        address = self.dial.address(server)
        if address is None:
            return zka.ServerState(f"server {server.id}", error="has no client port in the config")
        return zka.server_state(address, membership, tls=self.tls)

    def _states(self, servers: Iterable[Server], membership: bool = False) -> dict[int, zka.ServerState]:
        return {s.id: self._state(s, membership) for s in servers if self.dial.address(s)}

    def _broker_addresses(self, servers: Iterable[Server]) -> list[str]:
        """The servers' addresses in the form the brokers use (the secureClientPort when they do)."""
        return (self.dial if self.brokers_secure else Dialing()).addresses(servers)

    def _broker_connect(self, config: DynamicConfig, chroot: str) -> str:
        return ",".join(self._broker_addresses(config.voters)) + chroot

    # .................................................................. run
    def run(self) -> ZooKeeperResult:
        self.progress(f"reading /zookeeper/config from {self.hosts}")
        zk = zka.ZooKeeper.connect(self.hosts, self.auth)
        try:
            return self._run(zk)
        finally:
            zk.close()

    def _run(self, zk: zka.ZooKeeper) -> ZooKeeperResult:
        req = self.req
        committed = zk.committed_config()
        adds = _resolve_adds(req.add, req.known, committed)
        change = Change(adds, req.remove)
        try:
            validate_change(change)
        except ConfigError as exc:
            raise BadInput(str(exc)) from None
        target = target_config(committed, change)
        removed = [i for i in committed.ids if target.get(i) is None]
        result = ZooKeeperResult(
            status="", committed_before=committed.render(), committed_after=None,
            version_before=committed.version_hex, version_after=None,
            voters_before=list(committed.voter_ids), voters_after=list(target.voter_ids), removed=removed,
            connect_string=self.dial.connect_string(target), broker_zookeeper_connect=None,
        )
        result.warnings.extend(warnings_for(target))

        self.progress("asking every server for its version and role")
        states = self._states(committed.servers)
        problems = [p for s in committed.servers if (st := states.get(s.id)) and st.version
                    and (p := version_problem(f"server {s.id} ({self._address(s)})", st.version))]
        if problems:
            raise BadInput(_one_line(problems))
        leader = _leader(states)

        if is_reached(committed, target):
            return self._already(zk, committed, target, result)
        broker_chroot = self._prechecks(zk, committed, change, target, result)
        joiners = joiners_of(committed, change)
        plan = step_by_step(committed, target, leader) if req.step_by_step else [single_reconfig(committed, target)]
        result.planned = [
            (rc if i == 0 else Reconfig(rc.joining, rc.leaving, None)).zkcli(self.hosts.split(",")[0])
            for i, rc in enumerate(plan)
        ]
        if req.dry_run:
            result.status = "dry-run"
            readiness = self._joiner_readiness(committed, joiners, leader, states)
            result.joiners = {str(k): (v or "ready") for k, v in readiness.items()}
            self._next_steps(result, committed, target, broker_chroot, done=False)
            return result

        self._wait_joiners(committed, joiners, leader, result)
        problem = self._wait_quorum(committed, target, leader, joiners)
        if problem:
            raise BadInput(problem + "; nothing was changed")
        sentinel_path, sentinel = self._change(zk, committed, target, removed, result)
        outcome = self._postchecks(target, removed, sentinel_path, sentinel, result)
        result.status = "reconfigured"
        self._next_steps(result, committed, outcome.committed, broker_chroot, done=True)
        return result

    def _prechecks(self, zk: zka.ZooKeeper, committed: DynamicConfig, change: Change, target: DynamicConfig,
                   result: ZooKeeperResult) -> str:
        """Every refusal before any change: the id rules, reconfig allowed, brokers, joiners' own configs.
        Returns the brokers' chroot."""
        problems = check_change(committed, change)
        if problems:
            raise BadInput(_one_line(problems))
        not_in = [i for i in self.req.remove if committed.get(i) is None]
        if not_in:
            result.warnings.append(f"servers {not_in} are not in the committed config: nothing to remove for them")

        self.progress("checking that reconfig is enabled and allowed")
        problem = zk.probe_reconfig()
        if problem:
            raise BadInput(problem)

        broker_chroot = self._check_brokers(zk, committed, target, result)
        result.broker_zookeeper_connect = self._broker_connect(target, broker_chroot)
        self._check_joiner_configs(committed, joiners_of(committed, change), joiners_ids=change.add_ids)
        return broker_chroot

    def _change(self, zk: zka.ZooKeeper, committed: DynamicConfig, target: DynamicConfig, removed: list[int],
                result: ZooKeeperResult) -> tuple[str, bytes]:
        """The change itself, under a sentinel znode and the write probe (the stall measurement)."""
        sentinel_path = zka.new_marker("sentinel")
        sentinel = uuid.uuid4().hex.encode()
        zk.write(sentinel_path, sentinel)
        probe = zka.WriteProbe(self._addresses(committed.servers + target.servers), self.auth, zka.new_marker("write-probe"))
        probe.start()
        self._wait_writes(probe, 10, timeout_s=10)  # a baseline of committed writes before the change
        try:
            if self.req.step_by_step:
                self._step_by_step(zk, committed, target, result)
            else:
                self._apply(zk, single_reconfig(committed, target), target, result)
            self.progress("waiting for a leader among the new voters")
            self._wait_outcome(target, removed, require_sync=False)
            self.progress("waiting for writes to commit again")
            if not self._wait_writes(probe, 10, timeout_s=self.req.post_timeout_s):
                result.warnings.append(
                    f"the write probe committed no write for {self.req.post_timeout_s:.0f} s after the change: "
                    "the stall figure is a lower bound"
                )
        except BadInput:
            # ZooKeeper refused the change (nothing applied): leave no marker behind
            probe.stop()
            self._remove_marker(self._addresses(committed.servers), sentinel_path)
            raise
        finally:
            stall = probe.stop()
        result.write_stall_ms = stall.longest_stall_ms
        result.write_probe = asdict(stall)
        return sentinel_path, sentinel

    def _wait_writes(self, probe: zka.WriteProbe, count: int, timeout_s: float) -> bool:
        """Wait until ``count`` more writes have been committed (a baseline before the change, a
        recovery after it); False when that takes longer than ``timeout_s`` or the probe died."""
        goal = probe.report.writes_ok + count

        def done() -> str | None:
            if probe.report.writes_ok >= goal:
                return "done"
            return None if probe.running else "dead"

        return poll(done, timeout_s=timeout_s, interval_s=0.01, clock=self.clock) == "done"

    def _postchecks(self, target: DynamicConfig, removed: list[int], sentinel_path: str, sentinel: bytes,
                    result: ZooKeeperResult) -> Outcome:
        """A leader among the new voters, every voter in sync, removed servers out, the sentinel unchanged."""
        self.progress("checking the new ensemble")
        outcome = self._wait_outcome(target, removed, require_sync=True)
        problems = outcome_problems(outcome, target, tuple(removed))
        with zka.ZooKeeper.connect(",".join(self._addresses(target.voters)), self.auth) as fresh:
            read_back = fresh.read(sentinel_path)
            if read_back != sentinel:
                problems.append(f"the sentinel znode {sentinel_path} reads back {read_back!r}, not what was written")
        if read_back == sentinel:  # ours, and any an interrupted earlier run left behind
            self._remove_marker(self._addresses(target.voters), None)
        result.checks = {
            "leader": outcome.leader_id,
            "leader_among_new_voters": outcome.leader_id in target.voter_ids,
            "voters_in_sync": sorted(outcome.synced_voter_ids),
            "removed_out_of_config": all(outcome.committed.get(i) is None for i in removed),
            "sentinel_unchanged": read_back == sentinel,
        }
        result.committed_after = outcome.committed.render()
        result.version_after = outcome.committed.version_hex
        result.voters_after = list(outcome.committed.voter_ids)
        if problems:
            raise StepFailed(
                f"the reconfig to version {outcome.committed.version_hex} is committed but a post-check failed: "
                + _one_line(problems)
            )
        return outcome

    # ............................................................ already
    def _already(self, zk: zka.ZooKeeper, committed: DynamicConfig, target: DynamicConfig,
                 result: ZooKeeperResult) -> ZooKeeperResult:
        self.progress("the target config is already committed; checking the ensemble")
        outcome = self._wait_outcome(target, result.removed, require_sync=True, timeout_s=min(30.0, self.req.post_timeout_s))
        result.status = "already-committed"
        self._remove_marker(self._addresses(target.voters), None)  # left by a run that was killed
        result.committed_after = committed.render()
        result.version_after = committed.version_hex
        result.checks = {
            "leader": outcome.leader_id,
            "leader_among_new_voters": outcome.leader_id in target.voter_ids,
            "voters_in_sync": sorted(outcome.synced_voter_ids),
        }
        problems = [p for p in outcome_problems(outcome, target, ()) if p.code != NOT_TARGET]
        result.warnings.extend(problems)
        chroot = self.chroot
        try:
            registered = result.registered_brokers = zk.registered_brokers(self.chroot)
            if registered and self.chroot not in registered and len(registered) == 1:
                chroot = next(iter(registered))
        except Exception:
            pass
        result.broker_zookeeper_connect = self._broker_connect(target, chroot)
        self._next_steps(result, committed, committed, chroot, done=True)
        gone = [i for i in self.req.remove if committed.get(i) is None]
        if gone:
            result.next_steps.append(
                f"servers {', '.join(map(str, gone))} are out of the ensemble: stop and decommission them if they still run"
            )
        return result

    # ............................................................ brokers
    def _check_brokers(self, zk: zka.ZooKeeper, committed: DynamicConfig, target: DynamicConfig,
                       result: ZooKeeperResult) -> str:
        """Refuse when a broker would be left pointing only at removed servers; returns the brokers' chroot."""
        from migrate.adapters.kafka import client as kafka_adapter
        from migrate.files import client_settings

        req = self.req
        registered = zk.registered_brokers(self.chroot)
        result.registered_brokers = registered
        if not registered:
            return self.chroot
        where = ", ".join(f"{place or '/'} (ids {ids})" for place, ids in registered.items())
        if not req.bootstrap_servers:
            if req.force:
                result.warnings.append(f"brokers registered under {where} were not checked (no --bootstrap-server; --force)")
                return self.chroot
            raise BadInput(
                f"brokers are registered in this ensemble under {where}: give --bootstrap-server (and --command-config) "
                "so kmigrate can check each broker's zookeeper.connect before servers leave"
            )
        self.progress(f"reading zookeeper.connect of the brokers at {req.bootstrap_servers}")
        admin = kafka_adapter.admin_client(client_settings(req.bootstrap_servers, req.command_config, req.kafka_client))
        live = kafka_adapter.live_broker_ids(admin)
        try:
            confs: dict[int, dict[str, str | None]] = {}
            for b in live:  # librdkafka takes one BROKER resource per describe_configs call
                confs.update(kafka_adapter.broker_static_configs(admin, [b], ("zookeeper.connect",)))
        except Exception as exc:
            raise BadInput(f"cannot read zookeeper.connect of brokers {live} ({exc}): check --command-config") from None
        connects = [BrokerConnect(b, confs.get(b, {}).get("zookeeper.connect")) for b in live]
        chroots = {c.chroot for c in connects if c.connect}
        covered: set[tuple[str, int]] = {(c.chroot, c.broker_id) for c in connects}
        uncovered = {place: [i for i in ids if (place, i) not in covered] for place, ids in registered.items()}
        uncovered = {p: ids for p, ids in uncovered.items() if ids}
        if uncovered:
            text = ", ".join(f"{p or '/'} (ids {ids})" for p, ids in uncovered.items())
            msg = (f"brokers registered under {text} are not among the brokers at --bootstrap-server "
                   f"(ids {live}): their zookeeper.connect cannot be checked")
            if not req.force:
                raise BadInput(msg + "; start them, point --bootstrap-server at their cluster, or add --force")
            result.warnings.append(msg + " (--force)")
        addresses = [h for c in connects for h in c.hosts] + self._addresses(committed.servers + target.servers)
        verdicts = judge_brokers(connects, committed, target, zka.resolve_aliases(addresses), self.dial)
        self.brokers_secure = self.dial.secure and any(v.secure_port for v in verdicts)
        for v in verdicts:
            result.brokers.append({"id": v.broker_id, "zookeeper.connect": v.connect, "kept": list(v.kept),
                                   "removed": list(v.removed), "unknown": list(v.unknown)})
        lost = [v for v in verdicts if v.lost]
        if lost:
            ids = [v.broker_id for v in lost]
            breaks = (
                f"broker{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))} would point only at servers "
                f"that leave or are unknown ({lost[0].connect}): they would lose ZooKeeper (no controller changes, "
                "no ISR updates, no topic changes; a broker restart would fail)"
            )
            if not req.force:
                both = ",".join(self._broker_addresses(committed.servers + target.servers)) + next(
                    iter(sorted(chroots)), self.chroot)
                raise BadInput(
                    breaks + f"; first restart each broker with zookeeper.connect={both} (old and new servers), or add --force"
                )
            result.warnings.append(breaks + " (--force)")
        partial = [v.broker_id for v in verdicts if v.kept and v.removed]
        if partial:
            result.warnings.append(
                f"brokers {partial} still list servers that leave; after the change restart them with the new connect string"
            )
        return next(iter(sorted(chroots)), self.chroot) if chroots else self.chroot

    # ............................................................ joiners
    def _check_joiner_configs(self, committed: DynamicConfig, joiners: tuple[Server, ...], joiners_ids: tuple[int, ...]) -> None:
        """Refuse when a joiner runs with a config of its own that lists joiners as participants."""
        for j in joiners:
            st = self._state(j, membership=True)
            if not st.membership:
                continue
            try:
                reported = parse_config(st.membership)
            except ConfigError:
                continue
            problem = joiner_participant_problem(j.id, reported, committed, joiners_ids)
            if problem:
                raise BadInput(problem + "; nothing was changed")

    def _joiner_readiness(self, committed: DynamicConfig, joiners: tuple[Server, ...], leader: int | None,
                          states: dict[int, zka.ServerState] | None = None) -> dict[int, str | None]:
        """None for a joiner that follows the leader of the committed config and is caught up, else why not."""
        states = states if states is not None else self._states(committed.servers)
        if leader is None:
            leader = _leader(states)
        if leader is None:
            return {j.id: "the ensemble has no leader right now" for j in joiners}
        leader_server = committed.get(leader)
        lead = self._state(leader_server)  # type: ignore[arg-type]
        if lead.mode != "leader":
            return {j.id: f"server {leader} is no longer the leader" for j in joiners}
        out: dict[int, str | None] = {}
        for j in joiners:
            st = self._state(j, membership=True)
            where = self._address(j)
            if not st.serving:
                out[j.id] = f"{where} {st.error}"
                continue
            reported = None
            try:
                reported = parse_config(st.membership) if st.membership else None
            except ConfigError:
                reported = None
            if st.mode == "leader" or st.mode == "standalone":
                out[j.id] = f"{where} is a {st.mode} of its own, not a follower of server {leader}"
            elif reported is not None and (reported.version != committed.version or not reported.same_membership(committed)):
                out[j.id] = (f"{where} runs config version {reported.version_hex}, not the committed "
                             f"{committed.version_hex}: not following the current leader yet")
            elif st.zxid is None or lead.zxid is None or st.zxid < lead.zxid:
                out[j.id] = f"{where} is catching up (zxid {st.zxid or 0:#x} < leader's {lead.zxid or 0:#x})"
            else:
                out[j.id] = None
        waiting = sum(1 for j in joiners if committed.get(j.id) is None)
        if waiting and all(v is None for v in out.values()):
            mntr = zka.leader_mntr(self._address(leader_server), tls=self.tls)  # type: ignore[arg-type]
            seen = mntr.get("zk_synced_non_voting_followers")
            if seen is not None and seen.isdigit() and int(seen) < waiting:
                for j in joiners:
                    if committed.get(j.id) is None:
                        out[j.id] = f"the leader (server {leader}) sees {seen} non-voting followers, not {waiting}"
        return out

    def _wait_joiners(self, committed: DynamicConfig, joiners: tuple[Server, ...], leader: int | None,
                      result: ZooKeeperResult) -> None:
        if not joiners:
            return
        deadline = self.clock.now() + self.req.joiner_timeout_s
        missing: dict[int, str] = {}

        def all_ready() -> bool:
            readiness = self._joiner_readiness(committed, joiners, None)
            result.joiners = {str(k): (v or "ready") for k, v in readiness.items()}
            missing.clear()
            missing.update({k: v for k, v in readiness.items() if v is not None})
            if not missing:
                return True
            ready = [k for k, v in readiness.items() if v is None]
            self.progress(
                f"waiting for joiners {sorted(missing)} to follow the leader and catch up"
                + (f" ({', '.join(map(str, ready))} ready)" if ready else "")
                + f", {max(0.0, deadline - self.clock.now()):.0f} s left"
            )
            return False

        def never_ready() -> BadInput:
            jid, why = next(iter(missing.items()))
            others = [k for k in missing if k != jid]
            return BadInput(
                f"joiner {jid} never became a caught-up non-voting follower within {self.req.joiner_timeout_s:.0f} s "
                f"({why})" + (f"; joiners {others} neither" if others else "")
                + f"; start it with the config from 'kmigrate zookeeper joiner-config {jid}'; nothing was changed"
            )

        wait_until(all_ready, timeout_s=self.req.joiner_timeout_s, interval_s=0.5, what="the joiners",
                   clock=self.clock, on_timeout=never_ready)

    def _wait_quorum(self, committed: DynamicConfig, goal: DynamicConfig, leader: int | None,
                     joiners: tuple[Server, ...], timeout_s: float = 15.0) -> str | None:
        """None once enough of ``goal``'s voters are up and caught up to form a quorum; else why not.

        Retried for a while: under a steady write load a follower read a moment after the leader
        may trail it by a few transactions.
        """
        last: list[str | None] = [None]

        def in_sync() -> bool:
            last[0] = quorum_problem(goal, self._synced_ids(committed, leader, joiners))
            if last[0] is not None:
                self.progress(f"waiting for a quorum of the new config to be in sync: {last[0]}")
            return last[0] is None

        poll(in_sync, timeout_s=timeout_s, interval_s=0.5, clock=self.clock)
        return last[0]

    def _synced_ids(self, committed: DynamicConfig, leader: int | None, joiners: tuple[Server, ...]) -> set[int]:
        """Servers (old and joining) that are up and caught up with the leader right now."""
        states = self._states(committed.servers)
        leader = _leader(states) if leader is None or states.get(leader, zka.ServerState("")).mode != "leader" else leader
        if leader is None:
            return set()
        lead = states[leader]
        synced = {leader}
        for i, st in states.items():
            if i != leader and st.mode in ("follower", "observer") and st.zxid is not None and lead.zxid is not None and st.zxid >= lead.zxid:
                synced.add(i)
        readiness = self._joiner_readiness(committed, joiners, leader)
        synced |= {i for i, why in readiness.items() if why is None}
        return synced

    # ............................................................. change
    def _apply(self, zk: zka.ZooKeeper, rc: Reconfig, expected: DynamicConfig, result: ZooKeeperResult,
               step_target: DynamicConfig | None = None) -> DynamicConfig:
        """Send one reconfig and confirm it by looking; never resend blindly (``from_config`` guards a resend)."""
        goal = step_target or expected
        record = StepRecord(rc.describe(), rc.zkcli(zk.hosts.split(",")[0]), None if rc.from_version is None else f"{rc.from_version:x}")
        result.steps.append(record)
        started = self.clock.now()
        survivors = self._addresses([s for s in goal.servers])
        for attempt in (1, 2):
            self.progress(f"reconfig: {rc.describe()} (from version {record.from_version})")
            pending = zk.send_reconfig(rc)
            if crash_wanted("after-reconfig-sent"):  # the testing hook: die once the request has left
                poll(zk.all_sent, timeout_s=5, interval_s=0.001, clock=self.clock)
                os.kill(os.getpid(), signal.SIGKILL)
            if crash_wanted("drop-connection-after-reconfig-sent"):  # the lost answer, deterministically
                poll(zk.all_sent, timeout_s=5, interval_s=0.001, clock=self.clock)
                zk.drop_connection()
            try:
                new = zk.answer(pending, self.req.reconfig_timeout_s)
                record.answer = "received"
            except zka.LostAnswer as lost:
                self.progress(f"the reconfig's answer was lost ({lost}); reading the config from {', '.join(survivors)}")
                new = self._confirm(survivors, rc.from_version, goal)
                if new is None:
                    if attempt == 1:
                        continue  # confirmed not applied: the guarded resend cannot apply twice
                    raise StepFailed(
                        f"the reconfig ({rc.describe()}) was sent twice and the committed config is still version "
                        f"{record.from_version}: nothing changed; check the servers' logs and run the command again"
                    )
                record.answer = "lost-confirmed"
            except zka.ReconfigRefused as refused:
                now = self._read_config(survivors + self._addresses(expected.servers))
                if now is not None and is_reached(now, goal):
                    new, record.answer = now, "already-committed"
                elif refused.kind in ("bad-version", "in-progress"):
                    raise StepFailed(
                        f"{refused.reason}: the committed config is now version {now.version_hex if now else '?'} "
                        f"(voters {list(now.voter_ids) if now else '?'}); run the command again to continue from it"
                    ) from None
                else:
                    raise BadInput(f"{refused.reason}; nothing was changed") from None
            break
        record.to_version = new.version_hex
        record.seconds = round(self.clock.now() - started, 3)
        if not is_reached(new, goal):
            raise StepFailed(
                f"after the reconfig the committed config (version {new.version_hex}) has voters {list(new.voter_ids)}, "
                f"not {list(goal.voter_ids)}"
            )
        return new

    def _remove_marker(self, addresses: list[str], path: str | None) -> None:
        """Delete a sentinel (``None``: every sentinel and probe znode an interrupted run left behind),
        then ``/kmigrate`` when it is empty; best effort."""
        try:
            with zka.ZooKeeper.connect(",".join(addresses), self.auth) as fresh:
                if path is not None:
                    fresh.delete(path)
                else:
                    for child in fresh.children("/kmigrate") or []:
                        if child.startswith(("sentinel-", "write-probe-")):
                            fresh.delete(f"/kmigrate/{child}")
                if not fresh.children("/kmigrate"):
                    fresh.delete("/kmigrate")
        except Exception:
            pass

    def _read_config(self, addresses: list[str]) -> DynamicConfig | None:
        try:
            return zka.committed_config_from(list(dict.fromkeys(addresses)), self.auth, timeout_s=10)
        except (BadInput, Exception):
            return None

    def _confirm(self, addresses: list[str], from_version: int | None, goal: DynamicConfig) -> DynamicConfig | None:
        """After a lost answer: the committed config once it is the goal; None once it is clearly not applied."""
        unchanged_since: list[float] = []

        def look() -> tuple[DynamicConfig | None] | None:
            now = self._read_config(addresses)
            if now is None:
                return None
            if is_reached(now, goal):
                return (now,)
            if now.version != from_version:
                raise StepFailed(
                    f"the committed config changed to version {now.version_hex} (voters {list(now.voter_ids)}), "
                    "which is not the target: someone else reconfigured; run the command again to continue from it"
                )
            unchanged_since[:] = unchanged_since or [self.clock.now()]
            # a proposal in flight commits within a few ticks; after that it was not applied
            return (None,) if self.clock.now() - unchanged_since[0] > 10 else None

        found = poll(look, timeout_s=self.req.confirm_timeout_s, interval_s=0.5, clock=self.clock)
        if found is not None:
            return found[0]
        raise StepFailed(
            f"the reconfig's answer was lost and no surviving or new member ({', '.join(addresses)}) "
            f"answered within {self.req.confirm_timeout_s:.0f} s: run the command again; it reads the config and continues"
        )

    def _step_by_step(self, zk: zka.ZooKeeper, committed: DynamicConfig, target: DynamicConfig,
                      result: ZooKeeperResult) -> DynamicConfig:
        current = committed
        session = zk
        opened: list[zka.ZooKeeper] = []
        try:
            while True:
                states = self._states(current.servers)
                leader = _leader(states)
                rc = next_step(current, target, leader)
                if rc is None:
                    return current
                step_goal = apply(current, rc)
                # the joiner of this step must be caught up; the step's config must have a synced quorum
                joiners = tuple(s for s in rc.joining if current.get(s.id) is None or not current.get(s.id).is_voter)
                self._wait_joiners(current, joiners, leader, result)
                problem = self._wait_quorum(current, step_goal, leader, joiners)
                if problem:
                    raise StepFailed(f"step {rc.describe()} cannot run: {problem}; run again to continue from version {current.version_hex}")
                current = self._apply(session, rc, target, result, step_target=step_goal)
                # the next step talks to the current members (the old session may be on a server that left)
                session = zka.ZooKeeper.connect(",".join(self._addresses(current.servers)), self.auth)
                opened.append(session)
        finally:
            for s in opened:
                s.close()

    # ........................................................ post-checks
    def _wait_outcome(self, target: DynamicConfig, removed: list[int], require_sync: bool,
                      timeout_s: float | None = None) -> Outcome:
        addresses = self._addresses(target.voters)
        last = [Outcome(target, None)]

        def settled() -> bool:
            cfg = self._read_config(addresses)
            states = self._states(target.voters)
            leader = _leader(states)
            synced: set[int] = set()
            if leader is not None:
                lead = states[leader]
                synced = {leader}
                for i in target.voter_ids:
                    if i == leader:
                        continue
                    st = self._state(target.get(i))  # type: ignore[arg-type]
                    if st.mode == "follower" and st.zxid is not None and lead.zxid is not None and st.zxid >= lead.zxid:
                        synced.add(i)
            if cfg is None:
                return False
            last[0] = Outcome(cfg, leader, frozenset(synced))
            problems = outcome_problems(last[0], target, tuple(removed))
            return not [p for p in problems if require_sync or p.code != NOT_IN_SYNC]

        poll(settled, timeout_s=timeout_s or self.req.post_timeout_s, interval_s=0.3, clock=self.clock)
        return last[0]

    # ......................................................... what's next
    def _next_steps(self, result: ZooKeeperResult, before: DynamicConfig, after: DynamicConfig, chroot: str,
                    done: bool) -> None:
        new_connect = self._broker_connect(after, chroot) if done else result.broker_zookeeper_connect or ""
        if done and result.registered_brokers:
            ids = sorted({i for v in result.registered_brokers.values() for i in v})
            result.next_steps.append(
                f"rolling restart of brokers {', '.join(map(str, ids))}, one at a time, with zookeeper.connect={new_connect} "
                "; after each broker, wait until the cluster is healthy before the next: "
                f"kmigrate health --bootstrap-server {self.req.bootstrap_servers or 'BROKER:9092'} --wait"
            )
        elif done:
            result.next_steps.append(
                f"no broker is registered in this ensemble; Kafka brokers that will use it need zookeeper.connect={new_connect}"
            )
        if done:
            result.next_steps.append(f"clients and tools: use --zookeeper {self.dial.connect_string(after, chroot=chroot)}")
            gone = [s for s in before.servers if after.get(s.id) is None]
            result.decommission = [f"server {s.id} ({s.host}, client {s.client_address})" for s in gone]
            if gone:
                result.next_steps.append(
                    "stop and decommission ZooKeeper servers " + ", ".join(str(s.id) for s in gone)
                    + ": they are out of the ensemble"
                )
        else:
            result.next_steps.append("run the same command without --dry-run to apply it")


def run_zookeeper_change(request: ZooKeeperRequest, progress: Progress | None = None) -> ZooKeeperResult:
    """Run ``kmigrate zookeeper`` (see the module docstring); BadInput when refused, StepFailed when a step fails."""
    return ZooKeeperChange(request, progress).run()
