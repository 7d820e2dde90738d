"""``kmigrate kraft rollback``: read where the rollback stands, do kmigrate's step (the ZooKeeper transaction) or name
the operator's and wait, again and again until ZooKeeper mode (``core/kraft/rollback`` decides; this sequences).

Every pass re-reads the cluster (ZooKeeper, DescribeQuorum of the controllers, DescribeConfigs and metadata of the
brokers): killed at any line and run again, it goes on from what the cluster shows. The only write is one ZooKeeper
transaction, conditional on the versions just read (a znode already deleted, or changed since, makes it write nothing
and the next pass reads again).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

from migrate.core.clientconfig import ClientSettings
from migrate.core.kraft.config import MIGRATION_FLAG
from migrate.core.kraft.phases import Phase, parse_int_znode, parse_json_znode, phase_of
from migrate.core.kraft.rollback import PLAN, Decision, RollbackView, Step, next_step, remaining, znode_change
from migrate.core.zookeeper.config import split_connect
from migrate.errors import BadInput, StepFailed
from migrate.waiting import SYSTEM_CLOCK, Clock, FakeClock


STUCK_S = 90.0
"""A broker out of /brokers/ids or silent to DescribeConfigs this long is named as stuck (with KAFKA-20762's sign)."""


@dataclass
class RollbackRun:
    """What one run saw and did (``--output json``)."""

    done: bool = False
    step: str = ""
    message: str = ""
    actions: list[str] = field(default_factory=list)  # what kmigrate wrote
    migration: dict | None = None  # /migration's content, as this run deleted it
    controller_epoch: dict | None = None  # {"from": N, "to": M} when this run raised /controller_epoch (KAFKA-20488)
    plan: list[dict] = field(default_factory=list)  # --dry-run: the steps from the next one on
    view: dict = field(default_factory=dict)  # the last reading


def read_view(connect: str, auth: list | None, settings: ClientSettings, known: tuple[int, ...],
              controllers: tuple[str, ...], timeout_s: float = 10.0,
              controller_settings: ClientSettings | None = None) -> tuple[RollbackView, tuple[str, ...]]:
    """One reading for the rollback, and the controller addresses asked (given, else the controller.quorum.voters
    the brokers of roll 1 run with)."""
    from migrate.adapters.kraft.brokers import accepting, broker_migration_flags, offline_partitions
    from migrate.runner.kraft.observe import _controllers_of_brokers, observe

    obs = observe(connect, auth, None, known, timeout_s, controllers=controllers, controller_settings=controller_settings)
    if not controllers:
        controllers = _controllers_of_brokers(settings, list(obs.brokers), timeout_s)
        if controllers:
            obs = observe(connect, auth, None, known, timeout_s, controllers=controllers,
                          controller_settings=controller_settings)
    reading = phase_of(obs)
    flags = broker_migration_flags(settings, tuple(obs.zk_broker_ids), MIGRATION_FLAG, timeout_s)
    view = RollbackView(
        brokers=obs.brokers, zk_broker_ids=tuple(obs.zk_broker_ids), controller=obs.controller,
        controller_epoch=obs.controller_epoch, migration=obs.migration,
        answering_controllers=obs.quorum.voters if obs.quorum is not None else (),
        controllers_known=bool(controllers) or obs.quorum is not None,
        finalized=reading.phase == Phase.FINALIZED, finalized_detail=reading.detail if reading.phase == Phase.FINALIZED else "",
        broker_flags=flags, accepting_controllers=() if obs.quorum is not None else accepting(controllers))
    if (not view.out_of_zookeeper and view.zookeeper_controller is not None and view.migration is None
            and not view.answering_controllers and not any(flags.get(b, True) for b in view.brokers)):
        view = replace(view, offline_partitions=offline_partitions(settings, timeout_s))
    return view, controllers


def view_doc(view: RollbackView) -> dict:
    return {"brokers": list(view.brokers), "brokers_ids": list(view.zk_broker_ids), "controller": view.controller,
            "controller_epoch": view.controller_epoch, "migration": view.migration,
            "answering_controllers": list(view.answering_controllers),
            "accepting_controllers": list(view.accepting_controllers),
            "broker_migration_flag": {str(b): f for b, f in sorted(view.broker_flags.items())},
            "offline_partitions": None if view.offline_partitions is None else list(view.offline_partitions)}


def _delete_znodes(connect: str, auth: list | None, view: RollbackView, run: RollbackRun,
                   progress: Callable[[str], None]) -> None:
    """The one ZooKeeper transaction, from the znodes read again with their versions."""
    from migrate.adapters.zookeeper.client import rollback_migration_znodes, znodes_with_versions

    hosts, chroot = split_connect(connect)
    raw = znodes_with_versions(hosts, chroot, auth, ("/controller", "/controller_epoch", "/migration"))
    data = {k: (v[0] if v else None) for k, v in raw.items()}
    now = replace(view, controller=parse_json_znode(data["/controller"]),
                  controller_epoch=parse_int_znode(data["/controller_epoch"]),
                  migration=parse_json_znode(data["/migration"]) if raw["/migration"] else None)
    change = znode_change(now)
    if raw["/migration"] is not None and not change.delete_migration:  # present but not JSON: delete it all the same
        change = replace(change, delete_migration=True)
    if change.empty:
        return
    epoch = None
    if change.raise_epoch_to is not None and raw["/controller_epoch"] is not None:
        epoch = (change.raise_epoch_to, raw["/controller_epoch"][1])
    if raw["/migration"] is not None:
        progress(f"/migration was: {raw['/migration'][0].decode('utf-8', 'replace')}")
    ok = rollback_migration_znodes(
        hosts, chroot, auth, epoch=epoch,
        controller_version=raw["/controller"][1] if change.delete_controller and raw["/controller"] else None,
        migration_version=raw["/migration"][1] if change.delete_migration and raw["/migration"] else None)
    if not ok:
        progress("ZooKeeper changed under the transaction (nothing written): reading again")
        return
    if raw["/migration"] is not None:
        run.migration = now.migration if now.migration is not None else {"raw": raw["/migration"][0].decode("utf-8", "replace")}
    done = []
    if epoch is not None:
        run.controller_epoch = {"from": now.controller_epoch, "to": epoch[0]}
        done.append(f"/controller_epoch {now.controller_epoch} -> {epoch[0]} (above the KRaft controller epoch "
                    f"{now.kraft_controller_epoch}: KAFKA-20488)")
    if change.delete_controller:
        done.append(f"/controller deleted (was KRaft controller {now.controller.get('brokerid') if now.controller else '?'})")
    if change.delete_migration:
        done.append("/migration deleted")
    run.actions.extend(done)
    progress("ZooKeeper: " + "; ".join(done))


def rollback(connect: str, auth: list | None, settings: ClientSettings | None, *, known: tuple[int, ...] = (),
             controllers: tuple[str, ...] = (), controller_settings: ClientSettings | None = None,
             timeout_s: float = 1800, interval_s: float = 2.0, dry_run: bool = False,
             playbook_hint: str = "", progress: Callable[[str], None] = lambda msg: None,
             clock: Clock | FakeClock = SYSTEM_CLOCK) -> RollbackRun:
    """Roll the migration back to ZooKeeper mode (see the module docstring). BadInput (nothing changed) when refused;
    StepFailed with where it stands after ``timeout_s``."""
    if settings is None:
        raise BadInput("no Kafka brokers given: use --bootstrap-server host:port (the brokers, to read their migration "
                       "flag) or --playbook")
    run = RollbackRun()
    deadline = clock.now() + timeout_s
    seen: set[int] = set(known)
    missing_since: dict[int, float] = {}
    last = ""
    while True:
        view, found = read_view(connect, auth, settings, tuple(sorted(seen)), controllers,
                                controller_settings=controller_settings)
        controllers = controllers or found  # kept: brokers rolled back to ZooKeeper mode no longer name them
        seen.update(view.brokers)
        now = clock.now()
        missing = set(view.out_of_zookeeper) | {b for b in view.zk_broker_ids if b not in view.broker_flags}
        missing_since = {b: missing_since.get(b, now) for b in missing}
        view = replace(view, long_missing=tuple(sorted(b for b, t in missing_since.items() if now - t >= STUCK_S)))
        decision: Decision = next_step(view, playbook_hint)
        run.step, run.message, run.view = decision.step.value, decision.message, view_doc(view)
        if decision.step == Step.REFUSED:
            raise BadInput(decision.message)
        if dry_run:
            _, steps = remaining(view, playbook_hint)
            run.plan = [{"step": s.value, "who": who, "what": what} for s, who, what in steps]
            return run
        if decision.step == Step.DONE:
            run.done = True
            progress(decision.message)
            return run
        if decision.step == Step.DELETE_ZNODES:
            _delete_znodes(connect, auth, view, run, progress)
            continue
        if decision.message != last:
            progress(decision.message)
            last = decision.message
        if clock.now() >= deadline:
            raise StepFailed(f"kraft rollback: not done after {timeout_s:.0f} s; where it stands: {decision.message} "
                             "(run it again to go on)")
        clock.sleep(interval_s)


__all__ = ["PLAN", "RollbackRun", "read_view", "rollback"]
