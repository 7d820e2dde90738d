"""Sequencer of a ZooKeeper voter swap by dynamic reconfiguration (``kmigrate zookeeper``).

Order of events (each step re-reads the ensemble; nothing is trusted from memory):

1. read ``/zookeeper/config`` and its version; if the target is already committed, say so (exit 0);
2. pre-checks, all before any change: versions >= 3.5.0, id rules, joiners' own configs, reconfig
   enabled and allowed (a probe guarded by ``from_config=0`` that cannot apply), brokers'
   ``zookeeper.connect``, then wait (bounded) for every joiner to follow the leader and catch up,
   and check the new config can form a quorum (:mod:`migrate.runner.zookeeper.prechecks`);
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

The request and its result are :mod:`migrate.runner.zookeeper.request`'s.
"""

from __future__ import annotations

import os
import signal
import uuid
from dataclasses import asdict
from typing import Any

from migrate.adapters.zookeeper import client as zka
from migrate.errors import BadInput, StepFailed
from migrate.runner.events import CRASH_ENV, crash_wanted
from migrate.runner.zookeeper.prechecks import EnsembleChecks, leader_of
from migrate.runner.zookeeper.request import (
    Progress,
    StepRecord,
    ZooKeeperRequest,
    ZooKeeperResult,
    one_line,
    prepare,
    resolve_adds,
)
from migrate.waiting import poll
from migrate.core.zookeeper.config import ConfigError, DynamicConfig, Server
from migrate.core.zookeeper.change import (
    CONFLICTING_MEMBER,
    JOINER_ID_ORDER,
    NO_LEADER,
    NOT_IN_SYNC,
    NOT_TARGET,
    Change,
    Outcome,
    Reconfig,
    apply,
    check_change,
    is_reached,
    joiner_config,
    joiners_of,
    next_step,
    outcome_problems,
    single_reconfig,
    step_by_step,
    target_config,
    validate_change,
    warnings_for,
)

__all__ = ["CRASH_ENV", "ZooKeeperChange", "render_joiner_config", "run_zookeeper_change"]


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
    servers = resolve_adds(items, known, committed)
    change = Change(servers, ())
    warnings = []
    current = committed.get(joiner_id)
    if current is not None and current.is_voter:
        warnings.append(f"server {joiner_id} is already a voter of the committed config (version {committed.version_hex})")
    problems = [p for p in check_change(committed, change) if p.code in (JOINER_ID_ORDER, CONFLICTING_MEMBER)]
    if problems:
        raise BadInput(one_line(problems))
    return joiner_config(committed, joiners_of(committed, change) or servers), committed, warnings


# ------------------------------------------------------------------- runner
class ZooKeeperChange(EnsembleChecks):
    """One run of ``kmigrate zookeeper``. ``run()`` returns a result or raises BadInput/StepFailed.

    The checks before the change and the dialling of servers are :class:`EnsembleChecks`'."""

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
        adds = resolve_adds(req.add, req.known, committed)
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

        states = self._check_versions(committed)
        leader = leader_of(states)

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

    def _change(self, zk: zka.ZooKeeper, committed: DynamicConfig, target: DynamicConfig, removed: list[int],
                result: ZooKeeperResult) -> tuple[str, bytes]:
        """The change itself, under a sentinel znode and the write probe (the stall measurement)."""
        sentinel_path = zka.new_marker("sentinel")
        sentinel = uuid.uuid4().hex.encode()
        zk.write(sentinel_path, sentinel)
        # Two writers: one on the servers that stay (the ensemble's stall: no leader, no quorum), one on the servers
        # that leave, which also waits for its server to drop it at the change (what each broker connected there sees)
        probe = zka.WriteProbe(self._addresses(target.voters), self.auth, zka.new_marker("write-probe"))
        probe.start()
        leaving = self._leaving_probe(committed, target, removed)
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
            if leaving is not None:
                leaving.stop()
            self._remove_marker(self._addresses(committed.servers), sentinel_path)
            raise
        finally:
            stall = probe.stop()
            left = leaving.stop() if leaving is not None else None
        result.write_stall_ms = stall.longest_stall_ms
        result.write_probe = asdict(stall)
        if left is not None:
            result.leaving_write_stall_ms = left.longest_stall_ms
            result.leaving_write_probe = asdict(left)
        return sentinel_path, sentinel

    def _leaving_probe(self, committed: DynamicConfig, target: DynamicConfig,
                       removed: list[int]) -> zka.WriteProbe | None:
        """A writer connected to a server that leaves (None when none leaves or none of them answers): its session
        then knows every server, to reconnect when the leaving one drops it."""
        gone = [s for s in committed.servers if s.id in removed]
        if not gone:
            return None
        probe = zka.WriteProbe(self._addresses(gone), self.auth, zka.new_marker("write-probe-leaving"),
                               failover=self._addresses(committed.servers + target.servers))
        try:
            probe.start(timeout_s=5.0)
        except BadInput:  # the leaving servers are down already: no client is left on them
            return None
        return probe

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
        if any(p.code == NO_LEADER for p in problems):  # nothing to read the sentinel from: the change is not done
            raise StepFailed(self._not_serving(outcome.committed, target, self.req.post_timeout_s))
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
                + one_line(problems)
            )
        return outcome

    @staticmethod
    def _not_serving(committed: DynamicConfig, target: DynamicConfig, waited_s: float) -> str:
        return (f"the target config (version {committed.version_hex}) is committed but no leader among the new voters "
                f"{list(target.voter_ids)} answers on its client port after {waited_s:.0f} s: the ensemble is not "
                "serving; check each new server's log (a client address it could not bind, a quorum port it cannot "
                "reach), fix it and restart it, then run the same command again; do not move the brokers to it until then")

    # ............................................................ already
    def _already(self, zk: zka.ZooKeeper, committed: DynamicConfig, target: DynamicConfig,
                 result: ZooKeeperResult) -> ZooKeeperResult:
        self.progress("the target config is already committed; checking the ensemble")
        wait_s = min(30.0, self.req.post_timeout_s)
        outcome = self._wait_outcome(target, result.removed, require_sync=True, timeout_s=wait_s)
        if outcome.leader_id not in target.voter_ids:  # committed, but the new voters serve no client: not done
            raise StepFailed(self._not_serving(committed, target, wait_s))
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
                leader = leader_of(states)
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
            leader = leader_of(states)
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
