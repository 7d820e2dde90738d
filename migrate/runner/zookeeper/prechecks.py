"""The checks of a ZooKeeper voter swap before any change (step 2 of :mod:`migrate.runner.zookeeper.change`).

In order: versions >= 3.5.0 (:meth:`EnsembleChecks._check_versions`), the id rules, reconfig enabled and
allowed (a probe guarded by ``from_config=0`` that cannot apply), the brokers' ``zookeeper.connect``, the
joiners' own configs (:meth:`EnsembleChecks._prechecks`), then a bounded wait for every joiner to follow
the leader and catch up (:meth:`EnsembleChecks._wait_joiners`) and for a quorum of the new config to be in
sync (:meth:`EnsembleChecks._wait_quorum`). Each refusal is one line (BadInput) and nothing has changed.

:class:`EnsembleChecks` also holds how the run reaches each server (its dialling: the client port, or the
secureClientPort over TLS); :class:`~migrate.runner.zookeeper.change.ZooKeeperChange` runs the steps on it.
"""

from __future__ import annotations

from typing import Iterable

from migrate.adapters.zookeeper import client as zka
from migrate.core.versions import version_problem
from migrate.core.zookeeper.brokers import BrokerConnect, judge_brokers
from migrate.core.zookeeper.change import Change, check_change, joiner_participant_problem, joiners_of, quorum_problem
from migrate.core.zookeeper.config import ConfigError, Dialing, DynamicConfig, Server, parse_config
from migrate.errors import BadInput
from migrate.runner.zookeeper.request import Progress, ZooKeeperRequest, ZooKeeperResult, one_line, prepare
from migrate.waiting import SYSTEM_CLOCK, Clock, FakeClock, poll, wait_until


def leader_of(states: dict[int, zka.ServerState]) -> int | None:
    """The one server that says it leads, or None (none, or several: an election is under way)."""
    leaders = [i for i, st in states.items() if st.mode == "leader"]
    return leaders[0] if len(leaders) == 1 else None


class EnsembleChecks:
    """A run's view of the ensemble (how each server is dialled) and every check before a change."""

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

    # ........................................................... versions
    def _check_versions(self, committed: DynamicConfig) -> dict[int, zka.ServerState]:
        """Refuse when a server runs a ZooKeeper without dynamic reconfiguration; returns every server's state."""
        self.progress("asking every server for its version and role")
        states = self._states(committed.servers)
        problems = [p for s in committed.servers if (st := states.get(s.id)) and st.version
                    and (p := version_problem(f"server {s.id} ({self._address(s)})", st.version))]
        if problems:
            raise BadInput(one_line(problems))
        return states

    # ........................................................... refusals
    def _prechecks(self, zk: zka.ZooKeeper, committed: DynamicConfig, change: Change, target: DynamicConfig,
                   result: ZooKeeperResult) -> str:
        """Every refusal before any change: the id rules, reconfig allowed, brokers, joiners' own configs.
        Returns the brokers' chroot."""
        problems = check_change(committed, change)
        if problems:
            raise BadInput(one_line(problems))
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
            leader = leader_of(states)
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
        leader = leader_of(states) if leader is None or states.get(leader, zka.ServerState("")).mode != "leader" else leader
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
